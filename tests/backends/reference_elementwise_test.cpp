// tests/backends/reference_elementwise_test.cpp — unary, binary and where ops of the reference
// interpreter against hand-computed values, per dtype class and with broadcasting.
#include <cmath>
#include <limits>

#include "reference_util.h"

namespace ferry::reftest {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr int64_t k2p53 = int64_t{1} << 53;
constexpr int64_t k2p62 = int64_t{1} << 62;

TEST(ReferenceElementwise, Unary) {
  runCases({
      {"neg f32", "neg", {f32({3}, {1, -2.5, 0})}, {}, f32({3}, {-1, 2.5, -0.0})},
      {"neg i32", "neg", {ints(DType::I32, {2}, {3, -4})}, {}, ints(DType::I32, {2}, {-3, 4})},
      // Saturates like storeDouble (torch wraps -(-128) to -128).
      {"neg i8 saturates", "neg", {ints(DType::I8, {1}, {-128})}, {}, ints(DType::I8, {1}, {127})},
      {"abs f32", "abs", {f32({3}, {-1.5, 2, -0.0})}, {}, f32({3}, {1.5, 2, 0})},
      {"abs i64", "abs", {ints(DType::I64, {2}, {-7, 7})}, {}, ints(DType::I64, {2}, {7, 7})},
      {"exp f32",
       "exp",
       {f32({3}, {0, 1, -1})},
       {},
       f32({3}, {1, 2.718281828459045, 0.36787944117144233}),
       1e-7},
      {"exp i32 gives f32",
       "exp",
       {ints(DType::I32, {2}, {0, 1})},
       {},
       f32({2}, {1, 2.718281828459045}),
       1e-7},
      {"exp bool gives f32",
       "exp",
       {bools({2}, {0, 1})},
       {},
       f32({2}, {1, 2.718281828459045}),
       1e-7},
      // e = 2.71828... rounds to 2.71875 in f16 (spacing 2^-9 in [2, 4)).
      {"exp f16 rounds",
       "exp",
       {tensor(DType::F16, {1}, {1})},
       {},
       tensor(DType::F16, {1}, {2.71875})},
      {"exp f64",
       "exp",
       {tensor(DType::F64, {1}, {1})},
       {},
       tensor(DType::F64, {1}, {2.718281828459045}),
       1e-15},
      {"log",
       "log",
       {f32({4}, {1, 2.718281828459045, 0, -1})},
       {},
       f32({4}, {0, 1, -kInf, kNaN}),
       1e-7},
      {"sqrt", "sqrt", {f32({3}, {4, 2, -1})}, {}, f32({3}, {2, 1.4142135623730951, kNaN}), 1e-7},
      // sqrt(2) = 1.41421... rounds to 1.4140625 in bf16 (spacing 2^-7 in [1, 2)).
      {"sqrt bf16 rounds",
       "sqrt",
       {tensor(DType::BF16, {1}, {2})},
       {},
       tensor(DType::BF16, {1}, {1.4140625})},
      {"rsqrt", "rsqrt", {f32({3}, {4, 0.25, 0})}, {}, f32({3}, {0.5, 2, kInf})},
      {"tanh", "tanh", {f32({3}, {0, 1, -20})}, {}, f32({3}, {0, 0.7615941559557649, -1}), 1e-7},
      {"sigmoid",
       "sigmoid",
       {f32({4}, {0, 2, -kInf, kInf})},
       {},
       f32({4}, {0.5, 0.8807970779778823, 0, 1}),
       1e-7},
      {"relu f32 keeps NaN", "relu", {f32({4}, {-1, 0, 3, kNaN})}, {}, f32({4}, {0, 0, 3, kNaN})},
      {"relu i32", "relu", {ints(DType::I32, {2}, {-5, 5})}, {}, ints(DType::I32, {2}, {0, 5})},
      {"gelu exact",
       "gelu",
       {f32({4}, {-1, 0, 1, 2})},
       {},
       f32({4}, {-0.15865525393145707, 0, 0.8413447460685429, 1.9544997361036416}),
       1e-7},
      {"gelu tanh",
       "gelu",
       {f32({4}, {-1, 0, 1, 2})},
       {attrS("approximate", "tanh")},
       f32({4}, {-0.15880800939172324, 0, 0.8411919906082768, 1.954597694087775}),
       1e-7},
      {"gelu f64 exact",
       "gelu",
       {tensor(DType::F64, {1}, {1})},
       {},
       tensor(DType::F64, {1}, {0.8413447460685429}),
       1e-15},
      {"erf",
       "erf",
       {f32({3}, {0, 0.5, -1})},
       {},
       f32({3}, {0, 0.5204998778130465, -0.8427007929497149}),
       1e-7},
      {"silu",
       "silu",
       {f32({3}, {0, 1, -2})},
       {},
       f32({3}, {0, 0.7310585786300049, -0.2384058440442351}),
       1e-7},
      {"size-0 dims", "exp", {f32({0, 3}, {})}, {}, f32({0, 3}, {})},
  });
}

TEST(ReferenceElementwise, GeluRejectsUnknownApproximation) {
  Expected<TensorData> r =
      eval("gelu", {f32({1}, {1})}, {attrS("approximate", "fast")}, f32({1}, {0}).type());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().diagnostics()[0].code, "attr");
  EXPECT_NE(r.status().message().find("\"fast\""), std::string::npos) << r.status().message();
}

TEST(ReferenceElementwise, Binary) {
  runCases({
      {"add broadcast row",
       "add",
       {f32({2, 3}, {1, 2, 3, 4, 5, 6}), f32({3}, {10, 20, 30})},
       {},
       f32({2, 3}, {11, 22, 33, 14, 25, 36})},
      {"add broadcast both",
       "add",
       {f32({2, 1}, {1, 2}), f32({1, 3}, {10, 20, 30})},
       {},
       f32({2, 3}, {11, 21, 31, 12, 22, 32})},
      {"add scalar", "add", {f32({}, {5}), f32({2}, {1, 2})}, {}, f32({2}, {6, 7})},
      {"add size-0", "add", {f32({0, 3}, {}), f32({3}, {1, 2, 3})}, {}, f32({0, 3}, {})},
      {"add bool is or",
       "add",
       {bools({3}, {1, 1, 0}), bools({3}, {1, 0, 0})},
       {},
       bools({3}, {1, 1, 0})},
      {"add i32 + f32 promotes",
       "add",
       {ints(DType::I32, {2}, {1, 2}), f32({2}, {0.5, 0.25})},
       {},
       f32({2}, {1.5, 2.25})},
      {"add u8 + i8 gives i32",
       "add",
       {ints(DType::U8, {1}, {200}), ints(DType::I8, {1}, {-100})},
       {},
       ints(DType::I32, {1}, {100})},
      {"add i64 + f16 gives f16",
       "add",
       {ints(DType::I64, {1}, {1000}), tensor(DType::F16, {1}, {0.5})},
       {},
       tensor(DType::F16, {1}, {1000.5})},
      // Saturates like storeDouble (torch wraps).
      {"add i32 saturates",
       "add",
       {ints(DType::I32, {1}, {2147483647}), ints(DType::I32, {1}, {1})},
       {},
       ints(DType::I32, {1}, {2147483647})},
      // 2049 and 2051 are ties in f16 (spacing 2 in [2048, 4096)): round to even.
      {"add f16 ties to even",
       "add",
       {tensor(DType::F16, {2}, {2048, 2048}), tensor(DType::F16, {2}, {1, 3})},
       {},
       tensor(DType::F16, {2}, {2048, 2052})},
      // 1 + 2^-8 and 1 + 3·2^-8 are ties in bf16 (spacing 2^-7 in [1, 2)).
      {"add bf16 ties to even",
       "add",
       {tensor(DType::BF16, {2}, {1, 1}), tensor(DType::BF16, {2}, {0.00390625, 0.01171875})},
       {},
       tensor(DType::BF16, {2}, {1, 1.015625})},
      {"sub f32", "sub", {f32({2}, {1, 5}), f32({2}, {3, 0.5})}, {}, f32({2}, {-2, 4.5})},
      {"sub i64",
       "sub",
       {ints(DType::I64, {2}, {10, -3}), ints(DType::I64, {1}, {4})},
       {},
       ints(DType::I64, {2}, {6, -7})},
      {"mul bool is and",
       "mul",
       {bools({3}, {1, 1, 0}), bools({3}, {1, 0, 0})},
       {},
       bools({3}, {1, 0, 0})},
      // (1 + 2^-10)^2 = 1 + 2^-9 + 2^-20 rounds to 1 + 2^-9 in f16.
      {"mul f16 rounds",
       "mul",
       {tensor(DType::F16, {1}, {1.0009765625}), tensor(DType::F16, {1}, {1.0009765625})},
       {},
       tensor(DType::F16, {1}, {1.001953125})},
      {"mul f64",
       "mul",
       {tensor(DType::F64, {1}, {0.1}), tensor(DType::F64, {1}, {3})},
       {},
       tensor(DType::F64, {1}, {0.1 * 3})},
      {"div by zero",
       "div",
       {f32({3}, {1, -1, 0}), f32({3}, {0, 0, 0})},
       {},
       f32({3}, {kInf, -kInf, kNaN})},
      {"div ints is true division",
       "div",
       {ints(DType::I32, {3}, {7, -7, 1}), ints(DType::I32, {3}, {2, 2, 0})},
       {},
       f32({3}, {3.5, -3.5, kInf})},
      {"div f32 rounds once", "div", {f32({1}, {1}), f32({1}, {3})}, {}, f32({1}, {1.0 / 3})},
      {"pow f32",
       "pow",
       {f32({3}, {2, 4, -8}), f32({3}, {3, 0.5, 0.5})},
       {},
       f32({3}, {8, 2, kNaN})},
      {"pow i32",
       "pow",
       {ints(DType::I32, {3}, {2, 3, 0}), ints(DType::I32, {3}, {10, 2, 0})},
       {},
       ints(DType::I32, {3}, {1024, 9, 1})},
      {"maximum NaN propagates",
       "maximum",
       {f32({3}, {1, kNaN, 3}), f32({3}, {2, 1, kNaN})},
       {},
       f32({3}, {2, kNaN, kNaN})},
      {"minimum NaN propagates",
       "minimum",
       {f32({3}, {1, kNaN, 3}), f32({3}, {2, 1, kNaN})},
       {},
       f32({3}, {1, kNaN, kNaN})},
      {"maximum i32 i64 exact",
       "maximum",
       {ints(DType::I32, {2}, {5, -5}), ints(DType::I64, {2}, {k2p62 + 1, -k2p62 - 1})},
       {},
       ints(DType::I64, {2}, {k2p62 + 1, -5})},
      {"minimum i64 exact",
       "minimum",
       {ints(DType::I64, {1}, {k2p53 + 1}), ints(DType::I64, {1}, {k2p53 + 2})},
       {},
       ints(DType::I64, {1}, {k2p53 + 1})},
      {"maximum bool", "maximum", {bools({2}, {0, 1}), bools({2}, {0, 0})}, {}, bools({2}, {0, 1})},
      {"equal NaN is false",
       "equal",
       {f32({3}, {1, kNaN, 2}), f32({3}, {1, kNaN, 3})},
       {},
       bools({3}, {1, 0, 0})},
      // In double 2^53 == 2^53 + 1; compared exactly they differ.
      {"equal i64 exact",
       "equal",
       {ints(DType::I64, {1}, {k2p53}), ints(DType::I64, {1}, {k2p53 + 1})},
       {},
       bools({1}, {0})},
      {"less i64 exact",
       "less",
       {ints(DType::I64, {1}, {k2p53}), ints(DType::I64, {1}, {k2p53 + 1})},
       {},
       bools({1}, {1})},
      {"less i32 vs f32",
       "less",
       {ints(DType::I32, {2}, {1, 2}), f32({2}, {1.5, 1.5})},
       {},
       bools({2}, {1, 0})},
      {"greater broadcast",
       "greater",
       {f32({3, 1}, {1, 2, 3}), f32({2}, {1.5, 2.5})},
       {},
       bools({3, 2}, {0, 0, 1, 0, 1, 1})},
      {"equal bool", "equal", {bools({2}, {1, 0}), bools({2}, {1, 1})}, {}, bools({2}, {1, 0})},
  });
}

TEST(ReferenceElementwise, Where) {
  runCases({
      {"where broadcast and promote",
       "where",
       {bools({2, 1}, {1, 0}), ints(DType::I32, {2}, {1, 2}), f32({}, {9.5})},
       {},
       f32({2, 2}, {1, 2, 9.5, 9.5})},
      {"where i64 exact",
       "where",
       {bools({2}, {1, 0}), ints(DType::I64, {2}, {k2p62 + 1, 0}),
        ints(DType::I64, {2}, {0, -k2p62 - 1})},
       {},
       ints(DType::I64, {2}, {k2p62 + 1, -k2p62 - 1})},
      {"where keeps NaN of the taken side",
       "where",
       {bools({2}, {0, 1}), f32({2}, {kNaN, 1}), f32({2}, {2, kNaN})},
       {},
       f32({2}, {2, 1})},
  });
}

// Every dtype: the same small computation, stored in that dtype.
TEST(ReferenceElementwise, EveryDType) {
  for (DType t : kAllDTypes) {
    SCOPED_TRACE(std::string(dtypeName(t)));
    if (t == DType::Bool) continue;
    std::vector<Case> cases = {
        {"add",
         "add",
         {tensor(t, {2}, {1, 2}), tensor(t, {2}, {3, 4})},
         {},
         tensor(t, {2}, {4, 6})},
        {"mul",
         "mul",
         {tensor(t, {2}, {2, 3}), tensor(t, {2}, {3, 4})},
         {},
         tensor(t, {2}, {6, 12})},
        {"relu", "relu", {tensor(t, {2}, {0, 7})}, {}, tensor(t, {2}, {0, 7})},
        {"maximum",
         "maximum",
         {tensor(t, {2}, {1, 9}), tensor(t, {2}, {5, 2})},
         {},
         tensor(t, {2}, {5, 9})},
        {"less", "less", {tensor(t, {2}, {1, 9}), tensor(t, {2}, {5, 2})}, {}, bools({2}, {1, 0})},
    };
    if (t != DType::U8)
      cases.push_back({"neg", "neg", {tensor(t, {2}, {1, -2})}, {}, tensor(t, {2}, {-1, 2})});
    if (isFloating(t))
      cases.push_back({"sigmoid", "sigmoid", {tensor(t, {1}, {0})}, {}, tensor(t, {1}, {0.5})});
    runCases(cases);
  }
}

}  // namespace
}  // namespace ferry::reftest
