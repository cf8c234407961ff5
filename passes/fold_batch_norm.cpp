// passes/fold_batch_norm.cpp — a batch_norm whose statistics are params folded into the conv2d
// before it, at compile time (part of the fusion pass, passes/fusion.cpp).
//
// In inference, batch_norm(y, scale, bias, mean, var, eps) is a per-channel affine map of y:
// y * s + (bias - mean * s) with s = scale / sqrt(var + eps). When y = conv2d(x, W, b) it is
// conv2d(x, W', b') with W'[o] = W[o] * s[o] and b'[o] = (b[o] - mean[o]) * s[o] + bias[o]: one
// conv, no batch_norm, and the conv's epilogue free for what follows (relu, a residual add).
// Folded when
//   - the conv2d's result is read by the batch_norm alone and is not a graph output;
//   - the device's target fuses (Capabilities::fuses), as for every group;
//   - W, b (if any), scale, bias, mean and var are params (simplify has folded casts of params
//     into params already), and both nodes compute in f32 or f64 on one device;
// the new W' and b' are params of their own (W may be read elsewhere), computed in double and
// rounded once to the dtype; the batch_norm's value keeps its name (it is what later nodes and
// outputs name) and is now the conv's. The old params, if nothing else reads them, are dropped.
// Rounding differs from the batch_norm run as its own kernel by an ulp or so: this is a compile
// time rewrite of the model's arithmetic, as ONNX Runtime's and PyTorch's fusers make it, and
// `--no-fusion` turns it off with the rest of fusion.
#include <algorithm>
#include <cmath>

#include "ir/printer.h"
#include "passes/pass.h"

namespace ferry {

namespace {

bool isParam(const Graph &g, ValueId v) { return g.value(v).kind == ValueKind::Param; }

const TensorData &paramData(const Graph &g, ValueId v) { return g.paramOf(v).data; }

// A param of `data`, on `device`, named after `base`, its reasons saying it is a fold.
ValueId foldedParam(Graph &g, ValueId base, TensorData data, const Node &bn, const std::string &what) {
  const Value &b = g.value(base);
  const Device device = *b.device;
  const ParamDecl &decl = g.paramOf(base);
  const Location loc = decl.loc;
  ValueId v = g.addParam(b.name + ".bn", std::move(data), Initializer{}, std::nullopt, loc,
                         Graph::Naming::Unique);
  Value &nv = g.value(v);
  nv.device = device;
  const std::string detail = what + " of " + valueRef(g.value(bn.result).name) + " folded at compile time";
  g.deviceReason(v) = {Reason::Kind::Inserted, base, bn.loc, SharedText(detail)};
  g.dtypeReason(v) = {Reason::Kind::Inserted, base, bn.loc, SharedText(detail)};
  return v;
}

}  // namespace

int foldBatchNorms(Graph &g, const Capabilities &capabilities) {
  const std::vector<std::vector<NodeId>> users = g.users();
  std::vector<uint8_t> isOutput(g.valueCount(), 0);
  for (const OutputDecl &out : g.outputs()) isOutput[static_cast<size_t>(out.value)] = 1;
  std::vector<NodeId> dropped;
  int folded = 0;
  for (NodeId id : std::vector<NodeId>(g.order().begin(), g.order().end())) {
    const Node &bn = g.node(id);
    if (bn.op != OpKind::BatchNorm || bn.operands.size() != 5) continue;
    const Node *conv = g.producer(bn.operands[0]);
    if (!conv || conv->op != OpKind::Conv2d) continue;
    const ValueId y = conv->result;
    if (users[static_cast<size_t>(y)].size() != 1 || isOutput[static_cast<size_t>(y)]) continue;
    const Value &out = g.value(bn.result);
    const DType t = out.type.dtype;
    if ((t != DType::F32 && t != DType::F64) || g.value(y).type.dtype != t) continue;
    if (g.value(y).device != out.device || !out.device || !capabilities.fuses(*out.device)) continue;
    bool params = isParam(g, conv->operands[1]) &&
                  (conv->operands.size() < 3 || isParam(g, conv->operands[2]));
    for (size_t k = 1; k < 5; ++k) params = params && isParam(g, bn.operands[k]);
    if (!params) continue;
    const TensorData &w = paramData(g, conv->operands[1]);
    const int64_t channels = w.shape()[0];
    if (w.dtype() != t) continue;
    bool fits = true;
    for (size_t k = 1; k < 5; ++k) {
      const TensorData &p = paramData(g, bn.operands[k]);
      fits = fits && p.dtype() == t && p.numel() == channels;
    }
    if (!fits) continue;
    const double eps = std::get<double>(bn.attrs[static_cast<size_t>(bn.info().attrIndex("eps"))]);
    const TensorData &scale = paramData(g, bn.operands[1]), &shift = paramData(g, bn.operands[2]),
                     &mean = paramData(g, bn.operands[3]), &var = paramData(g, bn.operands[4]);
    TensorData w2(t, w.shape()), b2(t, {channels});
    const int64_t per = channels > 0 ? w.numel() / channels : 0;
    for (int64_t o = 0; o < channels; ++o) {
      const double s = scale.at(o) / std::sqrt(var.at(o) + eps);
      for (int64_t i = 0; i < per; ++i) w2.set(o * per + i, w.at(o * per + i) * s);
      const double b = conv->operands.size() > 2 ? paramData(g, conv->operands[2]).at(o) : 0.0;
      b2.set(o, (b - mean.at(o)) * s + shift.at(o));
    }
    const NodeId convId = conv->id;
    const ValueId wv = foldedParam(g, conv->operands[1], std::move(w2), bn, "the weight times the scale");
    const ValueId bv = foldedParam(g, bn.operands[2], std::move(b2), bn, "the bias");
    Node &c = g.node(convId);
    c.operands.resize(3);
    g.setOperand(convId, 1, wv);
    g.setOperand(convId, 2, bv);
    // Readers of the batch_norm read the conv; the conv's value takes the batch_norm's name.
    for (NodeId u : users[static_cast<size_t>(bn.result)]) {
      Node &un = g.node(u);
      for (size_t k = 0; k < un.operands.size(); ++k)
        if (un.operands[k] == bn.result) g.setOperand(u, k, y);
    }
    for (size_t k = 0; k < g.outputs().size(); ++k)
      if (g.outputs()[k].value == bn.result) g.setOutputValue(k, y);
    g.swapNames(y, bn.result);
    dropped.push_back(id);
    ++folded;
  }
  if (dropped.empty()) return 0;
  std::vector<NodeId> order;
  for (NodeId id : g.order())
    if (std::find(dropped.begin(), dropped.end(), id) == dropped.end()) order.push_back(id);
  g.setOrder(std::move(order));
  // Params nothing reads any more (the old weights and statistics, unless shared).
  std::vector<int> uses(g.valueCount(), 0);
  for (NodeId id : g.order())
    for (ValueId v : g.node(id).operands) ++uses[static_cast<size_t>(v)];
  for (const OutputDecl &o : g.outputs()) ++uses[static_cast<size_t>(o.value)];
  g.removeParamsIf([&](ValueId v) { return uses[static_cast<size_t>(v)] == 0; });
  return folded;
}

}  // namespace ferry
