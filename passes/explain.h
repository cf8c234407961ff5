// passes/explain.h — why a value is on its device and has its dtype, as text: the reason chains
// in diagnostics and in ferry-compile's --explain.
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

/// Why `v` has its dtype, newest first, joined by " <- " as explainDevice's chains: e.g.
/// "inherited from %h (t.fy:4:3) <- input 'x', declared f16 at t.fy:2:3". A step is an input's or
/// param's declared dtype, a cast, a pin, a promotion or autocast the dtype pass recorded
/// (Graph::dtypeReason), a result that keeps an operand's dtype (followed to that operand:
/// inherited from), a copy (followed), or an op whose rule gives the dtype ("'sum' gives i64 at
/// t.fy:5:3"). Long chains keep their first and last steps. Pre: none.
std::string explainDType(const Graph &graph, ValueId v);

/// The fix for operand `i` of `n` when its dtype is not of its fixed kind (wrongOperandKind):
/// "cast %ids to i64: cast(%ids, to=i64)" (bool for a `:bool` operand), naming the value the user
/// wrote (a transfer the compiler inserted is looked through).
std::string operandKindFix(const Graph &graph, const Node &n, size_t i);

/// Where `v` is defined: its node's, param's or input's location ("<unknown>" when not known).
std::string definitionSite(const Graph &graph, ValueId v);
/// The same as a Location (unknown when not known), for the notes that talk about `v`.
Location definitionLoc(const Graph &graph, ValueId v);

/// The rows of an operand table, the layout of device and dtype errors' notes: each cell but the
/// last padded to its column's width and followed by one space (two before the last cell).
std::vector<std::string> alignColumns(const std::vector<std::vector<std::string>> &rows);

}  // namespace ferry
