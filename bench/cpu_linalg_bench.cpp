// bench/cpu_linalg_bench.cpp — the CPU backend's GEMM kernels through CpuBackend::run: matmul
// 512³, linear 64×1024→1024 with bias, conv2d 1×64×56×56 with a 3×3 kernel to 64 channels.
//
// Operands are allocated on the backend and filled once, outside the timed region; each
// iteration is one run() (ownership checks off, as in a Release build). Counters:
//   flops  2·(multiply-adds) per second of wall time (OpenBLAS runs its own threads)
//   items  result elements per second
#include <benchmark/benchmark.h>

#include <cstring>
#include <string>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "ir/ops.h"
#include "ir/tensor_data.h"

namespace ferry {
namespace {

// One node's operands and result on a CPU backend, ready to run.
class Node {
 public:
  Node(OpKind kind, std::vector<TensorType> operands, const std::vector<NamedAttr> &given)
      : op_(opInfo(kind)) {
    Expected<Attrs> attrs = makeAttrs(op_, given, loc_);
    FERRY_CHECK(attrs.ok()) << attrs.status().message();
    attrs_ = std::move(*attrs);
    InferResult result = inferType(op_, operands, attrs_);
    FERRY_CHECK(std::holds_alternative<TensorType>(result)) << "bench node does not type-check";
    types_ = std::move(operands);
    types_.push_back(std::get<TensorType>(result));
    uint64_t seed = 1;
    for (const TensorType &t : types_) {
      const TensorData data = TensorData::randn(t.dtype, t.shape, seed++);
      std::byte *p = *backend_.allocate(Device::cpu(), data.byteSize());
      if (data.byteSize() > 0) std::memcpy(p, data.bytes().data(), data.byteSize());
      views_.push_back({p, nullptr, Device::cpu()});
    }
    for (size_t i = 0; i < types_.size(); ++i) views_[i].type = &types_[i];
  }
  Node(const Node &) = delete;
  Node &operator=(const Node &) = delete;
  ~Node() {
    for (const TensorView &v : views_) backend_.release(v.device, v.data);
  }

  void run() {
    const std::span<const TensorView> operands(views_.data(), views_.size() - 1);
    Status s = backend_.run(KernelCall{op_, attrs_, operands, views_.back(), loc_});
    FERRY_CHECK(s.ok()) << s.message();
  }
  int64_t resultElements() const { return types_.back().numel(); }

 private:
  CpuBackend backend_{CpuBackend::Options{.devices = 1, .checkOwnership = false}};
  const OpInfo &op_;
  Attrs attrs_;
  std::vector<TensorType> types_;  // operands, then the result
  std::vector<TensorView> views_;
  Location loc_{"bench.fy", 1, 1};
};

void runNode(benchmark::State &state, Node &node, double multiplyAdds) {
  for (auto _ : state) node.run();
  state.SetItemsProcessed(state.iterations() * node.resultElements());
  state.counters["flops"] =
      benchmark::Counter(2 * multiplyAdds, benchmark::Counter::kIsIterationInvariantRate);
}

void matmul(benchmark::State &state, DType dtype) {
  const int64_t n = state.range(0);
  Node node(OpKind::Matmul, {{dtype, {n, n}}, {dtype, {n, n}}}, {});
  runNode(state, node, static_cast<double>(n * n * n));
}

void linear(benchmark::State &state) {
  const int64_t batch = state.range(0), in = state.range(1), out = state.range(2);
  Node node(OpKind::Linear,
            {{DType::F32, {batch, in}}, {DType::F32, {out, in}}, {DType::F32, {out}}}, {});
  runNode(state, node, static_cast<double>(batch * in * out));
}

void conv2d(benchmark::State &state) {
  const int64_t c = state.range(0), hw = state.range(1), o = state.range(2);
  Node node(OpKind::Conv2d,
            {{DType::F32, {1, c, hw, hw}}, {DType::F32, {o, c, 3, 3}}, {DType::F32, {o}}},
            {{"padding", std::vector<int64_t>{1, 1}}});
  runNode(state, node, static_cast<double>(o * hw * hw * c * 9));
}

BENCHMARK_CAPTURE(matmul, f32, DType::F32)->Arg(512)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(matmul, f16, DType::F16)->Arg(512)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(linear)->Args({64, 1024, 1024})->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(conv2d)->Args({64, 56, 64})->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
}  // namespace ferry

BENCHMARK_MAIN();
