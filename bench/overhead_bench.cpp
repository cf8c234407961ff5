// bench/overhead_bench.cpp — ferry's per-node runtime overhead: Session::run on a chain of N
// `matmul(f32[4,4], f32[4,4])` (N = 100, 1,000, 10,000), where the kernels are so small that
// the time per node is what the runtime costs around each kernel call. Nothing to fuse.
//
// The model, as a user writes it with the C++ Builder: an input x f32[4,4], N params w0..wN-1
// f32[4,4], h = matmul(h, w_i) N times, output y. Only the public API (Builder, build, Session,
// Tensor), so the benchmark outlives rewrites of the runtime's internals.
//
// Weights: ferry's randn(seed=i) made orthonormal (Gram-Schmidt), so that h keeps the norm of x
// over any number of matmuls: plain randn weights overflow to inf after ~150 of them (and NaN
// after), scaled ones sink into denormals, and either would time something else than a chain of
// ordinary matmuls. bench/peer/overhead.py passes its own with --weights and --input, and
// reads y back with --write_outputs, to run ONNX Runtime on exactly the same numbers.
//
// Timed: Session::run only (input checks, the kernels, the outputs handed back), after 10 untimed
// runs; compile and Session::create happen once per N, outside. Counters: ns_per_node, the wall
// time per run over N; cpu_ns_per_node, the process's CPU time per run over N (on a shared
// machine wall time also counts waiting for a core). Threads: FERRY_NUM_THREADS, 1 when unset
// (the target is set at one thread).
//
//   ferry-bench-overhead [benchmark flags] [--weights=W.npy] [--input=X.npy] [--write_outputs=DIR]
//     --weights=W.npy       f32[M,4,4] with M >= N: w_i = W[i]
//     --input=X.npy         f32[4,4]: x (default: randn(seed=0))
//     --write_outputs=DIR   after timing N nodes, one more run's y to DIR/y_N.npy
#include <benchmark/benchmark.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "frontend/builder.h"
#include "runtime/executable.h"
#include "passes/lower.h"
#include "runtime/session.h"
#include "runtime/tensor.h"

namespace ferry {
namespace {

constexpr int64_t kDim = 4;
constexpr int kWarmupRuns = 10;

// The benchmark's own flags (main() takes them out of argv before Google Benchmark sees it).
struct Flags {
  std::string weights, input, writeOutputs;
};
Flags flags;

// CPU time of every thread of the process: on a shared machine wall time also counts the time the
// run waited for a core; process time (not the thread's) so that work on other threads counts.
double processCpuNs() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return double(t.tv_sec) * 1e9 + double(t.tv_nsec);
}

// randn(seed) as a 4x4 matrix with orthonormal columns (classical Gram-Schmidt in double).
TensorData orthonormal(uint64_t seed) {
  TensorData r = TensorData::randn(DType::F64, {kDim, kDim}, seed);
  double m[kDim][kDim];
  for (int64_t i = 0; i < kDim * kDim; ++i) m[i / kDim][i % kDim] = r.at(i);
  for (int64_t c = 0; c < kDim; ++c) {
    for (int64_t p = 0; p < c; ++p) {
      double dot = 0;
      for (int64_t i = 0; i < kDim; ++i) dot += m[i][c] * m[i][p];
      for (int64_t i = 0; i < kDim; ++i) m[i][c] -= dot * m[i][p];
    }
    double norm = 0;
    for (int64_t i = 0; i < kDim; ++i) norm += m[i][c] * m[i][c];
    for (int64_t i = 0; i < kDim; ++i) m[i][c] /= std::sqrt(norm);
  }
  TensorData w(DType::F32, {kDim, kDim});
  for (int64_t i = 0; i < kDim * kDim; ++i) w.set(i, m[i / kDim][i % kDim]);
  return w;
}

// W[i] of an f32[M,4,4] file, as its own tensor.
TensorData matrixOf(const TensorData &all, int64_t i) {
  TensorData w(DType::F32, {kDim, kDim});
  const size_t bytes = w.byteSize();
  std::memcpy(w.mutableBytes().data(), all.bytes().data() + i * bytes, bytes);
  return w;
}

// An f32 .npy file of rank shape.size() whose dims are `shape`'s, except the first, which may be
// larger (the weights of a longer chain).
Expected<Tensor> readNpy(const std::string &path, const Shape &shape, std::string_view flag) {
  Expected<Tensor> t = Tensor::fromNpy(path);
  if (!t) return t;
  const Shape &got = t->shape();
  bool ok = t->dtype() == DType::F32 && got.size() == shape.size() && got[0] >= shape[0];
  for (size_t d = 1; ok && d < shape.size(); ++d) ok = got[d] == shape[d];
  if (!ok)
    return makeError("usage", std::string(flag) + ": " + path + " holds " + t->type().str() +
                                  ", expected " + TensorType{DType::F32, shape}.str() +
                                  " (or more rows)");
  return t;
}

// The chain of `nodes` matmuls, compiled and uploaded once per size.
struct Chain {
  std::optional<Session> session;
  std::vector<NamedTensor> inputs;
};

Expected<Chain> makeChain(int64_t nodes) {
  std::optional<TensorData> given;
  if (!flags.weights.empty()) {
    Expected<Tensor> w = readNpy(flags.weights, {nodes, kDim, kDim}, "--weights");
    if (!w) return w.status();
    given = w->data();
  }
  Builder b("chain" + std::to_string(nodes));
  Var h = b.input("x", DType::F32, {kDim, kDim});
  for (int64_t i = 0; i < nodes; ++i) {
    TensorData w = given ? matrixOf(*given, i) : orthonormal(uint64_t(i + 1));
    h = b.matmul(h, b.param("w" + std::to_string(i), std::move(w)));
  }
  b.output("y", h);
  Expected<Graph> graph = std::move(b).finish();
  if (!graph) return graph.status();

  CompileOptions options;
  options.verifyEachPass = false;
  Expected<Executable> exe = build(std::move(*graph), options);
  if (!exe) return exe.status();
  Expected<Session> session = Session::create(std::move(*exe));
  if (!session) return session.status();

  Tensor x(TensorData::randn(DType::F32, {kDim, kDim}, 0));
  if (!flags.input.empty()) {
    Expected<Tensor> read = readNpy(flags.input, {kDim, kDim}, "--input");
    if (!read) return read.status();
    x = *read;
  }
  Chain chain;
  chain.session.emplace(std::move(*session));
  chain.inputs = {{"x", x}};
  return chain;
}

void runChain(benchmark::State &state) {
  const int64_t nodes = state.range(0);
  static std::map<int64_t, std::unique_ptr<Chain>> chains;  // GB calls this once per estimate
  auto &chain = chains[nodes];
  if (!chain) {
    Expected<Chain> made = makeChain(nodes);
    if (!made) {
      state.SkipWithError(made.status().message().c_str());
      return;
    }
    chain = std::make_unique<Chain>(std::move(*made));
  }
  const Session &session = *chain->session;
  for (int i = 0; i < kWarmupRuns; ++i) {
    Expected<RunResult> r = session.run(chain->inputs);
    if (!r) {
      state.SkipWithError(r.status().message().c_str());
      return;
    }
  }

  const double cpuStart = processCpuNs();
  const auto start = std::chrono::steady_clock::now();
  for (auto _ : state) {
    Expected<RunResult> r = session.run(chain->inputs);
    benchmark::DoNotOptimize(r);
  }
  const std::chrono::duration<double, std::nano> wall = std::chrono::steady_clock::now() - start;
  const double cpu = processCpuNs() - cpuStart;

  const double runs = double(state.iterations());
  state.counters["nodes"] = double(nodes);
  state.counters["ns_per_node"] = wall.count() / runs / double(nodes);
  state.counters["cpu_ns_per_node"] = cpu / runs / double(nodes);
  if (!flags.writeOutputs.empty()) {
    Expected<RunResult> r = session.run(chain->inputs);
    const std::string path = flags.writeOutputs + "/y_" + std::to_string(nodes) + ".npy";
    Status written = r ? r->find("y")->writeNpy(path) : r.status();
    if (!written.ok()) state.SkipWithError(written.message().c_str());
  }
}

BENCHMARK(runChain)->Arg(100)->Arg(1000)->Arg(10000)->UseRealTime()->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace ferry

int main(int argc, char **argv) {
  // Before the first Session creates the CPU backend's pool, which reads it once.
  setenv("FERRY_NUM_THREADS", "1", /*overwrite=*/0);
  benchmark::Initialize(&argc, argv);
  int kept = 1;
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    auto value = [&](std::string_view name, std::string &to) {
      if (!arg.starts_with(name)) return false;
      to = arg.substr(name.size());
      return true;
    };
    if (!value("--weights=", ferry::flags.weights) && !value("--input=", ferry::flags.input) &&
        !value("--write_outputs=", ferry::flags.writeOutputs))
      argv[kept++] = argv[i];
  }
  argc = kept;
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::AddCustomContext("FERRY_NUM_THREADS", std::getenv("FERRY_NUM_THREADS"));
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
