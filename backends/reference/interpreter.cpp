// backends/reference/interpreter.cpp — evalOp's dispatch to the kernels, run() over a graph,
// and the index/element helpers the kernels share.
#include "backends/reference/interpreter.h"

#include <cstring>
#include <limits>
#include <optional>

#include "backends/reference/kernels.h"

namespace ferry::reference {

// --- helpers ------------------------------------------------------------------------------

void copyElem(const TensorData &from, int64_t src, TensorData &to, int64_t dst) {
  FERRY_CHECK(from.dtype() == to.dtype())
      << dtypeName(from.dtype()) << " vs " << dtypeName(to.dtype());
  std::memcpy(elemPtr(to, dst), elemPtr(from, src), dtypeSize(from.dtype()));
}

void convertElem(const TensorData &from, int64_t src, TensorData &to, int64_t dst) {
  convertElement(from.dtype(), elemPtr(from, src), to.dtype(), elemPtr(to, dst));
}

std::vector<int64_t> unravel(int64_t i, std::span<const int64_t> shape) {
  std::vector<int64_t> index(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    index[d] = i % shape[d];
    i /= shape[d];
  }
  return index;
}

int64_t ravel(std::span<const int64_t> index, std::span<const int64_t> shape) {
  int64_t i = 0;
  for (size_t d = 0; d < shape.size(); ++d) i = i * shape[d] + index[d];
  return i;
}

BroadcastIndex::BroadcastIndex(std::span<const int64_t> out, std::span<const int64_t> in)
    : out_(out.begin(), out.end()), strides_(out.size(), 0) {
  FERRY_CHECK(in.size() <= out.size())
      << "cannot broadcast " << shapeStr(in) << " to " << shapeStr(out);
  std::vector<int64_t> inStrides = contiguousStrides(in);
  size_t lead = out.size() - in.size();
  for (size_t d = 0; d < in.size(); ++d) {
    FERRY_CHECK(in[d] == out[lead + d] || in[d] == 1)
        << "cannot broadcast " << shapeStr(in) << " to " << shapeStr(out);
    strides_[lead + d] = in[d] == 1 ? 0 : inStrides[d];
  }
}

int64_t BroadcastIndex::operator()(int64_t outIndex) const {
  int64_t offset = 0;
  for (size_t d = out_.size(); d-- > 0;) {
    offset += (outIndex % out_[d]) * strides_[d];
    outIndex /= out_[d];
  }
  return offset;
}

Expected<std::array<int64_t, 2>> pairAttr(const KernelArgs &a, std::string_view name, int64_t min) {
  const std::vector<int64_t> &v = a.intsAttr(name);
  if (v.size() != 2 || v[0] < min || v[1] < min)
    return a.error("attr", "'" + std::string(a.op.name) + "' " + std::string(name) +
                               " must be 2 ints >= " + std::to_string(min) + ", got " +
                               attrValueStr(v));
  return std::array<int64_t, 2>{v[0], v[1]};
}

Expected<std::array<int64_t, 4>> padAttr(const KernelArgs &a) {
  const std::vector<int64_t> &v = a.intsAttr("padding");
  bool ok = v.size() == 2 || v.size() == 4;
  for (int64_t p : v) ok = ok && p >= 0;
  if (!ok)
    return a.error("attr", "'" + std::string(a.op.name) +
                               "' padding must be 2 ints [h, w] or 4 [top, left, bottom, right], "
                               "each >= 0, got " +
                               attrValueStr(v));
  if (v.size() == 2) return std::array<int64_t, 4>{v[0], v[1], v[0], v[1]};
  return std::array<int64_t, 4>{v[0], v[1], v[2], v[3]};
}

void checkShape(const KernelArgs &a, std::span<const int64_t> computed) {
  FERRY_CHECK(Shape(computed.begin(), computed.end()) == a.result.shape)
      << "'" << a.op.name << "' computes shape " << shapeStr(computed) << " but its result type is "
      << a.result.str();
}

// --- evalOp -------------------------------------------------------------------------------

Expected<TensorData> evalOp(const OpInfo &op, std::span<const TensorData> operands,
                            const Attrs &attrs, const TensorType &result, const Location &loc) {
  int n = static_cast<int>(operands.size());
  FERRY_CHECK(n >= op.minOperands && (op.maxOperands < 0 || n <= op.maxOperands))
      << "'" << op.name << "' evaluated with " << n << " operands";
  FERRY_CHECK(attrs.size() == op.attrs.size()) << "'" << op.name << "': attributes not complete";
  KernelArgs a{op, operands, attrs, result, loc};
  // No default: a new row in ir/ops.def without a kernel here fails to compile (-Wswitch).
  switch (op.kind) {
    case OpKind::Neg:
    case OpKind::Abs:
    case OpKind::Exp:
    case OpKind::Log:
    case OpKind::Sqrt:
    case OpKind::Rsqrt:
    case OpKind::Tanh:
    case OpKind::Sigmoid:
    case OpKind::Relu:
    case OpKind::Gelu:
    case OpKind::Erf:
    case OpKind::Silu:
    case OpKind::LeakyRelu: return evalUnary(a);
    case OpKind::Add:
    case OpKind::Sub:
    case OpKind::Mul:
    case OpKind::Div:
    case OpKind::Pow:
    case OpKind::Maximum:
    case OpKind::Minimum:
    case OpKind::Equal:
    case OpKind::Less:
    case OpKind::Greater: return evalBinary(a);
    case OpKind::Where: return evalWhere(a);
    case OpKind::Matmul: return evalMatmul(a);
    case OpKind::Linear: return evalLinear(a);
    case OpKind::Conv2d: return evalConv2d(a);
    case OpKind::MaxPool2d: return evalMaxPool2d(a);
    case OpKind::AvgPool2d: return evalAvgPool2d(a);
    case OpKind::GlobalAvgPool: return evalGlobalAvgPool(a);
    case OpKind::BatchNorm: return evalBatchNorm(a);
    case OpKind::LayerNorm: return evalLayerNorm(a);
    case OpKind::Sum:
    case OpKind::Mean:
    case OpKind::Max: return evalReduce(a);
    case OpKind::Softmax:
    case OpKind::LogSoftmax: return evalSoftmax(a);
    case OpKind::Reshape:
    case OpKind::Unsqueeze:
    case OpKind::Squeeze:
    case OpKind::Flatten:
    case OpKind::Transfer:
    case OpKind::Identity: return evalCopy(a);
    case OpKind::Transpose: return evalTranspose(a);
    case OpKind::Concat: return evalConcat(a);
    case OpKind::Slice: return evalSlice(a);
    case OpKind::Gather: return evalGather(a);
    case OpKind::Expand: return evalExpand(a);
    case OpKind::Cast: return evalCast(a);
    case OpKind::Constant: return evalConstant(a);
  }
  FERRY_CHECK(false) << "no reference kernel for '" << op.name << "'";
  return makeError("internal", "unreachable");
}

// --- run ----------------------------------------------------------------------------------

namespace {

std::string inputList(const Graph &graph) {
  std::string s;
  for (const InputDecl &in : graph.inputs())
    s += (s.empty() ? "" : ", ") + graph.value(in.value).name + " : " +
         graph.value(in.value).type.str();
  return s.empty() ? "it has none" : "its inputs are: " + s;
}

// Every declared input present with its declared type, nothing else given; all problems at once.
Status checkInputs(const Graph &graph, const std::map<std::string, TensorData> &inputs) {
  DiagnosticEngine diags;
  for (const InputDecl &in : graph.inputs()) {
    const Value &v = graph.value(in.value);
    auto it = inputs.find(v.name);
    if (it == inputs.end()) {
      diags.error("input", in.loc, "missing input '" + v.name + "': expected " + v.type.str());
      continue;
    }
    const TensorType &got = it->second.type();
    if (got == v.type) continue;
    std::string what = got.dtype != v.type.dtype && got.shape != v.type.shape ? "dtype and shape"
                       : got.dtype != v.type.dtype                            ? "dtype"
                                                                              : "shape";
    diags.error("input", in.loc,
                "input '" + v.name + "' has the wrong " + what + ": expected " + v.type.str() +
                    ", got " + got.str());
  }
  for (const auto &[name, data] : inputs) {
    std::optional<ValueId> v = graph.findValue(name);
    if (v && graph.value(*v).kind == ValueKind::Input) continue;
    diags.error("input", {}, "graph '" + graph.name() + "' has no input '" + name + "'")
        .note(inputList(graph));
  }
  if (diags.hasErrors()) return Status(diags.take());
  return {};
}

}  // namespace

Expected<std::vector<TensorData>> run(const Graph &graph,
                                      const std::map<std::string, TensorData> &inputs) {
  FERRY_TRY(checkInputs(graph, inputs));
  std::vector<std::optional<TensorData>> values(graph.valueCount());
  for (const InputDecl &in : graph.inputs())
    values[in.value] = inputs.at(graph.value(in.value).name);
  for (const ParamDecl &p : graph.params()) {
    FERRY_CHECK(p.data.type() == graph.value(p.value).type)
        << "param %" << graph.value(p.value).name << " holds " << p.data.type().str();
    values[p.value] = p.data;
  }
  for (NodeId id : graph.order()) {
    const Node &node = graph.node(id);
    const Value &result = graph.value(node.result);
    std::vector<TensorData> operands;
    for (ValueId o : node.operands) {
      FERRY_CHECK(values[o]) << "%" << graph.value(o).name << " used before it is defined";
      operands.push_back(*values[o]);
    }
    Expected<TensorData> r = evalOp(node.info(), operands, node.attrs, result.type, node.loc);
    if (!r) {
      std::vector<Diagnostic> diags = std::move(r).takeStatus().takeDiagnostics();
      for (Diagnostic &d : diags)
        d.detail("while evaluating %" + result.name + " = " + std::string(node.info().name),
                 node.loc);
      return Status(std::move(diags));
    }
    FERRY_CHECK(r->type() == result.type)
        << "'" << node.info().name << "' produced " << r->type().str() << " for %" << result.name
        << " : " << result.type.str();
    values[node.result] = std::move(r).value();
  }
  std::vector<TensorData> outputs;
  for (const OutputDecl &out : graph.outputs()) {
    FERRY_CHECK(values[out.value]) << "output %" << graph.value(out.value).name << " undefined";
    // A fresh copy: an output may be an input, a param or a constant that others still hold.
    outputs.push_back(values[out.value]->clone());
  }
  return outputs;
}

}  // namespace ferry::reference
