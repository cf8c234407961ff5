// passes/simplify.cpp — after placement and dtype: fold casts of params and constants, remove
// no-op and round-trip casts and transfers, put each cast on the side of its transfer that moves
// fewer bytes, merge duplicates, remove dead nodes.
//
// Precondition: the graph is placed and typed (every value has a device; every non-transfer
// node's operands are on its device). Postcondition: the same, with the same outputs (values,
// devices, dtypes and names), nodes in topological order, compiler-made nodes marked inserted.
//
// One sweep visits the live nodes in order; operands are first redirected to the values that
// replaced them, then the rules below are tried on the node until none applies, then the node is
// merged with an identical earlier one if there is one (CSE: op, operands, attributes, device,
// compute dtype). A new node made by a rule is visited the moment it is made (so a cast moved
// onto a param folds at once and a new transfer merges with an existing one) and goes directly
// after its operand's producer (the front of the graph for inputs and params), as placement puts
// transfers, so copies can overlap compute.
//   1. fold       cast(param p, T) -> p's data converted (as the interpreter's cast does): p
//                 itself when the cast is its only reader (same value, name and place; the
//                 common case of a weight stored in one dtype), else a new param `p.T` on the
//                 cast's device; ParamDecl::foldedFrom records the declared dtype. zeros/ones,
//                 and randn where randn(T) is bit-identical, keep their initializer.
//                 cast(constant) -> constant.
//                 Transfers of params stay: lowering makes them load-time copies, done once per
//                 Session (passes/load_time.h).
//   2. no-ops     cast to the operand's dtype, transfer to the operand's device, identity;
//      round      transfer(transfer(x, B), A) with x on A -> x; a single-use hop A->B->C becomes
//      trips      A->C; cast(cast(x: S, M), T) -> cast(x, T) when S -> M is lossless (kLossless),
//                 so a lossless S -> M -> S disappears and f32 -> f16 -> f32 never does.
//   3. joint      cast(transfer(x, B), T) with T narrower than x -> transfer(cast(x, T), B);
//                 transfer(cast(x, T), B) with T wider than x -> cast(transfer(x, B), T);
//                 cast(transfer(cast(x, M), B), T) with x -> M lossless -> cast(transfer(x, B), T);
//                 transfer(p folded here to a wider dtype, B) -> cast(transfer(p, B)) (unfolded).
//                 Only where the bypassed node has no other reader (a rewrite never adds a
//                 transfer or a cast), the moved cast has no user pin elsewhere and the device has
//                 a cast kernel. The first two swap the roles of the two nodes in place (the
//                 downstream value keeps its name); the moved cast's device reason says why
//                 ("2 bytes/elem instead of 4").
//   4. merge      identical pure nodes (all ops are pure): the first in order is kept. Only nodes
//                 whose every operand has another reader can have an equal node; the others stay
//                 out of the CSE table until an operand gains a reader. Literals are never
//                 merged: each keeps its one reader (ir/literal.h).
//   5. dead code  reference counts: a node dies when nothing reads its result; a replaced node
//                 dies at once. Params nothing reads are dropped at the end.
// Rules look only backwards (operands and their producers, final when visited in order), except
// the single-reader conditions of 2-3, which a later merge or death can make true: when a value a
// rule was declined for is left with one reader, another sweep runs. Every rule removes nodes,
// lowers the bytes moved or makes a node read an earlier value, so this reaches a fixed point, and
// a second run of the pass changes nothing (idempotent). Time is linear in the graph: counts per
// value, an open-addressing table for CSE (looked up, never iterated), no node made for a cast that
// folds at once.
//
// Outputs keep their names (apps read outputs by name): a replacement value takes the replaced
// output's name when it is an internal result or a param made here, else an `identity` node
// carries the name.
//
// Statistics: castsFolded = folded params/constants in the final graph; castsRemoved and
// transfersRemoved = the net drop of cast and transfer nodes (folded casts not counted);
// nodesRemoved = other nodes of the input that are gone.
#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "ir/id_map.h"
#include "ir/printer.h"
#include "passes/cse_impl.h"
#include "passes/pass.h"

namespace ferry {

namespace {

// kLossless[S][M]: every value of S is exactly representable in M, so S -> M -> S is the
// identity and S -> M -> T equals S -> T. bool goes anywhere; u8 and i8 into the wider integers
// and every float (bf16 holds integers up to 256 exactly); i32 into i64 and f64 (not f32: 24-bit
// significand); f16 and bf16 into f32 and f64 (not into each other: range, precision); f32 into
// f64. Indexed in FERRY_DTYPES order: bool u8 i8 i32 i64 f16 bf16 f32 f64.
constexpr bool kLossless[9][9] = {
    {1, 1, 1, 1, 1, 1, 1, 1, 1},  // bool
    {0, 1, 0, 1, 1, 1, 1, 1, 1},  // u8
    {0, 0, 1, 1, 1, 1, 1, 1, 1},  // i8
    {0, 0, 0, 1, 1, 0, 0, 0, 1},  // i32
    {0, 0, 0, 0, 1, 0, 0, 0, 0},  // i64
    {0, 0, 0, 0, 0, 1, 0, 1, 1},  // f16
    {0, 0, 0, 0, 0, 0, 1, 1, 1},  // bf16
    {0, 0, 0, 0, 0, 0, 0, 1, 1},  // f32
    {0, 0, 0, 0, 0, 0, 0, 0, 1},  // f64
};

static_assert(kAllDTypes.size() == 9 && static_cast<int>(DType::I32) == 3 &&
                  static_cast<int>(DType::BF16) == 6 && static_cast<int>(DType::F64) == 8,
              "kLossless rows and columns follow FERRY_DTYPES");

bool lossless(DType from, DType to) {
  return kLossless[static_cast<int>(from)][static_cast<int>(to)];
}

// randn stores double samples per dtype, f16 and bf16 through f32; converting randn(S) to T gives
// exactly randn(T) when S keeps at least f32's rounding of each sample and T does not need more.
bool randnExact(DType from, DType to) {
  if (!isFloating(to)) return false;
  return from == DType::F64 || (from == DType::F32 && to != DType::F64);
}

std::string deviceSuffix(Device d) {
  return (d.isHost() ? "cpu" : "cuda") +
         (d.isHost() && d.index == 0 ? "" : std::to_string(d.index));
}

std::string bytesPerElem(DType t) {
  size_t n = dtypeSize(t);
  return std::to_string(n) + (n == 1 ? " byte" : " bytes");
}

class Simplifier {
 public:
  Simplifier(Graph &graph, PassContext &ctx) : g_(graph), ctx_(ctx) {}

  void run() {
    const auto nodesBefore = static_cast<NodeId>(g_.nodeCount());
    const Counts before = count([](NodeId) { return true; });
    countUses(before.casts, before.transfers);
    do {
      again_ = false;
      sweep();
    } while (again_);
    if (paramUnused_) g_.removeParamsIf([&](ValueId v) { return uses_[v] == 0; });
    nameFoldsAfterTheirSources();
    canonicalOrder(g_);

    // Folded constants are new nodes: they count as folded, not among the input's others.
    const Counts after = count([&](NodeId id) { return id < nodesBefore; });
    int folded = after.folded;
    if (!foldMemo_.empty() || !unfolded_.empty())
      for (const ParamDecl &p : g_.params()) folded += foldedParam(p.value);
    // No rule adds a transfer, nor a cast beyond the casts it folds.
    FERRY_CHECK(before.casts - after.casts - folded >= 0 && before.transfers >= after.transfers)
        << "simplify added casts or transfers";
    ctx_.stats.castsFolded += folded;
    ctx_.stats.castsRemoved += before.casts - after.casts - folded;
    ctx_.stats.transfersRemoved += before.transfers - after.transfers;
    ctx_.stats.nodesRemoved += before.others - after.others;
  }

 private:
  enum class Outcome { None, Changed, Replaced };

  // A fold that replaced its source param entirely takes the source's name: apps and
  // checkpoints address weights by name, so `w` stays `w` in its new dtype. Two folds of one
  // source (to f16 and to bf16), a source still in use, and a fold that carries an output's
  // name keep their names. The dead source takes the fold's generated name.
  void nameFoldsAfterTheirSources() {
    auto live = [&](ValueId v) { return g_.value(v).def >= 0; };
    std::vector<std::pair<ValueId, ValueId>> bySource;  // (source, its live fold)
    for (const auto &[folded, source] : folded_)
      if (live(folded)) bySource.emplace_back(source, folded);
    std::sort(bySource.begin(), bySource.end());
    for (size_t i = 0; i < bySource.size(); ++i) {
      const auto [source, folded] = bySource[i];
      const bool alone = (i == 0 || bySource[i - 1].first != source) &&
                         (i + 1 == bySource.size() || bySource[i + 1].first != source);
      if (alone && !live(source) && outputs_[folded] == 0) g_.swapNames(source, folded);
    }
  }

  // Casts, transfers, and other nodes for which `other(id)` holds (the input graph's own).
  struct Counts {
    int casts = 0, transfers = 0, others = 0, folded = 0;
  };
  template <class Pred> Counts count(Pred other) const {
    Counts c;
    for (NodeId id : g_.order()) {
      OpKind op = g_.node(id).op;
      c.casts += op == OpKind::Cast;
      c.transfers += op == OpKind::Transfer;
      c.others += op != OpKind::Cast && op != OpKind::Transfer && other(id);
      c.folded += id < static_cast<NodeId>(folds_.size()) && folds_[id];
    }
    return c;
  }

  // --- Bookkeeping: reference counts, replacement, death, new nodes ----------------------------

  void grow() {
    repl_.resize(g_.valueCount(), -1);
    uses_.resize(g_.valueCount(), 0);
    outputs_.resize(g_.valueCount(), 0);
    fresh_.resize(g_.valueCount(), 0);
    watched_.resize(g_.valueCount(), 0);
    alone_.resize(g_.valueCount(), -1);
    dead_.resize(g_.nodeCount(), 0);
  }

  void countUses(int casts, int transfers) {
    // Rules add values (folds, moved casts, names kept by identities), at most a few per cast,
    // transfer or output: room for them now, so no array is copied (and faulted in) mid-sweep.
    const size_t room = g_.valueCount() + 2 * (casts + transfers) + 2 * g_.outputs().size() + 64;
    for (auto *a : {&repl_, &uses_, &outputs_, &alone_}) a->reserve(room);
    for (auto *a : {&fresh_, &watched_}) a->reserve(room);
    foldMemo_.reserve(static_cast<size_t>(casts));
    unfolded_.reserve(static_cast<size_t>(casts));
    grow();
    for (NodeId id : g_.order())
      for (ValueId o : g_.node(id).operands) ++uses_[o];
    for (const OutputDecl &o : g_.outputs()) {
      ++uses_[o.value];
      ++outputs_[o.value];
    }
    for (auto it = g_.order().rbegin(); it != g_.order().rend(); ++it)
      if (uses_[g_.node(*it).result] == 0) kill(*it);
    for (const ParamDecl &p : g_.params()) paramUnused_ = paramUnused_ || uses_[p.value] == 0;
  }

  ValueId resolve(ValueId v) {
    ValueId r = v;
    while (repl_[r] >= 0) r = repl_[r];
    while (repl_[v] >= 0) {  // path compression
      ValueId next = repl_[v];
      repl_[v] = r;
      v = next;
    }
    return r;
  }

  const Node *producer(ValueId v) const { return g_.producer(v); }

  // Marks `id` dead and releases its operands, and so on backwards (no recursion: chains of dead
  // nodes can be as long as the graph).
  void kill(NodeId id) {
    killStack_.assign(1, id);
    while (!killStack_.empty()) {
      NodeId n = killStack_.back();
      killStack_.pop_back();
      if (dead_[n]) continue;
      dead_[n] = 1;
      for (ValueId o : g_.node(n).operands) {
        dropUse(o);
        if (uses_[o] == 0 && g_.value(o).kind == ValueKind::Result)
          killStack_.push_back(g_.value(o).def);
      }
    }
  }

  // One reader fewer. A value a rule was declined for (it had other readers) that is down to
  // one reader calls for another sweep; a param nobody reads is dropped at the end.
  void dropUse(ValueId v) {
    const int32_t left = --uses_[v];
    if (left == 1 && watched_[v]) again_ = true;
    if (left == 0 && g_.value(v).kind == ValueKind::Param) paramUnused_ = true;
  }

  void release(ValueId v) {
    dropUse(v);
    if (uses_[v] == 0 && g_.value(v).kind == ValueKind::Result) kill(g_.value(v).def);
  }

  // `k` more readers of `v`. A node left out of the CSE table because it alone read `v` may now
  // have an equal node: it goes into the table, or waits on another operand read by it alone.
  // Finding an equal node already there takes another sweep (the two are merged in order then).
  void addUses(ValueId v, int32_t k) {
    const bool wasAlone = uses_[v] == 1;
    uses_[v] += k;
    if (!wasAlone || uses_[v] < 2 || alone_[v] < 0) return;
    const NodeId r = alone_[v];
    alone_[v] = -1;
    if (dead_[r]) return;
    for (ValueId o : g_.node(r).operands)
      if (uses_[o] == 1) {
        alone_[o] = r;
        return;
      }
    NodeId *twin = cse_.findOrInsert(r);
    if (twin && *twin != r && !dead_[*twin]) again_ = true;
  }

  void setOperand(NodeId id, size_t i, ValueId v) {
    ValueId old = g_.node(id).operands[i];
    addUses(v, 1);
    g_.setOperand(id, i, v);
    release(old);
  }

  bool canTakeName(ValueId x) const {
    const Value &v = g_.value(x);
    return outputs_[x] == 0 && (v.kind == ValueKind::Result || fresh_[x]);
  }

  // The index of `v`'s record in unfolded_, or -1 when it was not folded in place.
  int32_t inPlaceRecord(ValueId v) const {
    return static_cast<size_t>(v) < inPlaceAt_.size() ? inPlaceAt_[static_cast<size_t>(v)] : -1;
  }

  // A param this pass made by folding, or converted in place.
  bool foldedParam(ValueId v) const {
    return (v < static_cast<ValueId>(fresh_.size()) && fresh_[v] &&
            g_.value(v).kind == ValueKind::Param) ||
           inPlaceRecord(v) >= 0;
  }

  // Every reader of `y` (nodes, outputs) reads `x` from now on; y's producer dies.
  void replace(ValueId y, ValueId x) {
    FERRY_CHECK(g_.value(x).type == g_.value(y).type && g_.value(x).device == g_.value(y).device)
        << "replacing %" << g_.value(y).name << " by %" << g_.value(x).name
        << " of another type or device";
    if (outputs_[y] > 0) x = takeOutputName(y, x);  // may add a node: no references held here
    repl_[y] = x;
    addUses(x, uses_[y]);
    uses_[y] = 0;
    outputs_[x] += outputs_[y];
    if (outputs_[y] > 0) {
      for (size_t i = 0; i < g_.outputs().size(); ++i)
        if (g_.outputs()[i].value == y) g_.setOutputValue(i, x);
      outputs_[y] = 0;
    }
    if (g_.value(y).kind == ValueKind::Result) kill(g_.value(y).def);
  }

  // The value that will carry output `y`'s name: `x` renamed, or an identity of `x`.
  ValueId takeOutputName(ValueId y, ValueId x) {
    std::string name = g_.value(y).name;
    g_.rename(y, g_.uniqueName(name + ".replaced"));
    if (canTakeName(x)) {
      g_.rename(x, name);
      return x;
    }
    const Node *p = producer(y);
    NodeId id = g_.createNode(
        {OpKind::Identity, {x}, {}, std::nullopt, std::nullopt, p ? p->loc : Location{}}, name,
        g_.value(x).type);
    Value &r = g_.value(g_.node(id).result);
    r.device = g_.value(x).device;
    g_.deviceReason(r.id) = {
        Reason::Kind::Inherited, x, {}, "keeps the name of output " + valueRef(name)};
    g_.dtypeReason(r.id) = {Reason::Kind::Inherited, x, {}, ""};
    g_.node(id).inserted = true;
    grow();
    addUses(x, 1);
    attach(id, x);
    return r.id;
  }

  // Places new node `id` directly after the producer of `operand` (front: inputs, params).
  void attach(NodeId id, ValueId operand) {
    const Value &v = g_.value(operand);
    attached_.push_back({v.kind == ValueKind::Result ? v.def : -1, id});
  }

  // Makes a transfer or cast of `x`, visits it (it may fold or merge) and returns what stands
  // for its result.
  ValueId make(OpKind op, ValueId x, AttrValue attr, Location loc, Reason deviceWhy,
               Reason dtypeWhy) {
    const OpInfo &info = opInfo(op);
    const Value &vx = g_.value(x);
    // What visiting the new node would reduce it to at once, without making it.
    if (op == OpKind::Cast ? std::get<DType>(attr) == vx.type.dtype
                           : std::get<Device>(attr) == *vx.device)
      return x;
    if (op == OpKind::Cast && vx.kind == ValueKind::Param)
      return foldParam(x, std::get<DType>(attr), loc, dtypeWhy);
    TensorType type = vx.type;
    Device device = *vx.device;
    std::string name;
    if (op == OpKind::Cast) {
      type.dtype = std::get<DType>(attr);
      name = vx.name + "." + std::string(dtypeName(type.dtype));
    } else {
      device = std::get<Device>(attr);
      name = vx.name + "." + deviceSuffix(device);
    }
    std::vector<NamedAttr> given{{info.attrs[0].name, std::move(attr)}};
    Expected<Attrs> attrs = makeAttrs(info, given, loc);
    FERRY_CHECK(attrs.ok()) << attrs.status().message();
    NodeId id = g_.createNode({op, {x}, std::move(*attrs), std::nullopt, std::nullopt, loc},
                              std::move(name), type, Graph::Naming::Unique);
    Node &n = g_.node(id);
    n.inserted = true;
    Value &r = g_.value(n.result);
    r.device = device;
    g_.deviceReason(r.id) = std::move(deviceWhy);
    g_.dtypeReason(r.id) = std::move(dtypeWhy);
    grow();
    fresh_[r.id] = 1;
    addUses(x, 1);
    attach(id, x);
    visit(id);
    return resolve(g_.node(id).result);
  }

  // --- The sweep ---------------------------------------------------------------------------------

  void sweep() {
    std::fill(watched_.begin(), watched_.end(), 0);
    std::fill(alone_.begin(), alone_.end(), -1);
    cse_.reset(&g_);
    attached_.clear();
    std::vector<NodeId> order(g_.order().begin(), g_.order().end());
    for (NodeId id : order)
      if (!dead_[id]) visit(id);
    buildOrder(order);
  }

  // The old order without dead nodes, each followed by the nodes attached after it.
  void buildOrder(const std::vector<NodeId> &old) {
    std::stable_sort(attached_.begin(), attached_.end(),
                     [](const auto &a, const auto &b) { return a.first < b.first; });
    std::vector<NodeId> order;
    order.reserve(old.size() + attached_.size());
    std::vector<NodeId> stack;
    auto emit = [&](NodeId anchor) {
      auto [lo, hi] =
          std::equal_range(attached_.begin(), attached_.end(), std::pair<NodeId, NodeId>{anchor, 0},
                           [](const auto &a, const auto &b) { return a.first < b.first; });
      // Pushed in reverse so the first attached comes out first.
      for (auto it = hi; it != lo;) stack.push_back((--it)->second);
      while (!stack.empty()) {
        NodeId n = stack.back();
        stack.pop_back();
        if (!dead_[n]) order.push_back(n);
        auto [l2, h2] =
            std::equal_range(attached_.begin(), attached_.end(), std::pair<NodeId, NodeId>{n, 0},
                             [](const auto &a, const auto &b) { return a.first < b.first; });
        for (auto it = h2; it != l2;) stack.push_back((--it)->second);
      }
    };
    emit(-1);
    for (NodeId id : old) {
      if (!dead_[id]) order.push_back(id);
      emit(id);
    }
    g_.setOrder(std::move(order));
  }

  void visit(NodeId id) {
    for (;;) {
      Node &n = g_.node(id);
      for (size_t i = 0; i < n.operands.size(); ++i) {
        ValueId r = resolve(n.operands[i]);
        if (r != n.operands[i]) g_.setOperand(id, i, r);  // counts moved at replace()
      }
      Outcome o = rules(id);
      if (o == Outcome::Replaced) return;
      if (o == Outcome::None) break;
    }
    // An equal node reads the same operands, so a node with an operand nobody else reads has
    // none: it stays out of the table (most nodes of a model; the table is a cache miss per
    // node) until that operand gains a reader (addUses). A literal is never merged: each has
    // one reader, where it prints (ir/literal.h).
    if (g_.node(id).literal) return;
    for (ValueId o : g_.node(id).operands)
      if (uses_[o] == 1) {
        alone_[o] = id;
        return;
      }
    NodeId *twin = cse_.findOrInsert(id);
    if (!twin || *twin == id) return;  // itself: recorded before swapKinds changed it
    if (dead_[*twin]) {                // died after it was recorded: this node takes its place
      *twin = id;
      return;
    }
    ValueId y = g_.node(id).result, x = g_.node(*twin).result;
    if (outputs_[y] > 0 && !canTakeName(x)) return;  // two outputs: both names stay
    replace(y, x);
  }

  Outcome rules(NodeId id) {
    switch (g_.node(id).op) {
      case OpKind::Cast: return castRules(id);
      case OpKind::Transfer: return transferRules(id);
      case OpKind::Identity: return identityRule(id);
      default: return Outcome::None;
    }
  }

  Outcome identityRule(NodeId id) {
    const Node &n = g_.node(id);
    if (outputs_[n.result] > 0 && !canTakeName(n.operands[0])) return Outcome::None;
    replace(n.result, n.operands[0]);
    return Outcome::Replaced;
  }

  bool castAllowedOn(const Node &cast, Device d) const {
    return (!cast.pinDevice || *cast.pinDevice == d) &&
           ctx_.options.capabilities.supports(d, OpKind::Cast, g_.value(cast.result).type.dtype);
  }

  // References into the graph (n, p, vx) are not used once a node or param has been made.
  Outcome castRules(NodeId id) {
    const Node &n = g_.node(id);
    const ValueId x = n.operands[0], result = n.result;
    const Value &vx = g_.value(x);
    const DType to = g_.value(result).type.dtype, from = vx.type.dtype;
    if (to == from) {  // 2: no-op
      replace(result, x);
      return Outcome::Replaced;
    }
    if (vx.kind == ValueKind::Param) {  // 1: fold
      if (uses_[x] == 1 && outputs_[result] == 0 && !fresh_[x] && !copied_.count(x)) {
        foldInPlace(x, to, n.loc, g_.dtypeReason(result));
        replace(result, x);
        return Outcome::Replaced;
      }
      // The dtype pass names its cast of %w `w.f16`, the name the folded param wants; the cast
      // goes, so the param takes it.
      const std::string name = vx.name + "." + std::string(dtypeName(to));
      if (g_.value(result).name == name && outputs_[result] == 0)
        g_.rename(result, g_.uniqueName(name + ".folded"));
      ValueId folded = foldParam(x, to, n.loc, g_.dtypeReason(result));
      replace(result, folded);
      return Outcome::Replaced;
    }
    const Node *p = producer(x);
    if (!p) return Outcome::None;
    if (p->op == OpKind::Constant) {  // 1: fold a constant
      ValueId folded = foldConstant(*p, to, n);
      replace(result, folded);
      return Outcome::Replaced;
    }
    if (p->op == OpKind::Cast && lossless(g_.value(p->operands[0]).type.dtype, from)) {  // 2
      setOperand(id, 0, p->operands[0]);
      return Outcome::Changed;
    }
    if (p->op != OpKind::Transfer) return Outcome::None;
    // 3: x = transfer(x1, B).
    const ValueId x1 = p->operands[0];
    const Device a = *g_.value(x1).device, b = *vx.device;
    const Node *q = producer(x1);
    if (q && q->op == OpKind::Cast && lossless(g_.value(q->operands[0]).type.dtype, from)) {
      if (uses_[x] > 1) return declined(x);
      ValueId x0 = q->operands[0];
      const DType s = g_.value(x0).type.dtype;
      Reason dtypeWhy{Reason::Kind::Inherited, x0, p->loc,
                      "the " + std::string(dtypeName(s)) + " -> " + std::string(dtypeName(from)) +
                          " cast before the transfer is undone after it: " + bytesPerElem(s) +
                          "/elem sent instead of " + std::to_string(dtypeSize(from))};
      ValueId t = make(OpKind::Transfer, x0, b, p->loc, g_.deviceReason(x), dtypeWhy);
      setOperand(id, 0, t);
      return Outcome::Changed;
    }
    if (dtypeSize(to) < dtypeSize(from) && castAllowedOn(n, a)) {
      if (uses_[x] > 1) return declined(x);
      // In place: the transfer node becomes the cast on A, this node the transfer of its result.
      const Reason transferWhy = g_.deviceReason(vx.id), castDType = g_.dtypeReason(result);
      swapKinds(p->id, id);
      Value &moved = g_.value(x);
      moved.type.dtype = to;
      moved.device = a;
      g_.deviceReason(moved.id) = {Reason::Kind::Inserted, x1, g_.node(p->id).loc,
                                   "cast moved before the transfer to " + b.str() + ": " +
                                       bytesPerElem(to) + "/elem instead of " +
                                       std::to_string(dtypeSize(from))};
      g_.dtypeReason(moved.id) = castDType;
      g_.rename(x, g_.uniqueName(g_.value(x1).name + "." + std::string(dtypeName(to))));
      Value &r = g_.value(result);
      g_.deviceReason(r.id) = transferWhy;
      g_.dtypeReason(r.id) = {Reason::Kind::Inherited, x, {}, ""};
      visit(p->id);  // the cast may fold (a param) or merge
      return Outcome::Changed;
    }
    return Outcome::None;
  }

  // Swaps what two nodes do (op, attributes, pins, location, inserted mark); operands and
  // results stay, so `outer` still reads `inner`'s result.
  void swapKinds(NodeId inner, NodeId outer) {
    Node &a = g_.node(inner), &b = g_.node(outer);
    std::swap(a.op, b.op);
    std::swap(a.attrs, b.attrs);
    std::swap(a.pinDevice, b.pinDevice);
    std::swap(a.pinDType, b.pinDType);
    std::swap(a.loc, b.loc);
    std::swap(a.inserted, b.inserted);
  }

  Outcome transferRules(NodeId id) {
    const Node &n = g_.node(id);
    const ValueId x = n.operands[0];
    const Value &vx = g_.value(x);
    const Device to = *g_.value(n.result).device;
    if (*vx.device == to) {  // 2: no-op
      replace(n.result, x);
      return Outcome::Replaced;
    }
    if (foldedParam(x)) return unfold(id);
    const Node *p = producer(x);
    if (!p) return Outcome::None;
    if (p->op == OpKind::Transfer) {  // 2: round trip, or a hop
      ValueId x0 = p->operands[0];
      if (*g_.value(x0).device == to) {
        replace(n.result, x0);
        return Outcome::Replaced;
      }
      if (uses_[x] > 1) return declined(x);
      setOperand(id, 0, x0);
      return Outcome::Changed;
    }
    if (p->op != OpKind::Cast) return Outcome::None;
    // 3: transfer(cast(x0, T), to) with T wider than x0: cast after the transfer.
    const ValueId x0 = p->operands[0];
    const DType s = g_.value(x0).type.dtype, t = vx.type.dtype;
    if (dtypeSize(t) <= dtypeSize(s) || !castAllowedOn(*p, to)) return Outcome::None;
    if (uses_[x] > 1) return declined(x);
    // In place: the cast node becomes the transfer of x0, this node the cast of its result.
    const Reason transferWhy = g_.deviceReason(n.result), castDType = g_.dtypeReason(vx.id);
    const ValueId result = n.result;
    const NodeId inner = p->id;
    swapKinds(inner, id);
    Value &moved = g_.value(x);
    moved.type.dtype = s;
    moved.device = to;
    g_.deviceReason(moved.id) = transferWhy;
    g_.dtypeReason(moved.id) = {Reason::Kind::Inherited, x0, {}, ""};
    g_.rename(x, g_.uniqueName(g_.value(x0).name + "." + deviceSuffix(to)));
    Value &r = g_.value(result);
    g_.deviceReason(r.id) = {Reason::Kind::Inserted, x, g_.node(id).loc,
                             "cast moved after the transfer to " + to.str() + ": " +
                                 bytesPerElem(s) + "/elem instead of " +
                                 std::to_string(dtypeSize(t))};
    g_.dtypeReason(r.id) = castDType;
    visit(inner);  // the transfer may merge with one already there
    return Outcome::Changed;
  }

  // transfer(p', to) where p' is p folded to a wider dtype: send p and cast on arrival, so the
  // copy (made once, at load) moves fewer bytes (the fold made here is undone).
  Outcome unfold(NodeId id) {
    const Node &n = g_.node(id);
    const ValueId folded = n.operands[0];
    const int32_t record = inPlaceRecord(folded);
    const bool restore = record >= 0;
    Unfolded *was = restore ? &unfolded_[static_cast<size_t>(record)] : nullptr;
    const ValueId source = restore ? folded : sourceOf(folded);
    const DType s = restore ? was->dtype : g_.value(source).type.dtype,
                t = g_.value(folded).type.dtype;
    const Device to = *g_.value(n.result).device;
    if (dtypeSize(t) <= dtypeSize(s) || !ctx_.options.capabilities.supports(to, OpKind::Cast, t))
      return Outcome::None;
    if (uses_[folded] > 1) return declined(folded);
    const Reason castDType = restore ? was->castWhy : g_.dtypeReason(folded);
    if (restore) {  // the param goes back to what it was; its old reader dies in replace() below
      ParamDecl &decl = g_.param(static_cast<size_t>(g_.value(folded).def));
      decl.data = std::move(was->data);
      decl.init = std::move(was->init);
      decl.foldedFrom = was->foldedFrom;
      g_.value(folded).type.dtype = was->dtype;
      g_.dtypeReason(folded) = std::move(was->dtypeWhy);
      inPlaceAt_[static_cast<size_t>(folded)] = -1;
    }
    const Location loc = n.loc;
    ValueId moved = make(OpKind::Transfer, source, to, loc, g_.deviceReason(n.result),
                         {Reason::Kind::Inherited, source, {}, ""});
    Reason deviceWhy{Reason::Kind::Inserted, moved, loc,
                     "cast moved after the transfer to " + to.str() + ": " + bytesPerElem(s) +
                         "/elem instead of " + std::to_string(dtypeSize(t))};
    ValueId c = make(OpKind::Cast, moved, t, loc, deviceWhy, castDType);
    replace(g_.node(id).result, c);
    return Outcome::Replaced;
  }

  // A rule that needs `v` to have one reader did not apply: watch `v` (see dropUse).
  Outcome declined(ValueId v) {
    watched_[v] = 1;
    return Outcome::None;
  }

  // --- Folding -----------------------------------------------------------------------------------

  // Why a folded value has its dtype: the cast's reason where the dtype pass gave one.
  static Reason foldDTypeReason(const Reason &castWhy, const Location &loc,
                                const std::string &detail) {
    if (castWhy.kind != Reason::Kind::None) return castWhy;
    return {Reason::Kind::Rule, -1, loc, detail};
  }

  // What a param folded in place was, so that unfold() can give it back.
  struct Unfolded {
    DType dtype;
    TensorData data;
    Initializer init;
    std::optional<DType> foldedFrom;
    Reason dtypeWhy, castWhy;
  };

  // The param's initializer once converted from `from` to `to`: zeros and ones stay, and randn
  // where randn(to) is bit-identical; anything else is written out as data.
  static Initializer convertedInit(const Initializer &init, DType from, DType to) {
    const bool keep = init.kind == Initializer::Kind::Zeros ||
                      init.kind == Initializer::Kind::Ones ||
                      (init.kind == Initializer::Kind::Randn && randnExact(from, to));
    return keep ? init : Initializer{Initializer::Kind::Data, 0, ""};
  }

  // The cast is the param's only reader: the param itself is converted, keeping its value, name,
  // pin, device and place among the params, so nothing is made, named or removed (the common
  // case: a weight stored in one dtype, computed with in another). Its dtype reason becomes the
  // cast's, saying it was folded.
  void foldInPlace(ValueId p, DType to, const Location &loc, const Reason &castWhy) {
    Value &vp = g_.value(p);
    ParamDecl &decl = g_.param(static_cast<size_t>(vp.def));
    Unfolded was{vp.type.dtype, decl.data, decl.init, decl.foldedFrom, g_.dtypeReason(p), castWhy};
    if (!decl.foldedFrom) decl.foldedFrom = vp.type.dtype;
    decl.init = convertedInit(decl.init, vp.type.dtype, to);
    decl.data = castTensor(decl.data, to);
    vp.type.dtype = to;
    g_.dtypeReason(p) = inPlaceReason(castWhy, loc);
    // Folded again (cast(cast(p))): unfold() undoes the last fold only, back to the dtype the
    // transferred value was cast from.
    if (inPlaceAt_.empty()) inPlaceAt_.assign(g_.valueCount(), -1);  // the first fold in place
    int32_t &at = inPlaceAt_[static_cast<size_t>(p)];
    if (at < 0) {
      at = static_cast<int32_t>(unfolded_.size());
      unfolded_.push_back(std::move(was));
    } else {
      unfolded_[static_cast<size_t>(at)] = std::move(was);
    }
  }

  // "promote: f16 + f32 -> f32; folded into the param at compile time": the cast's reason, one
  // text per distinct reason of the casts folded (a model folds many weights for one reason).
  Reason inPlaceReason(const Reason &castWhy, const Location &loc) {
    constexpr std::string_view kFolded = "folded into the param at compile time";
    if (castWhy.kind == Reason::Kind::None) return {Reason::Kind::Rule, -1, loc, kFolded};
    // Keyed by the cast reason's text, which the entry holds: its address stays its own.
    auto [it, added] = foldTexts_.try_emplace(castWhy.detail.view().data());
    if (added)
      it->second = {castWhy.detail, castWhy.detail.empty()
                                        ? SharedText(kFolded)
                                        : SharedText(castWhy.detail + "; " + std::string(kFolded))};
    return {castWhy.kind, -1, castWhy.loc.known() ? castWhy.loc : loc, it->second.second};
  }

  // `p` converted to `to` as a new param; `loc` and `castWhy` are the cast's.
  ValueId foldParam(ValueId p, DType to, const Location &loc, const Reason &castWhy) {
    const uint64_t key =
        static_cast<uint64_t>(static_cast<uint32_t>(p)) << 8 | static_cast<uint8_t>(to);
    if (const int32_t *memo = foldMemo_.get(key)) return *memo;
    const ParamDecl &decl = g_.paramOf(p);  // params never move while one is added
    const Value &vp = g_.value(p);
    const Initializer init = convertedInit(decl.init, vp.type.dtype, to);
    const std::string detail = "folded cast of " + valueRef(vp.name) + " at compile time";
    const Device device = *vp.device;
    const Reason dtypeWhy = foldDTypeReason(castWhy, loc, detail);
    const std::optional<DType> from = decl.foldedFrom.value_or(vp.type.dtype);
    ValueId v = g_.addParam(vp.name + "." + std::string(dtypeName(to)), castTensor(decl.data, to),
                            init, decl.pin, decl.loc, Graph::Naming::Unique);
    g_.param(static_cast<size_t>(g_.value(v).def)).foldedFrom = from;
    Value &nv = g_.value(v);
    nv.device = device;
    g_.deviceReason(nv.id) = {Reason::Kind::Inserted, p, loc, detail};
    g_.dtypeReason(nv.id) = dtypeWhy;
    grow();
    fresh_[v] = 1;
    foldMemo_.tryEmplace(key, v);
    folded_.emplace_back(v, p);
    copied_.insert(p);
    return v;
  }

  // The param `folded` was folded from (folded_ is in id order: params are made with rising ids).
  ValueId sourceOf(ValueId folded) const {
    auto it =
        std::lower_bound(folded_.begin(), folded_.end(), std::pair<ValueId, ValueId>{folded, -1});
    FERRY_CHECK(it != folded_.end() && it->first == folded)
        << "%" << g_.value(folded).name << " is not a fold";
    return it->second;
  }

  ValueId foldConstant(const Node &constant, DType to, const Node &cast) {
    const Value &vk = g_.value(constant.result);
    const OpInfo &info = opInfo(OpKind::Constant);
    TensorData data = castTensor(attrTensor(info, constant.attrs, "value"), to);
    const std::string detail = "folded cast of " + valueRef(vk.name) + " at compile time";
    const Reason dtypeWhy = foldDTypeReason(g_.dtypeReason(cast.result), cast.loc, detail);
    const Reason deviceWhy{Reason::Kind::Inserted, constant.result, cast.loc, detail};
    const Device device = *vk.device;
    const NodeId anchor = constant.id;
    TensorType type = data.type();
    std::vector<NamedAttr> given{{"value", std::move(data)}};
    Expected<Attrs> attrs = makeAttrs(info, given, cast.loc);
    FERRY_CHECK(attrs.ok()) << attrs.status().message();
    NodeId id = g_.createNode(
        {OpKind::Constant, {}, std::move(*attrs), std::nullopt, std::nullopt, cast.loc},
        vk.name + "." + std::string(dtypeName(to)), type, Graph::Naming::Unique);
    g_.node(id).inserted = true;
    Value &r = g_.value(g_.node(id).result);
    r.device = device;
    g_.deviceReason(r.id) = deviceWhy;
    g_.dtypeReason(r.id) = dtypeWhy;
    grow();
    if (folds_.size() <= static_cast<size_t>(id)) folds_.resize(id + 1, 0);
    folds_[id] = 1;
    fresh_[r.id] = 1;
    attached_.push_back({anchor, id});
    visit(id);
    return resolve(g_.node(id).result);
  }

  Graph &g_;
  PassContext &ctx_;
  std::vector<ValueId> repl_;     // per value: what replaced it this sweep, or -1
  std::vector<int32_t> uses_;     // per value: operand slots and outputs reading it
  std::vector<int32_t> outputs_;  // per value: output slots reading it
  std::vector<uint8_t> fresh_;    // per value: made by this pass
  std::vector<uint8_t> dead_;     // per node
  std::vector<uint8_t> folds_;    // per node: a constant made by folding
  cse::NodeTable cse_;
  std::vector<NodeId> killStack_;
  std::vector<std::pair<NodeId, NodeId>> attached_;  // (anchor node or -1, new node)
  IdMap foldMemo_;                                   // (source param, dtype) -> folded param
  std::vector<std::pair<ValueId, ValueId>> folded_;  // (folded param, its source), ids rising
  // Params folded in place: what they were (a record each), found through inPlaceAt_ (per value
  // of the input: the record's index, or -1; only the input's params fold in place).
  std::vector<Unfolded> unfolded_;
  std::vector<int32_t> inPlaceAt_;
  std::unordered_set<ValueId> copied_;  // params folded into new ones: never folded in place
  // inPlaceReason()'s texts: per cast reason text (held, so that its address is not reused), the
  // text with the fold said.
  std::unordered_map<const char *, std::pair<SharedText, SharedText>> foldTexts_;
  std::vector<uint8_t> watched_;  // per value: see declined()
  std::vector<NodeId> alone_;     // per value: a node visited this sweep that alone reads it (CSE)
  bool again_ = false, paramUnused_ = false;
};

}  // namespace

void simplify(Graph &graph, PassContext &ctx) { Simplifier(graph, ctx).run(); }

}  // namespace ferry
