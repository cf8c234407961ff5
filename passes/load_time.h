// passes/load_time.h — which values are weights (known before any run), and which nodes therefore
// run once, when a Session is created, instead of in every run.
//
// A transfer or cast whose operand is a weight (a param, a constant, or a transfer or cast of
// one) gives the same bytes in every run, and so does an identity of one (simplify makes those
// to keep an output's name): lowering makes it a load step
// (Executable::loadSteps), which Session::create performs once, so the weight gets its own copy
// on the destination device or in the destination dtype. Placement's cost model counts such a
// copy as free per run; the statistics, the budgets and the manifest count it apart from a run's.
// Other ops on weights (a transpose of a weight, say) still run in every run.
#pragma once

#include <cstdint>
#include <vector>

#include "ir/graph.h"

namespace ferry {

/// Per value id: 1 for a weight — a param, a constant's result, or the result of a transfer, cast
/// or identity of a weight — else 0. Reads the nodes in the graph's order.
std::vector<uint8_t> weightValues(const Graph &g);

/// Whether `n` runs at load time, once per Session: a transfer, cast or identity of a weight
/// (`weights` from weightValues(), or kept the same way).
inline bool runsAtLoad(const Node &n, const std::vector<uint8_t> &weights) {
  return (n.op == OpKind::Transfer || n.op == OpKind::Cast || n.op == OpKind::Identity) &&
         n.operands.size() == 1 && weights[static_cast<size_t>(n.operands[0])] != 0;
}

}  // namespace ferry
