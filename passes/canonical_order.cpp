// passes/canonical_order.cpp — one order for a compiled graph, whichever pass inserted what.
//
// Each pass puts the nodes it inserts directly after their operand's producer, but two nodes
// inserted after the same producer by different passes (a transfer by placement, a cast by the
// dtype pass) land in the order the passes ran. Recompiling a compiled dump runs them again in
// another situation, so the order could differ while the graph is the same. Here the user's
// nodes keep their order and every inserted node (one operand) follows its operand's producer:
// the nodes after an input or param in declaration order, before every other node, and the
// nodes after one producer sorted by result name, each followed by what follows it.
#include <algorithm>
#include <span>

#include "passes/pass.h"

namespace ferry {

void canonicalOrder(Graph &g) {
  auto follows = [&](const Node &n) { return n.inserted && n.operands.size() == 1; };
  // The inserted nodes, keyed by the value they read and sorted by (that value, result name);
  // a bit per value says whether any node follows it. Inserted nodes are few: this costs a
  // scan of the order and a bit test per node, not a list per value.
  std::vector<std::pair<ValueId, NodeId>> after;
  std::vector<uint64_t> has((g.valueCount() + 63) / 64, 0);
  for (NodeId id : g.order()) {
    const Node &n = g.node(id);
    if (!follows(n)) continue;
    after.emplace_back(n.operands[0], id);
    has[static_cast<size_t>(n.operands[0]) / 64] |= uint64_t{1} << (n.operands[0] % 64);
  }
  std::sort(after.begin(), after.end(), [&](const auto &a, const auto &b) {
    if (a.first != b.first) return a.first < b.first;
    return g.value(g.node(a.second).result).name < g.value(g.node(b.second).result).name;
  });
  auto followers = [&](ValueId v) -> std::span<const std::pair<ValueId, NodeId>> {
    if (!(has[static_cast<size_t>(v) / 64] >> (v % 64) & 1)) return {};
    auto [lo, hi] =
        std::equal_range(after.begin(), after.end(), std::pair<ValueId, NodeId>{v, 0},
                         [](const auto &a, const auto &b) { return a.first < b.first; });
    return {lo, hi};
  };

  std::vector<NodeId> order;
  order.reserve(g.order().size());
  std::vector<NodeId> stack;
  auto emitAfter = [&](ValueId v) {  // depth first: a chain stays together
    auto first = followers(v);
    for (auto it = first.rbegin(); it != first.rend(); ++it) stack.push_back(it->second);
    while (!stack.empty()) {
      NodeId id = stack.back();
      stack.pop_back();
      order.push_back(id);
      auto next = followers(g.node(id).result);
      for (auto it = next.rbegin(); it != next.rend(); ++it) stack.push_back(it->second);
    }
  };
  for (const InputDecl &in : g.inputs()) emitAfter(in.value);
  for (const ParamDecl &p : g.params()) emitAfter(p.value);
  for (NodeId id : g.order()) {
    const Node &n = g.node(id);
    if (follows(n)) continue;
    order.push_back(id);
    emitAfter(n.result);
  }
  FERRY_CHECK(order.size() == g.order().size()) << "canonicalOrder lost nodes";
  g.setOrder(std::move(order));
}

}  // namespace ferry
