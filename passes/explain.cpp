// passes/explain.cpp — renders the reason chain that placement recorded on each value.
#include "passes/explain.h"

#include <algorithm>
#include <vector>

#include "ir/printer.h"

namespace ferry {

namespace {

// Chains longer than this keep their first kHead and last kTail steps.
constexpr size_t kHead = 4;
constexpr size_t kTail = 3;
constexpr size_t kMaxSteps = size_t{1} << 16;

std::string at(const Location &loc) { return loc.known() ? " at " + loc.str() : ""; }

std::string ref(const Graph &g, ValueId v) {
  std::string site = definitionSite(g, v);
  std::string s = valueRef(g.value(v).name);
  return site == "<unknown>" ? s : s + " (" + site + ")";
}

// One step of the chain (its text only when `text`); `next` is the value it continues with, or -1.
std::string step(const Graph &g, ValueId v, ValueId &next, bool text) {
  const Value &val = g.value(v);
  const Reason &r = g.deviceReason(v);
  bool hasFrom = r.from >= 0 && static_cast<size_t>(r.from) < g.valueCount();
  bool follows =
      hasFrom && (r.kind == Reason::Kind::Inherited || r.kind == Reason::Kind::FromConsumer ||
                  r.kind == Reason::Kind::CostModel);
  next = follows ? r.from : -1;
  if (!text) return {};
  switch (r.kind) {
    case Reason::Kind::None: return "not placed";
    case Reason::Kind::Pinned:
      if (!r.detail.empty()) return r.detail + at(r.loc);
      if (val.kind == ValueKind::Param) return "param '" + val.name + "', pinned" + at(r.loc);
      return "pinned" + at(r.loc);
    case Reason::Kind::Declared:
      if (r.loc.known()) return "input '" + val.name + "', declared at " + r.loc.str();
      return "input '" + val.name + "', declared on " + (val.device ? val.device->str() : "?");
    case Reason::Kind::Inherited:
      if (!hasFrom) return "inherited";
      return "inherited from " + ref(g, r.from);
    case Reason::Kind::FromConsumer:
      if (!hasFrom) return "from its consumers";
      return "from its consumer " + ref(g, r.from);
    case Reason::Kind::Target:
      return "nothing constrains it: default target " + (val.device ? val.device->str() : "?");
    case Reason::Kind::Fallback:
      return (r.detail.empty() ? std::string("fallback") : r.detail.str()) + at(r.loc);
    case Reason::Kind::CostModel:
      if (!hasFrom) return r.detail.empty() ? std::string("cost model") : r.detail.str();
      return (r.detail.empty() ? std::string("cost model") : r.detail.str()) +
             ": next to its consumer " + ref(g, r.from);
    case Reason::Kind::Rule: return r.detail.empty() ? std::string("rule") : r.detail.str();
    case Reason::Kind::Inserted: {  // a detail says what was made (a fold, a moved cast)
      if (!r.detail.empty()) return r.detail + at(r.loc);
      const Node *made = g.producer(v);
      const bool cast = made != nullptr && made->op == OpKind::Cast;
      return (cast ? "cast" : "transfer") +
             std::string(hasFrom ? " of " + valueRef(g.value(r.from).name) : "") +
             " inserted for its use" + at(r.loc);
    }
  }
  return "?";
}

}  // namespace

Location definitionLoc(const Graph &g, ValueId v) {
  const Value &val = g.value(v);
  switch (val.kind) {
    case ValueKind::Input:
      if (val.def >= 0 && static_cast<size_t>(val.def) < g.inputs().size()) return g.inputOf(v).loc;
      break;
    case ValueKind::Param:
      if (val.def >= 0 && static_cast<size_t>(val.def) < g.params().size()) return g.paramOf(v).loc;
      break;
    case ValueKind::Result: return g.node(val.def).loc;
  }
  return {};
}

std::string definitionSite(const Graph &g, ValueId v) {
  const Location loc = definitionLoc(g, v);
  return loc.known() ? loc.str() : "<unknown>";
}

namespace {

// One step of a dtype chain (its text only when `text`); `next` is the value it continues with,
// or -1.
std::string dtypeStep(const Graph &g, ValueId v, ValueId &next, bool text) {
  next = -1;
  const Value &val = g.value(v);
  const std::string dtype(text ? dtypeName(val.type.dtype) : "");
  if (val.kind == ValueKind::Input)
    return text ? "input '" + val.name + "', declared " + dtype + at(definitionLoc(g, v)) : "";
  if (val.kind == ValueKind::Param) {
    if (!text) return {};
    const ParamDecl &p = g.paramOf(v);
    if (p.foldedFrom)
      return "param '" + val.name + "', declared " + std::string(dtypeName(*p.foldedFrom)) +
             at(p.loc) + ", cast to " + dtype + " at compile time";
    return "param '" + val.name + "', declared " + dtype + at(p.loc);
  }
  const Node &n = g.node(val.def);
  const Reason &r = g.dtypeReason(v);
  if (r.kind == Reason::Kind::Inherited && r.from >= 0 &&
      static_cast<size_t>(r.from) < g.valueCount()) {
    next = r.from;
    return text ? "inherited from " + ref(g, r.from) : "";
  }
  const std::string op = text ? "'" + std::string(n.info().name) + "'" : "";
  if (n.op == OpKind::Cast)
    return text ? "cast to " + dtype + (n.inserted ? " inserted" : "") + at(n.loc) +
                      (n.inserted && !r.detail.empty() ? " (" + r.detail.str() + ")" : "")
                : "";
  if (!r.detail.empty() && r.kind != Reason::Kind::None) {
    if (!text) return {};
    return r.detail.view().starts_with("pinned") ? r.detail.str()
                                                 : op + at(n.loc) + ": " + r.detail.str();
  }
  if (n.op == OpKind::Transfer) {
    next = n.operands[0];
    return text ? "copy of " + ref(g, n.operands[0]) : "";
  }
  if (n.pinDType) return text ? "pinned @" + std::string(dtypeName(*n.pinDType)) + at(n.loc) : "";
  // The op's rule over its data operands: the dtype they all have (or, for Keep, the first's) is
  // inherited from the first of them; operands of several dtypes were promoted.
  const OpInfo &info = n.info();
  ValueId same = -1;
  bool all = true;
  std::string promoted;
  for (size_t i = 0; i < n.operands.size(); ++i) {
    if (info.operand(i).role != OperandRole::Data) continue;
    const TensorType &t = g.value(n.operands[i]).type;
    if (t.dtype == val.type.dtype && same < 0) same = n.operands[i];
    all = all && t.dtype == val.type.dtype;
    if (text)
      promoted += (promoted.empty() ? "" : " + ") + std::string(dtypeName(t.dtype)) +
                  (t.rank() == 0 ? "[]" : "");
  }
  const DTypeRule rule = info.dtypeRule;
  if (rule != DTypeRule::FromAttr && rule != DTypeRule::Compare && same >= 0 &&
      (all || (rule == DTypeRule::Keep && same == n.operands[0]))) {
    next = same;
    return text ? "inherited from " + ref(g, same) : "";
  }
  if (!text) return {};
  if ((rule == DTypeRule::Promote || rule == DTypeRule::PromoteFloat) && !promoted.empty())
    return op + at(n.loc) + ": promote: " + promoted + " -> " + dtype;
  return op + " gives " + dtype + at(n.loc);
}

}  // namespace

namespace {

// A reason chain from `v`, one step text per value, through `stepFn` (step or dtypeStep). The
// chain's values first (cheap), then text for the steps that are shown. A chain visits each
// value at most once unless the reasons form a cycle (a hand-edited graph); the bound ends it
// either way, and keeps explaining many values of a very deep graph affordable.
std::string explainChain(const Graph &g, ValueId v,
                         std::string (*stepFn)(const Graph &, ValueId, ValueId &, bool)) {
  std::vector<ValueId> chain;
  for (size_t hops = 0; v >= 0 && hops < kMaxSteps; ++hops) {
    chain.push_back(v);
    stepFn(g, v, v, /*text=*/false);
  }
  const bool cut = v >= 0;
  std::string s;
  for (size_t i = 0; i < chain.size(); ++i) {
    if (chain.size() > kHead + kTail + 1 && i == kHead) {
      s += " <- ... (" + std::to_string(chain.size() - kHead - kTail) + (cut ? "+" : "") + " more)";
      i = chain.size() - kTail - 1;
      continue;
    }
    ValueId next;
    s += (i ? " <- " : "") + stepFn(g, chain[i], next, /*text=*/true);
  }
  return s;
}

}  // namespace

std::string explainDType(const Graph &g, ValueId v) { return explainChain(g, v, dtypeStep); }

std::string operandKindFix(const Graph &g, const Node &n, size_t i) {
  ValueId v = n.operands[i];
  for (const Node *p = g.producer(v); p && p->inserted && p->op == OpKind::Transfer;
       p = g.producer(v))
    v = p->operands[0];
  const std::string name = valueRef(g.value(v).name);
  const std::string to = n.info().operand(i).role == OperandRole::Bool ? "bool" : "i64";
  return "cast " + name + " to " + to + ": cast(" + name + ", to=" + to + ")";
}

std::vector<std::string> alignColumns(const std::vector<std::vector<std::string>> &rows) {
  std::vector<size_t> width;
  for (const std::vector<std::string> &row : rows)
    for (size_t c = 0; c + 1 < row.size(); ++c) {
      if (c >= width.size()) width.push_back(0);
      width[c] = std::max(width[c], row[c].size());
    }
  std::vector<std::string> out;
  for (const std::vector<std::string> &row : rows) {
    std::string line;
    for (size_t c = 0; c + 1 < row.size(); ++c) {
      line += row[c];
      line.append(width[c] - row[c].size(), ' ');
      line += c + 2 == row.size() ? "  " : " ";
    }
    if (!row.empty()) line += row.back();
    out.push_back(std::move(line));
  }
  return out;
}

std::string explainDevice(const Graph &g, ValueId v) { return explainChain(g, v, step); }

namespace {

// The value `hops` steps along `next` from every value (-1 past a chain's end), by doubling: about
// log2(hops) passes over the values instead of a walk of `hops` steps from each.
std::vector<ValueId> hopsAlong(const std::vector<ValueId> &next, size_t hops) {
  const size_t n = next.size();
  std::vector<ValueId> at(n), jump = next, twice(n);
  for (size_t v = 0; v < n; ++v) at[v] = static_cast<ValueId>(v);
  for (; hops > 0; hops >>= 1) {
    if (hops & 1)
      for (ValueId &a : at)
        if (a >= 0) a = jump[static_cast<size_t>(a)];
    if (hops == 1) break;
    for (size_t v = 0; v < n; ++v) twice[v] = jump[v] < 0 ? -1 : jump[static_cast<size_t>(jump[v])];
    jump.swap(twice);
  }
  return at;
}

}  // namespace

std::vector<std::string> explainDevices(const Graph &g) {
  const size_t n = g.valueCount();
  std::vector<ValueId> next(n, -1);
  for (size_t v = 0; v < n; ++v) step(g, static_cast<ValueId>(v), next[v], /*text=*/false);
  // Each chain's length and the value where its last kTail steps start, from the far end of the
  // chain back, so a value's come from the next one's. Values on a cycle (a hand-edited graph)
  // or on a chain longer than kMaxSteps are `alone`: explainDevice cuts their chains (below).
  std::vector<size_t> length(n, 0);
  std::vector<ValueId> tail(n, -1);
  std::vector<uint8_t> state(n, 0);  // 0 not seen, 1 on the current path, 2 done
  std::vector<bool> alone(n, false);
  std::vector<ValueId> path;
  for (size_t start = 0; start < n; ++start) {
    ValueId v = static_cast<ValueId>(start);
    for (; v >= 0 && state[v] == 0; v = next[v]) {
      state[v] = 1;
      path.push_back(v);
    }
    size_t base = v >= 0 && state[v] == 2 ? length[v] : 0;
    bool cycle = v >= 0 && state[v] == 1, slow = cycle || (v >= 0 && alone[v]);
    for (auto it = path.rbegin(); it != path.rend(); ++it) {
      const ValueId x = *it;
      state[x] = 2;
      length[x] = ++base;
      alone[x] = slow = slow || base > kMaxSteps;
      tail[x] = base == kTail ? x : base > kTail && next[x] >= 0 ? tail[next[x]] : -1;
    }
    path.clear();
  }
  // A value on a cycle, or on a chain longer than kMaxSteps, has the text explainDevice gives a
  // chain it cuts at kMaxSteps: its first kHead steps, then the kTail steps before the cut, found
  // by hopsAlong (walking kMaxSteps steps from each such value made a 100k-node chain take 15 s).
  std::vector<ValueId> beforeCut;
  std::vector<std::string> out(n);
  for (size_t i = 0; i < n; ++i) {
    const ValueId v = static_cast<ValueId>(i);
    std::string &s = out[i];
    ValueId ignored;
    if (alone[i]) {
      if (beforeCut.empty()) beforeCut = hopsAlong(next, kMaxSteps - kTail);
      ValueId at = v;
      for (size_t k = 0; k < kHead; ++k, at = next[at])
        s += (k ? " <- " : "") + step(g, at, ignored, /*text=*/true);
      s += " <- ... (" + std::to_string(kMaxSteps - kHead - kTail) + "+ more)";
      at = beforeCut[i];
      for (size_t k = 0; k < kTail; ++k, at = next[at])
        s += " <- " + step(g, at, ignored, /*text=*/true);
      continue;
    }
    const bool cut = length[i] > kHead + kTail + 1;
    ValueId at = v;
    for (size_t k = 0; at >= 0 && (!cut || k < kHead); ++k, at = next[at])
      s += (k ? " <- " : "") + step(g, at, ignored, /*text=*/true);
    if (!cut) continue;
    s += " <- ... (" + std::to_string(length[i] - kHead - kTail) + " more)";
    for (at = tail[i]; at >= 0; at = next[at]) s += " <- " + step(g, at, ignored, /*text=*/true);
  }
  return out;
}

}  // namespace ferry
