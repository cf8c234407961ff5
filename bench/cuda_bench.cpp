// bench/cuda_bench.cpp — the CUDA backend against what the GPU does when called directly, side by
// side in one process (issue [cuda]'s targets; bench/README.md, "CUDA"):
//
//   Gemm/ferry vs Gemm/cublaslt   an n x n x n matmul (f32, f16, bf16): ferry's step (cuBLASLt
//                                 with the plan's algorithm) against cublasLtMatmul called here
//                                 with the heuristic's first algorithm          target >= 95 %
//   Chain/ferry vs Copy/d2d       gelu(x * 1.5 + 0.25) * 0.75 on n f32, one generated kernel,
//                                 against cudaMemcpy device to device of the same bytes (both read
//                                 n * 4 and write n * 4 bytes)                  target >= 80 %
//   Upload/ferry vs Upload/pinned a Session's input upload from an app's (pageable) tensor,
//                                 through the pinned staging buffers, against cudaMemcpy from
//                                 pinned memory                                  target >= 90 %
//
// ferry's times are the step's own (RunOptions::profile: the step is synchronized alone), so the
// copies of a run's inputs and outputs (a Tensor is host memory) are not in the GEMM and chain
// figures; the upload figure is RunStats::inputCopySeconds. The direct times are CUDA events
// around the same work. Manual time, so Google Benchmark's tables compare like with like.
//
// Without a GPU (or without CUDA in the build) it says so and exits 0.
#include <benchmark/benchmark.h>
#include <cublasLt.h>
#include <cuda_runtime.h>

#include <cstdio>
#include <string>

#include "backends/cuda/libraries.h"
#include "backends/registry.h"
#include "ir/parser.h"
#include "passes/lower.h"
#include "runtime/session.h"

namespace ferry {
namespace {

const char *dtypeText(DType t) {
  return t == DType::F16 ? "f16" : t == DType::BF16 ? "bf16" : "f32";
}

Session sessionOf(const std::string &text) {
  Expected<Graph> g = parseGraph(text, "bench.fy");
  FERRY_CHECK(g.ok()) << g.status().message();
  CompileOptions o;
  o.devices = {Device::cpu(), Device::cuda(0)};
  o.target = Device::cuda(0);
  Expected<Executable> exe = build(std::move(*g), o);
  FERRY_CHECK(exe.ok()) << exe.status().message();
  Expected<Session> s = Session::create(std::move(*exe));
  FERRY_CHECK(s.ok()) << s.status().message();
  return std::move(*s);
}

// Seconds of the run's one kernel step (the last step: after the inputs' transfers).
double kernelSeconds(Session &s, const std::vector<NamedTensor> &inputs) {
  Session::RunOptions ro;
  ro.profile = true;
  ro.outputsOnDevice = true;
  Expected<RunResult> r = s.run(inputs, ro);
  FERRY_CHECK(r.ok()) << r.status().message();
  return r->stats.stepSeconds.back();
}

Tensor onGpu(DType t, Shape shape) {
  Expected<Tensor> x = Tensor(TensorData::randn(t, std::move(shape), 7)).to(Device::cuda(0));
  FERRY_CHECK(x.ok()) << x.status().message();
  return *x;
}

// Each iteration's `work`, timed with CUDA events on the legacy stream.
template <class Work> void timeWithEvents(benchmark::State &state, Work work) {
  cudaEvent_t start, stop;
  cudaEventCreate(&start);
  cudaEventCreate(&stop);
  for (auto _ : state) {
    cudaEventRecord(start);
    work();
    cudaEventRecord(stop);
    cudaEventSynchronize(stop);
    float ms = 0;
    cudaEventElapsedTime(&ms, start, stop);
    state.SetIterationTime(ms * 1e-3);
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
}

void gemmFerry(benchmark::State &state, DType t) {
  const int64_t n = state.range(0);
  const std::string dt = dtypeText(t),
                    shape = "[" + std::to_string(n) + "," + std::to_string(n) + "]";
  Session s = sessionOf("graph g {\n  input %a : " + dt + shape + " @cuda:0\n  param %b : " + dt +
                        shape + " = randn(seed=1)\n  %c = matmul(%a, %b)\n  output %c\n}\n");
  const std::vector<NamedTensor> in{{"a", onGpu(t, {n, n})}};
  for (auto _ : state) state.SetIterationTime(kernelSeconds(s, in));
  state.counters["TFLOP/s"] =
      benchmark::Counter(2.0 * n * n * n * 1e-12, benchmark::Counter::kIsIterationInvariantRate);
}

void gemmDirect(benchmark::State &state, DType t) {
  const int64_t n = state.range(0);
  Expected<const cuda::CublasLt *> api = cuda::cublasLt();
  FERRY_CHECK(api.ok()) << api.status().message();
  const cuda::CublasLt &lt = **api;
  const cudaDataType_t type = t == DType::F16    ? CUDA_R_16F
                              : t == DType::BF16 ? CUDA_R_16BF
                                                 : CUDA_R_32F;
  const size_t bytes = static_cast<size_t>(n * n) * dtypeSize(t);
  void *a = nullptr, *b = nullptr, *c = nullptr, *ws = nullptr;
  const size_t wsBytes = size_t{4} << 20;
  cudaMalloc(&a, bytes);
  cudaMalloc(&b, bytes);
  cudaMalloc(&c, bytes);
  cudaMalloc(&ws, wsBytes);
  cudaMemset(a, 0, bytes);
  cudaMemset(b, 0, bytes);
  cublasLtHandle_t h = nullptr;
  lt.create(&h);
  cublasLtMatmulDesc_t desc = nullptr;
  lt.matmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F);
  cublasLtMatrixLayout_t la = nullptr, lb = nullptr, lc = nullptr;
  lt.matrixLayoutCreate(&la, type, static_cast<uint64_t>(n), static_cast<uint64_t>(n), n);
  lt.matrixLayoutCreate(&lb, type, static_cast<uint64_t>(n), static_cast<uint64_t>(n), n);
  lt.matrixLayoutCreate(&lc, type, static_cast<uint64_t>(n), static_cast<uint64_t>(n), n);
  cublasLtMatmulPreference_t pref = nullptr;
  lt.matmulPreferenceCreate(&pref);
  lt.matmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &wsBytes,
                                  sizeof wsBytes);
  cublasLtMatmulHeuristicResult_t result{};
  int found = 0;
  lt.matmulAlgoGetHeuristic(h, desc, la, lb, lc, lc, pref, 1, &result, &found);
  FERRY_CHECK(found == 1) << "no cuBLASLt algorithm";
  const float alpha = 1, beta = 0;
  timeWithEvents(state, [&] {
    lt.matmul(h, desc, &alpha, a, la, b, lb, &beta, c, lc, c, lc, &result.algo, ws, wsBytes,
              nullptr);
  });
  state.counters["TFLOP/s"] =
      benchmark::Counter(2.0 * n * n * n * 1e-12, benchmark::Counter::kIsIterationInvariantRate);
  lt.matmulPreferenceDestroy(pref);
  lt.matrixLayoutDestroy(la);
  lt.matrixLayoutDestroy(lb);
  lt.matrixLayoutDestroy(lc);
  lt.matmulDescDestroy(desc);
  lt.destroy(h);
  cudaFree(a);
  cudaFree(b);
  cudaFree(c);
  cudaFree(ws);
}

void chainFerry(benchmark::State &state) {
  const int64_t n = state.range(0);
  Session s = sessionOf("graph g {\n  input %x : f32[" + std::to_string(n) +
                        "] @cuda:0\n  %a = mul(%x, 1.5)\n  %b = add(%a, 0.25)\n  %c = gelu(%b)\n"
                        "  %y = mul(%c, 0.75)\n  output %y\n}\n");
  const std::vector<NamedTensor> in{{"x", onGpu(DType::F32, {n})}};
  for (auto _ : state) state.SetIterationTime(kernelSeconds(s, in));
  state.SetBytesProcessed(state.iterations() * n * 8);
}

void copyDirect(benchmark::State &state) {
  const int64_t n = state.range(0);
  void *a = nullptr, *b = nullptr;
  cudaMalloc(&a, static_cast<size_t>(n) * 4);
  cudaMalloc(&b, static_cast<size_t>(n) * 4);
  timeWithEvents(state, [&] {
    cudaMemcpyAsync(b, a, static_cast<size_t>(n) * 4, cudaMemcpyDeviceToDevice, nullptr);
  });
  state.SetBytesProcessed(state.iterations() * n * 8);
  cudaFree(a);
  cudaFree(b);
}

void uploadFerry(benchmark::State &state) {
  const int64_t n = state.range(0);
  Session s = sessionOf("graph g {\n  input %x : f32[" + std::to_string(n) +
                        "] @cuda:0\n  %y = relu(%x)\n  output %y\n}\n");
  const std::vector<NamedTensor> in{{"x", onGpu(DType::F32, {n})}};
  for (auto _ : state) {
    Session::RunOptions ro;
    ro.outputsOnDevice = true;
    Expected<RunResult> r = s.run(in, ro);
    FERRY_CHECK(r.ok()) << r.status().message();
    state.SetIterationTime(r->stats.inputCopySeconds);
  }
  state.SetBytesProcessed(state.iterations() * n * 4);
}

void uploadPinned(benchmark::State &state) {
  const int64_t n = state.range(0);
  void *host = nullptr, *device = nullptr;
  cudaMallocHost(&host, static_cast<size_t>(n) * 4);
  cudaMalloc(&device, static_cast<size_t>(n) * 4);
  timeWithEvents(state, [&] {
    cudaMemcpyAsync(device, host, static_cast<size_t>(n) * 4, cudaMemcpyHostToDevice, nullptr);
  });
  state.SetBytesProcessed(state.iterations() * n * 4);
  cudaFreeHost(host);
  cudaFree(device);
}

void registerAll() {
  for (DType t : {DType::F32, DType::F16, DType::BF16}) {
    const std::string name = dtypeText(t);
    benchmark::RegisterBenchmark(("Gemm/ferry/" + name).c_str(), gemmFerry, t)
        ->Arg(1024)
        ->Arg(4096)
        ->UseManualTime()
        ->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark(("Gemm/cublaslt/" + name).c_str(), gemmDirect, t)
        ->Arg(1024)
        ->Arg(4096)
        ->UseManualTime()
        ->Unit(benchmark::kMillisecond);
  }
  benchmark::RegisterBenchmark("Chain/ferry", chainFerry)
      ->Arg(int64_t{1} << 26)
      ->UseManualTime()
      ->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark("Copy/d2d", copyDirect)
      ->Arg(int64_t{1} << 26)
      ->UseManualTime()
      ->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark("Upload/ferry", uploadFerry)
      ->Arg(int64_t{1} << 26)
      ->UseManualTime()
      ->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark("Upload/pinned", uploadPinned)
      ->Arg(int64_t{1} << 26)
      ->UseManualTime()
      ->Unit(benchmark::kMillisecond);
}

}  // namespace
}  // namespace ferry

int main(int argc, char **argv) {
  if (auto absent = ferry::firstAbsent(std::vector<ferry::Device>{ferry::Device::cuda(0)},
                                       ferry::builtinBackends())) {
    std::printf("ferry-bench-cuda: no GPU, nothing measured: %s\n", absent->second.c_str());
    return 0;
  }
  cudaDeviceProp p{};
  cudaGetDeviceProperties(&p, 0);
  std::printf("ferry-bench-cuda on %s (%d SMs, %.0f GiB)\n", p.name, p.multiProcessorCount,
              static_cast<double>(p.totalGlobalMem) / (1 << 30));
  benchmark::Initialize(&argc, argv);
  ferry::registerAll();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
