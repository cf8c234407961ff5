// passes/load_time.cpp — weights and the nodes that run at load time (see load_time.h).
#include "passes/load_time.h"

namespace ferry {

std::vector<uint8_t> weightValues(const Graph &g) {
  std::vector<uint8_t> weights(g.valueCount(), 0);
  for (const ParamDecl &p : g.params()) weights[static_cast<size_t>(p.value)] = 1;
  for (NodeId id : g.order()) {
    const Node &n = g.node(id);
    if (n.op == OpKind::Constant || runsAtLoad(n, weights))
      weights[static_cast<size_t>(n.result)] = 1;
  }
  return weights;
}

}  // namespace ferry
