// bench/cpu_kernels_bench.cpp — CPU kernels, one step each: lowered by the CPU target, prepared
// once by the CPU device, launched per iteration.
//
// GEMMs: matmul 512³ (f32, f64, f16, bf16, i32), linear 64×1024→1024 with bias, conv2d 1×64×56×56
// with a 3×3 kernel to 64 channels. Memory-bound kernels on the activation of examples/cnn.fy's
// first block ([8,16,32,32], 131,072 elements): relu, exp, add with a broadcast bias, max_pool2d,
// batch_norm, softmax, transpose; in f32 and, for some, f16 or i32. Unary ops over 16M f32
// (gelu both ways, exp, sigmoid, tanh): the transcendental kernels at memory-bound size.
//
// Operands and the step's planned scratch are allocated on the device and filled once, outside
// the timed region; each iteration is one launch() (ownership checks off, as in a Release build). Counters:
//   flops  2·(multiply-adds) per second of wall time (GEMMs only)
//   items  result elements per second
#include <benchmark/benchmark.h>

#include <cstring>
#include <string>
#include <vector>

#include "bench/bench_kernel.h"
#include "backends/cpu/cpu_device.h"
#include "backends/cpu/cpu_target.h"
#include "ir/ops.h"
#include "ir/tensor_data.h"

namespace ferry {
namespace {

using Node = BenchKernel;

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

// One node on the cnn activation shape in `dtype`; `extra` are further operands' shapes, `attrs`
// the node's.
void activation(benchmark::State &state, OpKind kind, DType dtype, std::vector<Shape> extra,
                std::vector<NamedAttr> attrs) {
  std::vector<TensorType> operands{{dtype, {8, 16, 32, 32}}};
  for (Shape &s : extra) operands.push_back({dtype, std::move(s)});
  Node node(kind, std::move(operands), attrs);
  for (auto _ : state) node.run();
  state.SetItemsProcessed(state.iterations() * 8 * 16 * 32 * 32);
}

// A unary op over one tensor of 16M f32 (64 MB in, 64 MB out), the whole kernel: blocks, threads.
void unary16M(benchmark::State &state, OpKind kind, std::vector<NamedAttr> attrs) {
  constexpr int64_t n = int64_t{16} << 20;
  Node node(kind, {{DType::F32, {n}}}, attrs);
  for (auto _ : state) node.run();
  state.SetItemsProcessed(state.iterations() * n);
}

const Shape kChannels{16};

BENCHMARK_CAPTURE(matmul, f32, DType::F32)->Arg(512)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(matmul, f64, DType::F64)->Arg(512)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(matmul, f16, DType::F16)->Arg(512)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(matmul, bf16, DType::BF16)
    ->Arg(512)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(matmul, i32, DType::I32)->Arg(512)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(linear)->Args({64, 1024, 1024})->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(conv2d)->Args({64, 56, 64})->Unit(benchmark::kMillisecond)->UseRealTime();

#define FERRY_ACTIVATION_BENCH(name, ...)                                                          \
  BENCHMARK_CAPTURE(activation, name, __VA_ARGS__)->Unit(benchmark::kMicrosecond)->UseRealTime()
FERRY_ACTIVATION_BENCH(relu_f32, OpKind::Relu, DType::F32, {}, {});
FERRY_ACTIVATION_BENCH(relu_f16, OpKind::Relu, DType::F16, {}, {});
FERRY_ACTIVATION_BENCH(relu_i32, OpKind::Relu, DType::I32, {}, {});
FERRY_ACTIVATION_BENCH(exp_f32, OpKind::Exp, DType::F32, {}, {});
FERRY_ACTIVATION_BENCH(exp_f16, OpKind::Exp, DType::F16, {}, {});
FERRY_ACTIVATION_BENCH(add_bias_f32, OpKind::Add, DType::F32, {{16, 1, 1}}, {});
FERRY_ACTIVATION_BENCH(add_bias_f16, OpKind::Add, DType::F16, {{16, 1, 1}}, {});
FERRY_ACTIVATION_BENCH(max_pool2d_f32, OpKind::MaxPool2d, DType::F32, {},
                       {{"kernel", std::vector<int64_t>{2, 2}}});
FERRY_ACTIVATION_BENCH(max_pool2d_f16, OpKind::MaxPool2d, DType::F16, {},
                       {{"kernel", std::vector<int64_t>{2, 2}}});
FERRY_ACTIVATION_BENCH(batch_norm_f32, OpKind::BatchNorm, DType::F32,
                       {kChannels, kChannels, kChannels, kChannels}, {});
FERRY_ACTIVATION_BENCH(softmax_f32, OpKind::Softmax, DType::F32, {}, {{"axis", int64_t{3}}});
FERRY_ACTIVATION_BENCH(softmax_f16, OpKind::Softmax, DType::F16, {}, {{"axis", int64_t{3}}});
FERRY_ACTIVATION_BENCH(transpose_f32, OpKind::Transpose, DType::F32, {},
                       {{"perm", std::vector<int64_t>{0, 2, 3, 1}}});

#define FERRY_UNARY_16M_BENCH(name, ...)                                                           \
  BENCHMARK_CAPTURE(unary16M, name, __VA_ARGS__)->Unit(benchmark::kMillisecond)->UseRealTime()
FERRY_UNARY_16M_BENCH(gelu_erf, OpKind::Gelu, {});
FERRY_UNARY_16M_BENCH(gelu_tanh, OpKind::Gelu, {{"approximate", std::string("tanh")}});
FERRY_UNARY_16M_BENCH(exp, OpKind::Exp, {});
FERRY_UNARY_16M_BENCH(sigmoid, OpKind::Sigmoid, {});
FERRY_UNARY_16M_BENCH(tanh, OpKind::Tanh, {});

}  // namespace
}  // namespace ferry

BENCHMARK_MAIN();
