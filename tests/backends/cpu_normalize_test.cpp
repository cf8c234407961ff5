// tests/backends/cpu_normalize_test.cpp — the CPU backend's batch_norm, layer_norm,
// softmax/log_softmax and the reductions sum, mean and max: the dtypes they claim, the edge values
// (NaN, infinities, large inputs, empty reductions, integer sums past 2^53) by hand and against
// the reference interpreter, tensors large enough to be split over threads, and calls outside the
// contract. Every axis and axes combination, keepdims, size-0 and size-1 dims in every dtype:
// tests/backends/conformance_test.cpp.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "cpu_test_util.h"

namespace ferry {
namespace {

using reftest::attrB;
using reftest::attrF;
using reftest::attrI;
using reftest::attrIs;
using reftest::completeAttrs;
using reftest::sameTensor;
using namespace cputest;

constexpr DType kFloats[] = {DType::F16, DType::BF16, DType::F32, DType::F64};
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

// The CPU result of `k` with inferType's result type.
TensorData runCpu(CpuDevice &b, OpKind k, const std::vector<TensorData> &in,
                  const std::vector<NamedAttr> &given) {
  const OpInfo &info = opInfo(k);
  const Attrs attrs = completeAttrs(info, given);
  std::vector<TensorType> types;
  for (const TensorData &t : in) types.push_back(t.type());
  const TensorType result = std::get<TensorType>(inferType(info, types, attrs));
  Expected<TensorData> got = runOnCpu(b, info, in, attrs, result);
  FERRY_CHECK(got.ok()) << got.status().message();
  return *got;
}

TEST(CpuNormalize, SupportsExactlyTheAcceptedDTypes) {
  CpuDevice b(checked(1));
  for (DType t : kAllDTypes) {
    SCOPED_TRACE(std::string(dtypeName(t)));
    for (OpKind k :
         {OpKind::BatchNorm, OpKind::LayerNorm, OpKind::Softmax, OpKind::LogSoftmax, OpKind::Mean})
      EXPECT_EQ(cpuSupports(k, t), isFloating(t)) << opInfo(k).name;
    // max keeps its operand's dtype; sum's result is i64 for bool/integers, but a pinned sum is
    // placed by its pin, the operand's dtype, so every dtype is claimed.
    EXPECT_TRUE(cpuSupports(OpKind::Max, t));
    EXPECT_TRUE(cpuSupports(OpKind::Sum, t));
  }
}

TEST(CpuNormalize, SoftmaxIsStableAndSpreadsNaNLikeTheReference) {
  CpuDevice b(checked(1));
  for (OpKind k : {OpKind::Softmax, OpKind::LogSoftmax}) {
    for (DType t : {DType::F32, DType::F64, DType::F16}) {
      SCOPED_TRACE(std::string(opInfo(k).name) + " " + std::string(dtypeName(t)));
      // Rows: large values (exp would overflow without the max), a NaN, +inf, all -inf.
      const TensorData x = reftest::tensor(
          t, {4, 3}, {1000, 1001, 999, 1, kNaN, 2, 0, kInf, 1, -kInf, -kInf, -kInf});
      EXPECT_TRUE(matchesReference(b, k, {x}, {attrI("axis", 1)}));
      EXPECT_TRUE(matchesReference(b, k, {x}, {attrI("axis", 0)}));
      const TensorData y = runCpu(b, k, {x}, {attrI("axis", 1)});
      if (k == OpKind::Softmax) {
        EXPECT_NEAR(y.at(1), 0.6652409557748219, 1e-3);
        EXPECT_NEAR(y.at(0) + y.at(1) + y.at(2), 1.0, 1e-3);
      } else {
        EXPECT_NEAR(y.at(1), -0.40760596444438, 1e-3);
      }
      for (int64_t i = 3; i < 12; ++i) EXPECT_TRUE(std::isnan(y.at(i))) << i;
    }
  }
}

TEST(CpuNormalize, ReductionsOverEmptyDims) {
  CpuDevice b(checked(1));
  for (DType t : {DType::F32, DType::F16, DType::I32, DType::Bool}) {
    SCOPED_TRACE(std::string(dtypeName(t)));
    // sum over nothing is 0; outputs of size 0 need no input.
    EXPECT_TRUE(matchesReference(b, OpKind::Sum, {TensorData(t, {0, 3})}, {attrIs("axes", {0})}));
    EXPECT_TRUE(matchesReference(b, OpKind::Sum, {TensorData(t, {0, 3})}, {}));
    EXPECT_TRUE(matchesReference(b, OpKind::Sum, {TensorData(t, {2, 0})}, {attrIs("axes", {0})}));
    EXPECT_TRUE(matchesReference(b, OpKind::Max, {TensorData(t, {0, 3})}, {attrIs("axes", {1})}));
    if (isFloating(t)) {
      EXPECT_TRUE(
          matchesReference(b, OpKind::Mean, {TensorData(t, {0, 3})}, {attrIs("axes", {0})}));
      const TensorData m = runCpu(b, OpKind::Mean, {TensorData(t, {0, 3})}, {attrIs("axes", {0})});
      EXPECT_TRUE(std::isnan(m.at(0)));
    }
  }
  const TensorData s =
      runCpu(b, OpKind::Sum, {TensorData(DType::I8, {0, 3})}, {attrIs("axes", {0})});
  EXPECT_TRUE(sameTensor(s, reftest::ints(DType::I64, {3}, {0, 0, 0}), 0));
  // max over an empty set is the reference's runtime error, word for word (shape inference
  // rejects it, so the call is made by hand).
  const OpInfo &mx = opInfo(OpKind::Max);
  Expected<TensorData> r =
      runKernelOnly(b, mx, {TensorData(DType::F32, {2, 0})},
                    completeAttrs(mx, {attrIs("axes", {1})}), TensorType{DType::F32, {2}});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().diagnostics()[0].code, "runtime");
  EXPECT_EQ(r.status().diagnostics()[0].message,
            "'max' over an empty set: f32[2,0] has size 0 in reduced dim 1");
}

TEST(CpuNormalize, MaxIsExactAndNaNWins) {
  CpuDevice b(checked(1));
  const int64_t big = int64_t{1} << 53;
  EXPECT_TRUE(
      sameTensor(runCpu(b, OpKind::Max, {reftest::ints(DType::I64, {3}, {big, big + 1, 5})}, {}),
                 reftest::ints(DType::I64, {}, {big + 1}), 0));
  EXPECT_TRUE(
      sameTensor(runCpu(b, OpKind::Max, {reftest::ints(DType::I8, {2, 2}, {-128, -7, -3, -100})},
                        {attrIs("axes", {0})}),
                 reftest::ints(DType::I8, {2}, {-3, -7}), 0));
  EXPECT_TRUE(sameTensor(runCpu(b, OpKind::Max, {reftest::bools({3}, {0, 1, 0})}, {}),
                         reftest::bools({}, {1}), 0));
  for (DType t : kFloats) {
    SCOPED_TRACE(std::string(dtypeName(t)));
    const TensorData x = reftest::tensor(t, {2, 3}, {1, kNaN, 3, -kInf, -kInf, 2});
    for (const auto &axes : std::vector<std::vector<int64_t>>{{}, {0}, {1}}) {
      EXPECT_TRUE(matchesReference(b, OpKind::Max, {x}, {attrIs("axes", axes)}));
      EXPECT_TRUE(matchesReference(b, OpKind::Sum, {x}, {attrIs("axes", axes)}));
    }
    const TensorData rows = runCpu(b, OpKind::Max, {x}, {attrIs("axes", {1})});
    EXPECT_TRUE(std::isnan(rows.at(0)));
    EXPECT_EQ(rows.at(1), 2);
  }
}

// Integer sums are exact in i64 and wrap at 64 bits, as torch.sum and the reference.
TEST(CpuNormalize, IntegerSumsAreExactInI64) {
  CpuDevice b(checked(1));
  const TensorData i32 = reftest::ints(DType::I32, {2}, {2147483647, 2147483647});
  EXPECT_TRUE(matchesReference(b, OpKind::Sum, {i32}, {}));
  EXPECT_TRUE(sameTensor(runCpu(b, OpKind::Sum, {i32}, {}),
                         reftest::ints(DType::I64, {}, {4294967294}), 0));
  const TensorData u8 = reftest::ints(DType::U8, {3}, {255, 255, 255});
  EXPECT_TRUE(
      sameTensor(runCpu(b, OpKind::Sum, {u8}, {}), reftest::ints(DType::I64, {}, {765}), 0));
  const int64_t big = int64_t{1} << 53;
  const TensorData pastDoubles = reftest::ints(DType::I64, {2}, {big, 1});
  EXPECT_TRUE(sameTensor(runCpu(b, OpKind::Sum, {pastDoubles}, {}),
                         reftest::ints(DType::I64, {}, {big + 1}), 0));
  EXPECT_TRUE(matchesReference(b, OpKind::Sum, {pastDoubles}, {}));
  const int64_t max = std::numeric_limits<int64_t>::max();
  const TensorData wraps = reftest::ints(DType::I64, {2}, {max, 2});
  EXPECT_TRUE(sameTensor(runCpu(b, OpKind::Sum, {wraps}, {}),
                         reftest::ints(DType::I64, {}, {std::numeric_limits<int64_t>::min() + 1}),
                         0));
  EXPECT_TRUE(matchesReference(b, OpKind::Sum, {wraps}, {}));
}

// 2 x 64 x 33 x 33 and friends: more work than one chunk, so the outputs (or, with fewer
// outputs than threads, the reduced rows) are split over threads.
TEST(CpuNormalize, LargeInputsSplitOverThreadsMatchTheReference) {
  CpuDevice b(checked(1));
  uint64_t seed = 500;
  const Shape big{2, 64, 33, 33};
  for (DType t : {DType::F32, DType::F16, DType::I32}) {
    SCOPED_TRACE(std::string(dtypeName(t)));
    const TensorData x = sample(t, big, OpKind::Sum, seed++);
    for (const auto &axes :
         std::vector<std::vector<int64_t>>{{}, {0}, {1}, {-1}, {2, 3}, {1, 3}, {0, 2, 3}}) {
      EXPECT_TRUE(matchesReference(b, OpKind::Sum, {x}, {attrIs("axes", axes)}));
      EXPECT_TRUE(matchesReference(b, OpKind::Max, {x}, {attrIs("axes", axes)}));
      if (isFloating(t)) {
        EXPECT_TRUE(matchesReference(b, OpKind::Mean, {x},
                                     {attrIs("axes", axes), attrB("keepdims", true)}));
      }
    }
    // One group, a kept innermost run: the reduced rows are split into partial sums.
    const TensorData tall = sample(t, {4096, 40}, OpKind::Sum, seed++);
    EXPECT_TRUE(matchesReference(b, OpKind::Sum, {tall}, {attrIs("axes", {0})}));
    EXPECT_TRUE(matchesReference(b, OpKind::Max, {tall}, {attrIs("axes", {0})}));
    if (!isFloating(t)) continue;
    EXPECT_TRUE(matchesReference(b, OpKind::Softmax, {x}, {attrI("axis", 1)}));
    EXPECT_TRUE(matchesReference(b, OpKind::LogSoftmax, {x}, {attrI("axis", -1)}));
    EXPECT_TRUE(matchesReference(b, OpKind::LayerNorm, {x}, {attrI("axis", 2)}));
    EXPECT_TRUE(matchesReference(
        b, OpKind::BatchNorm,
        {x, sample(t, {64}, OpKind::BatchNorm, seed++), sample(t, {64}, OpKind::BatchNorm, seed++),
         sample(t, {64}, OpKind::BatchNorm, seed++), sample(t, {64}, OpKind::Sqrt, seed++)},
        {}));
  }
  // A NaN anywhere in a reduction split over threads wins.
  TensorData x = sample(DType::F32, big, OpKind::Max, seed++);
  x.set(100000, kNaN);
  EXPECT_TRUE(std::isnan(runCpu(b, OpKind::Max, {x}, {}).at(0)));
  EXPECT_TRUE(matchesReference(b, OpKind::Max, {x}, {attrIs("axes", {0})}));
}

// A step outside the contract is refused when its kernel is prepared (Session::create), before
// any launch: prepare checks the step and works out everything the launches use.
TEST(CpuNormalize, RefusesStepsOutsideTheContractWhenPrepared) {
  CpuDevice b(checked(1));
  auto expectInternal = [&](OpKind k, std::vector<TensorType> in, std::vector<NamedAttr> attrs,
                            TensorType result, std::string_view text) {
    const OpInfo &info = opInfo(k);
    KernelPlan plan;
    Expected<std::unique_ptr<PreparedKernel>> r = prepareOnCpu(
        b, info, in, completeAttrs(info, attrs), result, Device::cpu(), plan, Route::KernelOnly);
    ASSERT_FALSE(r.ok()) << info.name;
    EXPECT_EQ(r.status().diagnostics()[0].code, "internal");
    EXPECT_NE(r.status().message().find(text), std::string::npos) << r.status().message();
  };
  const TensorType f32x3{DType::F32, {3}}, f32x2x3{DType::F32, {2, 3}};
  // sum of an integer gives i64, not i32.
  expectInternal(OpKind::Sum, {{DType::I32, {3}}}, {}, TensorType{DType::I64, {3}},
                 "result i64[3]");
  expectInternal(OpKind::Sum, {{DType::I32, {3}}}, {}, TensorType{DType::I32, {}},
                 "operand i32[3] with result i32[]");
  expectInternal(OpKind::Max, {{DType::F16, {3}}}, {}, TensorType{DType::F32, {}},
                 "operand f16[3] with result f32[]");
  expectInternal(OpKind::Mean, {f32x2x3}, {attrIs("axes", {0, -3})}, f32x3, "axis -3 of f32[2,3]");
  expectInternal(OpKind::Softmax, {f32x2x3}, {attrI("axis", 2)}, f32x2x3, "axis 2 of f32[2,3]");
  expectInternal(OpKind::LogSoftmax, {f32x2x3}, {}, f32x3, "result f32[3] for operand f32[2,3]");
  expectInternal(OpKind::LayerNorm, {f32x2x3, {DType::F16, {3}}}, {}, f32x2x3, "a cast is missing");
  expectInternal(OpKind::LayerNorm, {f32x2x3, f32x2x3}, {}, f32x2x3,
                 "operand 1 f32[2,3] for f32[2,3] from axis 1");
  expectInternal(OpKind::BatchNorm, {f32x2x3, {DType::F32, {2}}, f32x3, f32x3, f32x3}, {}, f32x2x3,
                 "operand 1 f32[2] for f32[2,3]");
  expectInternal(OpKind::BatchNorm, {f32x3, f32x3, f32x3, f32x3, f32x3}, {}, f32x3,
                 "operand f32[3]");
}

}  // namespace
}  // namespace ferry
