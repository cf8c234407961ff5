// tests/backends/cpu_pool_test.cpp — the CPU backend's max_pool2d, avg_pool2d and
// global_avg_pool against the reference interpreter: every floating dtype, every pooling
// attribute (stride, asymmetric padding, dilation, ceil_mode, count_include_pad), windows that
// start in the padding, size-0 and size-1 dims, and tensors large enough to be split over threads.
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

// Attribute sets valid for both pools (avg_pool2d has no dilation) on a 7x6 input.
const std::vector<std::vector<NamedAttr>> kWindows{
    {attrIs("kernel", {2, 2})},
    {attrIs("kernel", {3, 3}), attrIs("stride", {2, 2}), attrIs("padding", {1, 1})},
    {attrIs("kernel", {3, 2}), attrIs("stride", {1, 2})},
    {attrIs("kernel", {1, 1})},
    {attrIs("kernel", {7, 6})},
    // Asymmetric padding [top, left, bottom, right].
    {attrIs("kernel", {3, 3}), attrIs("stride", {2, 1}), attrIs("padding", {0, 1, 1, 0})},
    {attrIs("kernel", {2, 3}), attrIs("stride", {3, 2}), attrIs("padding", {1, 0, 0, 1})},
    // ceil_mode: the last window hangs past the input (and past the padding).
    {attrIs("kernel", {2, 2}), attrIs("stride", {2, 2}), attrB("ceil_mode", true)},
    {attrIs("kernel", {3, 3}), attrIs("stride", {2, 2}), attrIs("padding", {1, 1}),
     attrB("ceil_mode", true)},
    {attrIs("kernel", {4, 4}), attrIs("stride", {3, 3}), attrIs("padding", {2, 1, 0, 2}),
     attrB("ceil_mode", true)},
};

TEST(CpuPool, MaxPoolMatchesTheReferenceForEveryAttributeAndDType) {
  CpuDevice b(checked(1));
  std::vector<std::vector<NamedAttr>> windows = kWindows;
  // Dilation, alone and with padding, stride and ceil_mode.
  windows.push_back({attrIs("kernel", {2, 2}), attrIs("dilation", {2, 3})});
  windows.push_back({attrIs("kernel", {3, 2}), attrIs("stride", {2, 1}), attrIs("padding", {2, 1}),
                     attrIs("dilation", {2, 2})});
  windows.push_back({attrIs("kernel", {2, 2}), attrIs("stride", {2, 2}),
                     attrIs("padding", {1, 0, 0, 1}), attrIs("dilation", {2, 1}),
                     attrB("ceil_mode", true)});
  int cases = 0;
  uint64_t seed = 1;
  for (DType t : kFloats) {
    for (const auto &w : windows) {
      for (const Shape &s : {Shape{2, 3, 7, 6}, Shape{1, 1, 9, 8}}) {
        SCOPED_TRACE(std::string(dtypeName(t)) + " case " + std::to_string(cases));
        EXPECT_TRUE(
            matchesReference(b, OpKind::MaxPool2d, {sample(t, s, OpKind::MaxPool2d, seed++)}, w));
        ++cases;
      }
    }
  }
  EXPECT_EQ(cases, 4 * 13 * 2);
}

TEST(CpuPool, AvgPoolMatchesTheReferenceForEveryAttributeAndDType) {
  CpuDevice b(checked(1));
  int cases = 0;
  uint64_t seed = 1000;
  for (DType t : kFloats) {
    for (const auto &w : kWindows) {
      for (bool includePad : {true, false}) {
        std::vector<NamedAttr> attrs = w;
        attrs.push_back(attrB("count_include_pad", includePad));
        SCOPED_TRACE(std::string(dtypeName(t)) + " case " + std::to_string(cases));
        EXPECT_TRUE(matchesReference(b, OpKind::AvgPool2d,
                                     {sample(t, {2, 3, 7, 6}, OpKind::AvgPool2d, seed++)}, attrs));
        ++cases;
      }
    }
  }
  EXPECT_EQ(cases, 4 * 10 * 2);
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

TEST(CpuPool, SizeZeroAndSizeOneDims) {
  CpuDevice b(checked(1));
  uint64_t seed = 3000;
  for (DType t : kFloats) {
    SCOPED_TRACE(std::string(dtypeName(t)));
    for (const Shape &s :
         {Shape{0, 3, 4, 4}, Shape{2, 0, 4, 4}, Shape{1, 1, 1, 1}, Shape{1, 2, 1, 5}}) {
      EXPECT_TRUE(matchesReference(
          b, OpKind::MaxPool2d, {sample(t, s, OpKind::MaxPool2d, seed++)},
          {attrIs("kernel", {1, 2}), attrIs("padding", {0, 1}), attrB("ceil_mode", true)}));
      EXPECT_TRUE(matchesReference(b, OpKind::AvgPool2d, {sample(t, s, OpKind::AvgPool2d, seed++)},
                                   {attrIs("kernel", {1, 2}), attrIs("padding", {0, 1}),
                                    attrB("count_include_pad", false)}));
    }
  }
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
               completeAttrs(mx, {attrIs("kernel", {0, 2})}), TensorType{DType::F32, {1, 1, 4, 2}});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("kernel must be 2 ints"), std::string::npos)
      << r.status().message();
}

}  // namespace
}  // namespace ferry
