// tools/ferry-compile/dot_chains.cpp — the long chains the DOT picture collapses.
#include "tools/ferry-compile/dot_chains.h"

#include "tools/ferry-compile/emit.h"

namespace ferry {

std::vector<std::vector<NodeId>> longChains(const Graph &g,
                                            const std::function<bool(const Node &)> &keep) {
  std::vector<bool> output(g.valueCount(), false);
  for (const OutputDecl &o : g.outputs()) output[static_cast<size_t>(o.value)] = true;
  auto eligible = [&](const Node &n) {
    return !n.info().is(OpTrait::Conversion) && !n.inserted && !n.pinDevice && !n.pinDType &&
           !output[static_cast<size_t>(n.result)] && !keep(n);
  };
  const std::vector<std::vector<NodeId>> users = g.users();
  // next[p] = u links p to the node that continues its chain; hasPrevious marks u.
  std::vector<NodeId> next(g.nodeCount(), -1);
  std::vector<bool> hasPrevious(g.nodeCount(), false);
  for (NodeId id : g.order()) {
    const Node &u = g.node(id);
    if (!eligible(u)) continue;
    for (ValueId o : u.operands) {
      const Node *p = g.producer(o);
      if (p == nullptr || !eligible(*p) || users[static_cast<size_t>(o)].size() != 1 ||
          shownDevice(g, *p) != shownDevice(g, u))
        continue;
      next[static_cast<size_t>(p->id)] = id;
      hasPrevious[static_cast<size_t>(id)] = true;
      break;
    }
  }
  std::vector<std::vector<NodeId>> chains;
  for (NodeId id : g.order()) {
    if (hasPrevious[static_cast<size_t>(id)] || next[static_cast<size_t>(id)] < 0) continue;
    std::vector<NodeId> chain;
    for (NodeId n = id; n >= 0; n = next[static_cast<size_t>(n)]) chain.push_back(n);
    if (chain.size() > kMaxChainDrawn) chains.push_back(std::move(chain));
  }
  return chains;
}

}  // namespace ferry
