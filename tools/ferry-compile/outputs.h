// tools/ferry-compile/outputs.h — where ferry-compile's outputs go, checked before anything is
// compiled or written: option combinations that would lose output, files that cannot be written,
// and a destination that is the model file itself.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "ir/graph.h"
#include "ir/status.h"

namespace ferry {

/// One document to write: `format` (text, dot, svg, json) to `path` ("" = standard output).
struct Destination {
  std::string format;
  std::string path;
  std::string flag;  ///< the option that named the path: "-o" or "--emit-dir" ("" for stdout)
};

/// The output options as written on the command line.
struct OutputRequest {
  std::string model;
  std::vector<std::string> emits;  ///< --emit, each value; empty: text
  std::string output;              ///< -o; "" or "-": standard output
  std::string emitDir;             ///< --emit-dir
  std::string stopAfter;           ///< --stop-after
};

struct OutputPlan {
  std::vector<Destination> documents;
  std::string artifact;  ///< -o FILE.ferry: the executable, or ""
  std::string emitDir;   ///< created (with its parents) before the documents are written
};

/// Where each output goes. Usage errors (code "usage", naming the option): several formats
/// without --emit-dir, -o FILE with --emit-dir, `none` with other formats, --emit none with -o
/// FILE or --emit-dir (nothing would be written there), -o FILE.ferry with --stop-after (an
/// executable needs the whole pipeline).
Expected<OutputPlan> planOutputs(const OutputRequest &request);

/// Checks every file of `plan` without creating or changing any: none is the file `model` (same
/// device and inode, so links and `./` spellings count; code "usage"), each can be opened for
/// writing (an existing file is opened without truncating it; a new one is created and removed
/// again), an --emit-dir that does not exist yet can be created (code "io" for these).
Status checkDestinations(const OutputPlan &plan, const std::string &model);

/// Checks, once the model is parsed, that no file of `plan` is a file the model reads: the data
/// of its npy(...) params, resolved against the folder of `model` (compared by identity, as
/// checkDestinations does; code "usage").
Status checkNotRead(const OutputPlan &plan, const Graph &graph, const std::string &model);

/// Creates plan.emitDir and its parents, if given.
Status makeEmitDir(const OutputPlan &plan);

/// Writes `bytes` to the file `path`, or to standard output when `path` is "".
Status writeBytes(const std::string &path, std::string_view bytes);

/// Whether `path` names the executable (`-o FILE.ferry`) rather than a document.
bool isArtifactPath(const std::string &path);

}  // namespace ferry
