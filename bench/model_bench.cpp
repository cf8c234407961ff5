// bench/model_bench.cpp — ferry-bench-model: one model (.onnx or .fy) compiled with the default
// options for the CPU, one Session, its inputs read from .npy files, then Session::run timed;
// one JSON line on stdout. bench/peer/peer.py runs it once per model and round, beside ONNX
// Runtime, PyTorch and JAX on the same inputs.
//
//   ferry-bench-model MODEL --input NAME=FILE.npy... [--shape NAME=D0,D1,...]... [--warmup 5]
//                     [--iterations 20] [--min-time 0.2] [--output-dir DIR] [--bind-outputs]
//
// Timed: Session::run only (input checks, the kernels, the outputs handed back, as an app sees
// it), each run on its own, after --warmup untimed runs; at least --iterations runs and at least
// --min-time seconds of them. Not timed, but reported: reading the model (import_ms: for ONNX the
// importer, weights included), build() (compile_ms: the passes and lowering) and Session::create
// (create_ms). Threads: FERRY_NUM_THREADS, as everywhere (the core count when unset); the JSON
// says what it resolved to. --bind-outputs gives every run the same output tensors, made once
// (Session::run's I/O binding, as an app that runs a model in a loop would): no output is
// allocated, and no fresh page faulted in, per run.
//
// Output: {"model", "threads" (FERRY_NUM_THREADS resolved), "import_ms", "compile_ms", "create_ms",
// "warmup", "bind_outputs", "runs", "median_ms", "min_ms", "cpu_ms_per_run" (the process's CPU time over the timed
// runs, per run: above median_ms, more than one core worked), "times_ms": [...]}. --output-dir
// writes each output of one more run as NAME.npy, for peer.py to compare with PyTorch's. Any
// failure (a model the importer or the compiler rejects, a missing input) is one line
// "ferry-bench-model: <what failed>" on stderr and exit status 1 (2 for the command line): peer.py
// prints it in the table's cell.
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
#include "passes/lower.h"
#include "runtime/session.h"
#include "tools/common/load_model.h"
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
  CompileOptions compile;  // the defaults: every value on cpu
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

  const Clock::time_point importStart = Clock::now();
  Expected<Graph> graph = loadModel(f.model, load);
  if (!graph) return fail("import: " + firstLine(graph.status()));
  const double importMs = msSince(importStart);

  const Clock::time_point compileStart = Clock::now();
  Expected<Executable> exe = build(std::move(graph).value(), compile);
  if (!exe) return fail("compile: " + firstLine(exe.status()));
  const double compileMs = msSince(compileStart);

  const Clock::time_point createStart = Clock::now();
  Expected<Session> session = Session::create(std::move(exe).value());
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
  const double cpuStart = processCpuMs();
  const Clock::time_point timedStart = Clock::now();
  while (int64_t(times.size()) < kMaxRuns &&
         (int64_t(times.size()) < f.iterations || msSince(timedStart) < f.minTime * 1e3)) {
    const Clock::time_point start = Clock::now();
    Expected<RunResult> r = runOnce();
    times.push_back(msSince(start));
    if (!r) return fail("run: " + firstLine(r.status()));
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
  std::ostringstream json;
  json.precision(6);
  json << "{\"model\": " << jsonString(f.model) << ", \"threads\": " << threads
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
  CLI::App app{"ferry-bench-model: Session::run of one model (.onnx or .fy) on .npy inputs, timed"};
  app.add_option("model", f.model, "the model: .onnx or .fy")->required();
  app.add_option("--input", f.inputs, "NAME=FILE.npy, one per model input (repeatable)");
  app.add_option("--shape", f.shapes, "NAME=D0,D1,...: an ONNX input's symbolic dims (repeatable)");
  app.add_option("--warmup", f.warmup, "untimed runs first (default 5)")
      ->check(CLI::Range(0, 1000000));
  app.add_option("--iterations", f.iterations, "at least this many timed runs (default 20)")
      ->check(CLI::Range(1, 1000000));
  app.add_option("--min-time", f.minTime, "and at least this many seconds of them (default 0.2)")
      ->check(CLI::Range(0.0, 3600.0));
  app.add_option("--output-dir", f.outputDir, "write each output of one more run as NAME.npy here");
  app.add_flag("--bind-outputs", f.bindOutputs,
               "give every run the same output tensors, made once (Session::run's I/O binding)");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError &e) {
    return app.exit(e);
  }
  return ferry::runBench(f);
}
