// tools/ferry-compile/emit.h — a graph as Graphviz DOT and as JSON, for ferry-compile --emit.
#pragma once

#include <string>

#include "ir/graph.h"

namespace ferry {

struct EmitOptions {
  /// Include each statement's source location (DOT tooltips, JSON "location"; null when off).
  bool locations = true;
};

/// A Graphviz digraph: one node per op labelled `%name = op` and its type (plus pins), inputs,
/// params and outputs drawn as distinct shapes, edges labelled with the value's dtype[shape].
/// Ids are derived from value/node ids, so the same graph gives the same text byte for byte.
std::string emitDot(const Graph &graph, const EmitOptions &options = {});

/// The graph as one JSON object: {"format": "ferry.graph", "version": 1, "graph", "inputs",
/// "params", "nodes", "outputs"}; nodes in topological order with their complete attributes.
std::string emitJson(const Graph &graph, const EmitOptions &options = {});

}  // namespace ferry
