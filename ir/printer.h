// ir/printer.h — the `.fy` text form of a graph (the inverse of ir/parser.h).
#pragma once

#include <string>

#include "ir/graph.h"

namespace ferry {

struct PrintOptions {
  /// Append `# file:line:col` to each statement whose location is known.
  bool locations = true;
  /// Params with raw data (Initializer::Data) of at most this many elements print inline as
  /// `[1, 2, ...]`; larger ones print as `npy("<name>.npy")` (saveModel writes that file).
  int64_t inlineLimit = 64;
};

/// The `.fy` text of `graph`: values typed `dtype[shape]`, `@device` where a device is set
/// (placed, declared or pinned), `@dtype` where a node's compute dtype is pinned, attributes
/// that differ from their defaults, `# inserted` (and its origin) after each node the compiler
/// inserted. Deterministic; `print(parse(print(g))) == print(g)` (with `locations` on, for
/// graphs whose statements all have a known location or are inserted nodes: the parser gives
/// any other statement without a location comment its position in the text).
std::string printGraph(const Graph &graph, const PrintOptions &options = {});

/// "%name", quoting nothing: value names are restricted to [A-Za-z0-9_.]+ by the parser.
std::string valueRef(const Graph &graph, ValueId v);

/// Writes `graph` to `path` as `.fy` text plus one `.npy` file beside it for each param whose
/// data is too large to print inline.
Status saveModel(const Graph &graph, const std::string &path, const PrintOptions &options = {});

}  // namespace ferry
