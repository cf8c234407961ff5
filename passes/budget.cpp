// passes/budget.cpp — checks the final plan against the user's data-movement contract
// (options.budgets): which transfer directions are allowed, the bytes all transfers move per
// run, and how many casts are left.
//
// Runs last, on a placed, typed, simplified graph, and only reports (the graph is unchanged):
//   1. direction  each transfer is host->accelerator (h2d), accelerator->host (d2h), between
//                 accelerators (d2d) or between host arenas (h2h); an Error budget for its
//                 direction gives one error per transfer, Warn one warning, each naming the value,
//                 the edge, its bytes, where the copy is needed and a fix
//   2. bytes      the bytes of all transfers over maxTransferBytes (max_transfer_bytes, the tools'
//                 --max-transfer-bytes; messages name both, as people set either): one
//                 error, a note per transfer naming, for one the compiler inserted, what holds
//                 each end (the nearest pin, input declaration or output pin placed with it);
//                 after auto placement, which steers by the cap, a note with the fewest bytes
//                 it found
//   3. casts      casts left over maxCasts (max_casts, --max-casts; folded ones and casts of
//                 weights, done at load, are free): one
//                 error, a note per cast
// All offenders are reported in one run. Transfers and casts of weights are not counted: they
// run once, when a Session is created (passes/load_time.h), not per run — like the upload of the
// weights themselves, which no budget counts either.
#include <optional>

#include "ir/printer.h"
#include "passes/explain.h"
#include "passes/load_time.h"
#include "passes/pass.h"

namespace ferry {

namespace {

std::string ref(const Graph &g, ValueId v) { return valueRef(g.value(v).name); }

int64_t bytesOf(const Graph &g, ValueId v) {
  return static_cast<int64_t>(g.value(v).type.byteSize());
}

// "%z, %w": the results of the nodes that read `v`, for the note and the fix.
std::string readers(const Graph &g, ValueId v, const std::vector<std::vector<NodeId>> &users) {
  std::string s;
  size_t shown = 0;
  NodeId last = -1;
  for (NodeId u : users[v]) {
    if (u == last) continue;  // a node reading it twice
    last = u;
    if (shown == 3) return s + ", ...";
    s += (shown++ ? ", " : "") + ref(g, g.node(u).result);
  }
  return s;
}

// The pinned output that reads `v`, if any: its pin is what asked for the copy.
const OutputDecl *pinnedOutput(const Graph &g, ValueId v) {
  for (const OutputDecl &o : g.outputs())
    if (o.value == v && o.pin) return &o;
  return nullptr;
}

std::string at(const Location &loc) { return loc.known() ? " at " + loc.str() : ""; }

// Why a transfer's ends are where they are: the nearest value placed by the user (an input's
// declaration, a pin, a fallback, an output pin) among those on the same device that the
// transferred value is computed from, or that read the copy. Searched breadth-first, a bounded
// number of values, through the values the compiler placed (cost model, data flow, inserted).
class Anchors {
 public:
  explicit Anchors(const Graph &g)
      : g_(g), users_(g.users()), weights_(weightValues(g)), seen_(g.valueCount(), 0),
        output_(g.valueCount(), -1) {
    for (size_t i = g.outputs().size(); i-- > 0;)
      if (g.outputs()[i].pin) output_[g.outputs()[i].value] = static_cast<int32_t>(i);
  }

  // "input %x is declared @cpu at t.fy:2:9", or "" when the cost model alone put `v` there.
  std::string upstream(ValueId v) { return search(v, false); }
  // What needs the copy `r` on its device: "'relu' (%a) is pinned @cuda:0 at t.fy:3:3".
  std::string downstream(ValueId r) { return search(r, true); }

 private:
  static constexpr size_t kMaxVisited = 512;

  std::string search(ValueId from, bool forward) {
    const Device device = *g_.value(from).device;
    std::vector<ValueId> queue{from};
    seen_[from] = ++stamp_;
    for (size_t head = 0; head < queue.size() && head < kMaxVisited; ++head) {
      const ValueId v = queue[head];
      // The copy itself is the compiler's: only an output pin of it says why it is there.
      std::string found = v == from && forward ? outputPin(v) : anchor(v, forward);
      if (!found.empty()) return found;
      auto visit = [&](ValueId w) {
        if (seen_[w] == stamp_ || weights_[w] || g_.value(w).device != device) return;
        seen_[w] = stamp_;
        queue.push_back(w);
      };
      if (forward) {
        for (NodeId u : users_[v]) visit(g_.node(u).result);
      } else if (const Node *n = g_.producer(v)) {
        for (ValueId o : n->operands) visit(o);
      }
    }
    return {};
  }

  std::string outputPin(ValueId v) const {
    if (output_[v] < 0) return {};
    const OutputDecl &o = g_.outputs()[static_cast<size_t>(output_[v])];
    return "output " + ref(g_, v) + " is pinned @" + o.pin->str() + at(o.loc);
  }

  std::string anchor(ValueId v, bool forward) const {
    if (forward && output_[v] >= 0) return outputPin(v);
    const Reason &r = g_.deviceReason(v);
    const Value &val = g_.value(v);
    const Node *n = g_.producer(v);
    const std::string node = n ? "'" + std::string(n->info().name) + "' (" + ref(g_, v) + ")" : "";
    switch (r.kind) {
      case Reason::Kind::Declared:
        return "input " + ref(g_, v) + " is declared @" + val.device->str() + at(r.loc);
      case Reason::Kind::Pinned:
        if (n && n->op == OpKind::Transfer)
          return node + " copies to " + val.device->str() + at(n->loc);
        if (n && n->pinDevice) return node + " is pinned @" + n->pinDevice->str() + at(n->loc);
        return ref(g_, v) + " is " + (r.detail.empty() ? std::string("pinned") : r.detail.str()) +
               at(r.loc);
      case Reason::Kind::Fallback: return node + " runs on " + val.device->str() + at(n->loc);
      default: return {};
    }
  }

  const Graph &g_;
  std::vector<std::vector<NodeId>> users_;
  std::vector<uint8_t> weights_;
  std::vector<int32_t> seen_;
  int32_t stamp_ = 0;
  std::vector<int32_t> output_;  // per value: the first pinned output of it, or -1
};

void checkDirections(const Graph &g, PassContext &ctx, const std::vector<uint8_t> &weights) {
  std::vector<std::vector<NodeId>> users;  // only built when something is reported
  for (NodeId id : g.order()) {
    const Node &n = g.node(id);
    if (n.op != OpKind::Transfer || runsAtLoad(n, weights)) continue;
    const ValueId x = n.operands[0];
    FERRY_CHECK(g.value(x).device && g.value(n.result).device)
        << "budget on an unplaced transfer %" << g.value(n.result).name;
    const Device from = *g.value(x).device, to = *g.value(n.result).device;
    const TransferDirection dir = transferDirection(from, to);
    const BudgetAction action = ctx.options.budgets.action(dir);
    if (action == BudgetAction::Allow) continue;
    if (users.empty()) users = g.users();
    const std::string message =
        std::string(directionName(dir)) + " transfer of " + ref(g, x) + " from " + from.str() +
        " to " + to.str() + ": " + std::to_string(bytesOf(g, n.result)) + " bytes per run (" +
        g.value(x).type.str() + "), budget " + std::string(directionKey(dir)) + "=" +
        std::string(budgetActionName(action));
    Diagnostic &diag = action == BudgetAction::Error ? ctx.diags.error("budget", n.loc, message)
                                                     : ctx.diags.warning("budget", n.loc, message);
    const std::string names = readers(g, n.result, users);
    if (!names.empty())
      diag.note("needed on " + to.str() + " by " + names, g.node(users[n.result][0]).loc);
    const Reason &why = g.deviceReason(x);
    if (why.kind != Reason::Kind::None && !why.detail.empty()) {
      const std::string text = ref(g, x) + " is on " + from.str() + ": " + why.detail;
      if (why.loc.known())
        diag.note(text, why.loc);
      else
        diag.detail(text, definitionLoc(g, x));
    }
    std::string fix;
    if (!names.empty()) fix = "pin " + names + " to " + from.str();
    if (const OutputDecl *out = pinnedOutput(g, n.result)) {
      if (out->loc.known())
        diag.note("output " + ref(g, n.result) + " is pinned to " + to.str(), out->loc);
      fix += (fix.empty() ? "" : ", or ") + std::string("leave output ") + ref(g, n.result) +
             " on " + from.str() + " (drop its @" + to.str() + " pin)";
    }
    diag.fix(fix + (fix.empty() ? "" : ", or ") + "allow " + std::string(directionKey(dir)) +
             " transfers");
  }
}

void checkTotals(const Graph &g, PassContext &ctx, const std::vector<uint8_t> &weights) {
  const Budgets &b = ctx.options.budgets;
  int64_t bytes = 0;
  int64_t casts = 0;
  for (NodeId id : g.order()) {
    const Node &n = g.node(id);
    if (runsAtLoad(n, weights)) continue;
    if (n.op == OpKind::Transfer) bytes += bytesOf(g, n.result);
    if (n.op == OpKind::Cast) ++casts;
  }
  if (b.maxTransferBytes && bytes > *b.maxTransferBytes) {
    Diagnostic &d = ctx.diags.error(
        "budget", {},
        "transfers move " + std::to_string(bytes) + " bytes per run, over the budget of " +
            std::to_string(*b.maxTransferBytes) + " (max_transfer_bytes, --max-transfer-bytes)");
    std::optional<Anchors> anchors;
    for (NodeId id : g.order()) {
      const Node &n = g.node(id);
      if (n.op != OpKind::Transfer || runsAtLoad(n, weights)) continue;
      const ValueId x = n.operands[0];
      std::string why;
      if (n.inserted) {
        if (!anchors) anchors.emplace(g);
        const std::string from = anchors->upstream(x), to = anchors->downstream(n.result);
        why = from.empty() ? to : to.empty() ? from : from + ", and " + to;
      }
      d.note("transfer of " + ref(g, x) + " from " + g.value(x).device->str() + " to " +
                 g.value(n.result).device->str() + ": " + std::to_string(bytesOf(g, n.result)) +
                 " bytes" + (why.empty() ? "" : "; " + why),
             n.loc);
    }
    const CompileStats &st = ctx.stats;
    if (ctx.options.placement == PlacementPolicy::Auto && st.autoFewestTransferBytes >= 0) {
      const std::string fewest = std::to_string(st.autoFewestTransferBytes);
      const std::string counted = " (counted in the dtypes before the dtype pass";
      if (st.autoFewestTransferBytes <= *b.maxTransferBytes)
        d.note("auto placement found plans within the budget" + counted + "; the fewest copy " +
               fewest + " bytes per run); the dtype pass's casts made the copies larger");
      else if (st.autoFewestExact)
        d.note("auto placement looked for a plan within the budget: no plan copies fewer than " +
               fewest + " bytes per run" + counted + ")");
      else
        d.note("auto placement looked for a plan within the budget: the fewest bytes per run of "
               "the plans it found is " +
               fewest + counted + "; with more than two devices its search is a heuristic)");
    }
    const bool steered =
        ctx.options.placement == PlacementPolicy::Auto && st.autoFewestTransferBytes >= 0;
    d.fix(std::string(steered ? "change the pins and declarations named above so that less data "
                                "must cross devices"
                              : "pin the values so that less data crosses devices") +
          ", or raise max_transfer_bytes (--max-transfer-bytes) to " + std::to_string(bytes));
  }
  if (b.maxCasts && casts > *b.maxCasts) {
    const std::string message = std::to_string(casts) + (casts == 1 ? " cast is" : " casts are") +
                                " left in the graph, over the budget of " +
                                std::to_string(*b.maxCasts) + " (max_casts, --max-casts)";
    Diagnostic &d = ctx.diags.error("budget", {}, message);
    for (NodeId id : g.order()) {
      const Node &n = g.node(id);
      if (n.op != OpKind::Cast || runsAtLoad(n, weights)) continue;
      const ValueId x = n.operands[0];
      d.note("cast of " + ref(g, x) + " from " + std::string(dtypeName(g.value(x).type.dtype)) +
                 " to " + std::string(dtypeName(g.value(n.result).type.dtype)) + " on " +
                 g.value(n.result).device.value_or(Device::cpu()).str() + ": " +
                 std::to_string(bytesOf(g, x)) + " -> " + std::to_string(bytesOf(g, n.result)) +
                 " bytes",
             n.loc);
    }
    d.fix("give params and inputs the dtypes the ops compute in, or raise max_casts (--max-casts) "
          "to " +
          std::to_string(casts));
  }
}

}  // namespace

void checkBudgets(Graph &graph, PassContext &ctx) {
  const std::vector<uint8_t> weights = weightValues(graph);
  checkDirections(graph, ctx, weights);
  checkTotals(graph, ctx, weights);
}

}  // namespace ferry
