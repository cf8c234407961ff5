// tools/ferry-run/main.cpp — ferry-run: build a .fy or ONNX model (or load a saved executable),
// run it on inputs from .npy or .pb files, random ones, or a folder of ONNX test data, print a
// summary of each output and the run times, compare the outputs with the folder's expected ones,
// and write the outputs as .npy files on request.
//
// The steps, in order; each failure exits with the status --help states:
//   1. flags       every option and FERRY_NUM_THREADS checked, one line naming the flag or the
//                  variable (command-line errors worded as ferry-compile's, tools/common/
//                  cli_errors.h); --input files and the --check-dir folder read (2)
//   2. model       an artifact when the file starts with the artifact's magic, else an ONNX
//                  model (.onnx) imported or .fy text parsed (tools/common/load_model.h), and
//                  built (2 unreadable, 1 rejected by the compiler, the parser or the importer,
//                  diagnostics written as ferry-compile writes them, through the shared Report
//                  of tools/common/report.h: capped, escaped)
//   3. inputs      --input tensors matched to the model's inputs by name, random ones for the
//                  rest; or the --check-dir files by name, else position (2)
//   4. runs        --warmup untimed, then --iterations timed runs on one Session (1; the
//                  Session's input check is a usage error, 2); each at most kMaxRuns, and of a
//                  timed run only its wall time and step times are kept (the last one's whole)
//   5. report      outputs, timings, the slowest steps on stdout; the outputs against
//                  --check-dir's; the last timed run as a Chrome trace to --trace; outputs to
//                  --output-dir (2 unwritable); then 1 when an output did not match
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <variant>
#include <vector>

#include "backends/cpu/num_threads.h"
#include "backends/cpu/onednn_gemm.h"
#include "passes/lower.h"
#include "runtime/artifact.h"
#include "runtime/executable.h"
#include "runtime/session.h"
#include "tools/common/cli_errors.h"
#include "tools/common/compile_flags.h"
#include "tools/common/load_model.h"
#include "tools/common/report.h"
#include "tools/ferry-run/check_dir.h"
#include "tools/ferry-run/report.h"
#include "tools/common/tensor_file.h"
#include "tools/ferry-run/trace.h"

namespace ferry {

namespace {

namespace fs = std::filesystem;

// Exit codes, as --help states them.
constexpr int kOk = 0;
constexpr int kFailed = 1;
constexpr int kUsage = 2;

// The most runs --iterations and --warmup each ask for: enough for any measurement, and their
// sum stays far from overflowing anything.
constexpr int64_t kMaxRuns = 1'000'000;

// The command line as written; checked by checkFlags().
struct Options {
  std::string model;
  bool listDevices = false;
  CompileFlags compile;
  std::string compileFlagGiven;  // the first compile flag on the command line, or ""
  std::vector<std::string> shapes;
  std::vector<std::string> inputs;
  std::string maxTotalParamBytes;  // "" when not given
  std::string checkDir;
  std::string rtol;  // "" when not given
  std::string atol;
  std::string randomSeed;  // "" when --random-inputs is not given
  std::string outputDir;
  std::string trace;
  std::string iterations = "10";
  std::string warmup = "1";
  bool outputsOnDevice = false;
  bool check = false;
};

// An --input, read before the model is built: a file that cannot be used is found first.
struct InputFile {
  std::string name;
  std::string file;
  Tensor tensor;
};

// The options once checked.
struct Plan {
  CompileOptions compile;
  LoadOptions load;
  std::vector<InputFile> inputs;
  std::optional<TestData> testData;
  /// The ONNX model's inputs that --input or --check-dir's files gave at import
  /// (onnx.frozenInputs): no longer inputs of the executable.
  std::vector<std::string> frozenInputs;
  Tolerance tolerance;
  std::optional<int64_t> randomSeed;
  int64_t iterations = 0;
  int64_t warmup = 0;
};

// Diagnostics, written now: capped at kMaxErrorsShown errors over the whole run, escaped.
void printDiagnostics(Report &report, std::span<const Diagnostic> ds) {
  report.diagnostics(ds);
  report.flush();
}

// A trace file that cannot be written is better found before the runs than after them; what
// this cannot foresee (permissions, a full disk) writeTrace() reports.
Status checkTracePath(const std::string &path) {
  if (path.empty()) return {};
  std::error_code ec;
  if (fs::is_directory(path, ec))
    return flagError("--trace", "'" + path + "' is a folder; expected a file name");
  const fs::path parent = fs::path(path).parent_path();
  if (!parent.empty() && !fs::is_directory(parent, ec))
    return flagError("--trace", "cannot write '" + path + "': no folder '" + parent.string() + "'");
  return {};
}

// `s` as a tolerance: a finite number, at least 0 ("" leaves `out` as it is).
Status toleranceFlag(const std::string &s, std::string_view flag, double &out) {
  if (s.empty()) return {};
  double v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || !std::isfinite(v) || v < 0)
    return flagError(flag, "expected a non-negative number (e.g. 1e-5), got '" + s + "'");
  out = v;
  return {};
}

// --check-dir and what goes with it: the folder read, the tolerances; --input and
// --random-inputs left out (the folder gives every input).
Status checkTestDataFlags(const Options &o, Plan &p) {
  FERRY_TRY(toleranceFlag(o.rtol, "--rtol", p.tolerance.rtol));
  FERRY_TRY(toleranceFlag(o.atol, "--atol", p.tolerance.atol));
  if (o.checkDir.empty()) {
    if (!o.rtol.empty() || !o.atol.empty())
      return flagError(o.rtol.empty() ? "--atol" : "--rtol",
                       "applies to --check-dir DIR (the outputs compared with DIR's), which is "
                       "not given");
    return {};
  }
  if (!o.inputs.empty() || !o.randomSeed.empty())
    return flagError("--check-dir", std::string("the folder gives every input; leave out ") +
                                        (o.inputs.empty() ? "--random-inputs" : "--input"));
  Expected<TestData> data = readTestData(o.checkDir);
  if (!data) return data.status();
  p.testData = std::move(data).value();
  // ferry's shapes are static: an ONNX input whose value a node needs at import (a Reshape's
  // shape, as ONNX's node tests feed it) is given it from its named file.
  if (isOnnxPath(o.model))
    for (const DataFile &f : p.testData->inputs)
      if (!f.name.empty()) p.load.onnx.inputValues.emplace(f.name, f.tensor.data());
  return {};
}

Status checkFlags(const Options &o, Plan &p) {
  FERRY_TRY(cpu::checkNumThreadsEnv());
  FERRY_TRY(cpu::checkCpuGemmEnv());
  FERRY_TRY(toCompileOptions(o.compile, p.compile));
  FERRY_TRY(parseShapeFlags(o.shapes, p.load.onnx.inputShapes));
  FERRY_TRY(checkShapesApply(o.shapes, o.model));
  FERRY_TRY(applyParamLimitFlag(o.maxTotalParamBytes, p.load));
  p.load.onnx.inputDevice = onnxInputDevice(p.compile);
  std::unordered_set<std::string> given;
  for (const std::string &spec : o.inputs) {
    const size_t eq = spec.find('=');
    if (eq == std::string::npos)
      return flagError("--input", "expected NAME=FILE.npy or NAME=FILE.pb, got '" + spec + "'");
    std::string name = spec.substr(0, eq), file = spec.substr(eq + 1);
    if (name.empty()) return flagError("--input", "no input name before '=' in '" + spec + "'");
    if (file.empty()) return flagError("--input " + name, "no file after '='");
    if (!given.insert(name).second)
      return flagError("--input", "input '" + name + "' is given twice");
    if (std::string why = unreadableReason(file); !why.empty())
      return flagError("--input " + name, "cannot read '" + file + "': " + why);
    Expected<Tensor> t = readTensorFile(file);
    if (!t) return flagError("--input " + name, oneLine(t.status()));
    p.inputs.push_back({std::move(name), std::move(file), std::move(t).value()});
  }
  // An ONNX input a node needs at import (a Reshape's shape) takes its --input file's value
  // there, as --check-dir's files do (gatherInputs then leaves it out).
  if (isOnnxPath(o.model))
    for (const InputFile &in : p.inputs) p.load.onnx.inputValues.emplace(in.name, in.tensor.data());
  p.load.onnx.frozenInputs = &p.frozenInputs;
  FERRY_TRY(checkTestDataFlags(o, p));
  std::optional<int64_t> n;
  FERRY_TRY(integerFlag(o.randomSeed, "--random-inputs", 0, p.randomSeed));
  FERRY_TRY(integerFlag(o.iterations, "--iterations", 1, n, kMaxRuns));
  p.iterations = n.value_or(10);
  n.reset();
  FERRY_TRY(integerFlag(o.warmup, "--warmup", 0, n, kMaxRuns));
  p.warmup = n.value_or(1);
  std::error_code ec;
  if (!o.outputDir.empty() && fs::exists(o.outputDir, ec) && !fs::is_directory(o.outputDir, ec))
    return flagError("--output-dir", "'" + o.outputDir + "' exists and is not a folder");
  return checkTracePath(o.trace);
}

// The executable of `o.model`, or the exit status of why there is none. A saved executable
// starts with the magic (docs/artifact.md); a `.onnx` file is imported; anything else is given
// to the .fy parser, whose errors say where the text went wrong, bytes that are not text
// included.
std::variant<Executable, int> loadModel(const Options &o, const Plan &p, Report &report) {
  if (std::string why = unreadableReason(o.model); !why.empty())
    return report.usage("cannot read '" + o.model + "': " + why);
  if (isExecutableFile(o.model)) {
    const std::string flag = !o.compileFlagGiven.empty() ? o.compileFlagGiven
                             : !o.shapes.empty()         ? "--shape"
                                                         : "";
    if (!flag.empty())
      return report.usage(flag + ": applies to .fy and ONNX models; '" + o.model +
                          "' is already compiled");
    Expected<Executable> exe = Executable::load(o.model, p.load.executable);
    if (!exe) return report.usage(oneLine(exe.status()));
    return std::move(exe).value();
  }
  // Nothing is compiled for a device this build cannot run.
  if (std::optional<Device> d = firstWithoutBackend(p.compile.devices, builtinBackends())) {
    Diagnostic e{Severity::Error, "device", {},
                 "--devices names " + d->str() + ", and this build of ferry has no backend for it " +
                     "(backends: " + describeBackends(builtinBackends()) + ")",
                 {}, {}};
    e.fix("run with --devices that leave it out, or with a build of ferry that has a backend for " +
          d->str());
    printDiagnostics(report, std::span<const Diagnostic>(&e, 1));
    return kFailed;
  }
  if (auto absent = firstAbsent(p.compile.devices, builtinBackends())) {
    Diagnostic e{Severity::Error, "device", {}, "--devices names " + absent->first.str() + ", which is not on this machine: " +
                     absent->second,
                 {}, {}};
    e.fix("run with --devices that leave " + absent->first.str() + " out, or on a machine that has it");
    printDiagnostics(report, std::span<const Diagnostic>(&e, 1));
    return kFailed;
  }
  Expected<Graph> graph = loadModel(o.model, p.load);
  if (!graph) {
    // --shape for a name that is no input of the model.
    if (allOfCode(graph.status(), "usage")) return report.usage(oneLine(graph.status()));
    printDiagnostics(report, graph.status().diagnostics());
    // A file that vanished or failed between the check above and the parse is no model error.
    return allOfCode(graph.status(), "io") ? kUsage : kFailed;
  }
  std::vector<Diagnostic> warnings;
  Expected<Executable> exe = build(std::move(graph).value(), p.compile, &warnings);
  if (exe)
    if (std::optional<Diagnostic> w = unusedTargetWarning(o.compile, p.compile, *exe))
      warnings.push_back(std::move(*w));
  printDiagnostics(report, warnings);
  if (!exe) {
    printDiagnostics(report, exe.status().diagnostics());
    return kFailed;
  }
  return std::move(exe).value();
}

// "x: f32[32,784] @cpu, mask: bool[32] @cpu"
std::string inputList(const Executable &exe) {
  std::string s;
  for (int32_t id : exe.inputs) {
    const Slot &slot = exe.slots[static_cast<size_t>(id)];
    s += (s.empty() ? "" : ", ") + slot.name + ": " + slot.type.str() + " @" + slot.device.str();
  }
  return s.empty() ? "none" : s;
}

// Every input of the model, from its file or made up; each source is printed. Inputs are read
// onto the host; the Session moves them to their declared devices (counted as input moves).
std::variant<std::vector<NamedTensor>, int> gatherInputs(const Executable &exe, const Plan &p,
                                                         Report &report) {
  if (p.testData) {
    std::vector<std::string> files;
    Expected<std::vector<NamedTensor>> matched =
        matchTestData(*p.testData, exe, &files, p.frozenInputs);
    if (!matched) return report.usage(oneLine(matched.status()));
    for (const DataFile &f : p.testData->inputs)
      if (std::find(p.frozenInputs.begin(), p.frozenInputs.end(), f.name) != p.frozenInputs.end())
        std::cout << "input  " << f.name << " fixed at import (a node needs its value for a shape)"
                  << "  (from " << (fs::path(p.testData->dir) / f.file).string() << ")\n";
    for (size_t i = 0; i < matched->size(); ++i)
      std::cout << "input  " << summarizeTensor((*matched)[i].name, (*matched)[i].tensor)
                << "  (from " << (fs::path(p.testData->dir) / files[i]).string() << ")\n";
    return std::move(matched).value();
  }
  // By name, so that matching stays linear in the inputs.
  const std::unordered_set<std::string_view> frozen(p.frozenInputs.begin(), p.frozenInputs.end());
  std::unordered_set<std::string_view> declared;
  for (int32_t id : exe.inputs) declared.insert(exe.slots[static_cast<size_t>(id)].name);
  std::unordered_map<std::string_view, const InputFile *> byName;
  for (const InputFile &in : p.inputs) byName.emplace(in.name, &in);
  for (const InputFile &in : p.inputs)
    if (frozen.contains(in.name))
      std::cout << "input  " << in.name << " fixed at import (a node needs its value for a shape)"
                << "  (from " << in.file << ")\n";
  for (const InputFile &in : p.inputs)
    if (!frozen.contains(in.name) && !declared.contains(in.name))
      return report.usage("--input " + in.name + ": the model has no input '" + in.name +
                          "'; its inputs: " + inputList(exe));
  std::vector<NamedTensor> inputs;
  std::vector<std::string> missing;
  for (size_t i = 0; i < exe.inputs.size(); ++i) {
    const Slot &slot = exe.slots[static_cast<size_t>(exe.inputs[i])];
    std::string source;
    if (auto given = byName.find(slot.name); given != byName.end()) {
      inputs.push_back({slot.name, given->second->tensor});
      source = "from " + given->second->file;
    } else if (p.randomSeed) {
      // Each input its own seed, so that two inputs of one type differ.
      const uint64_t seed = static_cast<uint64_t>(*p.randomSeed) + i;
      // The model sizes these: a host that cannot hold one is an error, not an abort.
      const std::string what = "random input '" + slot.name + "'";
      Expected<TensorData> made =
          isFloating(slot.type.dtype)
              ? TensorData::allocateRandn(slot.type.dtype, slot.type.shape, seed, what)
              : TensorData::allocate(slot.type.dtype, slot.type.shape, what);
      if (!made) {
        printDiagnostics(report, made.status().diagnostics());
        return kFailed;
      }
      inputs.push_back({slot.name, Tensor(std::move(made).value())});
      source = isFloating(slot.type.dtype) ? "random, randn(seed=" + std::to_string(seed) + ")"
                                           : "random, zeros (not a floating-point input)";
    } else {
      missing.push_back("'" + slot.name + "'");
      continue;
    }
    std::cout << "input  " << summarizeTensor(slot.name, inputs.back().tensor) << "  (" << source
              << ")\n";
  }
  if (!missing.empty()) {
    std::string names;
    for (const std::string &m : missing) names += (names.empty() ? "" : ", ") + m;
    return report.usage(
        (missing.size() == 1 ? "input " : "inputs ") + names + " not given" +
        " (use --input NAME=FILE.npy or --random-inputs); the model's inputs: " + inputList(exe));
  }
  return inputs;
}

// A file name for output `name`: characters other than letters, digits, '_', '-' and '.' (a '/'
// of an imported name, say) become '_', as does a leading '.'; a name taken by an earlier output
// gets a suffix, the smallest from 2 up that is free.
struct FileNames {
  std::unordered_set<std::string> taken;
  // Per base name, the suffix to try first: the ones below it were taken when it was last
  // given out, and taken names stay taken, so that n outputs of one base cost n lookups, not n^2.
  std::unordered_map<std::string, int> nextSuffix;
};

std::string outputFileName(const std::string &name, FileNames &names) {
  std::string base = name.empty() ? "_" : name;
  for (char &c : base)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-' && c != '.') c = '_';
  if (base[0] == '.') base[0] = '_';
  std::string file = base;
  if (names.taken.contains(file)) {
    int &k = names.nextSuffix.try_emplace(base, 2).first->second;
    do file = base + "_" + std::to_string(k++);
    while (names.taken.contains(file));
  }
  names.taken.insert(file);
  return file + ".npy";
}

int writeOutputs(const std::vector<NamedTensor> &outputs, const std::string &dir, Report &report) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return report.usage("--output-dir: cannot create '" + dir + "': " + ec.message());
  FileNames taken;
  for (const NamedTensor &o : outputs) {
    const std::string path = (fs::path(dir) / outputFileName(o.name, taken)).string();
    if (Status s = o.tensor.writeNpy(path); !s.ok())
      return report.usage("--output-dir: " + oneLine(s));
    std::cout << "wrote " << path << "\n";
  }
  return kOk;
}

// The whole file or none of it: a partial trace is removed, so that no viewer opens it (only a
// plain file: a path such as /dev/full is not ours to remove).
int writeTrace(const std::string &json, const std::string &path, Report &report) {
  errno = 0;
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << json;
  out.close();
  if (!out) {
    const std::string why = errno != 0 ? std::strerror(errno) : "write failed";
    std::error_code ec;
    if (fs::is_regular_file(path, ec)) fs::remove(path, ec);
    return report.usage("--trace: cannot write '" + path + "': " + why);
  }
  std::cout << "wrote " << path << " (trace of the last timed run)\n";
  return kOk;
}

// CLI11 names a flag with a default value "--random-inputs{0}" in --help; its type name says it.
class HelpFormatter : public CLI::Formatter {
 public:
  std::string make_option_name(const CLI::Option *opt, bool positional) const override {
    std::string name = CLI::Formatter::make_option_name(opt, positional);
    return name.substr(0, name.find('{'));
  }
};

// `--random-inputs 5` would reach CLI11 as a flag and a stray "5": its optional seed is attached
// with '=', so a separate number after it is a usage error that says so.
Status checkRandomInputsSeed(int argc, char **argv) {
  for (int i = 1; i < argc; ++i)
    if (std::string_view(argv[i]) == "--help" || std::string_view(argv[i]) == "-h") return {};
  for (int i = 1; i + 1 < argc; ++i) {
    const std::string_view arg = argv[i], next = argv[i + 1];
    if (arg == "--") break;
    const std::string_view digits = next.starts_with('-') ? next.substr(1) : next;
    if (arg == "--random-inputs" && !digits.empty() &&
        std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; }))
      return flagError("--random-inputs",
                       "the seed is attached with '=': expected --random-inputs=SEED, got "
                       "'--random-inputs " +
                           std::string(next) + "'");
  }
  return {};
}

std::string deviceList(const Executable &exe) {
  std::string s;
  for (Device d : exe.devices) s += (s.empty() ? "" : ",") + d.str();
  return s;
}

int run(const Options &o, Report &report) {
  Plan p;
  if (Status s = checkFlags(o, p); !s.ok()) return report.usage(oneLine(s));
  std::variant<Executable, int> loaded = loadModel(o, p, report);
  if (const int *status = std::get_if<int>(&loaded)) return *status;
  Executable &exe = std::get<Executable>(loaded);
  std::cout << "model " << printable(exe.name) << " (" << printable(o.model) << "): devices "
            << deviceList(exe) << ", placement " << placementPolicyName(exe.placement) << ", "
            << exe.steps.size() << " steps\n";

  Session::Options sessionOptions;
  sessionOptions.moveInputs = true;
  if (o.check) sessionOptions.checkPlan = true;
  Expected<Session> session = Session::create(std::move(exe), sessionOptions);
  if (!session) {
    printDiagnostics(report, session.status().diagnostics());
    return kFailed;
  }
  std::variant<std::vector<NamedTensor>, int> inputs =
      gatherInputs(session->executable(), p, report);
  if (const int *status = std::get_if<int>(&inputs)) return *status;
  const std::vector<NamedTensor> &given = std::get<std::vector<NamedTensor>>(inputs);

  // Both counts are at most kMaxRuns (checkFlags), so neither they nor their sum overflow.
  // Every run is profiled: the report lists the slowest steps, the trace every step.
  const Session::RunOptions runOptions{.outputsOnDevice = o.outputsOnDevice, .profile = true};
  Timings timings;
  std::vector<NamedTensor> outputs;
  for (int64_t i = 0; i < p.warmup + p.iterations; ++i) {
    const auto start = std::chrono::steady_clock::now();
    Expected<RunResult> r = session->run(given, runOptions);
    const std::chrono::duration<double> wall = std::chrono::steady_clock::now() - start;
    if (!r) {
      const std::vector<Diagnostic> &ds = r.status().diagnostics();
      // An input of the wrong dtype or shape is the command line's fault, not the model's.
      if (std::all_of(ds.begin(), ds.end(), [](const Diagnostic &d) { return d.code == "input"; }))
        return report.usage(
            (p.testData ? "--check-dir " + p.testData->dir + ": " : std::string("--input: ")) +
            oneLine(r.status()));
      printDiagnostics(report, ds);
      return kFailed;
    }
    if (i < p.warmup) continue;
    timings.add(wall.count(), std::move(r->stats));
    outputs = std::move(r->outputs);
  }

  for (const NamedTensor &out : outputs)
    std::cout << "output " << summarizeTensor(out.name, out.tensor) << "\n";
  std::cout << renderTimings(*session, timings, p.warmup);
  const int mismatches =
      p.testData ? checkOutputs(*p.testData, outputs, p.tolerance, std::cout) : 0;
  std::cout << std::flush;
  if (!o.trace.empty()) {
    const std::string json =
        renderTrace(session->executable(), timings.last(), session->executable().name);
    if (int status = writeTrace(json, o.trace, report); status != kOk) return status;
  }
  if (!o.outputDir.empty())
    if (int status = writeOutputs(outputs, o.outputDir, report); status != kOk) return status;
  if (mismatches > 0) {
    const std::string message = std::to_string(mismatches) + " of " +
                                std::to_string(outputs.size()) +
                                " outputs differ from the expected ones in '" + p.testData->dir +
                                "'; the check lines above say where";
    const Diagnostic e{Severity::Error, "check", {}, message, {}, {}};
    printDiagnostics(report, std::span<const Diagnostic>(&e, 1));
    return kFailed;
  }
  return kOk;
}

// ferry-run's options, as --help lists them.
void addOptions(CLI::App &app, Options &o) {
  app.formatter(std::make_shared<HelpFormatter>());
  app.add_option("model", o.model,
                 "A .fy or ONNX (.onnx) model, or an executable saved by ferry (.ferry)")
      ->type_name("MODEL");
  app.add_flag("--list-devices", o.listDevices,
               "Print the devices this build can run on here, one per line, and exit");
  app.add_option("--input", o.inputs, "Input NAME from a .npy or ONNX TensorProto .pb file")
      ->type_name("NAME=FILE.npy|FILE.pb")
      ->allow_extra_args(false);
  app.add_flag("--random-inputs{0}", o.randomSeed,
               "Inputs not given: randn(seed=SEED+i) for the i-th, zeros if not float")
      ->type_name("[=SEED]");
  app.add_option("--output-dir", o.outputDir,
                 "Write outputs to DIR/NAME.npy ('/' and such in NAME become '_')")
      ->type_name("DIR");
  app.add_option("--trace", o.trace,
                 "Write the last timed run as a Chrome trace, for ui.perfetto.dev")
      ->type_name("FILE.json");
  app.add_option("--iterations", o.iterations, "Timed runs (1 to " + std::to_string(kMaxRuns) + ")")
      ->type_name("N")
      ->capture_default_str();
  app.add_option("--warmup", o.warmup, "Untimed runs first (0 to " + std::to_string(kMaxRuns) + ")")
      ->type_name("N")
      ->capture_default_str();
  app.add_flag("--outputs-on-device", o.outputsOnDevice,
               "Return outputs on the device that computed them, not the host");
  app.add_option("--check-dir", o.checkDir,
                 "Run on DIR/input_K.pb, compare with DIR/output_K.pb (ONNX test data)")
      ->type_name("DIR");
  app.add_option("--rtol", o.rtol, "--check-dir's relative tolerance (default 1e-3)")
      ->type_name("X");
  app.add_option("--atol", o.atol, "--check-dir's absolute tolerance (default 1e-7)")
      ->type_name("X");
  app.add_flag("--check", o.check, "Check every run's copies and kernel operands against the plan");
  addParamLimitFlag(app, o.maxTotalParamBytes);
  addShapeFlag(app, o.shapes);
  addPolicyFlags(app, o.compile);
  addBudgetFlags(app, o.compile);
  app.footer(
      "Compile flags (--devices to --max-casts) apply to .fy and ONNX models, --shape to ONNX\n"
      "models only. Inputs are read onto the host and moved to their declared devices.\n"
      "FERRY_NUM_THREADS sets the kernels' threads (1 to 1024; default: the core count).\n"
      "--check-dir: input_K and output_K go by their TensorProto's name, else by position;\n"
      "floats pass where |got - expected| <= atol + rtol * |expected| (as ONNX's backend\n"
      "tests), NaN only where NaN is expected; integers and bools must be equal.\n"
      "Exit status: 0 ran (and matched --check-dir's outputs), 1 rejected, a run failed or an\n"
      "output differs, 2 usage error, bad FERRY_NUM_THREADS, unreadable model or input, input\n"
      "of the wrong name, dtype or shape, --check-dir of other counts than the model's.\n");
}

// --list-devices: the devices on stdout, one per line (what --devices takes); why there is no GPU,
// when there is none, on stderr. Exit status 0.
int listDevices() {
  const std::vector<Device> devices = machineDevices();
  for (Device d : devices) std::printf("%s\n", d.str().c_str());
  if (devices.size() == 1) {
    if (!builtWithCuda())
      std::fprintf(stderr, "ferry-run: no GPU: this build of ferry has no CUDA backend (no CUDA "
                           "toolkit when it was configured)\n");
    else if (auto absent = firstAbsent(std::vector<Device>{Device::cuda(0)}, builtinBackends()))
      std::fprintf(stderr, "ferry-run: no GPU: %s\n", absent->second.c_str());
  }
  return kOk;
}

// Parses the command line into `o` as ferry-compile does (tools/common/cli_errors.h): a value
// that is missing or is another option, and CLI11's own errors, are one line naming the option.
// Returns the exit status when ferry-run is done (--help: 0, a usage error: 2), or nullopt.
std::optional<int> parseCommandLine(int argc, char **argv, Options &o, Report &report) {
  CLI::App app{"Runs a .fy or ONNX model or a saved executable on .npy, .pb or random inputs, or\n"
               "on ONNX test data (--check-dir); prints the outputs and run times.",
               "ferry-run"};
  addOptions(app, o);
  const std::vector<std::string> args(argv + 1, argv + argc);
  if (Status s = checkRandomInputsSeed(argc, argv); !s.ok()) return report.usage(oneLine(s));
  if (std::optional<int> done = parseArgs(app, args, report)) return done;
  if (o.listDevices) return listDevices();
  if (o.model.empty()) return report.usage("model is required (see --help)");
  o.compileFlagGiven = firstCompileFlagGiven(app);
  return std::nullopt;
}

}  // namespace

}  // namespace ferry

int main(int argc, char **argv) {
  ferry::Options o;
  ferry::Report report(ferry::Report::Format::Text, "ferry-run");
  if (std::optional<int> done = ferry::parseCommandLine(argc, argv, o, report)) return *done;
  return ferry::run(o, report);
}
