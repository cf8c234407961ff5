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

#include "passes/pass.h"

namespace ferry {

void canonicalOrder(Graph &g) {
  auto follows = [&](const Node &n) { return n.inserted && n.operands.size() == 1; };
  // For each value, the inserted nodes that read it.
  std::vector<std::vector<NodeId>> after(g.valueCount());
  for (NodeId id : g.order()) {
    const Node &n = g.node(id);
    if (follows(n)) after[n.operands[0]].push_back(id);
  }
  for (std::vector<NodeId> &ids : after)
    if (ids.size() > 1)
      std::sort(ids.begin(), ids.end(), [&](NodeId a, NodeId b) {
        return g.value(g.node(a).result).name < g.value(g.node(b).result).name;
      });

  std::vector<NodeId> order;
  order.reserve(g.order().size());
  std::vector<NodeId> stack;
  auto emitAfter = [&](ValueId v) {  // depth first: a chain stays together
    for (auto it = after[v].rbegin(); it != after[v].rend(); ++it) stack.push_back(*it);
    while (!stack.empty()) {
      NodeId id = stack.back();
      stack.pop_back();
      order.push_back(id);
      const std::vector<NodeId> &next = after[g.node(id).result];
      for (auto it = next.rbegin(); it != next.rend(); ++it) stack.push_back(*it);
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
