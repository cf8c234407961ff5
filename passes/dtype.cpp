// passes/dtype.cpp — dtype propagation: decide the dtype every op computes in under the policy,
// then insert the casts that make its operands agree, or reject the graph (strict).
//
// Semantics (DESIGN.md "Dtype semantics"; the policy is CompileOptions::dtype). A node's compute
// dtype is the first of these that applies:
//   a. its pin (`@f16` in .fy, Builder::computeIn), in every policy;
//   b. autocast(low) only: AutocastLow ops (the GEMMs: matmul, linear, conv2d) compute in `low`
//      when their promoted dtype is f16, bf16 or f32 (f64 and integers are left alone, as
//      torch.autocast leaves them); AutocastF32 ops (softmax, log_softmax, layer_norm,
//      batch_norm, sum, mean, max, exp, log, pow) compute in f32 when they would compute in f16
//      or bf16. The lists are the op table's trait column (ir/ops.def);
//   c. the op's DTypeRule over its data operands with PyTorch's result_type (ResultType, with
//      its zero-dim rule): Promote -> the common dtype, PromoteFloat -> the common dtype made
//      floating, Compare -> the common dtype (the result is bool). Keep and SumInt ops have one
//      data operand and read it as it is.
// strict: SameDTypeOperands ops (matmul, linear, conv2d, batch_norm, layer_norm) whose data
// operands differ in dtype are errors (eager PyTorch raises), all reported in one run and without
// cascades: a node fed by a rejected one is not judged by that operand. A value whose type verify
// rejected (PassContext::rejected, Untyped) is rejected here from the start, and a node verify
// reported is not reported again if it is re-inferred. Each error lists every operand with why it
// has its dtype (explainDType) and the cast that fixes it. Elementwise ops promote
// with casts, as PyTorch does internally. promote: rule c for every op, GEMMs and norms included.
// Scalar literals (`add(%x, 1.0)`, ir/literal.h) promote as PyTorch's Python scalars do and are
// never cast: a literal whose reader computes in another dtype is retyped in place.
// Only data operands are cast (`:bool`/`:int` operands never are); cast and constant (FromAttr)
// compute nothing and ignore pins. A GEMM or conv in f16/bf16 accumulates in f32: that is the
// contract of every low-precision GEMM/conv kernel, so it is recorded in its result's dtype reason,
// not as a pin (a pin would read back as a user's constraint and change the other policies).
//
// Invariants afterwards (when no error is reported):
//   - Unpinned Promote/PromoteFloat nodes: every data operand has the result dtype; Compare
//     nodes: their data operands share one dtype; pinned nodes: data operands have the pinned
//     dtype (the rule may still fix the result: exp @i32 gives f32); every result type is what
//     inferType gives.
//   - At most one cast per (value, dtype, device). It is `inserted`, on its consumer's device
//     (a transfer's: on the sending side), which is where the value it reads is; it sits right
//     after the definition of that value (after the producer, or after the transfer whose result
//     is read), is named `<value>.<dtype>` and records why in its reasons.
//   - Graph outputs keep the dtype and the name they had before the pass.
//
// Phases:
//   1. visit    per node in order: compute dtype (pin > autocast > rule) and the strict check;
//               casts of data operands that differ, deduplicated; the result re-typed when an
//               operand changed (the rule's dtype, the same shape); reasons recorded
//   2. outputs  an output whose dtype changed reads a cast back to its old dtype, and that cast
//               takes over the output's name
//   3. order    every cast is spliced in right after the definition it reads
//
// Idempotent: a second run finds every data operand in its node's compute dtype and every output
// in its dtype, so it inserts nothing and changes no type. Linear time: one walk over nodes and
// operands, no allocation for a node that keeps its dtypes; names and reason strings only for
// inserted casts and for nodes that change, are pinned or are autocast (reason texts cached),
// inferType only to word an error.
#include <algorithm>
#include <optional>
#include <unordered_map>
#include <unordered_set>

#include "ir/id_map.h"
#include "ir/literal.h"
#include "ir/printer.h"
#include "passes/explain.h"
#include "passes/pass.h"

namespace ferry {

namespace {

using Policy = DTypePolicy::Kind;

bool isLowFloat(DType t) { return t == DType::F16 || t == DType::BF16; }

// Where a node's compute dtype comes from; None: it reads its operands as they are.
enum class Source : uint8_t { None, Rule, Pin, AutocastLow, AutocastF32 };

struct Compute {
  Source source = Source::None;
  DType dtype = DType::F32;
};

// How messages name an operand: PyTorch says "input" for the first operand of nn layers.
std::string label(const OperandSpec &s) { return s.name == "x" ? "input" : s.name; }

std::string name(DType t) { return std::string(dtypeName(t)); }

class DTypePass {
 public:
  DTypePass(Graph &g, PassContext &ctx)
      : g_(g), ctx_(ctx), policy_(ctx.options.dtype), firstNew_(g.valueCount()),
        flags_(g.valueCount(), 0), position_(g.nodeCount(), -1) {
    // A value whose type an earlier pass rejected takes no part in any check (no cascade).
    for (size_t v = 0; v < ctx.rejected.size() && v < flags_.size(); ++v)
      if (ctx.rejected[v] == Rejected::Untyped) flags_[v] = kPoisoned;
    std::span<const NodeId> order = g.order();
    for (size_t i = 0; i < order.size(); ++i) position_[order[i]] = static_cast<int32_t>(i);
    for (const OutputDecl &o : g.outputs()) outputDTypes_.push_back(g.value(o.value).type.dtype);
  }

  void run() {
    std::vector<NodeId> order(g_.order().begin(), g_.order().end());
    for (NodeId id : order) visit(id);
    castOutputs();
    if (!pending_.empty()) splice(order);
  }

 private:
  static constexpr uint8_t kRetyped = 1, kPoisoned = 2;

  // Casts made by this run are new values: changed, never poisoned.
  bool changed(ValueId v) const {
    return static_cast<size_t>(v) >= firstNew_ || (flags_[v] & kRetyped);
  }
  bool poisoned(ValueId v) const {
    return static_cast<size_t>(v) < firstNew_ && (flags_[v] & kPoisoned);
  }
  bool isData(const OpInfo &op, size_t i) const { return op.operand(i).role == OperandRole::Data; }

  // ---- 1. visit ------------------------------------------------------------------------------

  void visit(NodeId id) {
    const Node &n = g_.node(id);
    const OpInfo &op = n.info();
    ResultType common;
    std::optional<DType> first;
    bool poisonedIn = false, changedIn = false, mixed = false;
    for (size_t i = 0; i < n.operands.size(); ++i) {
      ValueId o = n.operands[i];
      changedIn = changedIn || changed(o);
      if (poisoned(o)) {
        poisonedIn = true;
        continue;
      }
      if (!isData(op, i)) continue;
      const TensorType &t = g_.value(o).type;
      mixed = mixed || (first && *first != t.dtype);
      if (!first) first = t.dtype;
      addOperandType(common, g_, o);
    }
    if (policy_.kind == Policy::Strict && !n.pinDType && op.is(OpTrait::SameDTypeOperands) &&
        mixed) {
      reportMismatch(id);
      poisonedIn = true;
    }
    if (poisonedIn) {
      flags_[n.result] |= kPoisoned;
      return;
    }
    Compute c;
    if (op.dtypeRule != DTypeRule::FromAttr && first) c = decide(n, op, *first, common.get());

    const SharedText *detail = nullptr;  // why, built only when something is cast or chosen
    bool casted = false;
    if (c.source != Source::None) {
      for (size_t i = 0; i < g_.node(id).operands.size(); ++i) {
        ValueId o = g_.node(id).operands[i];
        if (!isData(op, i) || g_.value(o).type.dtype == c.dtype) continue;
        if (isLiteral(g_, o)) {  // its one reader is this node
          retypeLiteral(g_, o, c.dtype);
          g_.dtypeReason(o) = Reason{Reason::Kind::FromConsumer, g_.node(id).result, {}, {}};
          changedIn = true;
          continue;
        }
        if (!detail) detail = &describe(id, c);
        const Node &m = g_.node(id);
        // A cast runs where its consumer does; one feeding a transfer (pinned to a dtype) runs
        // on the sending side, where its operand is.
        std::optional<Device> device =
            m.op == OpKind::Transfer ? g_.value(o).device : g_.value(m.result).device;
        ValueId cast = castOf(o, c.dtype, device, Location(m.loc), *detail);
        g_.setOperand(id, i, cast);
        casted = changedIn = true;
      }
    }
    if (changedIn && !reinfer(id, c, detail)) return;

    Value &result = g_.value(g_.node(id).result);
    if (c.source == Source::Pin || c.source == Source::AutocastLow ||
        c.source == Source::AutocastF32 || casted) {
      if (!detail) detail = &describe(id, c);
      g_.dtypeReason(result.id) = Reason{Reason::Kind::Rule, -1, g_.node(id).loc, *detail};
    } else if (flags_[result.id] & kRetyped) {
      g_.dtypeReason(result.id) = Reason{Reason::Kind::Inherited, firstChangedData(id), {}, {}};
    }
  }

  Compute decide(const Node &n, const OpInfo &op, DType first, DType common) const {
    if (n.pinDType) return {Source::Pin, *n.pinDType};
    std::optional<DType> byRule;
    switch (op.dtypeRule) {
      case DTypeRule::Promote:
      case DTypeRule::PromoteFloat: byRule = ruleDType(op.dtypeRule, first, common); break;
      case DTypeRule::Compare: byRule = common; break;
      default: break;
    }
    if (policy_.kind == Policy::Autocast) {
      DType base = byRule.value_or(first);
      if (op.is(OpTrait::AutocastLow) && (isLowFloat(base) || base == DType::F32))
        return {Source::AutocastLow, policy_.low};
      if (op.is(OpTrait::AutocastF32) && isLowFloat(base)) return {Source::AutocastF32, DType::F32};
    }
    if (byRule) return {Source::Rule, *byRule};
    return {};
  }

  // Re-types a node whose operands changed dtype; false (and an error) when the op does not take
  // its operands' new dtypes. The pass changes dtypes, never shapes, and no shape rule looks at
  // dtypes, so the result keeps its shape and takes the dtype the op's rule gives (verify()
  // re-checks both with inferType after the pass). inferType runs only to word an error, so the
  // common path builds no strings.
  bool reinfer(NodeId id, const Compute &c, const SharedText *detail) {
    const Node &n = g_.node(id);
    const OpInfo &op = n.info();
    if (op.dtypeRule == DTypeRule::FromAttr) return true;
    ResultType common;
    std::optional<DType> first;
    bool accepted = true;
    for (size_t i = 0; i < n.operands.size(); ++i) {
      const TensorType &t = g_.value(n.operands[i]).type;
      switch (op.operand(i).role) {
        case OperandRole::Bool: accepted = accepted && t.dtype == DType::Bool; continue;
        case OperandRole::Index:
          accepted = accepted && (t.dtype == DType::I32 || t.dtype == DType::I64);
          continue;
        case OperandRole::Data: accepted = accepted && acceptsDType(op.accepts, t.dtype); break;
      }
      if (!first) first = t.dtype;
      common.add(t.dtype, t.rank() == 0);
    }
    if (!accepted) {
      // A node verify reported already (its operands' kinds) is not reported again.
      if (ctx_.rejectedOf(n.result) == Rejected::No)
        reportInferError(id, c, detail);
      else
        flags_[n.result] |= kPoisoned;
      return false;
    }
    if (!first) return true;  // no data operands: nothing the rule reads changed
    Value &result = g_.value(n.result);
    DType dtype = ruleDType(op.dtypeRule, *first, common.get());
    if (dtype != result.type.dtype) {
      result.type.dtype = dtype;
      flags_[result.id] |= kRetyped;
    }
    return true;
  }

  void reportInferError(NodeId id, const Compute &c, const SharedText *detail) {
    const Node &n = g_.node(id);
    std::vector<TensorType> types;
    for (ValueId o : n.operands) types.push_back(g_.value(o).type);
    InferResult r = inferType(n.info(), types, n.attrs);
    const auto *err = std::get_if<InferError>(&r);
    FERRY_CHECK(err) << "'" << n.info().name << "' takes operands its Accepts rejects";
    Diagnostic &d = ctx_.diags.error(err->code, n.loc, err->message);
    if (detail) d.detail("its operands were cast to " + name(c.dtype) + ": " + *detail, n.loc);
    for (size_t i = 0; i < n.operands.size(); ++i) {
      const ValueId o = n.operands[i];
      const Reason &why = g_.dtypeReason(o);
      if (static_cast<size_t>(o) < firstNew_ && (flags_[o] & kRetyped) && !why.detail.empty())
        d.detail(valueRef(g_, o) + " is " + name(g_.value(o).type.dtype) + ": " + why.detail,
                 why.loc.known() ? why.loc : definitionLoc(g_, o));
    }
    for (size_t i = 0; i < n.operands.size(); ++i)
      if (DType t = g_.value(n.operands[i]).type.dtype; wrongOperandKind(n.info(), i, t))
        d.fix(operandKindFix(g_, n, i));
    flags_[n.result] |= kPoisoned;
  }

  ValueId firstChangedData(NodeId id) const {
    const Node &n = g_.node(id);
    for (size_t i = 0; i < n.operands.size(); ++i)
      if (isData(n.info(), i) && changed(n.operands[i])) return n.operands[i];
    return -1;
  }

  // The reason text for a node's compute dtype, from its operands as they are before casting.
  // Texts that depend only on the op or the operand dtypes are built once per run: a large graph
  // repeats a handful of them.
  const SharedText &describe(NodeId id, const Compute &c) {
    const Node &n = g_.node(id);
    const OpInfo &op = n.info();
    uint64_t key = static_cast<uint64_t>(c.source) << 60 | static_cast<uint64_t>(c.dtype) << 56;
    if (c.source == Source::Pin) {
      uncached_ = "pinned @" + name(c.dtype) + " at " + n.loc.str();
      return uncached_;
    }
    if (c.source != Source::Rule) {
      key |= static_cast<uint64_t>(n.op);
    } else {
      // Six bits per data operand (present, dtype, zero-dim); more than eight: not cached.
      int shift = 0;
      for (size_t i = 0; i < n.operands.size() && key != 0; ++i) {
        if (!isData(op, i)) continue;
        const TensorType &t = g_.value(n.operands[i]).type;
        key = shift == 48
                  ? 0
                  : key | (static_cast<uint64_t>(t.dtype) << 1 | (t.rank() == 0) | 32) << shift;
        shift += 6;
      }
    }
    if (key != 0)
      if (auto it = details_.find(key); it != details_.end()) return it->second;
    const std::string opName(op.name);
    std::string s;
    if (c.source == Source::AutocastLow) {
      s = "autocast: " + opName + " computes in " + name(c.dtype) + " (f32 accumulation)";
    } else if (c.source == Source::AutocastF32) {
      s = "autocast: " + opName + " computes in f32";
    } else {
      s = "promote: ";
      bool firstOperand = true;
      for (size_t i = 0; i < n.operands.size(); ++i) {
        if (!isData(op, i)) continue;
        const TensorType &t = g_.value(n.operands[i]).type;
        s += (firstOperand ? "" : " + ") + name(t.dtype) + (t.rank() == 0 ? "[]" : "");
        firstOperand = false;
      }
      s += " -> " + name(c.dtype);
    }
    if (key == 0) {
      uncached_ = SharedText(s);
      return uncached_;
    }
    return details_.emplace(key, SharedText(s)).first->second;
  }

  // The one cast of `v` to `dtype` on `device`, made on first request.
  ValueId castOf(ValueId v, DType dtype, std::optional<Device> device, Location loc,
                 const SharedText &detail) {
    uint64_t key =
        static_cast<uint64_t>(static_cast<uint32_t>(v)) << 32 | static_cast<uint64_t>(dtype) << 24;
    if (device)
      key |= uint64_t{1} << 23 | static_cast<uint64_t>(device->kind) << 16 |
             static_cast<uint64_t>(device->index);
    auto [cast, fresh] = casts_.tryEmplace(key, -1);
    if (!fresh) return cast;

    const OpInfo &castOp = opInfo(OpKind::Cast);
    Attrs attrs(castOp.attrs.size());
    attrs[castOp.attrIndex("to")] = dtype;
    const Value &src = g_.value(v);
    TensorType type{dtype, src.type.shape};
    int32_t at = src.kind == ValueKind::Result ? position_[src.def] : -1;
    NodeId c = g_.createNode(
        NodeSpec{OpKind::Cast, {v}, std::move(attrs), std::nullopt, std::nullopt, loc},
        src.name + "." + name(dtype), std::move(type), Graph::Naming::Unique);
    FERRY_CHECK(static_cast<size_t>(c) == position_.size()) << "node ids are not dense";
    g_.node(c).inserted = true;
    position_.push_back(at);
    pending_.emplace_back(at, c);
    Value &r = g_.value(g_.node(c).result);
    r.device = device;
    g_.deviceReason(r.id) = Reason{Reason::Kind::Inserted, v, loc, {}};
    g_.dtypeReason(r.id) = Reason{Reason::Kind::Rule, v, std::move(loc), detail};
    ++ctx_.stats.castsInserted;
    cast = r.id;  // nothing was inserted into casts_ since tryEmplace: the reference holds
    return r.id;
  }

  // ---- strict diagnostics ----------------------------------------------------------------------

  // The value a user wrote, looking through transfers the compiler inserted.
  ValueId userValue(ValueId v) const {
    for (const Node *p = g_.producer(v); p && p->inserted && p->op == OpKind::Transfer;
         p = g_.producer(v))
      v = p->operands[0];
    return v;
  }

  void reportMismatch(NodeId id) {
    const Node &n = g_.node(id);
    const OpInfo &op = n.info();
    std::optional<size_t> a, b;
    ResultType common;
    for (size_t i = 0; i < n.operands.size(); ++i) {
      if (!isData(op, i) || poisoned(n.operands[i])) continue;
      const TensorType &t = g_.value(n.operands[i]).type;
      common.add(t.dtype, t.rank() == 0);
      if (!a)
        a = i;
      else if (!b && t.dtype != g_.value(n.operands[*a]).type.dtype)
        b = i;
    }
    auto dtypeOf = [&](size_t i) { return name(g_.value(n.operands[i]).type.dtype); };
    Diagnostic &d = ctx_.diags.error("dtype", n.loc,
                                     "'" + std::string(op.name) + "' (" + valueRef(g_, n.result) +
                                         ") " + label(op.operand(*a)) + " type " + dtypeOf(*a) +
                                         " and " + label(op.operand(*b)) + " type " + dtypeOf(*b) +
                                         " should be the same");
    // One line per operand, in the columns of device errors: operand, value, type, device, and
    // why it has its dtype.
    std::vector<std::vector<std::string>> rows;
    for (size_t i = 0; i < n.operands.size(); ++i) {
      const Value &v = g_.value(n.operands[i]);
      rows.push_back({"operand " + std::to_string(i) + " (" + label(op.operand(i)) + ")",
                      valueRef(g_, v.id), v.type.str(), "@" + (v.device ? v.device->str() : "?"),
                      explainDType(g_, v.id)});
    }
    std::vector<std::string> lines = alignColumns(rows);
    for (size_t i = 0; i < lines.size(); ++i)
      d.detail(std::move(lines[i]), definitionLoc(g_, n.operands[i]));
    DType target = common.get();
    for (size_t i = 0; i < n.operands.size(); ++i) {
      ValueId o = n.operands[i];
      if (!isData(op, i) || poisoned(o) || g_.value(o).type.dtype == target) continue;
      std::string user = valueRef(g_, userValue(o));
      d.fix("cast " + user + " to " + name(target) + ": cast(" + user + ", to=" + name(target) +
            ")");
    }
    d.fix("or compile with dtype=promote");
  }

  // ---- 2. outputs ------------------------------------------------------------------------------

  void castOutputs() {
    for (size_t i = 0; i < g_.outputs().size(); ++i) {
      ValueId v = g_.outputs()[i].value;
      DType want = outputDTypes_[i];
      if (poisoned(v) || g_.value(v).type.dtype == want) continue;
      std::string outName = g_.value(v).name;
      ValueId c = castOf(v, want, g_.value(v).device, Location(g_.outputs()[i].loc),
                         "output " + valueRef(outName) + " keeps its dtype " + name(want));
      g_.setOutputValue(i, c);
      // Callers feed and fetch by name: the output keeps it, the retyped value gets another.
      if (renamed_.insert(c).second) {
        g_.rename(v, g_.uniqueName(outName + "." + name(g_.value(v).type.dtype)));
        g_.rename(c, outName);
      }
    }
  }

  // ---- 3. order --------------------------------------------------------------------------------

  void splice(const std::vector<NodeId> &order) {
    std::stable_sort(pending_.begin(), pending_.end(),
                     [](const auto &x, const auto &y) { return x.first < y.first; });
    std::vector<NodeId> out;
    out.reserve(order.size() + pending_.size());
    size_t p = 0;
    while (p < pending_.size() && pending_[p].first < 0) out.push_back(pending_[p++].second);
    for (size_t i = 0; i < order.size(); ++i) {
      out.push_back(order[i]);
      while (p < pending_.size() && pending_[p].first == static_cast<int32_t>(i))
        out.push_back(pending_[p++].second);
    }
    g_.setOrder(std::move(out));
  }

  Graph &g_;
  PassContext &ctx_;
  DTypePolicy policy_;
  size_t firstNew_;                  // values from this id on were made by this run
  std::vector<uint8_t> flags_;       // per original value: kRetyped, kPoisoned
  std::vector<int32_t> position_;    // per node: its index in the order (casts: their anchor's)
  std::vector<DType> outputDTypes_;  // per output: its dtype before the pass
  IdMap casts_;                      // (value, dtype, device) -> cast
  std::vector<std::pair<int32_t, NodeId>> pending_;   // casts and the index they follow (-1: top)
  std::unordered_set<ValueId> renamed_;               // output casts that took an output's name
  std::unordered_map<uint64_t, SharedText> details_;  // describe()'s texts; lookup only
  SharedText uncached_;                               // describe()'s latest text that is not cached
};

}  // namespace

void assignDTypes(Graph &graph, PassContext &ctx) { DTypePass(graph, ctx).run(); }

}  // namespace ferry
