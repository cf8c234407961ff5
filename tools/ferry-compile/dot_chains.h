// tools/ferry-compile/dot_chains.h — the chains of nodes the DOT picture draws as one box, so that
// a long model stays readable (a 300-node chain is one box, not a picture 25,000 points tall).
#pragma once

#include <functional>
#include <vector>

#include "ir/graph.h"

namespace ferry {

/// Chains of more nodes than this are drawn as one box.
inline constexpr size_t kMaxChainDrawn = 16;

/// The chains of more than kMaxChainDrawn nodes, each in order, first to last: nodes on one
/// device (or all unplaced) where each result is read once, by the next node. No conversion
/// (OpTrait::Conversion: transfer, cast; the picture draws those itself), node the compiler
/// inserted, node pinned to a device or dtype, node whose result is a graph output, or node
/// `keep` holds on to (a rejected one) is part of a chain. A node with several chain operands
/// continues the chain of its first. In node order; deterministic.
std::vector<std::vector<NodeId>> longChains(const Graph &graph,
                                            const std::function<bool(const Node &)> &keep);

}  // namespace ferry
