// tests/backends/reference_normalize_test.cpp — batch_norm, layer_norm, softmax/log_softmax and
// the reductions of the reference interpreter against hand-computed values.
#include <cmath>
#include <limits>

#include "reference_util.h"

namespace ferry::reftest {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr int64_t k2p53 = int64_t{1} << 53;

TEST(ReferenceNormalize, BatchNorm) {
  runCases({
      // Channel 0 holds [1, 3], channel 1 [2, 4]; eps 0 keeps the arithmetic exact.
      {"per channel",
       "batch_norm",
       {f32({1, 2, 1, 2}, {1, 3, 2, 4}), f32({2}, {1, 2}), f32({2}, {0, 1}), f32({2}, {2, 3}),
        f32({2}, {1, 4})},
       {attrF("eps", 0)},
       f32({1, 2, 1, 2}, {-1, 1, 0, 2})},
      {"rank 2, default eps",
       "batch_norm",
       {f32({2, 1}, {3, 1}), f32({1}, {1}), f32({1}, {0}), f32({1}, {1}), f32({1}, {3})},
       {},
       f32({2, 1}, {1.1546986138831654, 0}),
       1e-7},
  });
}

TEST(ReferenceNormalize, LayerNorm) {
  const double r = 1 / std::sqrt(1.00001);  // 1/sqrt(var + eps) for the row [1, 3]
  runCases({
      {"last dim", "layer_norm", {f32({2, 2}, {1, 3, 2, 2})}, {}, f32({2, 2}, {-r, r, 0, 0}), 1e-7},
      {"weight and bias",
       "layer_norm",
       {f32({2, 2}, {1, 3, 2, 2}), f32({2}, {2, 3}), f32({2}, {1, 0})},
       {},
       f32({2, 2}, {-0.9999900000749995, 2.999985000112499, 1, 0}),
       1e-7},
      {"over two dims",
       "layer_norm",
       {f32({1, 2, 2}, {1, 2, 3, 4})},
       {attrI("axis", 1)},
       f32({1, 2, 2},
           {-1.3416354199689269, -0.447211806656309, 0.447211806656309, 1.3416354199689269}),
       1e-7},
      {"f64",
       "layer_norm",
       {tensor(DType::F64, {2}, {1, 3})},
       {attrF("eps", 0)},
       tensor(DType::F64, {2}, {-1, 1})},
      {"size-0 batch", "layer_norm", {f32({0, 4}, {})}, {}, f32({0, 4}, {})},
  });
}

TEST(ReferenceNormalize, Softmax) {
  runCases({
      {"softmax",
       "softmax",
       {f32({3}, {1, 2, 3})},
       {},
       f32({3}, {0.09003057317038046, 0.24472847105479767, 0.6652409557748219}),
       1e-7},
      {"log_softmax",
       "log_softmax",
       {f32({3}, {1, 2, 3})},
       {},
       f32({3}, {-2.40760596444438, -1.40760596444438, -0.40760596444438}),
       1e-7},
      {"stable for large inputs",
       "softmax",
       {f32({2}, {1000, 1001})},
       {},
       f32({2}, {0.2689414213699951, 0.7310585786300049}),
       1e-7},
      {"log_softmax stable",
       "log_softmax",
       {f32({2}, {1000, 1001})},
       {},
       f32({2}, {-1.3132616875182228, -0.3132616875182228}),
       1e-7},
      {"axis 0",
       "softmax",
       {f32({2, 2}, {1, 2, 3, 5})},
       {attrI("axis", 0)},
       f32({2, 2},
           {0.11920292202211755, 0.04742587317756679, 0.8807970779778824, 0.9525741268224333}),
       1e-7},
      {"-inf", "softmax", {f32({2}, {-kInf, 0})}, {}, f32({2}, {0, 1})},
      {"log_softmax -inf", "log_softmax", {f32({2}, {-kInf, 0})}, {}, f32({2}, {-kInf, 0})},
      {"f16",
       "softmax",
       {tensor(DType::F16, {2}, {0, 0})},
       {},
       tensor(DType::F16, {2}, {0.5, 0.5})},
      {"empty axis", "softmax", {f32({2, 0}, {})}, {}, f32({2, 0}, {})},
  });
}

TEST(ReferenceNormalize, Reductions) {
  const TensorData x = f32({2, 3}, iotaD(6, 1));  // [[1,2,3],[4,5,6]]
  runCases({
      {"sum all", "sum", {x}, {}, f32({}, {21})},
      {"sum all keepdims", "sum", {x}, {attrB("keepdims", true)}, f32({1, 1}, {21})},
      {"sum axis 0", "sum", {x}, {attrIs("axes", {0})}, f32({3}, {5, 7, 9})},
      {"sum axis 1 keepdims",
       "sum",
       {x},
       {attrIs("axes", {1}), attrB("keepdims", true)},
       f32({2, 1}, {6, 15})},
      {"sum axis -1", "sum", {x}, {attrIs("axes", {-1})}, f32({2}, {6, 15})},
      {"sum axes 0,1 keepdims",
       "sum",
       {x},
       {attrIs("axes", {1, 0}), attrB("keepdims", true)},
       f32({1, 1}, {21})},
      {"sum middle axis",
       "sum",
       {f32({2, 2, 2}, iotaD(8))},
       {attrIs("axes", {1})},
       f32({2, 2}, {2, 4, 10, 12})},
      {"sum i32 gives i64",
       "sum",
       {ints(DType::I32, {2}, {2147483647, 2147483647})},
       {},
       ints(DType::I64, {}, {4294967294})},
      {"sum bool counts", "sum", {bools({3}, {1, 0, 1})}, {}, ints(DType::I64, {}, {2})},
      // Integers sum exactly in 64 bits (2^53 + 1 is no double) and wrap as torch.sum.
      {"sum i64 exact past 2^53",
       "sum",
       {ints(DType::I64, {2}, {int64_t{1} << 53, 1})},
       {},
       ints(DType::I64, {}, {(int64_t{1} << 53) + 1})},
      {"sum i64 wraps",
       "sum",
       {ints(DType::I64, {2}, {std::numeric_limits<int64_t>::max(), 2})},
       {},
       ints(DType::I64, {}, {std::numeric_limits<int64_t>::min() + 1})},
      // Accumulated in double, rounded once: an f16 running sum would stay at 2048.
      {"sum f16 rounds once",
       "sum",
       {tensor(DType::F16, {3}, {2048, 1, 1})},
       {},
       tensor(DType::F16, {}, {2050})},
      {"sum over empty is 0", "sum", {f32({0, 3}, {})}, {attrIs("axes", {0})}, f32({3}, {0, 0, 0})},
      {"sum of empty i32", "sum", {ints(DType::I32, {0}, {})}, {}, ints(DType::I64, {}, {0})},
      {"sum size-0 output", "sum", {f32({2, 0}, {})}, {attrIs("axes", {0})}, f32({0}, {})},
      {"mean axis 1", "mean", {x}, {attrIs("axes", {1})}, f32({2}, {2, 5})},
      {"mean all f64",
       "mean",
       {tensor(DType::F64, {3}, {1, 2, 4})},
       {},
       tensor(DType::F64, {}, {7.0 / 3})},
      {"mean over empty is NaN",
       "mean",
       {f32({0, 3}, {})},
       {attrIs("axes", {0})},
       f32({3}, {kNaN, kNaN, kNaN})},
      {"max axis 1", "max", {x}, {attrIs("axes", {1})}, f32({2}, {3, 6})},
      {"max all keepdims", "max", {x}, {attrB("keepdims", true)}, f32({1, 1}, {6})},
      {"max NaN propagates", "max", {f32({3}, {1, kNaN, 3})}, {}, f32({}, {kNaN})},
      {"max -inf", "max", {f32({2}, {-kInf, -kInf})}, {}, f32({}, {-kInf})},
      // In double 2^53 + 1 == 2^53; max copies the winning element exactly.
      {"max i64 exact",
       "max",
       {ints(DType::I64, {2}, {k2p53, k2p53 + 1})},
       {},
       ints(DType::I64, {}, {k2p53 + 1})},
      {"max i8", "max", {ints(DType::I8, {2}, {-7, -3})}, {}, ints(DType::I8, {}, {-3})},
      {"max bool", "max", {bools({2}, {0, 1})}, {}, bools({}, {1})},
      {"max with no outputs", "max", {f32({0, 3}, {})}, {attrIs("axes", {1})}, f32({0}, {})},
  });
}

TEST(ReferenceNormalize, MaxOverEmptySetIsAnError) {
  Expected<TensorData> r =
      eval("max", {f32({2, 0}, {})}, {attrIs("axes", {1})}, f32({2}, {0, 0}).type());
  ASSERT_FALSE(r.ok());
  const Diagnostic &d = r.status().diagnostics()[0];
  EXPECT_EQ(d.code, "runtime");
  EXPECT_EQ(d.loc, (Location{"test.fy", 7, 3}));
  EXPECT_EQ(d.message, "'max' over an empty set: f32[2,0] has size 0 in reduced dim 1");
}

}  // namespace
}  // namespace ferry::reftest
