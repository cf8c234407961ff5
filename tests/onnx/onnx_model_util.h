// tests/onnx/onnx_model_util.h — ONNX ModelProtos built concisely in tests: inputs, outputs,
// initializers, nodes with attributes; serialized and imported in one call.
#pragma once
#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "frontend/onnx/onnx_import.h"
#include "ir/tensor_data.h"
#include "onnx/onnx_pb.h"

namespace ferry::onnx_test {

/// One declared dim: a size, or a symbolic name (`Dim("batch")`).
struct Dim {
  Dim(int64_t v) : value(v) {}
  Dim(int v) : value(v) {}
  Dim(const char *p) : param(p) {}
  int64_t value = -1;
  std::string param;
};

/// The ONNX TensorProto data type of a ferry dtype.
int32_t onnxType(DType t);
/// `data` as a TensorProto named `name`, in raw_data.
onnx::TensorProto tensorProto(const TensorData &data, const std::string &name = "");

/// A model of one graph at opset `opset` of the default domain.
class Model {
 public:
  explicit Model(int opset = 17, std::string graphName = "test");

  void input(const std::string &name, DType t, std::vector<Dim> dims);
  /// An output; `declare` false leaves its type out (ONNX allows it).
  void output(const std::string &name, DType t, std::vector<Dim> dims);
  void output(const std::string &name);
  void initializer(const std::string &name, const TensorData &data);
  /// A node; its attributes are added on the returned proto with the attr helpers below.
  onnx::NodeProto &node(const std::string &opType, std::vector<std::string> inputs,
                        std::vector<std::string> outputs, const std::string &name = "");

  onnx::ModelProto &proto() { return model_; }
  onnx::GraphProto &graph() { return *model_.mutable_graph(); }
  std::string bytes() const;
  /// Imports the serialized model as `model.onnx` (no folder: external data is an error unless
  /// `baseDir` is given).
  Expected<Graph> import(const OnnxImportOptions &options = {},
                         const std::string &baseDir = "") const;
  /// The import's error messages, each after its location and with its notes, one a line; ""
  /// when the model imports.
  std::string importErrors(const OnnxImportOptions &options = {},
                           const std::string &baseDir = "") const;

 private:
  onnx::ModelProto model_;
};

void attr(onnx::NodeProto &n, const std::string &name, int64_t v);
void attr(onnx::NodeProto &n, const std::string &name, double v);
void attr(onnx::NodeProto &n, const std::string &name, const std::string &v);
void attr(onnx::NodeProto &n, const std::string &name, std::vector<int64_t> v);
void attr(onnx::NodeProto &n, const std::string &name, std::vector<double> v);
void attr(onnx::NodeProto &n, const std::string &name, const TensorData &v);

/// A tensor of dtype `t`, shape `shape`, from `values` (converted as storeDouble).
TensorData tensor(DType t, Shape shape, std::vector<double> values);

}  // namespace ferry::onnx_test
