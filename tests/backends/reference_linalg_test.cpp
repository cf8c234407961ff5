// tests/backends/reference_linalg_test.cpp — matmul, linear, conv2d and the pools of the
// reference interpreter against hand-computed values.
#include <cmath>
#include <limits>

#include "reference_util.h"

namespace ferry::reftest {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

TEST(ReferenceLinalg, Matmul) {
  runCases({
      {"2-D",
       "matmul",
       {f32({2, 3}, {1, 2, 3, 4, 5, 6}), f32({3, 2}, {7, 8, 9, 10, 11, 12})},
       {},
       f32({2, 2}, {58, 64, 139, 154})},
      {"1-D x 1-D is a scalar",
       "matmul",
       {f32({3}, {1, 2, 3}), f32({3}, {4, 5, 6})},
       {},
       f32({}, {32})},
      {"1-D x 2-D",
       "matmul",
       {f32({2}, {1, 2}), f32({2, 3}, {1, 2, 3, 4, 5, 6})},
       {},
       f32({3}, {9, 12, 15})},
      {"2-D x 1-D", "matmul", {f32({2, 2}, {1, 2, 3, 4}), f32({2}, {1, 1})}, {}, f32({2}, {3, 7})},
      {"3-D x 1-D",
       "matmul",
       {f32({2, 2, 2}, iotaD(8, 1)), f32({2}, {1, 2})},
       {},
       f32({2, 2}, {5, 11, 17, 23})},
      {"1-D x 3-D",
       "matmul",
       {f32({2}, {1, 2}), f32({2, 2, 2}, iotaD(8, 1))},
       {},
       f32({2, 2}, {7, 10, 19, 22})},
      // a [2,1,2,2] (a0, a1 = row swap) by b [3,2,2] (b_j = [[j,1],[0,j+1]]) broadcasts to [2,3].
      {"batched broadcast",
       "matmul",
       {f32({2, 1, 2, 2}, {1, 2, 3, 4, 0, 1, 1, 0}),
        f32({3, 2, 2}, {0, 1, 0, 1, 1, 1, 0, 2, 2, 1, 0, 3})},
       {},
       f32({2, 3, 2, 2},
           {0, 3, 0, 7, 1, 5, 3, 11, 2, 7, 6, 15, 0, 1, 0, 1, 0, 2, 1, 1, 0, 3, 2, 1})},
      {"i32",
       "matmul",
       {ints(DType::I32, {1, 2}, {3, -4}), ints(DType::I32, {2, 1}, {5, 6})},
       {},
       ints(DType::I32, {1, 1}, {-9})},
      // Integers sum exactly and wrap, as torch and the CPU kernel: 2^53 + 1 is no double.
      {"i64 exact past 2^53",
       "matmul",
       {ints(DType::I64, {1, 2}, {int64_t{1} << 52, 1}), ints(DType::I64, {2, 1}, {2, 1})},
       {},
       ints(DType::I64, {1, 1}, {(int64_t{1} << 53) + 1})},
      {"i32 wraps at its width",
       "matmul",
       {ints(DType::I32, {1, 2}, {65536, 1}), ints(DType::I32, {2, 1}, {32768, 2147483647})},
       {},
       ints(DType::I32, {1, 1}, {-1})},  // 2^31 + 2^31 - 1 = 2^32 - 1
      {"f16 rounds once",
       "matmul",
       {tensor(DType::F16, {1, 2}, {2048, 1}), tensor(DType::F16, {2, 1}, {1, 3})},
       {},
       tensor(DType::F16, {1, 1}, {2052})},
      {"f32 x f16 promotes",
       "matmul",
       {f32({1, 1}, {0.1}), tensor(DType::F16, {1, 1}, {2})},
       {},
       f32({1, 1}, {static_cast<float>(0.1) * 2.0})},
      {"empty contraction",
       "matmul",
       {f32({2, 0}, {}), f32({0, 3}, {})},
       {},
       f32({2, 3}, {0, 0, 0, 0, 0, 0})},
      {"empty batch",
       "matmul",
       {f32({0, 2, 2}, {}), f32({2, 2}, {1, 2, 3, 4})},
       {},
       f32({0, 2, 2}, {})},
  });
}

TEST(ReferenceLinalg, Linear) {
  const TensorData w = f32({2, 3}, {1, 0, -1, 0.5, 0.5, 0.5});
  runCases({
      {"with bias",
       "linear",
       {f32({2, 3}, {1, 2, 3, 4, 5, 6}), w, f32({2}, {10, 20})},
       {},
       f32({2, 2}, {8, 23, 8, 27.5})},
      {"1-D, no bias", "linear", {f32({3}, {1, 2, 3}), w}, {}, f32({2}, {-2, 3})},
      {"3-D",
       "linear",
       {f32({2, 1, 3}, {1, 2, 3, 4, 5, 6}), w, f32({2}, {10, 20})},
       {},
       f32({2, 1, 2}, {8, 23, 8, 27.5})},
      {"i64",
       "linear",
       {ints(DType::I64, {1, 2}, {2, 3}), ints(DType::I64, {2, 2}, {1, 1, -1, 2}),
        ints(DType::I64, {2}, {100, 0})},
       {},
       ints(DType::I64, {1, 2}, {105, 4})},
      {"i64 wraps modulo 2^64",
       "linear",
       {ints(DType::I64, {1, 1}, {int64_t{1} << 62}), ints(DType::I64, {1, 1}, {4}),
        ints(DType::I64, {1}, {3})},
       {},
       ints(DType::I64, {1, 1}, {3})},
  });
}

TEST(ReferenceLinalg, Conv2d) {
  const TensorData x9 = f32({1, 1, 3, 3}, iotaD(9, 1));  // [[1,2,3],[4,5,6],[7,8,9]]
  runCases({
      {"plain",
       "conv2d",
       {x9, f32({1, 1, 2, 2}, {1, 0, 0, 1})},
       {},
       f32({1, 1, 2, 2}, {6, 8, 12, 14})},
      // 3x3 ones, stride 2, padding 1: each output sums the in-range part of its window, + 1.
      {"stride, padding, bias",
       "conv2d",
       {x9, f32({1, 1, 3, 3}, {1, 1, 1, 1, 1, 1, 1, 1, 1}), f32({1}, {1})},
       {attrIs("stride", {2, 2}), attrIs("padding", {1, 1})},
       f32({1, 1, 2, 2}, {13, 17, 25, 29})},
      {"dilation",
       "conv2d",
       {x9, f32({1, 1, 2, 2}, {1, 1, 1, 1})},
       {attrIs("dilation", {2, 2})},
       f32({1, 1, 1, 1}, {20})},
      // [top=1, left=0, bottom=0, right=1]: padded rows [0,0,0], [1,2,0], [3,4,0].
      {"asymmetric padding",
       "conv2d",
       {f32({1, 1, 2, 2}, {1, 2, 3, 4}), f32({1, 1, 2, 2}, {1, 1, 1, 1})},
       {attrIs("padding", {1, 0, 0, 1})},
       f32({1, 1, 2, 2}, {3, 2, 10, 6})},
      {"groups",
       "conv2d",
       {f32({1, 2, 2, 2}, iotaD(8, 1)), f32({2, 1, 1, 1}, {2, 3})},
       {attrI("groups", 2)},
       f32({1, 2, 2, 2}, {2, 4, 6, 8, 15, 18, 21, 24})},
      {"channels mix",
       "conv2d",
       {f32({1, 2, 2, 2}, iotaD(8, 1)), f32({2, 2, 1, 1}, {1, 1, 1, -1})},
       {},
       f32({1, 2, 2, 2}, {6, 8, 10, 12, -4, -4, -4, -4})},
      // 4 input channels in 2 groups of 2, 2 outputs: o0 = c0 + c1, o1 = c2 - c3.
      {"groups of two channels",
       "conv2d",
       {f32({1, 4, 1, 1}, {1, 2, 3, 5}), f32({2, 2, 1, 1}, {1, 1, 1, -1})},
       {attrI("groups", 2)},
       f32({1, 2, 1, 1}, {3, -2})},
      {"batch",
       "conv2d",
       {f32({2, 1, 2, 2}, iotaD(8, 1)), f32({1, 1, 1, 1}, {2}), f32({1}, {0.5})},
       {},
       f32({2, 1, 2, 2}, {2.5, 4.5, 6.5, 8.5, 10.5, 12.5, 14.5, 16.5})},
      {"f64",
       "conv2d",
       {tensor(DType::F64, {1, 1, 1, 2}, {0.1, 0.2}), tensor(DType::F64, {1, 1, 1, 2}, {1, 1})},
       {},
       tensor(DType::F64, {1, 1, 1, 1}, {0.1 + 0.2})},
  });
}

TEST(ReferenceLinalg, Conv2dRejectsBadAttributes) {
  Expected<TensorData> r = eval("conv2d", {f32({1, 1, 2, 2}, {1, 2, 3, 4}), f32({1, 1, 1, 1}, {1})},
                                {attrIs("stride", {0, 1})}, f32({1, 1, 2, 2}, {0, 0, 0, 0}).type());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().diagnostics()[0].code, "attr");
  EXPECT_EQ(r.status().diagnostics()[0].loc.line, 7);
}

TEST(ReferenceLinalg, MaxPool2d) {
  const TensorData x16 = f32({1, 1, 4, 4}, iotaD(16, 1));
  std::vector<double> neg;
  for (double v : iotaD(16, 1)) neg.push_back(-v);
  runCases({
      {"k2 (stride = kernel)",
       "max_pool2d",
       {x16},
       {attrIs("kernel", {2, 2})},
       f32({1, 1, 2, 2}, {6, 8, 14, 16})},
      // Padding counts as -inf: with all-negative input, zero padding would win everywhere.
      {"padding is -inf",
       "max_pool2d",
       {f32({1, 1, 4, 4}, neg)},
       {attrIs("kernel", {3, 3}), attrIs("stride", {2, 2}), attrIs("padding", {1, 1})},
       f32({1, 1, 2, 2}, {-1, -2, -5, -6})},
      {"dilation",
       "max_pool2d",
       {f32({1, 1, 4, 4}, neg)},
       {attrIs("kernel", {2, 2}), attrIs("stride", {1, 1}), attrIs("dilation", {2, 2})},
       f32({1, 1, 2, 2}, {-1, -2, -5, -6})},
      // ceil_mode adds the partial windows over row/col 4.
      {"ceil_mode",
       "max_pool2d",
       {f32({1, 1, 5, 5}, iotaD(25))},
       {attrIs("kernel", {2, 2}), attrB("ceil_mode", true)},
       f32({1, 1, 3, 3}, {6, 8, 9, 16, 18, 19, 21, 23, 24})},
      {"ceil_mode with padding",
       "max_pool2d",
       {x16},
       {attrIs("kernel", {3, 3}), attrIs("stride", {2, 2}), attrIs("padding", {1, 1}),
        attrB("ceil_mode", true)},
       f32({1, 1, 3, 3}, {6, 8, 8, 14, 16, 16, 14, 16, 16})},
      // A second window would start at 3 = in the right padding only: PyTorch drops it.
      {"ceil_mode drops a window in the padding",
       "max_pool2d",
       {f32({1, 1, 3, 3}, iotaD(9, 1))},
       {attrIs("kernel", {2, 2}), attrIs("stride", {4, 4}), attrIs("padding", {1, 1}),
        attrB("ceil_mode", true)},
       f32({1, 1, 1, 1}, {1})},
      {"NaN wins",
       "max_pool2d",
       {f32({1, 1, 2, 2}, {1, kNaN, 3, 4})},
       {attrIs("kernel", {2, 2})},
       f32({1, 1, 1, 1}, {kNaN})},
      {"f16, 2 planes",
       "max_pool2d",
       {tensor(DType::F16, {1, 2, 1, 2}, {0.5, -1, 7, 8})},
       {attrIs("kernel", {1, 2})},
       tensor(DType::F16, {1, 2, 1, 1}, {0.5, 8})},
  });
}

TEST(ReferenceLinalg, AvgPool2d) {
  const TensorData x9 = f32({1, 1, 3, 3}, iotaD(9, 1));
  const TensorData x16 = f32({1, 1, 4, 4}, iotaD(16, 1));
  const std::vector<NamedAttr> k2p1 = {attrIs("kernel", {2, 2}), attrIs("stride", {2, 2}),
                                       attrIs("padding", {1, 1})};
  std::vector<NamedAttr> k2p1Exclude = k2p1;
  k2p1Exclude.push_back(attrB("count_include_pad", false));
  const std::vector<NamedAttr> k3p1Ceil = {attrIs("kernel", {3, 3}), attrIs("stride", {2, 2}),
                                           attrIs("padding", {1, 1}), attrB("ceil_mode", true)};
  std::vector<NamedAttr> k3p1CeilExclude = k3p1Ceil;
  k3p1CeilExclude.push_back(attrB("count_include_pad", false));
  runCases({
      {"k2",
       "avg_pool2d",
       {x16},
       {attrIs("kernel", {2, 2})},
       f32({1, 1, 2, 2}, {3.5, 5.5, 11.5, 13.5})},
      {"padding counted", "avg_pool2d", {x9}, k2p1, f32({1, 1, 2, 2}, {0.25, 1.25, 2.75, 7})},
      {"padding not counted", "avg_pool2d", {x9}, k2p1Exclude, f32({1, 1, 2, 2}, {1, 2.5, 5.5, 7})},
      // Windows over the last row/col hang past the input: those cells never count.
      {"ceil_mode",
       "avg_pool2d",
       {f32({1, 1, 5, 5}, iotaD(25))},
       {attrIs("kernel", {2, 2}), attrB("ceil_mode", true)},
       f32({1, 1, 3, 3}, {3, 5, 6.5, 13, 15, 16.5, 20.5, 22.5, 24})},
      // Last windows span rows 3..5 of the padded input [-1, 5): row 4 is padding (counted), row 5
      // lies past it (never counted): divisors 9, 9, 6 / 9, 9, 6 / 6, 6, 4.
      {"ceil_mode with padding counted",
       "avg_pool2d",
       {x16},
       k3p1Ceil,
       f32({1, 1, 3, 3}, {14.0 / 9, 30.0 / 9, 2, 57.0 / 9, 11, 6, 4.5, 7.5, 4}),
       1e-7},
      {"ceil_mode with padding not counted",
       "avg_pool2d",
       {x16},
       k3p1CeilExclude,
       f32({1, 1, 3, 3}, {3.5, 5, 6, 9.5, 11, 12, 13.5, 15, 16}),
       1e-7},
      {"bf16",
       "avg_pool2d",
       {tensor(DType::BF16, {1, 1, 1, 2}, {1, 2})},
       {attrIs("kernel", {1, 2})},
       tensor(DType::BF16, {1, 1, 1, 1}, {1.5})},
  });
}

TEST(ReferenceLinalg, GlobalAvgPool) {
  runCases({
      {"two channels",
       "global_avg_pool",
       {f32({1, 2, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 9})},
       {},
       f32({1, 2, 1, 1}, {2.5, 6.75})},
      {"f64 batch",
       "global_avg_pool",
       {tensor(DType::F64, {2, 1, 1, 3}, {1, 2, 4, 0, 0, 1})},
       {},
       tensor(DType::F64, {2, 1, 1, 1}, {7.0 / 3, 1.0 / 3})},
      {"empty spatial dims give NaN",
       "global_avg_pool",
       {f32({1, 1, 0, 2}, {})},
       {},
       f32({1, 1, 1, 1}, {kNaN})},
  });
}

}  // namespace
}  // namespace ferry::reftest
