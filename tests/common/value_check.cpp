// tests/common/value_check.cpp — see value_check.h.
#include "common/value_check.h"

#include <algorithm>
#include <cmath>
#include <optional>

#include "backends/reference/interpreter.h"
#include "common/random_graph.h"

namespace ferry::testutil {

const std::vector<OpKind> &wellConditionedOps() {
  static const std::vector<OpKind> ops = {
      OpKind::Neg,        OpKind::Abs,       OpKind::Tanh,      OpKind::Sigmoid,
      OpKind::Relu,       OpKind::Gelu,      OpKind::Erf,       OpKind::Silu,
      OpKind::Add,        OpKind::Sub,       OpKind::Mul,       OpKind::Maximum,
      OpKind::Minimum,    OpKind::Where,     OpKind::Matmul,    OpKind::Linear,
      OpKind::Conv2d,     OpKind::MaxPool2d, OpKind::AvgPool2d, OpKind::GlobalAvgPool,
      OpKind::Sum,        OpKind::Mean,      OpKind::Max,       OpKind::Softmax,
      OpKind::LogSoftmax, OpKind::Reshape,   OpKind::Transpose, OpKind::Concat,
      OpKind::Slice,      OpKind::Gather,    OpKind::Unsqueeze, OpKind::Squeeze,
      OpKind::Flatten,    OpKind::Expand,    OpKind::Transfer,  OpKind::Constant,
      OpKind::Identity};
  return ops;
}

std::map<std::string, TensorData> randomInputs(const Graph &g, uint64_t seed) {
  Rng rng(seed ^ 0x1f2e3d4c5b6a7988ull);
  std::map<std::string, TensorData> inputs;
  for (const InputDecl &in : g.inputs()) {
    const Value &v = g.value(in.value);
    TensorData t(v.type.dtype, v.type.shape);
    for (int64_t i = 0; i < t.numel(); ++i) {
      switch (dtypeCategory(t.dtype())) {
        case DTypeCategory::Bool: t.setInt(i, rng.below(2)); break;
        case DTypeCategory::Integer:
          t.setInt(i, rng.range(t.dtype() == DType::U8 ? 0 : -8, 8));
          break;
        case DTypeCategory::Floating:
          t.set(i, static_cast<double>(rng.range(-128, 128)) / 64.0);
          break;
      }
    }
    inputs.emplace(v.name, std::move(t));
  }
  return inputs;
}

double unitRoundoff(DType t) {
  switch (t) {
    case DType::F16: return 0x1p-11;
    case DType::BF16: return 0x1p-8;
    case DType::F32: return 0x1p-24;
    case DType::F64: return 0x1p-53;
    default: return 0;
  }
}

double valueScale(const Graph &g, const std::map<std::string, TensorData> &inputs) {
  std::vector<std::optional<TensorData>> values(g.valueCount());
  for (const InputDecl &in : g.inputs()) values[in.value] = inputs.at(g.value(in.value).name);
  for (const ParamDecl &p : g.params()) values[p.value] = p.data;
  for (NodeId id : g.order()) {
    const Node &n = g.node(id);
    std::vector<TensorData> operands;
    for (ValueId o : n.operands) operands.push_back(*values[o]);
    Expected<TensorData> r =
        reference::evalOp(n.info(), operands, n.attrs, g.value(n.result).type, n.loc);
    if (!r) return INFINITY;
    values[n.result] = std::move(*r);
  }
  double scale = 1;
  for (const std::optional<TensorData> &t : values) {
    if (!t) continue;  // integers count too: a @bf16 pin can compute them in a float
    for (int64_t i = 0; i < t->numel(); ++i)
      if (double x = std::fabs(t->at(i)); std::isfinite(x)) scale = std::max(scale, x);
  }
  return scale;
}

std::string compareOutputs(const std::vector<TensorData> &want, const std::vector<TensorData> &got,
                           double tol) {
  if (want.size() != got.size()) return "output count";
  for (size_t k = 0; k < want.size(); ++k) {
    if (want[k].type() != got[k].type())
      return "output " + std::to_string(k) + " is " + got[k].type().str() + ", expected " +
             want[k].type().str();
    for (int64_t i = 0; i < want[k].numel(); ++i) {
      double a = want[k].at(i), b = got[k].at(i);
      bool same = (std::isnan(a) && std::isnan(b)) || a == b ||
                  (std::isfinite(a) && std::isfinite(b) && std::fabs(a - b) <= tol);
      if (!same)
        return "output " + std::to_string(k) + " element " + std::to_string(i) + ": " +
               std::to_string(b) + ", expected " + std::to_string(a) + " (tolerance " +
               std::to_string(tol) + ")";
    }
  }
  return "";
}

}  // namespace ferry::testutil
