// passes/explain.cpp — renders the reason chain that placement recorded on each value.
#include "passes/explain.h"

#include <vector>

namespace ferry {

namespace {

// Chains longer than this keep their first kHead and last kTail steps.
constexpr size_t kHead = 4;
constexpr size_t kTail = 3;
constexpr size_t kMaxSteps = size_t{1} << 16;

std::string at(const Location &loc) { return loc.known() ? " at " + loc.str() : ""; }

std::string ref(const Graph &g, ValueId v) {
  std::string site = definitionSite(g, v);
  std::string s = "%" + g.value(v).name;
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
             std::string(hasFrom ? " of %" + g.value(r.from).name : "") + " inserted for its use" +
             at(r.loc);
    }
  }
  return "?";
}

}  // namespace

std::string definitionSite(const Graph &g, ValueId v) {
  const Value &val = g.value(v);
  const Location *loc = nullptr;
  switch (val.kind) {
    case ValueKind::Input:
      if (val.def >= 0 && static_cast<size_t>(val.def) < g.inputs().size()) loc = &g.inputOf(v).loc;
      break;
    case ValueKind::Param:
      if (val.def >= 0 && static_cast<size_t>(val.def) < g.params().size()) loc = &g.paramOf(v).loc;
      break;
    case ValueKind::Result: loc = &g.node(val.def).loc; break;
  }
  return loc && loc->known() ? loc->str() : "<unknown>";
}

std::string explainDevice(const Graph &g, ValueId v) {
  // The chain's values first (cheap), then text for the steps that are shown. A chain visits each
  // value at most once unless the reasons form a cycle (a hand-edited graph); the bound ends it
  // either way, and keeps explaining many values of a very deep graph affordable.
  std::vector<ValueId> chain;
  for (size_t hops = 0; v >= 0 && hops < kMaxSteps; ++hops) {
    chain.push_back(v);
    step(g, v, v, /*text=*/false);
  }
  bool cut = v >= 0;
  std::string s;
  for (size_t i = 0; i < chain.size(); ++i) {
    if (chain.size() > kHead + kTail + 1 && i == kHead) {
      s += " <- ... (" + std::to_string(chain.size() - kHead - kTail) + (cut ? "+" : "") + " more)";
      i = chain.size() - kTail - 1;
      continue;
    }
    ValueId next;
    s += (i ? " <- " : "") + step(g, chain[i], next, /*text=*/true);
  }
  return s;
}

std::vector<std::string> explainDevices(const Graph &g) {
  const size_t n = g.valueCount();
  std::vector<ValueId> next(n, -1);
  for (size_t v = 0; v < n; ++v) step(g, static_cast<ValueId>(v), next[v], /*text=*/false);
  // Each chain's length and the value where its last kTail steps start, from the far end of the
  // chain back, so a value's come from the next one's. Values on a cycle (a hand-edited graph)
  // or on a chain too long to show whole are explained one by one, as explainDevice does.
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
  std::vector<std::string> out(n);
  for (size_t i = 0; i < n; ++i) {
    const ValueId v = static_cast<ValueId>(i);
    if (alone[i]) {
      out[i] = explainDevice(g, v);
      continue;
    }
    std::string &s = out[i];
    const bool cut = length[i] > kHead + kTail + 1;
    ValueId at = v, ignored;
    for (size_t k = 0; at >= 0 && (!cut || k < kHead); ++k, at = next[at])
      s += (k ? " <- " : "") + step(g, at, ignored, /*text=*/true);
    if (!cut) continue;
    s += " <- ... (" + std::to_string(length[i] - kHead - kTail) + " more)";
    for (at = tail[i]; at >= 0; at = next[at]) s += " <- " + step(g, at, ignored, /*text=*/true);
  }
  return out;
}

}  // namespace ferry
