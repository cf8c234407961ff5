// bench/model_bench.cpp — ferry-bench-model: one model (.onnx or .fy) compiled (by default for
// the CPU alone), one Session, its inputs read from .npy files, then Session::run timed; one JSON
// line on stdout. bench/peer/peer.py runs it once per model and round, beside ONNX Runtime,
// PyTorch and JAX on the same inputs (with --gpu, on cuda:0 beside PyTorch and ORT on the GPU).
//
//   ferry-bench-model MODEL --input NAME=FILE.npy... [--shape NAME=D0,D1,...]... [--warmup 5]
//                     [--iterations 20] [--min-time 0.2] [--output-dir DIR] [--bind-outputs]
//                     [--devices cpu] [--target DEV] [--placement strict|auto] [--dtype ...]
//                     [--no-fallback] [--no-fusion] [--cost ...] [--cost-file FILE]
//
// Compile flags: ferry-run's and ferry-compile's (tools/common/compile_flags.h, the same checks
// and messages), except that --devices defaults to `cpu` alone, not every GPU of the machine, so
// that a CPU figure is one whatever the machine has. A GPU: `--devices cpu,cuda:0 --target cuda:0
// --placement auto` (under strict placement an ONNX model's inputs are on the host, and so is
// everything that follows them). As ferry-run does, a device this build has no backend for or
// this machine lacks is refused before the model is read.
//
// Timed: Session::run only (input checks, the kernels, the outputs handed back, as an app sees
// it), each run on its own, after --warmup untimed runs; at least --iterations runs and at least
// --min-time seconds of them. The inputs are host tensors (read from the .npy files once) and the
// outputs are returned on the host, so on a GPU every timed run includes uploading the inputs and
// downloading the outputs, as an app's Session::run does (the Session moves inputs to where the
// plan wants them, as ferry-run's does). Not timed, but reported: reading the model (import_ms:
// for ONNX the importer, weights included), build() (compile_ms: the passes and lowering) and
// Session::create (create_ms; on a GPU the kernels' NVRTC compiles and the weights' upload).
// Threads: FERRY_NUM_THREADS, as everywhere (the core count when unset); the JSON says what it
// resolved to. --bind-outputs gives every run the same output tensors, made once (Session::run's
// I/O binding, as an app that runs a model in a loop would): no output is allocated, and no fresh
// page faulted in, per run.
//
// Output: {"model", "devices", "target", "placement" (as compiled), "steps" (the plan's kernel
// steps per device, {"cuda:0": 6}), "transfers_per_run" and "transfer_bytes_per_run" (the plan's
// copies between devices), "input_moves" (inputs the last timed run moved to their planned
// device), "threads" (FERRY_NUM_THREADS resolved), "import_ms", "compile_ms", "create_ms",
// "warmup", "bind_outputs", "runs", "median_ms", "min_ms", "cpu_ms_per_run" (the process's CPU
// time over the timed runs, per run: above median_ms, more than one core worked), "times_ms":
// [...]}. --output-dir writes each output of one more run as NAME.npy, for peer.py to compare
// with PyTorch's. Any failure (a model the importer or the compiler rejects, a missing input, a
// device that is not there) is one line "ferry-bench-model: <what failed>" on stderr and exit
// status 1; a bad command line is one line and exit status 2: peer.py prints it in the table's
// cell.
#include <time.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "backends/cpu/num_threads.h"
#include "backends/cpu/onednn_gemm.h"
#include "backends/registry.h"
#include "passes/lower.h"
#include "runtime/session.h"
#include "tools/common/cli_errors.h"
#include "tools/common/compile_flags.h"
#include "tools/common/load_model.h"
#include "tools/common/report.h"
#include "tools/common/tensor_file.h"

namespace ferry {
namespace {

using Clock = std::chrono::steady_clock;

constexpr int64_t kMaxRuns = 1'000'000;

struct Flags {
  std::string model;
  std::vector<std::string> inputs, shapes;
  int warmup = 5;
  int iterations = 20;
  double minTime = 0.2;
  std::string outputDir;
  bool bindOutputs = false;
  CompileFlags compile;  // --devices defaults to cpu here (main), not ferry-run's every GPU
};

double msSince(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

// CPU time of every thread of the process: over wall time, how many cores the runs kept busy.
double processCpuMs() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return double(t.tv_sec) * 1e3 + double(t.tv_nsec) * 1e-6;
}

// The first line of a status's message: the table's cell has room for one.
std::string firstLine(const Status &s) {
  std::string m = s.message();
  return m.substr(0, m.find('\n'));
}

int fail(const std::string &what, int code = 1) {
  std::cerr << "ferry-bench-model: " << what << "\n";
  return code;
}

// "NAME=FILE" into its two halves; an error names the flag and what came.
Expected<std::pair<std::string, std::string>> splitSpec(const std::string &spec) {
  const size_t eq = spec.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == spec.size())
    return makeError("usage", "--input: expected NAME=FILE.npy, got '" + spec + "'");
  return std::pair{spec.substr(0, eq), spec.substr(eq + 1)};
}

std::string jsonString(const std::string &s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
      continue;
    }
    out += c;
  }
  return out + "\"";
}

int runBench(const Flags &f) {
  if (Status s = cpu::checkNumThreadsEnv(); !s.ok()) return fail(firstLine(s), 2);
  if (Status s = cpu::checkCpuGemmEnv(); !s.ok()) return fail(firstLine(s), 2);

  LoadOptions load;
  CompileOptions compile;
  if (Status s = toCompileOptions(f.compile, compile); !s.ok()) return fail(oneLine(s), 2);
  load.onnx.inputDevice = onnxInputDevice(compile);
  if (Status s = parseShapeFlags(f.shapes, load.onnx.inputShapes); !s.ok())
    return fail(firstLine(s), 2);

  std::vector<NamedTensor> inputs;
  for (const std::string &spec : f.inputs) {
    Expected<std::pair<std::string, std::string>> nf = splitSpec(spec);
    if (!nf) return fail(firstLine(nf.status()), 2);
    Expected<Tensor> t = readTensorFile(nf->second);
    if (!t) return fail("--input " + nf->first + ": " + firstLine(t.status()), 2);
    inputs.push_back({nf->first, std::move(t).value()});
  }

  // Nothing is compiled for a device this build cannot run, or this machine lacks (ferry-run's
  // checks and words).
  if (std::optional<Device> d = firstWithoutBackend(compile.devices, builtinBackends()))
    return fail("--devices names " + d->str() + ", and this build of ferry has no backend for it " +
                "(backends: " + describeBackends(builtinBackends()) + ")");
  if (auto absent = firstAbsent(compile.devices, builtinBackends()))
    return fail("--devices names " + absent->first.str() +
                ", which is not on this machine: " + absent->second);

  const Clock::time_point importStart = Clock::now();
  Expected<Graph> graph = loadModel(f.model, load);
  if (!graph) return fail("import: " + firstLine(graph.status()));
  const double importMs = msSince(importStart);

  const Clock::time_point compileStart = Clock::now();
  Expected<Executable> exe = build(std::move(graph).value(), compile);
  if (!exe) return fail("compile: " + firstLine(exe.status()));
  const double compileMs = msSince(compileStart);

  // --target where nothing runs: said, as ferry-run says it.
  if (std::optional<Diagnostic> w = unusedTargetWarning(f.compile, compile, *exe))
    std::fprintf(stderr, "ferry-bench-model: warning: %s\n", w->message.c_str());
  const Clock::time_point createStart = Clock::now();
  Session::Options sessionOptions;
  sessionOptions.moveInputs = true;  // host inputs to a GPU input's device, as ferry-run
  Expected<Session> session = Session::create(std::move(exe).value(), sessionOptions);
  if (!session) return fail("Session::create: " + firstLine(session.status()));
  const double createMs = msSince(createStart);

  std::vector<NamedTensor> outputs;
  if (f.bindOutputs) {
    const Executable &plan = session->executable();
    for (int32_t slot : plan.outputs) {
      const Slot &s = plan.slots[static_cast<size_t>(slot)];
      Expected<TensorData> t = TensorData::allocate(s.type.dtype, s.type.shape, "output " + s.name);
      if (!t) return fail("--bind-outputs: " + firstLine(t.status()));
      outputs.push_back({s.name, Tensor(std::move(*t))});
    }
  }
  auto runOnce = [&] { return session->run(inputs, outputs, {}); };
  for (int i = 0; i < f.warmup; ++i)
    if (Expected<RunResult> r = runOnce(); !r) return fail("run: " + firstLine(r.status()));

  std::vector<double> times;
  int inputMoves = 0;
  const double cpuStart = processCpuMs();
  const Clock::time_point timedStart = Clock::now();
  while (int64_t(times.size()) < kMaxRuns &&
         (int64_t(times.size()) < f.iterations || msSince(timedStart) < f.minTime * 1e3)) {
    const Clock::time_point start = Clock::now();
    Expected<RunResult> r = runOnce();
    times.push_back(msSince(start));
    if (!r) return fail("run: " + firstLine(r.status()));
    inputMoves = r->stats.inputMoves;
  }
  const double cpuPerRun = (processCpuMs() - cpuStart) / double(times.size());

  if (!f.outputDir.empty()) {
    Expected<RunResult> r = session->run(inputs);
    if (!r) return fail("run: " + firstLine(r.status()));
    for (const NamedTensor &out : r->outputs)
      if (Status s = out.tensor.writeNpy(f.outputDir + "/" + out.name + ".npy"); !s.ok())
        return fail("--output-dir: " + firstLine(s), 2);
  }

  std::vector<double> sorted = times;
  std::sort(sorted.begin(), sorted.end());
  const size_t n = sorted.size();
  const double median = n % 2 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
  std::string warning;
  const int threads = cpu::resolveNumThreads(std::getenv(cpu::kNumThreadsEnv),
                                             std::thread::hardware_concurrency(), warning);
  const Executable &plan = session->executable();
  std::map<std::string, int> steps;  // kernel steps per device
  for (const Step &st : plan.steps)
    if (st.op != OpKind::Transfer && st.result >= 0)
      ++steps[plan.slots[static_cast<size_t>(st.result)].device.str()];
  std::string devices;
  for (Device d : compile.devices) devices += (devices.empty() ? "" : ",") + d.str();
  std::ostringstream json;
  json.precision(6);
  json << "{\"model\": " << jsonString(f.model) << ", \"devices\": " << jsonString(devices)
       << ", \"target\": " << jsonString(compile.target.str()) << ", \"placement\": "
       << jsonString(std::string(placementPolicyName(plan.placement))) << ", \"steps\": {";
  for (auto it = steps.begin(); it != steps.end(); ++it)
    json << (it == steps.begin() ? "" : ", ") << jsonString(it->first) << ": " << it->second;
  json << "}, \"transfers_per_run\": " << plan.planTransfers
       << ", \"transfer_bytes_per_run\": " << plan.planTransferBytes
       << ", \"input_moves\": " << inputMoves << ", \"threads\": " << threads
       << ", \"import_ms\": " << importMs << ", \"compile_ms\": " << compileMs
       << ", \"create_ms\": " << createMs << ", \"warmup\": " << f.warmup
       << ", \"bind_outputs\": " << (f.bindOutputs ? "true" : "false") << ", \"runs\": " << n
       << ", \"median_ms\": " << median << ", \"min_ms\": " << sorted.front()
       << ", \"cpu_ms_per_run\": " << cpuPerRun << ", \"times_ms\": [";
  for (size_t i = 0; i < n; ++i) json << (i ? ", " : "") << times[i];
  json << "]}\n";
  std::cout << json.str();
  return 0;
}

}  // namespace
}  // namespace ferry

int main(int argc, char **argv) {
  ferry::Flags f;
  f.compile.devices = "cpu";
  CLI::App app{"ferry-bench-model: Session::run of one model (.onnx or .fy) on .npy inputs, timed",
               "ferry-bench-model"};
  app.add_option("model", f.model, "the model: .onnx or .fy");
  app.add_option("--input", f.inputs, "NAME=FILE.npy, one per model input (repeatable)")
      ->type_name("NAME=FILE.npy");
  app.add_option("--shape", f.shapes, "NAME=D0,D1,...: an ONNX input's symbolic dims (repeatable)")
      ->type_name("NAME=D0,D1,...");
  app.add_option("--warmup", f.warmup, "untimed runs first (default 5)")
      ->check(CLI::Range(0, 1000000));
  app.add_option("--iterations", f.iterations, "at least this many timed runs (default 20)")
      ->check(CLI::Range(1, 1000000));
  app.add_option("--min-time", f.minTime, "and at least this many seconds of them (default 0.2)")
      ->check(CLI::Range(0.0, 3600.0));
  app.add_option("--output-dir", f.outputDir, "write each output of one more run as NAME.npy here")
      ->type_name("DIR");
  app.add_flag("--bind-outputs", f.bindOutputs,
               "give every run the same output tensors, made once (Session::run's I/O binding)");
  ferry::addPolicyFlags(app, f.compile);
  app.get_option("--devices")->description("Devices the model may use, e.g. cpu,cuda:0");
  app.footer(
      "Compile flags (--devices to --cost-file) as ferry-run's; --devices is cpu unless given.\n"
      "A GPU: --devices cpu,cuda:0 --target cuda:0 --placement auto (strict keeps an ONNX model\n"
      "on the host with its inputs). Inputs are read onto the host and outputs returned there:\n"
      "on a GPU each timed run includes the inputs' upload and the outputs' download, as an app's\n"
      "Session::run does. FERRY_NUM_THREADS sets the CPU threads. One JSON line on stdout.\n"
      "Exit status: 0 ran, 1 the model, a device or a run failed, 2 usage error.\n");
  ferry::Report report(ferry::Report::Format::Text, "ferry-bench-model");
  const std::vector<std::string> args(argv + 1, argv + argc);
  if (std::optional<int> done = ferry::parseArgs(app, args, report)) return *done;
  if (f.model.empty()) return report.usage("model is required (see --help)");
  return ferry::runBench(f);
}
