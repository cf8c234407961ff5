// tests/backends/cpu_conv_test.cpp — conv2d's shifted-GEMM path (backends/cpu/linalg.cpp: stride
// 1, at least 8 input and 8 output channels per group, not an unpadded 1x1) against the
// reference interpreter: every padding form, dilation, groups, batch > 1, non-square images and
// kernels, with and without bias, in f32, f64, f16 and bf16; and next to it the shapes that stay
// on im2col (stride 2, thin groups) so both paths meet the same reference.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "cpu_test_util.h"

namespace ferry {
namespace {

using reftest::attrI;
using reftest::attrIs;
using namespace cputest;

TensorData absF64(const TensorData &t) {
  TensorData a = castTensor(t, DType::F64);
  for (int64_t i = 0; i < a.numel(); ++i) a.set(i, std::fabs(a.at(i)));
  return a;
}

// The CPU's conv2d of `in` against the reference's: the reference sums in double and rounds
// once; the CPU sums `depth` products in f32 (f64 for f64) and rounds once, so each element may
// be off by (depth + 2)·u·Σ|x·w| (Σ|x·w| is the same conv over |operands|) plus the dtype's
// rounding of the result.
::testing::AssertionResult convMatches(CpuDevice &b, const std::vector<TensorData> &in,
                                       const std::vector<NamedAttr> &given) {
  TensorData got, want;
  if (::testing::AssertionResult r = runBoth(b, OpKind::Conv2d, in, given, got, want); !r) return r;
  const OpInfo &info = opInfo(OpKind::Conv2d);
  const Attrs attrs = reftest::completeAttrs(info, given);
  std::vector<TensorData> absIn;
  for (const TensorData &t : in) absIn.push_back(absF64(t));
  const TensorType magType{DType::F64, want.shape()};
  Expected<TensorData> magnitude = reference::evalOp(info, absIn, attrs, magType);
  if (!magnitude.ok()) return ::testing::AssertionFailure() << magnitude.status().message();
  const Shape &w = in[1].shape();
  const int64_t depth = w[1] * w[2] * w[3];
  const DType dtype = want.dtype();
  const double u = dtype == DType::F64 ? 0x1p-53 : 0x1p-24, tol = tolerance(dtype);
  for (int64_t i = 0; i < got.numel(); ++i) {
    const double g = got.at(i), r = want.at(i);
    const double bound = tol * (1 + std::fabs(r)) + (depth + 2) * u * magnitude->at(i);
    if (!(std::fabs(g - r) <= bound))
      return ::testing::AssertionFailure() << "element " << i << " of " << want.type().str()
                                           << " is " << g << ", want " << r << " (bound " << bound
                                           << ")";
  }
  return ::testing::AssertionSuccess();
}

struct Conv {
  Shape x, w;
  std::vector<NamedAttr> attrs;
};

// Stride 1 and at least 8 channels per group in and out: the shifted GEMMs.
const std::vector<Conv> kShifted = {
    {{1, 16, 8, 8}, {16, 16, 3, 3}, {attrIs("padding", {1, 1})}},
    // A batch, a non-square image and more outputs than inputs.
    {{3, 8, 7, 11}, {24, 8, 3, 3}, {attrIs("padding", {1, 1})}},
    // No padding: the grid's rows past Wo and Ho are computed and dropped.
    {{2, 8, 9, 6}, {8, 8, 3, 3}, {}},
    // Asymmetric padding [top, left, bottom, right], a non-square kernel, dilation per dim.
    {{2, 9, 10, 8}, {10, 9, 2, 3}, {attrIs("padding", {2, 0, 1, 3}), attrIs("dilation", {2, 1})}},
    {{1, 12, 9, 9}, {8, 12, 3, 3}, {attrIs("padding", {2, 2}), attrIs("dilation", {2, 2})}},
    // Groups read their channels at an offset of the padded image.
    {{2, 16, 6, 6}, {16, 8, 3, 3}, {attrI("groups", 2), attrIs("padding", {1, 1})}},
    {{1, 24, 5, 7}, {27, 8, 1, 3}, {attrI("groups", 3), attrIs("padding", {0, 1})}},
    // A 1x1 kernel with padding (an unpadded one reads the image as it is), a 5x5, padding wider
    // than the kernel.
    {{2, 8, 4, 4}, {8, 8, 1, 1}, {attrIs("padding", {1, 2})}},
    {{1, 8, 12, 10}, {8, 8, 5, 5}, {attrIs("padding", {2, 2})}},
    {{1, 8, 3, 3}, {8, 8, 2, 2}, {attrIs("padding", {3, 3})}},
    // A residual block's convolution, large enough to split over the pool.
    {{2, 32, 16, 16}, {32, 32, 3, 3}, {attrIs("padding", {1, 1})}},
};

// The same sizes where the shifted GEMMs do not apply: stride 2, 4 channels per group.
const std::vector<Conv> kIm2col = {
    {{2, 16, 9, 8}, {16, 16, 3, 3}, {attrIs("padding", {1, 1}), attrIs("stride", {2, 2})}},
    {{2, 16, 6, 6}, {16, 4, 3, 3}, {attrI("groups", 4), attrIs("padding", {1, 1})}},
    {{2, 16, 6, 6}, {8, 16, 1, 1}, {}},
};

void expectAllMatch(const std::vector<Conv> &convs) {
  CpuDevice b(checked(1));
  uint64_t seed = 7;
  for (DType dtype : {DType::F32, DType::F64, DType::F16, DType::BF16})
    for (const Conv &c : convs)
      for (bool bias : {false, true}) {
        std::vector<TensorData> in{sample(dtype, c.x, OpKind::Conv2d, seed++),
                                   sample(dtype, c.w, OpKind::Conv2d, seed++)};
        if (bias) in.push_back(sample(dtype, {c.w[0]}, OpKind::Conv2d, seed++));
        EXPECT_TRUE(convMatches(b, in, c.attrs))
            << dtypeName(dtype) << " x " << shapeStr(c.x) << " w " << shapeStr(c.w)
            << (bias ? " with bias" : "");
      }
}

TEST(CpuConv, ShiftedGemmsMatchTheReference) { expectAllMatch(kShifted); }

TEST(CpuConv, Im2colShapesMatchTheReference) { expectAllMatch(kIm2col); }

// The shifted path copies x into padded NHWC scratch: its zero border must be rewritten on
// every launch, not left from a launch on other data (NaN in the scratch would leak through).
TEST(CpuConv, RepeatedLaunchesGiveTheSameResult) {
  CpuDevice b(checked(1));
  const std::vector<TensorData> in{sample(DType::F32, {2, 8, 6, 6}, OpKind::Conv2d, 1),
                                   sample(DType::F32, {8, 8, 3, 3}, OpKind::Conv2d, 2)};
  const std::vector<NamedAttr> attrs{attrIs("padding", {1, 1})};
  TensorData first, second, want;
  ASSERT_TRUE(runBoth(b, OpKind::Conv2d, in, attrs, first, want));
  ASSERT_TRUE(runBoth(b, OpKind::Conv2d, in, attrs, second, want));
  EXPECT_TRUE(sameBytes(first, second));
}

}  // namespace
}  // namespace ferry
