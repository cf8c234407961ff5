// tools/ferry-compile/emit.h — a graph as Graphviz DOT and as JSON (ferry-compile --emit), and a
// compile's statistics as text (--stats).
#pragma once

#include <string>

#include "ir/graph.h"
#include "passes/compile.h"

namespace ferry {

struct EmitOptions {
  /// Include each statement's source location (DOT tooltips, JSON "location"; null when off).
  bool locations = true;
};

/// A Graphviz digraph: one node per op labelled `%name = op` and its type (plus pins), inputs,
/// params and outputs drawn as distinct shapes, nodes the compiler inserted dashed, edges
/// labelled with the value's dtype[shape]. Ids are derived from value/node ids, so the same
/// graph gives the same text byte for byte.
std::string emitDot(const Graph &graph, const EmitOptions &options = {});

/// The graph as one JSON object: {"format": "ferry.graph", "version": 1, "graph", "inputs",
/// "params", "nodes", "outputs"}; nodes in topological order with their complete attributes and
/// an "inserted" flag.
std::string emitJson(const Graph &graph, const EmitOptions &options = {});

struct StatsOptions {
  /// Include the wall time of each pass (the only part that differs from run to run).
  bool timings = true;
};

/// What a compile did, one fact per line under a `statistics for 'NAME' (...)` header:
/// `transfers: N per run, B bytes` with a line per direction (h2d, d2h, d2d, h2h), `casts:`
/// (in the graph, inserted, folded, removed), `removed:` (transfers, dead nodes), `nodes per
/// device:`, `estimated time:` and, with timings, `pass times:`.
std::string renderStats(const CompileResult &result, const CompileOptions &options,
                        const StatsOptions &stats = {});

}  // namespace ferry
