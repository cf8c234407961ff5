// bench/placement_bench.cpp — compile() (verify, placement, dtype, simplify, budget) on generated
// models of 1k to 1M nodes, under strict and auto placement; time per node as a counter.
//
// The model is what a user writes: blocks of linear -> relu -> add (a residual connection) over
// a small activation, every weight and bias a param with its own data, every node with a source
// location. Every 64 blocks the model switches between cpu and cuda:0, and the first linear of
// each switch is pinned there; one weight in 8 and one bias in 16 are f16 (dtype=promote casts
// them, and simplify folds those casts into the params), and one block in 32 casts its
// activation to f16 before the residual add (a cast inserted at run time).
//   strict  the model moves its activation itself: a `transfer` where the device changes
//   auto    no transfers written: placement inserts them where the pins need them
// Graph generation and the copy compile() consumes are outside the timed region.
#include <benchmark/benchmark.h>

#include <map>
#include <optional>
#include <string>

#include "ir/graph.h"
#include "passes/compile.h"

namespace ferry {
namespace {

constexpr int64_t kBatch = 4;
constexpr int64_t kHidden = 8;
constexpr int kBlocksPerSegment = 64;

class ModelBuilder {
 public:
  explicit ModelBuilder(bool explicitTransfers) : explicit_(explicitTransfers) {}

  Graph build(int64_t nodes) {
    ValueId x = g_.addInput("x", {DType::F32, {kBatch, kHidden}}, Device::cpu(), loc());
    for (int64_t block = 0; static_cast<int64_t>(g_.order().size()) < nodes; ++block) {
      std::string layer = "layer" + std::to_string(block);
      std::optional<Device> pin;
      if (block % kBlocksPerSegment == 0 && block > 0) {
        Device d = (block / kBlocksPerSegment) % 2 ? Device::cuda(0) : Device::cpu();
        if (explicit_) x = node(OpKind::Transfer, {x}, {{"to", d}}, layer + ".to", {});
        pin = d;
      }
      DType wt = block % 8 == 7 ? DType::F16 : DType::F32;
      DType bt = block % 16 == 11 ? DType::F16 : DType::F32;
      ValueId w =
          g_.addParam(layer + ".weight", TensorData::randn(wt, {kHidden, kHidden}, uint64_t(block)),
                      {Initializer::Kind::Randn, uint64_t(block), {}}, std::nullopt, loc());
      ValueId b = g_.addParam(layer + ".bias", TensorData::zeros(bt, {kHidden}),
                              {Initializer::Kind::Zeros, 0, {}}, std::nullopt, loc());
      ValueId h = node(OpKind::Linear, {x, w, b}, {}, layer + ".h", pin);
      ValueId a = node(OpKind::Relu, {h}, {}, layer + ".a", {});
      if (block % 32 == 31) a = node(OpKind::Cast, {a}, {{"to", DType::F16}}, layer + ".half", {});
      x = node(OpKind::Add, {a, x}, {}, layer + ".out", {});
    }
    g_.addOutput(x, Device::cpu(), loc());
    return std::move(g_);
  }

 private:
  // An absolute path, as std::source_location gives in a CMake build: one shared FileName.
  Location loc() { return Location{file_, ++line_, 5}; }

  ValueId node(OpKind op, std::vector<ValueId> operands, std::vector<NamedAttr> given,
               std::string name, std::optional<Device> pin) {
    const OpInfo &info = opInfo(op);
    Attrs attrs = *makeAttrs(info, given, {});
    std::vector<TensorType> types;
    for (ValueId v : operands) types.push_back(g_.value(v).type);
    TensorType t = std::get<TensorType>(inferType(info, types, attrs));
    NodeSpec spec{op, std::move(operands), std::move(attrs), pin, std::nullopt, loc()};
    return g_.node(g_.addNode(std::move(spec), std::move(name), t)).result;
  }

  bool explicit_;
  Graph g_;
  int line_ = 0;
  FileName file_{"/home/user/projects/vision/models/resnet/model.cpp"};
};

void compileModel(benchmark::State &state, PlacementPolicy policy) {
  const int64_t nodes = state.range(0);
  const Graph model = ModelBuilder(policy == PlacementPolicy::Strict).build(nodes);
  CompileOptions options;
  options.devices = {Device::cpu(), Device::cuda(0)};
  options.placement = policy;
  options.dtype = DTypePolicy{DTypePolicy::Kind::Promote, DType::F16};
  options.verifyEachPass = false;

  std::optional<CompileResult> result;
  std::map<std::string, double> passSeconds;
  for (auto _ : state) {
    state.PauseTiming();
    result.reset();
    Graph copy = model;
    state.ResumeTiming();
    result.emplace(compile(std::move(copy), options));
    benchmark::DoNotOptimize(result->stats.estimatedSeconds);
    state.PauseTiming();
    if (!result->ok()) {
      state.SkipWithError(("rejected: " + result->diagnostics.front().message).c_str());
      break;
    }
    for (const auto &[pass, s] : result->stats.passSeconds) passSeconds[pass] += s;
    state.ResumeTiming();
  }
  if (!result || !result->ok()) return;
  const double n = static_cast<double>(model.order().size());
  state.counters["nodes"] = n;
  // Seconds per node (printed with an SI prefix: "250n" is 250 ns).
  state.counters["time_per_node"] = benchmark::Counter(
      n, benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
  // Each pass's share of the compile: compile() measures wall time, which on a shared machine
  // includes waiting for a core, so shares are what compare across runs.
  double total = 0;
  for (const auto &[pass, s] : passSeconds) total += s;
  for (const auto &[pass, s] : passSeconds) state.counters[pass + "_pct"] = 100 * s / total;
  // The part the placement issue sets its target on: placement + dtype + simplify, per node (the
  // CPU time of compile() times those passes' share of it).
  const double share =
      (passSeconds["placement"] + passSeconds["dtype"] + passSeconds["simplify"]) / total;
  state.counters["pds_per_node"] = benchmark::Counter(
      n / share, benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
  state.counters["transfers"] = result->stats.transfers;
  state.counters["casts"] = result->stats.casts;
}

void compileStrict(benchmark::State &state) { compileModel(state, PlacementPolicy::Strict); }
void compileAuto(benchmark::State &state) { compileModel(state, PlacementPolicy::Auto); }

// The sizes (1k to 1M), plus 300k to show the shape of the curve past the caches: a
// superlinear pass would keep rising there, a linear one levels off (bench/README.md).
void sizes(benchmark::internal::Benchmark *b) {
  for (int64_t n : {1000, 10000, 100000, 300000, 1000000}) b->Arg(n);
  b->Unit(benchmark::kMillisecond);
}
BENCHMARK(compileStrict)->Apply(sizes);
BENCHMARK(compileAuto)->Apply(sizes);

}  // namespace
}  // namespace ferry

BENCHMARK_MAIN();
