// bench/vmath_bench.cpp — backends/cpu/vmath against the Eigen 3.4 array expressions the CPU
// kernels computed the same functions with before it, f32, one thread, side by side in one run.
//
// n = 1024 (an L1-sized block, as the fused kernel calls vmath) and n = 16M (64 MB in, 64 MB out:
// memory-bound). Inputs uniform in [-5, 5] (log, sqrt, rsqrt: [0.1, 10]), the result in another
// array. `vmath` runs the ISA vmath picks (FERRY_VMATH_ISA narrows it); the name of each line says
// which. Counter: items = elements per second.
#include <benchmark/benchmark.h>

#include <Eigen/Core>
#include <cmath>
#include <numbers>
#include <random>
#include <string>
#include <unsupported/Eigen/SpecialFunctions>
#include <vector>

#include "backends/cpu/vmath.h"

namespace ferry::cpu {
namespace {

using Array = Eigen::Map<Eigen::ArrayXf>;
using ConstArray = Eigen::Map<const Eigen::ArrayXf>;

// The CPU kernels' exp before vmath: Eigen's, with the lanes below -80 shifted so that they
// underflow as the true value does (Eigen clamps its argument there).
void eigenExp(const float *x, float *y, int64_t n) {
  const ConstArray a(x, n);
  const auto low = ((-80.f - a) * 1e30f).min(1.f).max(0.f);
  Array(y, n) = (a + low * 32.f).exp() * (low * std::exp(-32.f) + (1.f - low));
}

struct Function {
  const char *name;
  void (*baseline)(const float *, float *, int64_t);
  VmathTable::F32 VmathTable::*vmath;
  bool positive;  // inputs in [0.1, 10], else [-5, 5]
};

const Function kFunctions[] = {
    {"exp", eigenExp, &VmathTable::expF32, false},
    {"log", [](const float *x, float *y, int64_t n) { Array(y, n) = ConstArray(x, n).log(); },
     &VmathTable::logF32, true},
    {"tanh", [](const float *x, float *y, int64_t n) { Array(y, n) = ConstArray(x, n).tanh(); },
     &VmathTable::tanhF32, false},
    {"sigmoid",
     [](const float *x, float *y, int64_t n) {
       Array(y, n) = 1.f / (1.f + (-ConstArray(x, n)).exp());
     },
     &VmathTable::sigmoidF32, false},
    {"silu",
     [](const float *x, float *y, int64_t n) {
       const ConstArray a(x, n);
       Array(y, n) = a / (1.f + (-a).exp());
     },
     &VmathTable::siluF32, false},
    {"erf", [](const float *x, float *y, int64_t n) { Array(y, n) = ConstArray(x, n).erf(); },
     &VmathTable::erfF32, false},
    {"gelu_erf",
     [](const float *x, float *y, int64_t n) {
       const ConstArray a(x, n);
       Array(y, n) = 0.5f * a * (1.f + (a * float(1 / std::numbers::sqrt2)).erf());
     },
     &VmathTable::geluErfF32, false},
    {"gelu_tanh",
     [](const float *x, float *y, int64_t n) {
       const ConstArray a(x, n);
       const float k0 = float(std::sqrt(2 / std::numbers::pi));
       Array(y, n) = 0.5f * a * (1.f + (k0 * (a + 0.044715f * a * a * a)).tanh());
     },
     &VmathTable::geluTanhF32, false},
    {"sqrt", [](const float *x, float *y, int64_t n) { Array(y, n) = ConstArray(x, n).sqrt(); },
     &VmathTable::sqrtF32, true},
    {"rsqrt", [](const float *x, float *y, int64_t n) { Array(y, n) = ConstArray(x, n).rsqrt(); },
     &VmathTable::rsqrtF32, true},
};

std::vector<float> inputs(int64_t n, bool positive) {
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> dist(positive ? 0.1f : -5.f, positive ? 10.f : 5.f);
  std::vector<float> x(static_cast<size_t>(n));
  for (float &v : x) v = dist(rng);
  return x;
}

void run(benchmark::State &state, void (*f)(const float *, float *, int64_t), bool positive) {
  const int64_t n = state.range(0);
  const std::vector<float> x = inputs(n, positive);
  std::vector<float> y(x.size());
  for (auto _ : state) {
    f(x.data(), y.data(), n);
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * n);
}

// eigen/<fn> and vmath_<isa>/<fn> next to each other, at both sizes.
void registerAll() {
  const std::string isa = vmathIsaName(vmathIsa());
  const VmathTable &table = *vmathTable(vmathIsa());
  for (const Function &fn : kFunctions) {
    for (int64_t n : {int64_t{1024}, int64_t{16} << 20}) {
      const auto unit = n > 4096 ? benchmark::kMillisecond : benchmark::kMicrosecond;
      benchmark::RegisterBenchmark(("eigen/" + std::string(fn.name)).c_str(), run, fn.baseline,
                                   fn.positive)
          ->Arg(n)
          ->Unit(unit)
          ->UseRealTime();
      benchmark::RegisterBenchmark(("vmath_" + isa + "/" + fn.name).c_str(), run, table.*fn.vmath,
                                   fn.positive)
          ->Arg(n)
          ->Unit(unit)
          ->UseRealTime();
    }
  }
}

}  // namespace
}  // namespace ferry::cpu

int main(int argc, char **argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  ferry::cpu::registerAll();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
