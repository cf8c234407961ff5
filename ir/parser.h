// ir/parser.h — reads the `.fy` text format into a verified, shape-inferred graph.
#pragma once

#include <string>
#include <string_view>

#include "ir/graph.h"
#include "ir/status.h"

namespace ferry {

struct ParseOptions {
  /// Folder that `npy("w.npy")` paths are relative to; empty: the current directory.
  std::string baseDir;
};

/// Parses one `graph NAME { ... }`. Every node's type is inferred; a type written in the text
/// is a check against it, an `@device` a pin. Errors are `file:line:col` diagnostics, all of
/// them (the parser recovers at the next line); malformed input never crashes or hangs.
Expected<Graph> parseGraph(std::string_view text, std::string_view fileName,
                           const ParseOptions &options = {});

/// Reads and parses `path`; `npy(...)` paths are relative to its folder.
Expected<Graph> parseFile(const std::string &path);

}  // namespace ferry
