// tools/ferry-compile/command_line.h — ferry-compile's options: their definitions and --help, and
// parsing them with one-line errors that name the option.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "tools/common/compile_flags.h"

namespace ferry {

/// The command line as written; checked and turned into CompileOptions and an OutputPlan by
/// run().
struct Options {
  std::string model;
  std::vector<std::string> emits;  ///< empty: text
  std::string output;
  std::string emitDir;
  std::string diagnostics = "text";
  bool noLocations = false;
  CompileFlags compile;
  std::vector<std::string> shapes;  ///< --shape NAME=D0,D1,...: an ONNX model's input shapes
  std::vector<std::string> inputValues;  ///< --input-value NAME=FILE: ONNX inputs fixed at import
  std::string maxTotalParamBytes;        ///< --max-total-param-bytes N
  std::string stopAfter;
  bool stats = false;
  /// --explain: "*" for a bare --explain (rejections), else value names.
  std::vector<std::string> explain;
};

/// Parses `argc`/`argv` into `options`. Returns the exit status when ferry-compile is done
/// (--help: 0; a usage error, written to stderr as one line in the --diagnostics format: 2), or
/// nullopt to go on.
std::optional<int> parseCommandLine(int argc, char **argv, Options &options);

}  // namespace ferry
