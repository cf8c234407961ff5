// tests/cuda/codegen_conv_pool_test.cpp — the CUDA kernels of conv2d, max_pool2d, avg_pool2d,
// global_avg_pool and batch_norm (backends/cuda/codegen/conv_pool.cpp), compiled for the host
// through backends/cuda/codegen/emulate.h and run against the reference interpreter: the steps of
// random graphs, then hand-built steps for what random graphs rarely or never give (dilation,
// asymmetric padding, depthwise convs, ceil_mode with count_include_pad, NaN in a window, long
// planes), and steps outside the generators' contract. With the CUDA toolkit the hand-built
// kernels compile with NVRTC too (the random graphs' do in cuda_target_test.cpp).
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <map>

#include "backends/cuda/codegen/kernel_source.h"
#include "backends/reference/interpreter.h"
#include "common/random_graph.h"
#include "common/value_check.h"
#include "cuda/codegen_steps.h"

#ifdef FERRY_HAVE_CUDA
#include "backends/cuda/nvrtc.h"
#endif

namespace ferry {
namespace {

using cudatest::CollectedStep;
using cudatest::HostKernels;
using cudatest::HandStep;
using cudatest::handStep;
using cudatest::checkAgainstReference;

const OpKind kOps[] = {OpKind::Conv2d, OpKind::MaxPool2d, OpKind::AvgPool2d, OpKind::GlobalAvgPool,
                       OpKind::BatchNorm};

bool isOurs(OpKind k) { return std::find(std::begin(kOps), std::end(kOps), k) != std::end(kOps); }

TEST(CudaConvPool, EveryConvPoolAndBatchNormStepOfTheRandomGraphsMatchesTheReferenceOnTheHost) {
  const auto start = std::chrono::steady_clock::now();
  std::vector<CollectedStep> steps;
  for (CollectedStep &s : cudatest::collectSteps(/*graphs=*/1500, /*elementwise=*/false))
    if (isOurs(s.op)) steps.push_back(std::move(s));
  const size_t kernels = cudatest::expectStepsMatchTheReference(steps);
  std::map<OpKind, int> occurred;
  std::map<DType, int> dtypes;
  for (const CollectedStep &s : steps) {
    ++occurred[s.op];
    ++dtypes[s.result.dtype];
  }
  std::string counts;
  for (OpKind k : kOps)
    counts += " " + std::string(opInfo(k).name) + " " + std::to_string(occurred[k]);
  for (const auto &[t, n] : dtypes)
    counts += " " + std::string(dtypeName(t)) + " " + std::to_string(n);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("%zu steps, %zu distinct kernels, %.1f s; by op and dtype:%s\n", steps.size(),
              kernels, seconds, counts.c_str());
  for (OpKind k : kOps) EXPECT_GE(occurred[k], 3) << opInfo(k).name;
}

// --- hand-built steps ----------------------------------------------------------------------

AttrValue ints(std::vector<int64_t> v) { return AttrValue(std::move(v)); }

TEST(CudaConvPool, Conv2dWithGroupsStridePaddingDilationAndBiasMatchesTheReference) {
  testutil::Rng rng(21);
  const std::vector<NamedAttr> all = {{"groups", int64_t{2}},
                                      {"stride", ints({2, 2})},
                                      {"padding", ints({1, 1})},
                                      {"dilation", ints({2, 2})}};
  const std::vector<HandStep> steps = {
      handStep(OpKind::Conv2d,
               {{DType::F32, {2, 4, 9, 10}}, {DType::F32, {6, 2, 3, 3}}, {DType::F32, {6}}}, all,
               rng),
      handStep(OpKind::Conv2d,
               {{DType::F16, {2, 4, 9, 10}}, {DType::F16, {6, 2, 3, 3}}, {DType::F16, {6}}}, all,
               rng),
      // Different steps and dilations along H and W, padding [top, left, bottom, right].
      handStep(OpKind::Conv2d, {{DType::BF16, {1, 6, 11, 8}}, {DType::BF16, {4, 3, 2, 3}}},
               {{"groups", int64_t{2}},
                {"stride", ints({1, 3})},
                {"padding", ints({2, 0, 1, 3})},
                {"dilation", ints({3, 1})}},
               rng),
      handStep(OpKind::Conv2d,
               {{DType::F64, {3, 3, 5, 5}}, {DType::F64, {2, 3, 5, 5}}, {DType::F64, {2}}},
               {{"padding", ints({4, 4})}}, rng),
      // A window larger than the input, and one of one tap.
      handStep(OpKind::Conv2d, {{DType::F32, {1, 2, 2, 3}}, {DType::F32, {3, 2, 1, 1}}}, {}, rng),
  };
  EXPECT_EQ(checkAgainstReference(steps), 0);
}

TEST(CudaConvPool, DepthwiseConv2dMatchesTheReference) {
  testutil::Rng rng(22);
  const std::vector<HandStep> steps = {
      handStep(OpKind::Conv2d,
               {{DType::F32, {2, 6, 7, 7}}, {DType::F32, {6, 1, 3, 3}}, {DType::F32, {6}}},
               {{"groups", int64_t{6}}, {"padding", ints({1, 1})}}, rng),
      // Two output channels per input channel, strided, in f16.
      handStep(OpKind::Conv2d, {{DType::F16, {1, 5, 8, 9}}, {DType::F16, {10, 1, 3, 3}}},
               {{"groups", int64_t{5}}, {"stride", ints({2, 2})}, {"padding", ints({1, 1})}}, rng),
  };
  EXPECT_EQ(checkAgainstReference(steps), 0);
}

TEST(CudaConvPool, PoolsWithPaddingCeilModeDilationAndCountIncludePadMatchTheReference) {
  testutil::Rng rng(23);
  auto pool = [&](OpKind kind, DType t, Shape x, std::vector<NamedAttr> attrs) {
    return handStep(kind, {{t, std::move(x)}}, std::move(attrs), rng);
  };
  using K = OpKind;
  const std::vector<HandStep> steps = {
      pool(K::MaxPool2d, DType::F32, {2, 3, 7, 8},
           {{"kernel", ints({3, 3})}, {"stride", ints({2, 2})}, {"padding", ints({1, 1})}}),
      pool(K::MaxPool2d, DType::F16, {1, 2, 8, 7},
           {{"kernel", ints({3, 2})},
            {"stride", ints({2, 2})},
            {"padding", ints({1, 1})},
            {"ceil_mode", true}}),
      pool(K::MaxPool2d, DType::BF16, {2, 2, 9, 9},
           {{"kernel", ints({3, 3})},
            {"dilation", ints({2, 1})},
            {"padding", ints({2, 1})},
            {"stride", ints({1, 2})}}),
      // The default stride (the kernel).
      pool(K::MaxPool2d, DType::F64, {1, 3, 6, 6}, {{"kernel", ints({2, 3})}}),
      pool(K::AvgPool2d, DType::F32, {2, 3, 7, 8},
           {{"kernel", ints({3, 3})}, {"stride", ints({2, 2})}, {"padding", ints({1, 1})}}),
      pool(K::AvgPool2d, DType::F32, {2, 3, 7, 8},
           {{"kernel", ints({3, 3})},
            {"stride", ints({2, 2})},
            {"padding", ints({1, 1})},
            {"count_include_pad", false}}),
      // ceil_mode windows hanging past the padding: clipped before the divisor is counted.
      pool(K::AvgPool2d, DType::F16, {1, 2, 6, 7},
           {{"kernel", ints({3, 3})},
            {"stride", ints({2, 2})},
            {"padding", ints({1, 1})},
            {"ceil_mode", true}}),
      pool(K::AvgPool2d, DType::BF16, {1, 2, 6, 7},
           {{"kernel", ints({3, 3})},
            {"stride", ints({2, 2})},
            {"padding", ints({1, 1})},
            {"ceil_mode", true},
            {"count_include_pad", false}}),
      pool(K::AvgPool2d, DType::F64, {2, 1, 5, 5},
           {{"kernel", ints({2, 2})}, {"ceil_mode", true}, {"padding", ints({1, 0, 0, 1})}}),
      pool(K::GlobalAvgPool, DType::F32, {2, 3, 4, 5}, {}),
      pool(K::GlobalAvgPool, DType::F16, {1, 2, 7, 7}, {}),
      // Planes of more than kBlockRowMin elements take a block each.
      pool(K::GlobalAvgPool, DType::BF16, {2, 4, 56, 56}, {}),
      pool(K::GlobalAvgPool, DType::F64, {1, 2, 1, 1}, {}),
  };
  EXPECT_EQ(checkAgainstReference(steps), 0);
}

TEST(CudaConvPool, MaxPoolKeepsNaNAndInfinities) {
  testutil::Rng rng(24);
  std::vector<HandStep> steps = {
      handStep(OpKind::MaxPool2d, {{DType::F32, {1, 1, 4, 4}}},
               {{"kernel", ints({2, 2})}, {"padding", ints({1, 1})}}, rng),
      handStep(OpKind::MaxPool2d, {{DType::F16, {1, 1, 4, 4}}}, {{"kernel", ints({2, 2})}}, rng),
  };
  const double nan = std::numeric_limits<double>::quiet_NaN(),
               inf = std::numeric_limits<double>::infinity();
  for (HandStep &h : steps) {
    h.inputs[0].set(0, -inf);  // a window of padding and -inf: -inf
    h.inputs[0].set(5, nan);   // NaN first, a larger value after it
    h.inputs[0].set(6, 100);
    h.inputs[0].set(11, inf);
    h.inputs[0].set(15, nan);  // NaN last
  }
  EXPECT_EQ(checkAgainstReference(steps), 0);
}

TEST(CudaConvPool, BatchNormMatchesTheReference) {
  testutil::Rng rng(25);
  auto bn = [&](DType t, Shape x, std::vector<NamedAttr> attrs) {
    const int64_t c = x[1];
    return handStep(OpKind::BatchNorm, {{t, std::move(x)}, {t, {c}}, {t, {c}}, {t, {c}}, {t, {c}}},
                    std::move(attrs), rng);
  };
  const std::vector<HandStep> steps = {
      bn(DType::BF16, {2, 5, 4, 3}, {}),   bn(DType::BF16, {3, 7}, {{"eps", 0.001}}),
      bn(DType::F16, {2, 3, 5}, {}),       bn(DType::F32, {2, 4, 3, 3}, {{"eps", 0.5}}),
      bn(DType::F64, {1, 3, 2, 2, 2}, {}),
  };
  EXPECT_EQ(checkAgainstReference(steps), 0);
}

TEST(CudaConvPool, StepsOutsideTheContractAreInternalErrorsAtTheStepsLocation) {
  testutil::Rng rng(26);
  auto expectInternal = [](const HandStep &h, const std::string &text) {
    Expected<cuda::KernelSource> k = cuda::stepKernel(h.spec());
    ASSERT_FALSE(k.ok()) << h.what;
    const Diagnostic &d = k.status().diagnostics()[0];
    EXPECT_EQ(d.code, "internal");
    EXPECT_EQ(d.loc, h.loc);
    EXPECT_NE(k.status().message().find(text), std::string::npos) << k.status().message();
  };
  // A bias of another dtype: a cast is missing.
  HandStep conv = handStep(
      OpKind::Conv2d, {{DType::F32, {1, 2, 4, 4}}, {DType::F32, {2, 2, 3, 3}}, {DType::F32, {2}}},
      {}, rng);
  conv.operands[2].dtype = DType::F16;
  expectInternal(conv, "a cast is missing");
  // A weight whose channels do not match the groups.
  HandStep groups =
      handStep(OpKind::Conv2d, {{DType::F32, {1, 4, 4, 4}}, {DType::F32, {2, 2, 3, 3}}},
               {{"groups", int64_t{2}}}, rng);
  groups.operands[1].shape = {2, 4, 3, 3};
  expectInternal(groups, "in 2 groups");
  // Pools of integers.
  HandStep pool =
      handStep(OpKind::MaxPool2d, {{DType::F32, {1, 1, 4, 4}}}, {{"kernel", ints({2, 2})}}, rng);
  pool.operands[0].dtype = DType::I32;
  pool.result.dtype = DType::I32;
  expectInternal(pool, "result i32[1,1,2,2]");
  // A result of another shape than the window gives.
  HandStep avg =
      handStep(OpKind::AvgPool2d, {{DType::F32, {1, 1, 5, 5}}}, {{"kernel", ints({2, 2})}}, rng);
  avg.result.shape = {1, 1, 3, 3};
  expectInternal(avg, "result f32[1,1,3,3] for f32[1,1,5,5]");
  // batch_norm statistics of another length than the channels.
  HandStep bn = handStep(OpKind::BatchNorm,
                         {{DType::F32, {2, 3}},
                          {DType::F32, {3}},
                          {DType::F32, {3}},
                          {DType::F32, {3}},
                          {DType::F32, {3}}},
                         {}, rng);
  bn.operands[3].shape = {4};
  expectInternal(bn, "operand 3 f32[4]");
}

}  // namespace
}  // namespace ferry
