// tests/backends/cpu_linalg_test.cpp — the CPU backend's matmul, linear and conv2d: the dtypes
// they claim, products computed by hand, GEMMs large enough for OpenBLAS's threads and blocking
// against the reference interpreter, integer wraparound by hand, and calls outside the kernel
// contract. Every shape and attribute form (1-D operands, batch broadcasting, bias, stride,
// padding, dilation, groups, empty dims) in every dtype: tests/backends/conformance_test.cpp.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "cpu_test_util.h"

namespace ferry {
namespace {

using reftest::attrI;
using reftest::attrIs;
using reftest::completeAttrs;
using reftest::sameTensor;
using namespace cputest;

constexpr OpKind kLinalg[] = {OpKind::Matmul, OpKind::Linear, OpKind::Conv2d};

// Unit roundoff of the type a product of `dtype` accumulates in on the CPU (f32 up to f32, f64),
// 0 for the integers (exact).
double accumulationRoundoff(DType dtype) {
  if (!isFloating(dtype)) return 0;
  return dtype == DType::F64 ? 0x1p-53 : 0x1p-24;
}

TensorData absF64(const TensorData &t) {
  TensorData a = castTensor(t, DType::F64);
  for (int64_t i = 0; i < a.numel(); ++i) a.set(i, std::fabs(a.at(i)));
  return a;
}

// Σ|a·b| (plus |bias|) of each result element: the op over |operands|, in f64.
Expected<TensorData> magnitudeOf(const OpInfo &info, const std::vector<TensorData> &in,
                                 const Attrs &attrs) {
  std::vector<TensorData> absIn;
  std::vector<TensorType> types;
  for (const TensorData &t : in) {
    absIn.push_back(absF64(t));
    types.push_back(absIn.back().type());
  }
  const TensorType result = std::get<TensorType>(inferType(info, types, attrs));
  return reference::evalOp(info, absIn, attrs, result);
}

// Whether `got` is the reference's result for `in` within what the dtypes allow: the reference
// sums in double and rounds once, the CPU sums `depth` products in f32 (f64 for f64) — an error
// of at most (depth + 2)·u·Σ|a·b| per element, Σ|a·b| being the same op over |operands| — and
// then rounds once, within cputest::tolerance of the result's magnitude. Integers exactly.
// `sharedMagnitude`, when given, is Σ|a·b| already computed for operands of the same values.
::testing::AssertionResult matchesReference(CpuDevice &b, OpKind kind,
                                            const std::vector<TensorData> &in,
                                            const std::vector<NamedAttr> &given, int64_t depth,
                                            const TensorData *sharedMagnitude = nullptr) {
  const OpInfo &info = opInfo(kind);
  const Attrs attrs = completeAttrs(info, given);
  TensorData gotData, wantData;
  if (::testing::AssertionResult r = runBoth(b, kind, in, given, gotData, wantData); !r) return r;
  const TensorData *got = &gotData, *want = &wantData;
  const TensorType &result = want->type();
  if (!isFloating(result.dtype)) return sameTensor(*got, *want, 0);
  if (got->type() != want->type())
    return ::testing::AssertionFailure()
           << "type " << got->type().str() << ", want " << want->type().str();
  Expected<TensorData> magnitude =
      sharedMagnitude ? *sharedMagnitude : magnitudeOf(info, in, attrs);
  if (!magnitude.ok()) return ::testing::AssertionFailure() << magnitude.status().message();
  if (magnitude->shape() != result.shape)
    return ::testing::AssertionFailure() << "magnitude " << magnitude->type().str();
  const double u = accumulationRoundoff(result.dtype), tol = tolerance(result.dtype);
  for (int64_t i = 0; i < got->numel(); ++i) {
    const double g = got->at(i), w = want->at(i);
    const double bound = tol * (1 + std::fabs(w)) + (depth + 2) * u * magnitude->at(i);
    if (!(std::fabs(g - w) <= bound))
      return ::testing::AssertionFailure()
             << "element " << i << " is " << g << ", want " << w << " (bound " << bound << ")";
  }
  return ::testing::AssertionSuccess();
}

// Samples of `dtype` for each shape, seeds counting up from `seed`.
std::vector<TensorData> samples(DType dtype, const std::vector<Shape> &shapes, OpKind kind,
                                uint64_t &seed) {
  std::vector<TensorData> in;
  for (const Shape &s : shapes) in.push_back(sample(dtype, s, kind, seed++));
  return in;
}

TEST(CpuLinalg, SupportsExactlyTheDTypesEachOpAccepts) {
  CpuDevice b(checked(1));
  for (OpKind kind : kLinalg) {
    for (DType dtype : kAllDTypes) {
      SCOPED_TRACE(std::string(opInfo(kind).name) + " " + std::string(dtypeName(dtype)));
      EXPECT_EQ(cpuSupports(kind, dtype), acceptsDType(opInfo(kind).accepts, dtype));
    }
  }
  // Spelled out, so a changed op table is noticed here too.
  EXPECT_TRUE(cpuSupports(OpKind::Matmul, DType::U8));
  EXPECT_TRUE(cpuSupports(OpKind::Linear, DType::I64));
  EXPECT_TRUE(cpuSupports(OpKind::Matmul, DType::BF16));
  EXPECT_FALSE(cpuSupports(OpKind::Matmul, DType::Bool));
  EXPECT_FALSE(cpuSupports(OpKind::Linear, DType::Bool));
  EXPECT_TRUE(cpuSupports(OpKind::Conv2d, DType::F16));
  EXPECT_FALSE(cpuSupports(OpKind::Conv2d, DType::I32));
  EXPECT_FALSE(cpuSupports(OpKind::Conv2d, DType::Bool));
}

TEST(CpuLinalg, MatmulComputesTheProductItself) {
  // The reference could be wrong alike: one product by hand, and numpy.matmul's shape rules.
  CpuDevice b(checked(1));
  const OpInfo &mm = opInfo(OpKind::Matmul);
  const Attrs none = completeAttrs(mm, {});
  for (DType dtype : {DType::F32, DType::F64, DType::F16, DType::I32, DType::U8}) {
    SCOPED_TRACE(std::string(dtypeName(dtype)));
    const TensorData x = reftest::tensor(dtype, {2, 3}, {1, 2, 3, 4, 5, 6});
    const TensorData y = reftest::tensor(dtype, {3, 2}, {7, 8, 9, 10, 11, 12});
    Expected<TensorData> got = runOnCpu(b, mm, {x, y}, none, TensorType{dtype, {2, 2}});
    ASSERT_TRUE(got.ok()) << got.status().message();
    EXPECT_TRUE(sameTensor(*got, reftest::tensor(dtype, {2, 2}, {58, 64, 139, 154}), 0));
    // A 1-D left operand is a row and leaves no dim of its own: [3]·[3, 2] is [2].
    got =
        runOnCpu(b, mm, {reftest::tensor(dtype, {3}, {1, 0, 2}), y}, none, TensorType{dtype, {2}});
    ASSERT_TRUE(got.ok()) << got.status().message();
    EXPECT_TRUE(sameTensor(*got, reftest::tensor(dtype, {2}, {29, 32}), 0));
  }
  // [2, 1, 1, 2] x [3, 2, 1]: every one of the 2·3 batch pairs, each a 1x1 product.
  const TensorData x = reftest::f32({2, 1, 1, 2}, {1, 2, 3, 4});
  const TensorData y = reftest::f32({3, 2, 1}, {1, 10, 100, 1000, -1, 0});
  Expected<TensorData> got = runOnCpu(b, mm, {x, y}, none, TensorType{DType::F32, {2, 3, 1, 1}});
  ASSERT_TRUE(got.ok()) << got.status().message();
  EXPECT_TRUE(sameTensor(*got, reftest::f32({2, 3, 1, 1}, {21, 2100, -1, 43, 4300, -3}), 0));
}

TEST(CpuLinalg, LinearAddsTheBiasToEachRow) {
  CpuDevice b(checked(1));
  const OpInfo &lin = opInfo(OpKind::Linear);
  const Attrs none = completeAttrs(lin, {});
  for (DType dtype : {DType::F32, DType::BF16, DType::I8}) {
    SCOPED_TRACE(std::string(dtypeName(dtype)));
    const TensorData x = reftest::tensor(dtype, {2, 1, 2}, {1, 2, 3, -1});
    const TensorData w = reftest::tensor(dtype, {3, 2}, {1, 0, 0, 1, 2, 2});
    const TensorData bias = reftest::tensor(dtype, {3}, {10, 20, 30});
    Expected<TensorData> got = runOnCpu(b, lin, {x, w, bias}, none, TensorType{dtype, {2, 1, 3}});
    ASSERT_TRUE(got.ok()) << got.status().message();
    EXPECT_TRUE(sameTensor(*got, reftest::tensor(dtype, {2, 1, 3}, {11, 22, 36, 13, 19, 34}), 0));
    // No input features: x·Wᵀ is an empty sum, the result the bias on every row.
    got = runOnCpu(b, lin, {TensorData(dtype, {2, 0}), TensorData(dtype, {3, 0}), bias}, none,
                   TensorType{dtype, {2, 3}});
    ASSERT_TRUE(got.ok()) << got.status().message();
    EXPECT_TRUE(sameTensor(*got, reftest::tensor(dtype, {2, 3}, {10, 20, 30, 10, 20, 30}), 0));
  }
}

TEST(CpuLinalg, Conv2dByHand) {
  // A 3x3 image, a 2x2 kernel of ones, padding 1 and stride 2: each output is the sum of the
  // window's part inside the image, plus the bias.
  CpuDevice b(checked(1));
  const OpInfo &conv = opInfo(OpKind::Conv2d);
  const Attrs attrs = completeAttrs(conv, {attrIs("stride", {2, 2}), attrIs("padding", {1, 1})});
  const TensorData x = reftest::f32({1, 1, 3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9});
  const TensorData w = reftest::f32({1, 1, 2, 2}, {1, 1, 1, 1});
  const TensorData bias = reftest::f32({1}, {0.5});
  Expected<TensorData> got =
      runOnCpu(b, conv, {x, w, bias}, attrs, TensorType{DType::F32, {1, 1, 2, 2}});
  ASSERT_TRUE(got.ok()) << got.status().message();
  EXPECT_TRUE(sameTensor(*got, reftest::f32({1, 1, 2, 2}, {1.5, 5.5, 11.5, 28.5}), 0));
}

TEST(CpuLinalg, LargeProductsMatchTheReference) {
  // Large enough for OpenBLAS's threads and its blocking over K: M 96, K 400, N 80 (K is past
  // the K blocks of the x86-64 Haswell/Zen kernels, 384 for sgemm and 256 for dgemm as of
  // OpenBLAS 0.3.21). The reference is slow in sanitizer builds, so f64 reads the f32 operands'
  // values (and shares their Σ|a·b|); f16 takes the same sgemm as f32, after the conversions
  // the smaller cases cover.
  CpuDevice b(checked(1));
  const OpInfo &mm = opInfo(OpKind::Matmul);
  uint64_t seed = 9000;
  const std::vector<TensorData> x32 = samples(DType::F32, {{96, 400}, {400, 80}}, mm.kind, seed);
  const Expected<TensorData> magnitude = magnitudeOf(mm, x32, completeAttrs(mm, {}));
  ASSERT_TRUE(magnitude.ok()) << magnitude.status().message();
  EXPECT_TRUE(matchesReference(b, mm.kind, x32, {}, 400, &*magnitude));
  const std::vector<TensorData> x64{castTensor(x32[0], DType::F64), castTensor(x32[1], DType::F64)};
  EXPECT_TRUE(matchesReference(b, mm.kind, x64, {}, 400, &*magnitude));
  EXPECT_TRUE(matchesReference(
      b, mm.kind, samples(DType::I32, {{96, 400}, {400, 80}}, mm.kind, seed), {}, 400));
  EXPECT_TRUE(matchesReference(
      b, OpKind::Linear,
      samples(DType::F32, {{2, 30, 300}, {100, 300}, {100}}, OpKind::Linear, seed), {}, 300));
  EXPECT_TRUE(matchesReference(
      b, OpKind::Conv2d,
      samples(DType::F32, {{2, 16, 14, 14}, {32, 16, 3, 3}, {32}}, OpKind::Conv2d, seed),
      {attrIs("padding", {1, 1})}, 16 * 9));
}

// One row (batch 1) goes through BLAS's matrix-vector product, split in column panels over the
// pool: b stored as [k, n] (matmul) or [n, k] (linear, with and without a bias), f32 and f64,
// past the small-GEMM loops' size, on one device thread and on the pool.
TEST(CpuLinalg, OneRowProductsMatchTheReference) {
  CpuDevice b(checked(1));
  uint64_t seed = 9500;
  for (DType t : {DType::F32, DType::F64}) {
    SCOPED_TRACE(dtypeName(t));
    EXPECT_TRUE(matchesReference(b, OpKind::Matmul,
                                 samples(t, {{1, 300}, {300, 700}}, OpKind::Matmul, seed), {}, 300));
    EXPECT_TRUE(matchesReference(b, OpKind::Matmul,
                                 samples(t, {{300}, {300, 700}}, OpKind::Matmul, seed), {}, 300));
    EXPECT_TRUE(matchesReference(
        b, OpKind::Linear, samples(t, {{1, 300}, {700, 300}, {700}}, OpKind::Linear, seed), {}, 300));
    EXPECT_TRUE(matchesReference(
        b, OpKind::Linear, samples(t, {{1, 300}, {700, 300}}, OpKind::Linear, seed), {}, 300));
    // A batch of single rows: each batch's GEMM has one row.
    EXPECT_TRUE(matchesReference(
        b, OpKind::Matmul, samples(t, {{3, 1, 300}, {3, 300, 200}}, OpKind::Matmul, seed), {}, 300));
  }
}

TEST(CpuLinalg, IntegerProductsWrapAtTheResultWidthLikeTheReference) {
  CpuDevice b(checked(1));
  const OpInfo &mm = opInfo(OpKind::Matmul);
  const Attrs none = completeAttrs(mm, {});
  // u8: 200·2 + 100·3 = 700 = 2·256 + 188.
  const TensorData x = reftest::ints(DType::U8, {1, 2}, {200, 100});
  const TensorData y = reftest::ints(DType::U8, {2, 1}, {2, 3});
  Expected<TensorData> got = runOnCpu(b, mm, {x, y}, none, TensorType{DType::U8, {1, 1}});
  ASSERT_TRUE(got.ok()) << got.status().message();
  EXPECT_EQ(got->atInt(0), 188);
  EXPECT_TRUE(matchesReference(b, mm.kind, {x, y}, {}, 2));
  // i32: 2^20·2^12 + 5·(-1) = 2^32 - 5, wrapping to -5; i8: 100·100 = 10000 = 39·256 + 16.
  got = runOnCpu(
      b, mm,
      {reftest::ints(DType::I32, {2}, {1 << 20, 5}), reftest::ints(DType::I32, {2}, {1 << 12, -1})},
      none, TensorType{DType::I32, {}});
  ASSERT_TRUE(got.ok()) << got.status().message();
  EXPECT_EQ(got->atInt(0), -5);
  got =
      runOnCpu(b, mm, {reftest::ints(DType::I8, {1}, {100}), reftest::ints(DType::I8, {1}, {100})},
               none, TensorType{DType::I8, {}});
  ASSERT_TRUE(got.ok()) << got.status().message();
  EXPECT_EQ(got->atInt(0), 16);
  // i64 wraps modulo 2^64, as the reference's exact sums do: 2^62·4 + 3·1 = 3.
  const std::vector wide{reftest::ints(DType::I64, {2}, {int64_t{1} << 62, 3}),
                         reftest::ints(DType::I64, {2}, {4, 1})};
  got = runOnCpu(b, mm, wide, none, TensorType{DType::I64, {}});
  ASSERT_TRUE(got.ok()) << got.status().message();
  EXPECT_EQ(got->atInt(0), 3);
  EXPECT_TRUE(matchesReference(b, mm.kind, wide, {}, 2));
}

// Runs `kind` with operands of `types` (zeros) and result type `result`; the error's text.
std::string contractFailure(CpuDevice &b, OpKind kind, const std::vector<TensorType> &types,
                            const TensorType &result, const std::vector<NamedAttr> &attrs = {}) {
  const OpInfo &info = opInfo(kind);
  std::vector<TensorData> in;
  for (const TensorType &t : types) in.emplace_back(t.dtype, t.shape);
  Expected<TensorData> got = runKernelOnly(b, info, in, completeAttrs(info, attrs), result);
  if (got.ok()) return "(ran)";
  return got.status().diagnostics()[0].code + ": " + got.status().message();
}

TEST(CpuLinalg, RefusesCallsOutsideItsContract) {
  CpuDevice b(checked(1));
  auto expectError = [](const std::string &text, const std::string &code, const std::string &part) {
    EXPECT_EQ(text.substr(0, code.size() + 1), code + ":") << text;
    EXPECT_NE(text.find(part), std::string::npos) << text;
  };
  // A missing cast.
  expectError(contractFailure(b, OpKind::Matmul, {{DType::F32, {2, 3}}, {DType::F16, {3, 2}}},
                              {DType::F32, {2, 2}}),
              "internal", "operand 1 is f16[3,2], expected f32 (a cast is missing)");
  // Shapes the shape rules would not have inferred.
  expectError(contractFailure(b, OpKind::Matmul, {{DType::F32, {2, 3}}, {DType::F32, {4, 2}}},
                              {DType::F32, {2, 2}}),
              "internal", "cannot multiply f32[2,3] by f32[4,2] into f32[2,2]");
  expectError(contractFailure(b, OpKind::Matmul, {{DType::F32, {2, 3}}, {DType::F32, {3, 2}}},
                              {DType::F32, {2, 3}}),
              "internal", "cannot multiply");
  expectError(contractFailure(b, OpKind::Matmul, {{DType::F32, {2, 2, 3}}, {DType::F32, {3, 3, 2}}},
                              {DType::F32, {2, 2, 2}}),
              "internal", "cannot multiply");
  expectError(contractFailure(b, OpKind::Linear,
                              {{DType::F32, {2, 3}}, {DType::F32, {4, 3}}, {DType::F32, {3}}},
                              {DType::F32, {2, 4}}),
              "internal", "bias f32[3] is not [4]");
  expectError(contractFailure(b, OpKind::Linear, {{DType::F32, {2, 3}}, {DType::F32, {4, 2}}},
                              {DType::F32, {2, 4}}),
              "internal", "are not [..., in] and [out, in]");
  expectError(contractFailure(b, OpKind::Conv2d,
                              {{DType::F32, {1, 2, 4, 4}}, {DType::F32, {3, 2, 3, 3}}},
                              {DType::F32, {1, 3, 3, 3}}),
              "internal", "the result f32[1,3,3,3] is not what");
  expectError(contractFailure(b, OpKind::Conv2d,
                              {{DType::F32, {1, 2, 2, 2}}, {DType::F32, {3, 2, 3, 3}}},
                              {DType::F32, {1, 3, 0, 0}}),
              "internal", "the result");  // the kernel does not fit
  expectError(contractFailure(b, OpKind::Conv2d,
                              {{DType::F32, {1, 3, 4, 4}}, {DType::F32, {4, 2, 3, 3}}},
                              {DType::F32, {1, 4, 2, 2}}, {attrI("groups", 2)}),
              "internal", "groups 2 do not fit");
  // Attributes the shape rules reject come back as "attr" errors, as from the reference.
  expectError(contractFailure(b, OpKind::Conv2d,
                              {{DType::F32, {1, 1, 4, 4}}, {DType::F32, {1, 1, 3, 3}}},
                              {DType::F32, {1, 1, 2, 2}}, {attrIs("stride", {0, 1})}),
              "attr", "got stride [0, 1]");
  expectError(contractFailure(b, OpKind::Conv2d,
                              {{DType::F32, {1, 1, 4, 4}}, {DType::F32, {1, 1, 3, 3}}},
                              {DType::F32, {1, 1, 2, 2}}, {attrIs("padding", {1, 1, 1})}),
              "attr", "padding [1, 1, 1]");
  // Dtypes the backend does not claim are refused before the kernel runs.
  expectError(contractFailure(b, OpKind::Matmul, {{DType::Bool, {2, 2}}, {DType::Bool, {2, 2}}},
                              {DType::Bool, {2, 2}}),
              "internal", "no kernel for 'matmul' in bool");
  expectError(contractFailure(b, OpKind::Conv2d,
                              {{DType::I32, {1, 1, 3, 3}}, {DType::I32, {1, 1, 3, 3}}},
                              {DType::I32, {1, 1, 1, 1}}),
              "internal", "no kernel for 'conv2d' in i32");
}

TEST(CpuLinalg, RunsOnEveryVirtualDevice) {
  // The kernels read and write where the views point: cpu:1's arena passes the ownership check.
  CpuDevice b(checked(2));
  const OpInfo &mm = opInfo(OpKind::Matmul);
  const TensorData x = reftest::f32({1, 2}, {1, 2}), y = reftest::f32({2, 1}, {3, 4});
  Expected<TensorData> got = runOnCpu(b, mm, {x, y}, completeAttrs(mm, {}),
                                      TensorType{DType::F32, {1, 1}}, Device::cpu(1));
  ASSERT_TRUE(got.ok()) << got.status().message();
  EXPECT_EQ(got->at(0), 11);
  EXPECT_EQ(b.bytesInUse(Device::cpu(1)), 0u);
}

}  // namespace
}  // namespace ferry
