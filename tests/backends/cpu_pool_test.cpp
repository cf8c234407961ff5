// tests/backends/cpu_pool_test.cpp — the CPU backend's max_pool2d, avg_pool2d and
// global_avg_pool: the dtypes they claim, windows that start in the padding, NaN and infinities
// by hand, tensors large enough to be split over threads, and calls outside the contract. Every
// pooling attribute (stride, asymmetric padding, dilation, ceil_mode, count_include_pad) and
// size-0 and size-1 dims in every floating dtype: tests/backends/conformance_test.cpp.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "cpu_test_util.h"

namespace ferry {
namespace {

using reftest::attrB;
using reftest::attrIs;
using reftest::completeAttrs;
using reftest::sameTensor;
using namespace cputest;

constexpr DType kFloats[] = {DType::F16, DType::BF16, DType::F32, DType::F64};

TEST(CpuPool, SupportsExactlyTheFloatingDTypes) {
  CpuDevice b(checked(1));
  for (OpKind k : {OpKind::MaxPool2d, OpKind::AvgPool2d, OpKind::GlobalAvgPool})
    for (DType t : kAllDTypes) EXPECT_EQ(cpuSupports(k, t), isFloating(t)) << dtypeName(t);
}

// A 5-row input, kernel 2, stride 2, padding 1, ceil_mode: PyTorch gives 3 rows, not 4 (a window
// may not start in the trailing padding), and the first window starts in the leading padding.
TEST(CpuPool, WindowsStartingInPaddingCountAsPyTorchDoes) {
  CpuDevice b(checked(1));
  const TensorData x = reftest::f32({1, 1, 5, 1}, {1, 2, 3, 4, 5});
  const std::vector<NamedAttr> window{attrIs("kernel", {2, 1}), attrIs("stride", {2, 1}),
                                      attrIs("padding", {1, 0}), attrB("ceil_mode", true)};
  for (bool includePad : {true, false}) {
    std::vector<NamedAttr> attrs = window;
    attrs.push_back(attrB("count_include_pad", includePad));
    const OpInfo &avg = opInfo(OpKind::AvgPool2d);
    Expected<TensorData> got =
        runOnCpu(b, avg, {x}, completeAttrs(avg, attrs), TensorType{DType::F32, {1, 1, 3, 1}});
    ASSERT_TRUE(got.ok()) << got.status().message();
    // Windows [pad, 1], [2, 3], [4, 5]; with the padding counted the first is (0 + 1) / 2.
    EXPECT_TRUE(
        sameTensor(*got, reftest::f32({1, 1, 3, 1}, {includePad ? 0.5 : 1.0, 2.5, 4.5}), 1e-7));
    EXPECT_TRUE(matchesReference(b, OpKind::AvgPool2d, {x}, attrs));
  }
  const OpInfo &mx = opInfo(OpKind::MaxPool2d);
  Expected<TensorData> got =
      runOnCpu(b, mx, {x}, completeAttrs(mx, window), TensorType{DType::F32, {1, 1, 3, 1}});
  ASSERT_TRUE(got.ok()) << got.status().message();
  EXPECT_TRUE(sameTensor(*got, reftest::f32({1, 1, 3, 1}, {1, 3, 5}), 0));
}

TEST(CpuPool, MaxPoolKeepsNaNAndInfinities) {
  CpuDevice b(checked(1));
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  for (DType t : kFloats) {
    const TensorData x = reftest::tensor(t, {1, 1, 2, 4}, {1, nan, -inf, -inf, 2, 3, -inf, -inf});
    const OpInfo &mx = opInfo(OpKind::MaxPool2d);
    const Attrs attrs = completeAttrs(mx, {attrIs("kernel", {2, 2})});
    Expected<TensorData> got = runOnCpu(b, mx, {x}, attrs, TensorType{t, {1, 1, 1, 2}});
    ASSERT_TRUE(got.ok()) << got.status().message();
    EXPECT_TRUE(std::isnan(got->at(0))) << dtypeName(t);
    EXPECT_EQ(got->at(1), -inf) << dtypeName(t);
    EXPECT_TRUE(matchesReference(b, OpKind::MaxPool2d, {x}, {attrIs("kernel", {2, 2})}));
  }
}

// The 2x2, stride-2 windows of a CNN take a path of their own (backends/cpu/pool.cpp,
// maxPairRows): the same comparisons in the same order as every other window, so of two equal
// zeros the first in the window stays, and an odd row or column past the last window is dropped.
TEST(CpuPool, TwoByTwoWindowsKeepTheFirstOfEqualZerosAndDropTheOddEdge) {
  CpuDevice b(checked(1));
  const OpInfo &mx = opInfo(OpKind::MaxPool2d);
  const Attrs attrs = completeAttrs(mx, {attrIs("kernel", {2, 2}), attrIs("stride", {2, 2})});
  for (DType t : {DType::F32, DType::F64}) {
    SCOPED_TRACE(dtypeName(t));
    const TensorData zeros = reftest::tensor(t, {1, 1, 2, 4}, {-0.0, 0.0, 0.0, -0.0, 0.0, -0.0, -0.0, 0.0});
    Expected<TensorData> got = runOnCpu(b, mx, {zeros}, attrs, TensorType{t, {1, 1, 1, 2}});
    ASSERT_TRUE(got.ok()) << got.status().message();
    EXPECT_TRUE(std::signbit(got->at(0)));
    EXPECT_FALSE(std::signbit(got->at(1)));
    const TensorData odd = TensorData::randn(t, {2, 3, 5, 7}, 41);
    EXPECT_TRUE(matchesReference(b, OpKind::MaxPool2d, {odd},
                                 {attrIs("kernel", {2, 2}), attrIs("stride", {2, 2})}));
  }
}

TEST(CpuPool, GlobalAvgPoolMatchesTheReference) {
  CpuDevice b(checked(1));
  uint64_t seed = 2000;
  for (DType t : kFloats) {
    SCOPED_TRACE(std::string(dtypeName(t)));
    for (const Shape &s : {Shape{2, 3, 5, 4}, Shape{1, 1, 1, 1}, Shape{3, 2, 40, 30},
                           Shape{0, 3, 2, 2}, Shape{2, 0, 2, 2}})
      EXPECT_TRUE(matchesReference(b, OpKind::GlobalAvgPool,
                                   {sample(t, s, OpKind::GlobalAvgPool, seed++)}, {}));
  }
  // No spatial elements: the mean of nothing is NaN, as the reference has it.
  const OpInfo &g = opInfo(OpKind::GlobalAvgPool);
  Expected<TensorData> got = runOnCpu(b, g, {TensorData(DType::F32, {1, 2, 0, 3})},
                                      completeAttrs(g, {}), TensorType{DType::F32, {1, 2, 1, 1}});
  ASSERT_TRUE(got.ok()) << got.status().message();
  EXPECT_TRUE(std::isnan(got->at(0)) && std::isnan(got->at(1)));
}

// 2 x 64 planes of 33 x 33: more output rows than one chunk holds, so parallelFor splits them.
TEST(CpuPool, LargeInputsSplitOverThreadsMatchTheReference) {
  CpuDevice b(checked(1));
  uint64_t seed = 4000;
  for (DType t : {DType::F32, DType::F16}) {
    SCOPED_TRACE(std::string(dtypeName(t)));
    const TensorData x = sample(t, {2, 64, 33, 33}, OpKind::MaxPool2d, seed++);
    EXPECT_TRUE(matchesReference(
        b, OpKind::MaxPool2d, {x},
        {attrIs("kernel", {3, 3}), attrIs("stride", {2, 2}), attrIs("padding", {1, 1})}));
    EXPECT_TRUE(matchesReference(b, OpKind::MaxPool2d, {x},
                                 {attrIs("kernel", {2, 2}), attrB("ceil_mode", true)}));
    EXPECT_TRUE(matchesReference(b, OpKind::AvgPool2d, {x},
                                 {attrIs("kernel", {3, 3}), attrIs("stride", {1, 1}),
                                  attrIs("padding", {1, 1}), attrB("count_include_pad", false)}));
    EXPECT_TRUE(matchesReference(b, OpKind::GlobalAvgPool, {x}, {}));
  }
  // f16 rows go through row buffers in the step's scratch, one pair per chunk: with this many
  // short rows the buffers are capped (pool.cpp, kSlots), whatever the thread count.
  const TensorData many = sample(DType::F16, {4, 512, 32, 32}, OpKind::MaxPool2d, seed++);
  EXPECT_TRUE(matchesReference(b, OpKind::MaxPool2d, {many}, {attrIs("kernel", {2, 2})}));
  EXPECT_TRUE(matchesReference(b, OpKind::AvgPool2d, {many},
                               {attrIs("kernel", {3, 3}), attrIs("padding", {1, 1})}));
}

TEST(CpuPool, RefusesCallsOutsideTheContract) {
  CpuDevice b(checked(1));
  const OpInfo &mx = opInfo(OpKind::MaxPool2d);
  const Attrs attrs = completeAttrs(mx, {attrIs("kernel", {2, 2})});
  // An operand in another dtype than the result: a cast is missing.
  Expected<TensorData> r = runKernelOnly(b, mx, {TensorData(DType::F16, {1, 1, 4, 4})}, attrs,
                                         TensorType{DType::F32, {1, 1, 2, 2}});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().diagnostics()[0].code, "internal");
  EXPECT_NE(r.status().message().find("a cast is missing"), std::string::npos)
      << r.status().message();
  // A result shape the attributes do not give.
  r = runKernelOnly(b, mx, {TensorData(DType::F32, {1, 1, 4, 4})}, attrs,
                    TensorType{DType::F32, {1, 1, 3, 3}});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("called outside its contract"), std::string::npos)
      << r.status().message();
  // A kernel attribute shape inference would have rejected.
  r = runKernelOnly(b, mx, {TensorData(DType::F32, {1, 1, 4, 4})},
                    completeAttrs(mx, {attrIs("kernel", {0, 2})}),
                    TensorType{DType::F32, {1, 1, 4, 2}});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("kernel must be 2 ints"), std::string::npos)
      << r.status().message();
}

}  // namespace
}  // namespace ferry
