// passes/fold_gelu.cpp — GELU written out as its formula, x/2·(1 + erf(x/√2)), recognised and run
// as one `gelu` (part of the fusion pass, passes/fusion.cpp).
//
// Exporters write nn.GELU out (PyTorch's ONNX export: Div by √2, Erf, Add 1, Mul by x, Mul by
// 0.5): five elementwise ops, each rounded to the dtype, where the CPU's gelu kernel computes the
// same function in one pass. Recognised, in any operand order of the commutative ops:
//
//   t = div(x, √2) or mul(x, 1/√2);  e = erf(t);  s = add(e, 1);
//   g = mul(mul(x, s), 0.5) or mul(mul(x, 0.5), s)
//
// with every constant a scalar `constant` node or param of that value (√2 and 1/√2 to within
// the dtype's rounding), t, e, s and the inner mul each read once and no output, all on one
// device whose target fuses (Capabilities::fuses) and runs gelu, in f32 or f64. The last mul
// becomes gelu(x, approximate="none") and keeps its value and name; the other nodes, and the
// constants nothing else reads, are dropped. Results differ from the written-out ops by an ulp or
// so (one rounding instead of five): a compile-time rewrite of the model's arithmetic, as ONNX
// Runtime's GELU fusion makes it, and `--no-fusion` turns it off with the rest of fusion.
#include <cmath>
#include <numbers>
#include <optional>

#include "passes/pass.h"

namespace ferry {

namespace {

class GeluFolder {
 public:
  GeluFolder(Graph &g, const Capabilities &capabilities)
      : g_(g), capabilities_(capabilities), users_(g.users()), isOutput_(g.valueCount(), 0),
        dead_(g.nodeCount(), 0) {
    for (const OutputDecl &out : g.outputs()) isOutput_[static_cast<size_t>(out.value)] = 1;
  }

  int run() {
    int folded = 0;
    for (NodeId id : std::vector<NodeId>(g_.order().begin(), g_.order().end()))
      if (g_.node(id).op == OpKind::Erf && !dead_[static_cast<size_t>(id)] && tryFold(id))
        ++folded;
    if (folded == 0) return 0;
    // The constants the dropped nodes read, now read by nothing.
    std::vector<int> uses(g_.valueCount(), 0);
    for (NodeId id : g_.order())
      if (!dead_[static_cast<size_t>(id)])
        for (ValueId v : g_.node(id).operands) ++uses[static_cast<size_t>(v)];
    for (const OutputDecl &o : g_.outputs()) ++uses[static_cast<size_t>(o.value)];
    for (NodeId id : g_.order()) {
      const Node &n = g_.node(id);
      if (n.op == OpKind::Constant && uses[static_cast<size_t>(n.result)] == 0)
        dead_[static_cast<size_t>(id)] = 1;
    }
    std::vector<NodeId> order;
    for (NodeId id : g_.order())
      if (!dead_[static_cast<size_t>(id)]) order.push_back(id);
    g_.setOrder(std::move(order));
    g_.removeParamsIf([&](ValueId v) { return uses[static_cast<size_t>(v)] == 0; });
    return folded;
  }

 private:
  // The scalar value of `v` when it is a one-element constant or param, else nothing.
  std::optional<double> scalar(ValueId v) const {
    const Value &val = g_.value(v);
    if (val.type.numel() != 1) return std::nullopt;
    if (val.kind == ValueKind::Param) return g_.paramOf(v).data.at(0);
    const Node *p = g_.producer(v);
    if (!p || p->op != OpKind::Constant) return std::nullopt;
    return std::get<TensorData>(p->attrs.at(0)).at(0);
  }

  bool isScalar(ValueId v, double want, double tolerance = 0) const {
    const std::optional<double> s = scalar(v);
    return s && std::fabs(*s - want) <= tolerance * std::fabs(want);
  }

  // The node that produces `v` when it is `op`, `v` has no reader but that one and is no
  // output, and the node is on `device`; else null.
  const Node *only(ValueId v, OpKind op, Device device) const {
    const Node *p = g_.producer(v);
    if (!p || p->op != op || users_[static_cast<size_t>(v)].size() != 1 ||
        isOutput_[static_cast<size_t>(v)] || g_.value(v).device != device)
      return nullptr;
    return p;
  }

  // The one reader of `v`, when it is `op` on `device` (and `v` is no output).
  const Node *reader(ValueId v, OpKind op, Device device) const {
    if (users_[static_cast<size_t>(v)].size() != 1 || isOutput_[static_cast<size_t>(v)])
      return nullptr;
    const Node &u = g_.node(users_[static_cast<size_t>(v)][0]);
    return u.op == op && g_.value(u.result).device == device ? &u : nullptr;
  }

  // The operand of binary `n` that is not `v` (n reads v once).
  static ValueId other(const Node &n, ValueId v) {
    return n.operands[0] == v ? n.operands[1] : n.operands[0];
  }

  bool tryFold(NodeId erfId) {
    const Node &erf = g_.node(erfId);
    const Value &ev = g_.value(erf.result);
    if (!ev.device) return false;
    const Device device = *ev.device;
    const DType t = ev.type.dtype;
    if ((t != DType::F32 && t != DType::F64) || !capabilities_.fuses(device) ||
        !capabilities_.supports(device, OpKind::Gelu, t))
      return false;
    // The dtype's rounding of √2 and 1/√2, with room for one more ulp.
    const double ulp = t == DType::F32 ? 0x1p-23 : 0x1p-51;
    // t = div(x, √2) or mul(x, 1/√2), read by the erf alone.
    const ValueId tv = erf.operands[0];
    ValueId x = -1;
    if (const Node *d = only(tv, OpKind::Div, device);
        d && isScalar(d->operands[1], std::numbers::sqrt2, ulp))
      x = d->operands[0];
    else if (const Node *m = only(tv, OpKind::Mul, device)) {
      for (size_t k = 0; k < 2 && x < 0; ++k)
        if (isScalar(m->operands[k], 1 / std::numbers::sqrt2, ulp)) x = m->operands[1 - k];
    }
    if (x < 0 || g_.value(x).type != ev.type) return false;
    const Node *tNode = g_.producer(tv);
    // s = add(e, 1); then mul(mul(x, s), 0.5) or mul(mul(x, 0.5), s).
    const Node *s = reader(erf.result, OpKind::Add, device);
    if (!s || s->operands[0] == s->operands[1] || !isScalar(other(*s, erf.result), 1)) return false;
    const Node *inner = reader(s->result, OpKind::Mul, device);
    const Node *outer = nullptr;
    const Node *half = nullptr;  // mul(x, 0.5), in the second form
    if (inner && other(*inner, s->result) == x) {
      outer = reader(inner->result, OpKind::Mul, device);
      if (!outer || !isScalar(other(*outer, inner->result), 0.5)) return false;
    } else if (inner) {
      half = only(other(*inner, s->result), OpKind::Mul, device);
      if (!half || !(half->operands[0] == x ? isScalar(half->operands[1], 0.5)
                                            : half->operands[1] == x &&
                                                  isScalar(half->operands[0], 0.5)))
        return false;
      outer = inner;
      inner = half;
    } else {
      return false;
    }
    if (g_.value(outer->result).type != ev.type) return false;
    // The last mul becomes gelu(x): its value, name, pins and readers stay.
    const NodeId outerId = outer->id;
    for (const Node *n : {tNode, &erf, s, inner}) dead_[static_cast<size_t>(n->id)] = 1;
    Node &gelu = g_.node(outerId);
    gelu.op = OpKind::Gelu;
    gelu.attrs = {AttrValue{std::string("none")}};
    gelu.operands.resize(1);
    g_.setOperand(outerId, 0, x);
    gelu.loc = erf.loc;
    return true;
  }

  Graph &g_;
  const Capabilities &capabilities_;
  std::vector<std::vector<NodeId>> users_;
  std::vector<uint8_t> isOutput_;
  std::vector<uint8_t> dead_;
};

}  // namespace

int foldGelus(Graph &g, const Capabilities &capabilities) {
  return GeluFolder(g, capabilities).run();
}

}  // namespace ferry
