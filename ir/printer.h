// ir/printer.h — the `.fy` text form of a graph (the inverse of ir/parser.h), and saveModel.
#pragma once

#include <string>
#include <string_view>

#include "ir/graph.h"

namespace ferry {

/// How a graph is printed. A param's data prints as its initializer (`zeros`, `randn(seed=1)`,
/// `npy("w.npy")`) or as an inline literal `[1, 2, ...]`. Some params need a file: Data params
/// above `inlineLimit` elements, and Npy params whose data is not their file's because the
/// compiler converted them (ParamDecl::foldedFrom). `paramsFolder` says where those go.
struct PrintOptions {
  /// Append `# file:line:col` to each statement whose location is known.
  bool locations = true;
  /// With a `paramsFolder`: Data params of at most this many elements print inline, larger ones
  /// as a file in that folder. Without one, every Data param prints inline.
  int64_t inlineLimit = 64;
  /// "": the text stands alone, for a stream: an unchanged Npy param prints its own path (read
  /// back relative to the model's folder, as the model had it); every other param whose data is
  /// in no file (Data params of any size, converted Npy params) prints inline in full.
  /// "NAME.params" (saveModel sets it): every Npy param, and every Data param above
  /// `inlineLimit`, prints as `npy("NAME.params/<param>.npy")`: a file of that folder, relative
  /// to the model's folder, holding the param's data (ParamDecl::data), which saveModel writes.
  /// File names are the value names with characters outside [A-Za-z0-9_.-] made '_', made unique
  /// in param order (".1.npy", ...).
  std::string paramsFolder;
  /// printModel's limit: the most elements a param printed inline for want of a file may have.
  int64_t maxInline = 65536;
};

/// The `.fy` text of `graph`: values typed `dtype[shape]`, `@device` where a device is set
/// (placed, declared or pinned), `@dtype` where a node's compute dtype is pinned, attributes
/// that differ from their defaults, `# inserted` (and its origin) after each node the compiler
/// inserted. Deterministic; `print(parse(print(g))) == print(g)` (with `locations` on, for
/// graphs whose statements all have a known location or are inserted nodes: the parser gives
/// any other statement without a location comment its position in the text). Never fails: a
/// param that needs a file prints inline however large it is (see printModel).
std::string printGraph(const Graph &graph, const PrintOptions &options = {});

/// printGraph's text for a stream (standard output), which no param files accompany: an error
/// (code "limit", one diagnostic per param) where a param that needs a file (see PrintOptions)
/// would print inline with more than `options.maxInline` elements; the caller then writes the
/// model with saveModel instead.
Expected<std::string> printModel(const Graph &graph, const PrintOptions &options = {});

/// "%name", or %"a::b" for a name that is not an identifier (the parser reads both).
std::string valueRef(const Graph &graph, ValueId v);
/// `%name`, or `%"onnx::MatMul_84"` for a name that is not letters, digits, '_' and '.': how
/// messages and fixes write a value, so that a fix can be pasted into a `.fy` file.
std::string valueRef(std::string_view name);

/// The folder saveModel writes the params of a model at `path` into, as the text names it
/// (relative to the model's folder): the file name without its `.fy` extension, or the whole
/// file name where it has none, and ".params" ("out.fy" -> "out.params", "out" ->
/// "out.params", "out.txt" -> "out.txt.params").
std::string paramsFolderName(const std::string &path);

/// What saveModel checks before it writes anything (code "io"): no param file it would write
/// exists already, and its params folder is a folder if it is there. It does not check that the
/// folders can be written to (writing says so). Callers that write other files first check this
/// before those.
Status checkSaveModel(const Graph &graph, const std::string &path,
                      const PrintOptions &options = {});

/// Writes `graph` to `path` as `.fy` text (`trailer`, e.g. comments, appended) and, in the
/// folder paramsFolderName(path) beside it, one `.npy` file for each Npy param and each Data
/// param above options.inlineLimit elements (options.paramsFolder is set by saveModel). Never
/// replaces a file but `path` itself: checkSaveModel first, and each param file is created
/// anew. The param files are written first and the text last, to a temporary file renamed over
/// `path` (an existing special file or link is written in place), so a model on disk never
/// names a missing file; on failure, every file and folder this call made is removed again.
Status saveModel(const Graph &graph, const std::string &path, const PrintOptions &options = {},
                 std::string_view trailer = {});

}  // namespace ferry
