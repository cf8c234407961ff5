// tools/ferry-compile/explain.cpp — ferry-compile --explain.
#include "tools/ferry-compile/explain.h"

#include <algorithm>

#include "ir/printer.h"
#include "passes/compile.h"
#include "passes/explain.h"

namespace ferry {

namespace {

std::string dtypeWhy(const Graph &g, ValueId v) {
  const Reason &r = g.dtypeReason(v);
  const std::string at = r.loc.known() ? " at " + r.loc.str() : "";
  switch (r.kind) {
    case Reason::Kind::None: return "as written or inferred from its operands";
    case Reason::Kind::Pinned: return "pinned" + at;
    case Reason::Kind::Inserted:
      return (r.detail.empty() ? std::string("inserted") : r.detail.str()) +
             (r.from >= 0 ? " for " + valueRef(g.value(r.from).name) : "") + at;
    default: return r.detail.empty() ? std::string("its op's dtype rule") : r.detail.str();
  }
}

// One alternative to try: its flags as a user would write them, and how it changes the options.
struct Alternative {
  std::string flags;
  void (*apply)(CompileOptions &);
};

const Alternative kAlternatives[] = {
    {"--placement auto", [](CompileOptions &o) { o.placement = PlacementPolicy::Auto; }},
    {"--dtype promote", [](CompileOptions &o) { o.dtype.kind = DTypePolicy::Kind::Promote; }},
    {"without --no-fallback", [](CompileOptions &o) { o.fallback = true; }},
};

bool changes(const Alternative &a, const CompileOptions &o) {
  CompileOptions changed = o;
  a.apply(changed);
  return changed.placement != o.placement || changed.dtype.kind != o.dtype.kind ||
         changed.fallback != o.fallback;
}

// Per run, then what moves once, at load, when anything does (weights copied between devices).
std::string cost(const CompileStats &s) {
  std::string text = std::to_string(s.transfers) + (s.transfers == 1 ? " transfer" : " transfers") +
                     " (" + std::to_string(s.transferBytes) + " bytes per run), " +
                     std::to_string(s.casts) + (s.casts == 1 ? " cast" : " casts");
  if (s.loadTransfers > 0)
    text += "; at load, once: " + std::to_string(s.loadTransfers) +
            (s.loadTransfers == 1 ? " weight copied" : " weights copied") + " (" +
            std::to_string(s.loadTransferBytes) + " bytes)";
  return text;
}

bool onlyBudgetErrors(const std::vector<Diagnostic> &ds) {
  bool any = false;
  for (const Diagnostic &d : ds)
    if (d.severity == Severity::Error) {
      if (d.code != "budget") return false;
      any = true;
    }
  return any;
}

// The budget flags under which `plan` (compiled without budgets) passes: each direction
// `budgets` sets to error that the plan uses, set to warn; each limit it exceeds, raised to what
// it needs.
std::vector<std::string> budgetFlags(const Budgets &budgets, const CompileResult &plan) {
  const Graph &g = plan.graph;
  std::vector<std::string> directions;
  for (NodeId id : g.order()) {
    const Node &n = g.node(id);
    if (n.op != OpKind::Transfer) continue;
    const std::optional<Device> &from = g.value(n.operands[0]).device;
    const std::optional<Device> &to = g.value(n.result).device;
    if (!from || !to) continue;
    const TransferDirection d = transferDirection(*from, *to);
    const std::string key(directionKey(d));
    if (budgets.action(d) == BudgetAction::Error &&
        std::find(directions.begin(), directions.end(), key) == directions.end())
      directions.push_back(key);
  }
  std::vector<std::string> flags;
  if (!directions.empty()) {
    std::string spec;
    for (const std::string &d : directions) spec += (spec.empty() ? "" : ",") + d + "=warn";
    flags.push_back("--transfers " + spec);
  }
  if (budgets.maxTransferBytes && plan.stats.transferBytes > *budgets.maxTransferBytes)
    flags.push_back("--max-transfer-bytes " + std::to_string(plan.stats.transferBytes));
  if (budgets.maxCasts && plan.stats.casts > *budgets.maxCasts)
    flags.push_back("--max-casts " + std::to_string(plan.stats.casts));
  return flags;
}

}  // namespace

Expected<std::string> explainValues(const Graph &g, const std::vector<std::string> &names) {
  std::string out;
  for (std::string name : names) {
    if (name.starts_with("%")) name.erase(0, 1);
    std::optional<ValueId> v = g.findValue(name);
    if (!v) {
      std::string known;
      size_t listed = 0;
      for (size_t i = 0; i < g.valueCount() && listed < 12; ++i, ++listed)
        known += (known.empty() ? "%" : ", %") + g.value(static_cast<ValueId>(i)).name;
      if (g.valueCount() > 12) known += ", ...";
      return makeError("usage", "--explain: no value " + valueRef(name) + " in '" + g.name() +
                                    "' (its values: " + known + ")");
    }
    const Value &val = g.value(*v);
    out += valueRef(val.name) + " : " + val.type.str() +
           (val.device ? " @" + val.device->str() : std::string(" (not placed)")) + "\n";
    out += "  device: " + explainDevice(g, *v) + "\n";
    out += "  dtype:  " + dtypeWhy(g, *v) + "\n";
    out += "  defined at " + definitionSite(g, *v) + "\n";
  }
  return out;
}

std::string suggestOptions(const Graph &model, const CompileOptions &options) {
  // Compiles with `alts` applied; when only budgets reject that plan and `budgets` allows it,
  // again without budgets, adding the budget flags that plan needs. The line to print, or "".
  auto attempt = [&](std::initializer_list<const Alternative *> alts, bool budgets) {
    CompileOptions o = options;
    std::vector<std::string> flags;
    for (const Alternative *a : alts) {
      if (!changes(*a, options)) return std::string();
      a->apply(o);
      flags.push_back(a->flags);
    }
    o.stopAfter.clear();
    CompileResult r = compile(model, o);
    if (!r.ok()) {
      if (!budgets || !onlyBudgetErrors(r.diagnostics)) return std::string();
      CompileOptions relaxed = o;
      relaxed.budgets = Budgets{};
      r = compile(model, relaxed);
      if (!r.ok()) return std::string();
      for (std::string &f : budgetFlags(o.budgets, r)) flags.push_back(std::move(f));
    }
    if (flags.empty()) return std::string();
    std::string joined;
    for (const std::string &f : flags) joined += (joined.empty() ? "" : " and ") + f;
    return "  compiles with " + joined + ": " + cost(r.stats) + "\n";
  };
  // The budgets alone first; a change of policy then only where it needs no budget change, unless
  // the budgets alone do not suffice.
  std::string out = attempt({}, true);
  const bool budgetsSuffice = !out.empty();
  for (const Alternative &a : kAlternatives) out += attempt({&a}, !budgetsSuffice);
  if (out.empty())
    for (size_t i = 0; i < std::size(kAlternatives); ++i)
      for (size_t j = i + 1; j < std::size(kAlternatives); ++j)
        out += attempt({&kAlternatives[i], &kAlternatives[j]}, true);
  if (out.empty())
    return "explain: no change of policy (--placement auto, --dtype promote, fallback) or of the "
           "budgets compiles it; the fixes above say what to change in the model\n";
  return "explain: the model as written is rejected under these options, but it\n" + out;
}

}  // namespace ferry
