// tests/alloc/kernel_alloc_test.cpp — how many heap allocations a launch of each prepared CPU
// kernel makes (alloc/alloc_count.h): kernels take their temporaries from planned scratch
// (KernelPlan::scratchBytes) or the stack, and allocate nothing. The one exception is an f32 GEMM
// through oneDNN, whose execute makes its memory handles and argument map (a few allocations per
// panel, bounded below); the other tests run the GEMMs through OpenBLAS.
#include <gtest/gtest.h>

#include <cstdio>
#include <vector>

#include "alloc/alloc_count.h"
#include "backends/cpu/onednn_gemm.h"
#include "backends/cpu/parallel.h"

namespace ferry::alloctest {
namespace {

// The GEMMs through OpenBLAS for the test's life (kernels prepared in it keep that choice).
class OpenblasGemms {
 public:
  OpenblasGemms() : was_(cpu::onednnEnabled()) { cpu::setOnednnEnabled(false); }
  ~OpenblasGemms() { cpu::setOnednnEnabled(was_); }
  OpenblasGemms(const OpenblasGemms &) = delete;
  OpenblasGemms &operator=(const OpenblasGemms &) = delete;

 private:
  bool was_;
};

// The small-GEMM kernels (matmul and linear on small f32/f64 matrices) allocate nothing.
TEST(KernelAllocations, SmallGemmsAllocateNothing) {
  // (No OpenblasGemms: small GEMMs never reach oneDNN, whichever library is chosen.)
  const std::map<std::string, long> perOp =
      allocationsPerOp("tests/alloc/small_gemms.fy", CompileOptions{});
  ASSERT_EQ(perOp.size(), 2u) << str(perOp);
  EXPECT_EQ(perOp.at("matmul"), 0) << str(perOp);
  EXPECT_EQ(perOp.at("linear"), 0) << str(perOp);
}

// Zero for every op, and the compiled model holds every op of the op table but three that never
// reach a kernel there: transfer (the runtime's copy), constant (lowered to a weight) and
// identity (simplify removes it). examples/ops.fy does, in f32 and, autocast, with its GEMMs
// and activations in f16 (conversions into planned scratch).
void expectEveryOpAllocatesNothing(const CompileOptions &options) {
  const std::map<std::string, long> perOp = allocationsPerOp("examples/ops.fy", options);
  for (const OpInfo &op : allOps()) {
    if (op.kind == OpKind::Transfer || op.kind == OpKind::Constant || op.kind == OpKind::Identity)
      continue;
    EXPECT_EQ(perOp.count(std::string(op.name)), 1u) << op.name << " is not in ops.fy";
  }
  for (const auto &[op, n] : perOp) EXPECT_EQ(n, 0) << op << ": " << str(perOp);
}

TEST(KernelAllocations, EveryOpAllocatesNothing) {
  const OpenblasGemms openblas;
  CompileOptions options;
  options.devices = {Device::cpu(), *parseDevice("cpu:1")};  // ops.fy pins a node on cpu:1
  expectEveryOpAllocatesNothing(options);
  options.dtype = *parseDTypePolicy("autocast=f16");
  expectEveryOpAllocatesNothing(options);
}

// The shipped examples, every step.
TEST(KernelAllocations, ExampleModelsAllocateNothing) {
  const OpenblasGemms openblas;
  for (const char *model : {"examples/mlp.fy", "examples/cnn.fy", "examples/mlp_split.fy"}) {
    CompileOptions options;
    options.devices = {Device::cpu(), *parseDevice("cpu:1")};
    options.placement = PlacementPolicy::Auto;  // mlp_split pins a layer to cpu:1
    const std::map<std::string, long> perOp = allocationsPerOp(model, options);
    EXPECT_FALSE(perOp.empty()) << model;
    for (const auto &[op, n] : perOp) EXPECT_EQ(n, 0) << model << ": " << op << ": " << str(perOp);
  }
}

// A whole Session::run after the first allocates for what it hands back, not per step: each
// output's tensor (its bytes and their shared owner) and the tensor the caller holds. Measured:
// 3 per output, plus a few for the result itself; the models have 1, 1 and 40 outputs and
// 9 to 60 steps.
TEST(SessionAllocations, ARunAllocatesPerOutputNotPerStep) {
  const OpenblasGemms openblas;
  for (const char *model : {"examples/mlp.fy", "examples/cnn.fy", "examples/ops.fy"}) {
    CompileOptions options;
    options.devices = {Device::cpu(), *parseDevice("cpu:1")};
    long outputs = 0;
    const long n = allocationsPerRun(model, options, &outputs);
    EXPECT_GT(outputs, 0);
    std::printf("%s: %ld allocations, %ld outputs\n", model, n, outputs);
    EXPECT_LE(n, 3 * outputs + 4) << model << ": " << n << " allocations, " << outputs << " outputs";
  }
}

// With oneDNN: its GEMMs allocate a bounded few per panel and launch (measured: 7 for a GEMM
// with a bias, 6 without, per panel), nothing grows with the data, and every other kernel
// still allocates nothing. In examples/mlp.fy the first linear (32x784 by 784x256, fused with
// its relu) takes oneDNN; the second (32x256 by 256x10) is small enough to stay with sgemm.
TEST(KernelAllocations, OnednnGemmsAllocateAFewPerPanel) {
  if (*cpu::onednnVersion() == '\0') GTEST_SKIP() << "this build has no oneDNN";
  constexpr long kPerPanel = 8;
  CompileOptions options;
  options.devices = {Device::cpu(), *parseDevice("cpu:1")};
  const std::map<std::string, long> perOp = allocationsPerOp("examples/mlp.fy", options);
  ASSERT_EQ(perOp.count("linear"), 1u) << str(perOp);
  std::printf("examples/mlp.fy with oneDNN: %s\n", str(perOp).c_str());
  EXPECT_GT(perOp.at("linear"), 0) << "the GEMMs did not take oneDNN: " << str(perOp);
  EXPECT_LE(perOp.at("linear"), kPerPanel * cpu::poolThreads()) << str(perOp);
  EXPECT_EQ(perOp.at("relu"), perOp.at("linear")) << "one step: " << str(perOp);
  for (const auto &[op, n] : perOp) {
    if (op == "linear" || op == "relu") continue;
    EXPECT_EQ(n, 0) << op << ": " << str(perOp);
  }
}

}  // namespace
}  // namespace ferry::alloctest
