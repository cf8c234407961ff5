// bench/scale_bench.cpp — whether every stage of ferry's life is linear (or n log n) in the size of
// a graph: build() (compile and lower), save, load, Session::create and one Session::run, on two
// shapes of graph that make a quadratic corner show up as a time per item that grows with N.
//
//   wide/N   N inputs x0..xN-1 f32[4], s = x0, s = add(s, x_i) for every other input, output s:
//            per-input work (matching inputs by name, checking them, copying them in) dominates.
//            N = 1k, 10k, 100k.
//   chain/N  one input x f32[4], h = x, h = add(h, x) N times, output h: per-node work dominates.
//            N = 10k, 100k, 1M.
//
// Stages, each its own benchmark (Stage/Shape/N): `compile` is build() on a fresh copy of the
// graph (made outside the timed region: build() consumes it); `save` is Executable::serialize()
// (what save() writes, without the disk); `load` is Executable::deserialize() (load() without the
// disk: it checks the checksum and validate()s); `create` is Session::create (device memory,
// kernels prepared); `run` is one Session::run with every input given, in reverse order (so that
// matching by name cannot ride on the declaration order). The graphs and executables of the other
// stages are made once per N, outside.
//
// Counter: time_per_item, CPU time of the whole process per stage over N (inputs for wide, nodes
// for chain), printed with an SI prefix; it stays flat from N = 1k to 100k (1M) when the stage is
// linear. CPU time, because the box these run on is shared: wall time counts waiting for a core.
// Threads: FERRY_NUM_THREADS, 1 when unset.
//
//   ferry-bench-scale [benchmark flags]
//   ferry-bench-scale --benchmark_filter='/wide/100000$'
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "frontend/builder.h"
#include "passes/lower.h"
#include "runtime/executable.h"
#include "runtime/session.h"
#include "runtime/tensor.h"

namespace ferry {
namespace {

constexpr int64_t kWidth = 4;

enum class Shape { Wide, Chain };

Expected<Graph> makeGraph(Shape shape, int64_t n) {
  Builder b(shape == Shape::Wide ? "wide" : "chain");
  if (shape == Shape::Wide) {
    Var s = b.input("x0", DType::F32, {kWidth});
    for (int64_t i = 1; i < n; ++i)
      s = b.add(s, b.input("x" + std::to_string(i), DType::F32, {kWidth}));
    b.output("y", s);
  } else {
    Var x = b.input("x", DType::F32, {kWidth});
    Var h = x;
    for (int64_t i = 0; i < n; ++i) h = b.add(h, x);
    b.output("y", h);
  }
  return std::move(b).finish();
}

CompileOptions options() {
  CompileOptions o;
  o.verifyEachPass = false;  // as in production
  return o;
}

// What every stage after `compile` starts from, made once per shape and size.
struct Prepared {
  Graph graph;
  Executable exe;
  std::string bytes;
  std::optional<Session> session;
  std::vector<NamedTensor> inputs;  ///< every input, in reverse declaration order
};

Expected<Prepared *> prepared(Shape shape, int64_t n) {
  static std::map<std::pair<Shape, int64_t>, std::unique_ptr<Prepared>> made;
  auto &p = made[{shape, n}];
  if (p) return p.get();
  Expected<Graph> graph = makeGraph(shape, n);
  if (!graph) return graph.status();
  auto fresh = std::make_unique<Prepared>();
  fresh->graph = *graph;
  Expected<Executable> exe = build(std::move(*graph), options());
  if (!exe) return exe.status();
  fresh->exe = *exe;
  fresh->bytes = exe->serialize();
  Expected<Session> session = Session::create(std::move(*exe));
  if (!session) return session.status();
  fresh->session.emplace(std::move(*session));
  const Executable &plan = fresh->session->executable();
  for (auto it = plan.inputs.rbegin(); it != plan.inputs.rend(); ++it) {
    const Slot &s = plan.slots[static_cast<size_t>(*it)];
    fresh->inputs.push_back(
        {s.name, Tensor(TensorData::randn(s.type.dtype, s.type.shape, uint64_t(*it)))});
  }
  p = std::move(fresh);
  return p.get();
}

template <typename Body> void stage(benchmark::State &state, Shape shape, Body body) {
  const int64_t n = state.range(0);
  Expected<Prepared *> p = prepared(shape, n);
  if (!p) {
    state.SkipWithError(p.status().message().c_str());
    return;
  }
  for (auto _ : state) {
    if (Status s = body(state, **p); !s.ok()) {
      state.SkipWithError(s.message().c_str());
      return;
    }
  }
  state.counters["time_per_item"] = benchmark::Counter(
      double(n), benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}

Status compileStage(benchmark::State &state, Prepared &p) {
  state.PauseTiming();
  Graph copy = p.graph;
  state.ResumeTiming();
  Expected<Executable> exe = build(std::move(copy), options());
  benchmark::DoNotOptimize(exe);
  return exe ? Status() : exe.status();
}

Status saveStage(benchmark::State &, Prepared &p) {
  std::string bytes = p.exe.serialize();
  benchmark::DoNotOptimize(bytes);
  return Status();
}

Status loadStage(benchmark::State &, Prepared &p) {
  Expected<Executable> exe = Executable::deserialize(p.bytes, "scale.ferry");
  benchmark::DoNotOptimize(exe);
  return exe ? Status() : exe.status();
}

Status createStage(benchmark::State &state, Prepared &p) {
  state.PauseTiming();
  Executable copy = p.exe;
  state.ResumeTiming();
  Expected<Session> session = Session::create(std::move(copy));
  benchmark::DoNotOptimize(session);
  return session ? Status() : session.status();
}

Status runStage(benchmark::State &, Prepared &p) {
  Expected<RunResult> r = p.session->run(p.inputs);
  benchmark::DoNotOptimize(r);
  return r ? Status() : r.status();
}

void registerAll() {
  struct Named {
    const char *name;
    Status (*body)(benchmark::State &, Prepared &);
  };
  const Named stages[] = {{"compile", compileStage},
                          {"save", saveStage},
                          {"load", loadStage},
                          {"create", createStage},
                          {"run", runStage}};
  for (const Named &st : stages) {
    for (Shape shape : {Shape::Wide, Shape::Chain}) {
      const std::string name = std::string(st.name) + (shape == Shape::Wide ? "/wide" : "/chain");
      auto *b = benchmark::RegisterBenchmark(
          name.c_str(),
          [body = st.body, shape](benchmark::State &state) { stage(state, shape, body); });
      if (shape == Shape::Wide)
        b->Arg(1000)->Arg(10000)->Arg(100000);
      else
        b->Arg(10000)->Arg(100000)->Arg(1000000);
      b->MeasureProcessCPUTime()->Unit(benchmark::kMillisecond);
    }
  }
}

}  // namespace
}  // namespace ferry

int main(int argc, char **argv) {
  // Before the first Session creates the CPU backend's pool, which reads it once.
  setenv("FERRY_NUM_THREADS", "1", /*overwrite=*/0);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  ferry::registerAll();
  benchmark::AddCustomContext("FERRY_NUM_THREADS", std::getenv("FERRY_NUM_THREADS"));
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
