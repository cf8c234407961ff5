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
  /// A param or tensor literal larger than this is an error (code "limit"), so that a typo in a
  /// shape cannot make the parser allocate without bound.
  int64_t maxParamBytes = int64_t{1} << 32;
};

/// Parses one `graph NAME { ... }`. Every node's type is inferred; a type written in the text
/// is a check against it, an `@device` a pin. A trailing `# file:line:col` comment is the
/// statement's origin; `# inserted [file:line:col]` after a node marks it Node::inserted (with
/// that origin, else none). Errors are `file:line:col` diagnostics, all of them (the parser
/// recovers at the next line); malformed input never crashes or hangs.
Expected<Graph> parseGraph(std::string_view text, std::string_view fileName,
                           const ParseOptions &options = {});

/// Reads and parses `path`; `npy(...)` paths are relative to its folder.
Expected<Graph> parseFile(const std::string &path);

}  // namespace ferry
