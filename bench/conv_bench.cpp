// bench/conv_bench.cpp — conv2d and linear steps against OpenBLAS's sgemm on the same FLOPs.
//
//   sgemm/M/N/K       cblas_sgemm called directly, row-major c[M×N] = a[M×K]·b[K×N], OpenBLAS's
//                     own threads set to the pool's size (FERRY_NUM_THREADS), reset to one after
//                     (as ferry's kernels keep it). Square sizes, and each conv2d's GEMM: M the
//                     output channels, K = C·kH·kW, N = batch·Ho·Wo.
//   sgemm_t/M/N/K     the same with b read transposed ([N, K], as linear reads W).
//   conv2d/N/C/HW/O/k/s  one conv2d step (f32, bias, padding k/2, stride s) lowered by the CPU
//                     target, prepared once by the CPU device, launched per iteration.
//   linear/B/in/out   one linear step with bias, the same way.
//
// Counter `flops`: 2·(multiply-adds) per second of wall time. Threads: the pool's
// (FERRY_NUM_THREADS=1 or 2 in bench/README.md); compare a conv2d with the sgemm of its shape in
// the same run.
#include <benchmark/benchmark.h>
#include <cblas.h>

#include <cstring>
#include <vector>

#include "bench/bench_kernel.h"
#include "backends/cpu/cpu_device.h"
#include "backends/cpu/cpu_target.h"
#include "backends/cpu/parallel.h"
#include "ir/ops.h"
#include "ir/tensor_data.h"

namespace ferry {
namespace {

using Step = BenchKernel;

void setFlops(benchmark::State &state, double multiplyAdds) {
  state.counters["flops"] =
      benchmark::Counter(2 * multiplyAdds, benchmark::Counter::kIsIterationInvariantRate);
}

void sgemm(benchmark::State &state, bool transB) {
  const int64_t m = state.range(0), n = state.range(1), k = state.range(2);
  const std::vector<float> a(static_cast<size_t>(m * k), 0.5f), b(static_cast<size_t>(k * n), 0.25f);
  std::vector<float> c(static_cast<size_t>(m * n));
  openblas_set_num_threads(cpu::poolThreads());
  for (auto _ : state) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, transB ? CblasTrans : CblasNoTrans, static_cast<int>(m),
                static_cast<int>(n), static_cast<int>(k), 1.0f, a.data(), static_cast<int>(k),
                b.data(), static_cast<int>(transB ? k : n), 0.0f, c.data(), static_cast<int>(n));
    benchmark::DoNotOptimize(c.data());
  }
  openblas_set_num_threads(1);
  setFlops(state, static_cast<double>(m * n * k));
}

void conv2d(benchmark::State &state) {
  const int64_t n = state.range(0), c = state.range(1), hw = state.range(2), o = state.range(3),
                k = state.range(4), s = state.range(5);
  Step step(OpKind::Conv2d,
            {{DType::F32, {n, c, hw, hw}}, {DType::F32, {o, c, k, k}}, {DType::F32, {o}}},
            {{"padding", std::vector<int64_t>{k / 2, k / 2}}, {"stride", std::vector<int64_t>{s, s}}});
  for (auto _ : state) step.run();
  const int64_t out = (hw + 2 * (k / 2) - k) / s + 1;
  setFlops(state, static_cast<double>(n * o * out * out * c * k * k));
}

void linear(benchmark::State &state) {
  const int64_t batch = state.range(0), in = state.range(1), out = state.range(2);
  Step step(OpKind::Linear,
            {{DType::F32, {batch, in}}, {DType::F32, {out, in}}, {DType::F32, {out}}}, {});
  for (auto _ : state) step.run();
  setFlops(state, static_cast<double>(batch * in * out));
}

// Conv shapes {N, C, HW, O, k, stride}: examples/cnn.fy's two convolutions, a residual block's
// 3x3 convolutions at 16 and 64 channels, a ResNet stage's 1x1.
const std::vector<std::vector<int64_t>> kConvs = {
    {8, 3, 32, 16, 3, 1},  {8, 16, 16, 32, 3, 2}, {1, 16, 32, 16, 3, 1}, {8, 16, 32, 16, 3, 1},
    {1, 32, 32, 32, 3, 1}, {8, 32, 32, 32, 3, 1}, {1, 64, 56, 64, 3, 1}, {4, 64, 56, 64, 3, 1},
    {1, 64, 56, 64, 1, 1}, {1, 64, 56, 256, 1, 1},
};

void convArgs(benchmark::internal::Benchmark *b) {
  for (const std::vector<int64_t> &a : kConvs) b->Args(a);
}

// Each conv's GEMM {M = O, N = N·Ho·Wo, K = C·k·k}, and square sizes.
void sgemmArgs(benchmark::internal::Benchmark *b) {
  for (int64_t n : {256, 512, 1024}) b->Args({n, n, n});
  for (const std::vector<int64_t> &a : kConvs) {
    const int64_t out = (a[2] + 2 * (a[4] / 2) - a[4]) / a[5] + 1;
    b->Args({a[3], a[0] * out * out, a[1] * a[4] * a[4]});
  }
}

// The MLP's layers 784-1024, 1024-1024, 1024-10 at batch 1, 32, 256: {batch, in, out}.
void linearArgs(benchmark::internal::Benchmark *b) {
  for (int64_t batch : {1, 32, 256})
    for (auto [in, out] : {std::pair<int64_t, int64_t>{784, 1024}, {1024, 1024}, {1024, 10}})
      b->Args({batch, in, out});
}

// sgemm_t's shapes for linearArgs: {M = batch, N = out, K = in}.
void linearGemmArgs(benchmark::internal::Benchmark *b) {
  for (int64_t batch : {1, 32, 256})
    for (auto [in, out] : {std::pair<int64_t, int64_t>{784, 1024}, {1024, 1024}, {1024, 10}})
      b->Args({batch, out, in});
}

BENCHMARK_CAPTURE(sgemm, nn, false)->Apply(sgemmArgs)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(conv2d)->Apply(convArgs)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK_CAPTURE(sgemm, t, true)->Apply(linearGemmArgs)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(linear)->Apply(linearArgs)->Unit(benchmark::kMicrosecond)->UseRealTime();

}  // namespace
}  // namespace ferry

BENCHMARK_MAIN();
