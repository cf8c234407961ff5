// tools/common/load_model.h — the model a tool is given, read by its kind: an ONNX model
// (`.onnx`, any case) through the importer, anything else as `.fy` text; and the --shape flag,
// which fixes the symbolic dims of an ONNX model's inputs. Both tools read models through here,
// so that an imported graph goes through everything a parsed one does.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "frontend/onnx/onnx_import.h"
#include "ir/graph.h"
#include "ir/parser.h"
#include "ir/status.h"
#include "passes/options.h"
#include "runtime/executable.h"

namespace CLI {
class App;
}  // namespace CLI

namespace ferry {

/// How loadModel() reads each kind of model, and how ferry-run loads a saved executable.
struct LoadOptions {
  ParseOptions parse;      ///< for `.fy` text
  OnnxImportOptions onnx;  ///< for `.onnx` models (--shape fills its inputShapes)
  Executable::LoadOptions executable;  ///< for saved executables (`.ferry`)
};

/// Adds `--max-total-param-bytes N`, bound to `value`: the limit on the bytes of a model's
/// params (weights) together.
void addParamLimitFlag(CLI::App &app, std::string &value);

/// Sets the --max-total-param-bytes `value` (when given) as every reader's limit in `options`:
/// ParseOptions::maxTotalParamBytes, OnnxImportOptions::maxTotalParamBytes and
/// Executable::LoadOptions::maxTotalWeightBytes; a value that is no positive integer is an error
/// naming the flag.
Status applyParamLimitFlag(const std::string &value, LoadOptions &options);

/// Adds `--shape NAME=D0,D1,...` (repeatable), bound to `specs`.
void addShapeFlag(CLI::App &app, std::vector<std::string> &specs);

/// The --shape values as the importer takes them, each checked with a message that names the
/// flag, what it expects and what came ("--shape: expected NAME=D0,D1,... (e.g. --shape
/// x=1,784), got 'x'"); a name given twice is an error. Whether a name is one of the model's
/// inputs is the importer's to say.
Status parseShapeFlags(const std::vector<std::string> &specs,
                       std::map<std::string, std::vector<int64_t>, std::less<>> &shapes);

/// Adds `--input-value NAME=FILE` (repeatable; FILE a `.pb` TensorProto or `.npy`), bound to
/// `specs`: the value of an ONNX input that a node needs at import (a Reshape's shape fed as an
/// input), which freezes it (OnnxImportOptions::inputValues).
void addInputValueFlag(CLI::App &app, std::vector<std::string> &specs);

/// Reads the --input-value files into `values`, each error naming the flag and the input
/// (syntax, a name given twice, a file that does not read); with a model that is not ONNX, a
/// usage error.
Status readInputValueFlags(const std::vector<std::string> &specs, const std::string &model,
                           std::map<std::string, TensorData, std::less<>> &values);

/// Where an imported model's inputs arrive, for compile options `c`: the host (`cpu`) when
/// c.devices has it, else c.target (a model compiled for `cpu:1` alone takes its inputs there).
Device onnxInputDevice(const CompileOptions &c);

/// Whether `specs` suits `model`: --shape applies to ONNX models only (a `.fy` declares its
/// shapes), so with any other model it is a usage error naming the flag and the model.
Status checkShapesApply(const std::vector<std::string> &specs, const std::string &model);

/// Reads the model in `path`: ONNX when isOnnxPath(path) (options.onnx), else `.fy` text
/// (options.parse). Errors are the reader's diagnostics, located in the model (a `.fy` line or
/// an ONNX node), code "io" when the file could not be read, "usage" when an option does not
/// fit the model (a --shape for a name that is no input).
Expected<Graph> loadModel(const std::string &path, const LoadOptions &options);

/// Whether every diagnostic of `s` has code `code`: a load that failed only for "io" or only for
/// "usage" is the command line's problem (exit status 2), not the model's.
bool allOfCode(const Status &s, std::string_view code);

}  // namespace ferry
