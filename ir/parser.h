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
  /// All params together declaring more bytes than this is an error (code "limit") at the param
  /// that passes it, found from their declared types before any param is allocated: a few lines
  /// of text cannot make the parser fill more memory than this.
  int64_t maxTotalParamBytes = int64_t{1} << 34;
  /// For compile(), which reports every mistake of a model in one run (its verify pass reports
  /// these, the device and dtype errors of the rest of the model beside them): a node whose type
  /// does not check is still built when it can be typed — as written, or as it gives once its
  /// `:bool`/`:int` operands are of their kind (a gather with f32 indices) — and a written type
  /// that disagrees with the op's is kept as the node's. The graph is then returned unverified,
  /// with no diagnostic for them. A node with no type (none written, none inferred) and an op
  /// given too few or too many operands are still errors here, as is everything else.
  bool deferTypeErrors = false;
};

/// Parses one `graph NAME { ... }`. Every node's type is inferred; a type written in the text
/// is a check against it, an `@device` a pin. A trailing `# file:line:col` comment is the
/// statement's origin; `# inserted [file:line:col]` after a node marks it Node::inserted (with
/// that origin, else none). Errors are `file:line:col` diagnostics, all of them (the parser
/// recovers at the next line); malformed input never crashes or hangs.
Expected<Graph> parseGraph(std::string_view text, std::string_view fileName,
                           const ParseOptions &options = {});

/// Reads and parses `path`; `npy(...)` paths are relative to its folder (options.baseDir is
/// ignored).
Expected<Graph> parseFile(const std::string &path, const ParseOptions &options = {});

}  // namespace ferry
