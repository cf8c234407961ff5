// tools/common/compile_flags.h — the compile-option flags ferry-compile and ferry-run share: the
// flags with their help texts, and their conversion to CompileOptions with one-line errors that
// name the flag ("--placement: expected strict or auto, got 'sideways'").
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "ir/diagnostics.h"
#include "passes/options.h"
#include "runtime/executable.h"

namespace CLI {
class App;
}  // namespace CLI

namespace ferry {

/// "cpu,cuda:0,...": --devices when not given: the host and every GPU this build can use here.
std::string defaultDeviceList();

/// The compile options as written on the command line; checked by toCompileOptions().
struct CompileFlags {
  /// `cpu`, then every GPU this machine has when the build has CUDA (machineDevices()).
  std::string devices = defaultDeviceList();
  std::optional<std::string> target;  ///< unset: the first of `devices`; given, never empty
  std::string placement = "strict";
  std::string dtype = "strict";
  bool noFallback = false;
  bool noFusion = false;
  std::string transfers;
  std::string maxTransferBytes;
  std::string maxCasts;
  std::string cost;      ///< "key=value,...": cost model settings (passes/cost_settings.h)
  std::string costFile;  ///< a file of cost model settings, applied before `cost`
};

/// Adds --devices, --target, --placement, --dtype, --no-fallback, --no-fusion, --cost and
/// --cost-file, bound
/// to `flags`. The budget flags come separately so that a tool can list its own options in
/// between.
void addPolicyFlags(CLI::App &app, CompileFlags &flags);
/// Adds --transfers, --max-transfer-bytes and --max-casts, bound to `flags`.
void addBudgetFlags(CLI::App &app, CompileFlags &flags);
/// The first of the flags above given on the command line ("--devices"), or "" when none was.
/// Call after app.parse().
std::string firstCompileFlagGiven(const CLI::App &app);

/// Fills the compile options of `c` from `flags`, each checked with a message that names its
/// flag and says what it expects; then validates the whole of `c` (so options the caller set,
/// e.g. stopAfter, count). Stricter than the library's parsers where a command line should be:
/// `--dtype autocast` must say which precision (autocast=f16 or autocast=bf16), `--target ""` is
/// no device, and a device index beyond 1023 is "out of range 0..1023" however many digits it has.
Status toCompileOptions(const CompileFlags &flags, CompileOptions &c);

/// A warning when --target was given and names a device where no step of the compiled model runs
/// (`computing`: the devices its nodes were placed on), saying why that happens under the
/// placement policy and what would change it; nothing otherwise. Under strict placement every
/// node stays with its operands, so a model whose inputs arrive on the host (every ONNX model's)
/// runs there whatever --target says.
std::optional<Diagnostic> unusedTargetWarning(const CompileFlags &flags, const CompileOptions &c,
                                              std::span<const Device> computing);
/// The same for a lowered model: the devices its kernel steps run on.
std::optional<Diagnostic> unusedTargetWarning(const CompileFlags &flags, const CompileOptions &c,
                                              const Executable &exe);

/// The messages of a failed check, joined into one line.
std::string oneLine(const Status &s);
/// A bad option value, reported as one line naming its flag: "--flag: why" (code "usage").
Status flagError(std::string_view flag, std::string why);
/// An option checked on its own by CompileOptions::validate (everything else at its default, so
/// that a message is about this option only).
Status validateAlone(const CompileOptions &probe, std::string_view flag);
/// `s` as an integer from `min` to `max` ("" leaves `out` unset); otherwise an error naming
/// `flag`, what it expects and what came: "--iterations: expected a positive integer, got 'x'"
/// (not a number, or below `min`), "--iterations: '2000000' is out of range: expected a positive
/// integer up to 1000000" (above `max`, however many digits).
Status integerFlag(const std::string &s, std::string_view flag, int64_t min,
                   std::optional<int64_t> &out, int64_t max = std::numeric_limits<int64_t>::max());
/// Why `path` cannot be read (strerror text), or "" when it can.
std::string unreadableReason(const std::string &path);

}  // namespace ferry
