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
//                 error, a note per transfer
//   3. casts      casts left over maxCasts (max_casts, --max-casts; folded ones and casts of
//                 weights, done at load, are free): one
//                 error, a note per cast
// All offenders are reported in one run. Transfers and casts of weights are not counted: they
// run once, when a Session is created (passes/load_time.h), not per run — like the upload of the
// weights themselves, which no budget counts either.
#include "passes/explain.h"
#include "passes/load_time.h"
#include "passes/pass.h"

namespace ferry {

namespace {

std::string ref(const Graph &g, ValueId v) { return "%" + g.value(v).name; }

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
    for (NodeId id : g.order()) {
      const Node &n = g.node(id);
      if (n.op != OpKind::Transfer || runsAtLoad(n, weights)) continue;
      const ValueId x = n.operands[0];
      d.note("transfer of " + ref(g, x) + " from " + g.value(x).device->str() + " to " +
                 g.value(n.result).device->str() + ": " + std::to_string(bytesOf(g, n.result)) +
                 " bytes",
             n.loc);
    }
    d.fix("pin the values so that less data crosses devices, or raise max_transfer_bytes "
          "(--max-transfer-bytes) to " +
          std::to_string(bytes));
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
