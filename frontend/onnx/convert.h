// frontend/onnx/convert.h — the contract between the importer's driver (import.cpp) and its op
// converters (ops_*.cpp). Internal to frontend/onnx.
//
// The driver walks the ONNX graph's nodes in order. For each it finds the converter of the op
// type in the one table (`converters()`, assembled from the ops_*.cpp files), hands it a
// NodeContext, and checks afterwards that the converter read every attribute the node carries
// (an attribute it did not read is reported as unsupported, naming it, the op and the node) and
// set every output the model uses.
//
// An ONNX value is known to the importer as a Known: a ferry value, its data when that is known
// at import time (initializers, Constant, and whatever folds), or both. Data is turned into a
// ferry value only when a node that is not folded reads it (`input()`): an initializer becomes a
// param of its ONNX name, other data a `constant` node. So shape subgraphs (Shape -> Gather ->
// Unsqueeze -> Concat -> Reshape) fold away at import and leave nothing in the graph, and an
// initializer only read as Reshape's shape never becomes a param.
//
// Folding is generic: `emit()` evaluates a node whose operands are all known data with the
// reference interpreter (backends/reference) when the result is small (kMaxFoldElements) or
// all operands are themselves folded results, and records the data instead of adding a node.
#pragma once
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ir/graph.h"
#include "ir/status.h"
#include "ir/tensor_data.h"

namespace onnx {
class NodeProto;
class AttributeProto;
class TensorProto;
}  // namespace onnx

namespace ferry::onnx_import {

/// Results of at most this many elements are folded at import when all operands are known.
inline constexpr int64_t kMaxFoldElements = int64_t{1} << 16;

/// What the importer knows of one ONNX value.
struct Known {
  ValueId value = -1;              ///< the ferry value; -1 while only the data is known
  std::optional<TensorData> data;  ///< its data, when known at import time
  TensorType type;                 ///< always set
  bool initializer = false;        ///< an initializer: materialised as a param of its name
  /// The ONNX value it is (set by known() and the driver), so that materialising it makes one
  /// param or constant of that name however often it is read; empty for converters' own data.
  std::string name;
};

/// One node being converted. Converters read inputs and attributes, emit ferry nodes and set the
/// outputs; a problem is reported with error() (at the node's location) and the converter
/// returns. Converters never throw and never crash on malformed nodes: input counts, attribute
/// kinds and ranks are checked here or by the converter.
class NodeContext {
 public:
  virtual ~NodeContext() = default;

  // --- the node -------------------------------------------------------------------------------
  virtual const onnx::NodeProto &proto() const = 0;
  virtual std::string_view opType() const = 0;
  /// The opset of the node's domain the model imports (13..17 for the default domain).
  virtual int opset() const = 0;
  /// `model.onnx: node 'Gemm_3' (#12, Gemm)`.
  virtual const Location &loc() const = 0;

  // --- inputs ---------------------------------------------------------------------------------
  /// Count of inputs as written, including empty names of omitted optional inputs.
  virtual size_t inputCount() const = 0;
  /// Input `i` is written and not empty.
  virtual bool hasInput(size_t i) const = 0;
  /// Its type; the input must be present (hasInput).
  virtual const TensorType &inputType(size_t i) const = 0;
  /// Its data when known at import time, else nullptr.
  virtual const TensorData *inputData(size_t i) const = 0;
  /// The ferry value of input `i`, materialising known data as a param or constant.
  virtual ValueId input(size_t i) = 0;
  /// Input `i`'s data, which this node needs at import (Range's bounds, Dropout's training
  /// mode); when it is not known, reports an error naming `what` (and, for a graph input, how to
  /// give its value: OnnxImportOptions::inputValues) and returns nullptr.
  virtual const TensorData *requireData(size_t i, std::string_view what) = 0;
  /// Input `i` as integers known at import time (Reshape's shape, Slice's starts, ReduceSum's
  /// axes...). Reports an error naming `what` and returns nullopt when the input is not
  /// constant or not an integer tensor of rank <= 1.
  virtual std::optional<std::vector<int64_t>> intsInput(size_t i, std::string_view what) = 0;

  // --- attributes: each read marks the attribute as understood ---------------------------------
  virtual bool hasAttr(std::string_view name) const = 0;
  /// The value, the default when absent; a present attribute of another kind is an error (and
  /// the default is returned).
  virtual int64_t attrInt(std::string_view name, int64_t fallback) = 0;
  virtual double attrFloat(std::string_view name, double fallback) = 0;
  virtual std::string attrString(std::string_view name, std::string fallback) = 0;
  virtual std::vector<int64_t> attrInts(std::string_view name, std::vector<int64_t> fallback) = 0;
  virtual std::vector<double> attrFloats(std::string_view name, std::vector<double> fallback) = 0;
  /// A tensor attribute (Constant's value), converted; nullopt (with an error) when absent or bad.
  virtual std::optional<TensorData> attrTensor(std::string_view name) = 0;
  /// Marks an attribute understood without reading it (one whose every value means the same
  /// here, e.g. Dropout's seed).
  virtual void ignoreAttr(std::string_view name) = 0;

  // --- emitting -------------------------------------------------------------------------------
  /// Adds a ferry node of `op` (attributes by name, completed with the op's defaults) at the
  /// node's location, or folds it when every operand is known data (see above). Returns the
  /// Known of its result; on an error (reported at the node: the op's type rule names the
  /// problem) nullopt.
  virtual std::optional<Known> emit(OpKind op, std::vector<Known> operands,
                                    std::vector<NamedAttr> attrs = {}) = 0;
  /// Known input `i` (for emit's operands); the input must be present.
  virtual Known known(size_t i) = 0;
  /// Known data (an import-time constant).
  virtual Known constant(TensorData data) = 0;
  /// Output count as written (trailing optional outputs may be omitted or empty).
  virtual size_t outputCount() const = 0;
  /// Whether output `i` is written and read by something (a node or a graph output).
  virtual bool outputUsed(size_t i) const = 0;
  /// Binds output `i` to `k`. The first emitted node producing output 0 takes the output's ONNX
  /// name (setOutput renames the ferry value to it). An output the node does not write (`i` past
  /// outputCount(), or an empty name) is ignored. The driver calls a converter only for a node
  /// whose output 0 is named.
  virtual void setOutput(size_t i, Known k) = 0;

  // --- problems -------------------------------------------------------------------------------
  /// An error at the node: `Conv: attribute 'auto_pad' is "FOO", expected NOTSET, SAME_UPPER,
  /// SAME_LOWER or VALID`. Messages name the op and what was expected and what came.
  virtual void error(std::string message, std::string code = "onnx") = 0;
  /// This node is not supported as written (an attribute value or input ferry has no kernel
  /// for: a 3-D Conv, BatchNormalization in training mode); the driver lists it with the others.
  virtual void unsupported(std::string what) = 0;
};

/// Converts one node; reports problems through the context.
using Converter = void (*)(NodeContext &);

struct ConverterEntry {
  std::string_view opType;  ///< ONNX op type in the default domain
  Converter convert;
  /// The first opset whose form of the op the converter implements. Older forms that differ only
  /// in attributes are the converter's to read (or to report as unread); this is for a meaning
  /// that changed silently (Softmax's before opset 13 flattened the input to 2-D).
  int minOpset = 1;
};

/// Every converter, sorted by op type; assembled from the ops_*.cpp files' lists.
std::span<const ConverterEntry> converters();

// Each ops_*.cpp file defines one of these, listing its op types.
std::span<const ConverterEntry> elementwiseConverters();  // ops_elementwise.cpp
std::span<const ConverterEntry> shapeConverters();  // ops_shape.cpp: movement, Shape, Range...
std::span<const ConverterEntry> nnConverters();     // ops_nn.cpp: MatMul, Gemm, Conv, pools,
                                                    // norms, softmax, reductions

// --- ONNX tensors (tensor.cpp) ------------------------------------------------------------------

/// The ferry dtype of an ONNX TensorProto data type, or nullopt (string, f8, complex, u16...).
std::optional<DType> dtypeOf(int32_t onnxType);
/// The ONNX name of a data type ("FLOAT16"), for errors.
std::string onnxTypeName(int32_t onnxType);
/// Converts a TensorProto (raw_data, typed fields, or external data under `baseDir`), checking
/// its declared size against `maxBytes` before allocating. `what` names it in errors.
Expected<TensorData> tensorFromProto(const onnx::TensorProto &t, const std::string &baseDir,
                                     int64_t maxBytes, const Location &loc, std::string_view what);

}  // namespace ferry::onnx_import
