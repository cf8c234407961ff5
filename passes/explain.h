// passes/explain.h — why a value is on its device, as text: the reason chains in diagnostics
// (an `--explain` for ferry-compile is for the [tools] issue).
#pragma once

#include <string>
#include <vector>

#include "ir/graph.h"

namespace ferry {

/// The chain of reasons that put `v` on its device, newest first, joined by " <- ": e.g.
/// "inherited from %h (mlp.fy:4:3) <- input 'x', declared at mlp.fy:2:3". Each step follows
/// Reason::from; long chains keep their first and last steps and say how many were left out.
/// Reads only the graph (Graph::deviceReason), so it explains any placed graph. Pre: none (a value
/// that was never placed reads "not placed").
std::string explainDevice(const Graph &graph, ValueId v);

/// explainDevice of every value, indexed by ValueId, in time linear in the graph: chains share
/// their tails, so each value's text costs only the steps it shows (explainDevice per value walks
/// whole chains: quadratic on a long one — 3.9 s for a manifest of a 20k-node chain).
std::vector<std::string> explainDevices(const Graph &graph);

/// Where `v` is defined: its node's, param's or input's location ("<unknown>" when not known).
std::string definitionSite(const Graph &graph, ValueId v);

}  // namespace ferry
