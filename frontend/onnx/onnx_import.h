// frontend/onnx/onnx_import.h — reads ONNX models (`.onnx`) and ONNX tensors (`.pb`) into ferry's
// IR. The imported graph is an ordinary verified Graph: placement, dtypes, dumps, diagnostics and
// the runtime treat it as they treat a `.fy` model. Every node keeps the ONNX model's names: the
// values are named as in the model (`%"onnx::MatMul_84"`), initializers become params of the same
// name, and each node's location is `model.onnx: node 'Gemm_3' (#12, Gemm)`.
#pragma once
#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ir/device.h"
#include "ir/graph.h"
#include "ir/status.h"
#include "ir/tensor_data.h"

namespace ferry {

struct OnnxImportOptions {
  /// Shapes of graph inputs whose dims are symbolic (`batch_size`) or unknown, by input name, as
  /// `--shape NAME=1,784` gives them. A given shape must agree with every fixed dim the model
  /// declares. An input with a symbolic dim and no entry here is an error naming the input and
  /// the dim; an entry for a name that is not an input is an error too.
  std::map<std::string, std::vector<int64_t>, std::less<>> inputShapes;
  /// Where the graph's inputs arrive.
  Device inputDevice = Device::cpu();
  /// One initializer (or Constant) larger than this is an error (code "limit"), checked against
  /// the size it declares before anything is allocated.
  int64_t maxParamBytes = int64_t{1} << 32;
  /// All initializers together larger than this is an error (code "limit").
  int64_t maxTotalParamBytes = int64_t{1} << 34;
  /// Values for graph inputs whose value a node needs at import, because ferry's shapes are
  /// static: a Reshape's shape, a Slice's starts, a Range's bounds given as graph inputs (as
  /// ONNX's node tests do). Such an input is frozen to its value: it becomes a param of its name
  /// (or folds away) and is no longer an input of the imported graph. An input given here that no
  /// node needs that way stays an input. Without a value, a needed input is an error that names
  /// it. Each value must have the input's dtype and shape.
  std::map<std::string, TensorData, std::less<>> inputValues;
  /// When set, receives the names of the inputs that were frozen (in the model's order).
  std::vector<std::string> *frozenInputs = nullptr;
};

/// Imports the model in `path`. External data files are read relative to its folder. Errors are
/// diagnostics located at the node, initializer or input they concern — all of them in one run
/// (unsupported ops are one error listing every one with its nodes); a malformed file is an error,
/// never a crash, and so is running out of host memory (code "memory").
Expected<Graph> importOnnxFile(const std::string &path, const OnnxImportOptions &options = {});

/// Imports a serialized ModelProto. `fileName` names it in locations; `baseDir` is the folder
/// external data paths are relative to (empty: external data is an error).
Expected<Graph> importOnnx(std::span<const std::byte> bytes, std::string_view fileName,
                           const std::string &baseDir, const OnnxImportOptions &options = {});

/// Reads a serialized ONNX TensorProto (the `input_0.pb` / `output_0.pb` files of ONNX test data)
/// into host data. Its name (possibly empty) is returned in `name` when given. With
/// `uint16AsBf16`, a UINT16 tensor reads as bf16 of the same bits: ONNX's test data before onnx
/// 1.14 (numpy had no bfloat16) stored bfloat16 tensors so.
Expected<TensorData> readTensorProtoFile(const std::string &path, std::string *name = nullptr,
                                         bool uint16AsBf16 = false);
Expected<TensorData> readTensorProto(std::span<const std::byte> bytes, std::string_view fileName,
                                     std::string *name = nullptr, bool uint16AsBf16 = false);

/// True when `path` names an ONNX model by its extension (`.onnx`, any case).
bool isOnnxPath(std::string_view path);

}  // namespace ferry
