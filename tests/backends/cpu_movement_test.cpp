// tests/backends/cpu_movement_test.cpp — the CPU backend's movement kernels: the dtypes they
// claim, transpose in every permutation of a 4-D tensor, the errors of their contracts (gather out
// of range, slice step 0, expand to a negative size, ranks past 64), and the parallel paths of the
// movement and elementwise kernels on tensors large enough to be split across the thread pool, byte
// for byte against the reference interpreter. Concat, slice, gather and expand on edge shapes in
// every dtype: tests/backends/conformance_test.cpp.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <numeric>
#include <random>

#include "cpu_test_util.h"

namespace ferry {
namespace {

using reftest::attrI;
using reftest::attrIs;
using reftest::completeAttrs;
using reftest::ints;
using reftest::sameTensor;
using namespace cputest;

constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
constexpr int64_t kMax = std::numeric_limits<int64_t>::max();

// Runs `kind` on the reference and on the CPU backend (runBoth), and compares: exactly (tol < 0:
// byte for byte) or as sameTensor does within `tol`. A result dtype the backend says it does not
// support is a failure too.
::testing::AssertionResult matchesReference(CpuDevice &b, OpKind kind,
                                            const std::vector<TensorData> &in,
                                            const std::vector<NamedAttr> &given, double tol = -1) {
  TensorData got, want;
  if (::testing::AssertionResult r = runBoth(b, kind, in, given, got, want); !r) return r;
  if (!cpuSupports(kind, want.dtype()))
    return ::testing::AssertionFailure() << "not supported in " << dtypeName(want.dtype());
  return tol < 0 ? sameBytes(got, want) : sameTensor(got, want, tol);
}

std::string traceOf(const std::vector<TensorData> &in, const std::vector<NamedAttr> &attrs) {
  std::string s;
  for (const TensorData &t : in) s += t.type().str() + " ";
  for (const NamedAttr &a : attrs) {
    s += a.name;
    if (const auto *v = std::get_if<std::vector<int64_t>>(&a.value)) s += shapeStr(*v);
    if (const auto *v = std::get_if<int64_t>(&a.value)) s += "=" + std::to_string(*v);
    s += " ";
  }
  return s;
}

constexpr OpKind kMovement[] = {OpKind::Transpose, OpKind::Concat,  OpKind::Slice,
                                OpKind::Gather,    OpKind::Expand,  OpKind::Reshape,
                                OpKind::Flatten,   OpKind::Squeeze, OpKind::Unsqueeze,
                                OpKind::Identity,  OpKind::Transfer};

TEST(CpuMovement, ClaimsEveryDTypeTheOpsAccept) {
  CpuDevice b(checked(1));
  for (OpKind k : kMovement)
    for (DType dtype : kAllDTypes) {
      EXPECT_EQ(cpuSupports(k, dtype), acceptsDType(opInfo(k).accepts, dtype))
          << opInfo(k).name << " " << dtypeName(dtype);
      EXPECT_TRUE(cpuSupports(k, dtype)) << opInfo(k).name << " " << dtypeName(dtype);
    }
}

TEST(CpuMovement, TransposeEveryPermOfA4DTensorInEveryDType) {
  CpuDevice b(checked(1));
  uint64_t seed = 1;
  int cases = 0;
  for (DType dtype : kAllDTypes) {
    for (const Shape &shape : {Shape{2, 3, 4, 5}, Shape{3, 1, 4, 1}, Shape{2, 0, 3, 1}}) {
      const TensorData x = randomBytes(dtype, shape, seed++);
      std::vector<int64_t> perm{0, 1, 2, 3};
      do {
        const std::vector<NamedAttr> attrs{attrIs("perm", perm)};
        SCOPED_TRACE(traceOf({x}, attrs));
        EXPECT_TRUE(matchesReference(b, OpKind::Transpose, {x}, attrs));
        ++cases;
      } while (std::next_permutation(perm.begin(), perm.end()));
    }
    // The default reverses the dims; negative entries count from the end; ranks 0 to 3.
    for (const auto &[shape, attrs] : std::vector<std::pair<Shape, std::vector<NamedAttr>>>{
             {{2, 3, 4, 5}, {}},
             {{2, 3, 4, 5}, {attrIs("perm", {-1, 0, -2, 1})}},
             {{}, {}},
             {{7}, {}},
             {{5, 9}, {}},
             {{3, 5, 2}, {attrIs("perm", {1, 2, 0})}}}) {
      const TensorData x = randomBytes(dtype, shape, seed++);
      SCOPED_TRACE(traceOf({x}, attrs));
      EXPECT_TRUE(matchesReference(b, OpKind::Transpose, {x}, attrs));
    }
  }
  EXPECT_EQ(cases, 9 * 3 * 24);
}

TEST(CpuMovement, ConcatRefusesAnOperandOfAnotherDType) {
  CpuDevice b(checked(1));
  const OpInfo &info = opInfo(OpKind::Concat);
  Expected<TensorData> r =
      runOnCpu(b, info, {TensorData(DType::F32, {2}), TensorData(DType::F16, {3})},
               completeAttrs(info, {}), TensorType{DType::F32, {5}});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().diagnostics()[0].code, "internal");
  EXPECT_NE(r.status().message().find("operand 1 is f16[3], expected f32 (a cast is missing)"),
            std::string::npos)
      << r.status().message();
}

TEST(CpuMovement, SliceWithAZeroStepIsAnAttrError) {
  CpuDevice b(checked(1));
  const OpInfo &info = opInfo(OpKind::Slice);
  const Attrs attrs =
      completeAttrs(info, {attrIs("starts", {0}), attrIs("ends", {3}), attrIs("steps", {0})});
  Expected<TensorData> r =
      runKernelOnly(b, info, {TensorData(DType::F32, {3})}, attrs, TensorType{DType::F32, {3}});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().diagnostics()[0].code, "attr");
  EXPECT_EQ(r.status().diagnostics()[0].message, "'slice' step must not be 0 (axis 0)");
}

TEST(CpuMovement, GatherOutOfRangeIsARuntimeErrorLikeTheReference) {
  CpuDevice b(checked(1));
  const OpInfo &info = opInfo(OpKind::Gather);
  const TensorData data = randomBytes(DType::F32, {3, 2}, 7);
  const Location loc{"test.fy", 3, 1};  // where runOnCpu puts its node
  struct Bad {
    TensorData indices;
    int64_t axis;
    std::string message;
  };
  const std::vector<Bad> cases{
      {ints(DType::I64, {2}, {0, 3}), 0,
       "'gather' index 3 at [1] is out of range for axis 0 of size 3 in f32[3,2]: allowed -3 to 2"},
      {ints(DType::I32, {2, 2}, {0, 1, -4, 9}), 0,
       "'gather' index -4 at [1,0] is out of range for axis 0 of size 3 in f32[3,2]: allowed -3 "
       "to 2"},
      {ints(DType::I32, {}, {2}), -1,
       "'gather' index 2 is out of range for axis 1 of size 2 in f32[3,2]: allowed -2 to 1"},
      {ints(DType::I64, {1}, {kMin}), 1,
       "'gather' index " + std::to_string(kMin) +
           " at [0] is out of range for axis 1 of size 2 in f32[3,2]: allowed -2 to 1"},
  };
  for (const Bad &c : cases) {
    SCOPED_TRACE(c.message);
    const Attrs attrs = completeAttrs(info, {attrI("axis", c.axis)});
    const std::vector<TensorData> in{data, c.indices};
    const TensorType result =
        std::get<TensorType>(inferType(info, std::vector{data.type(), c.indices.type()}, attrs));
    Expected<TensorData> got = runOnCpu(b, info, in, attrs, result);
    Expected<TensorData> want = reference::evalOp(info, in, attrs, result, loc);
    ASSERT_FALSE(got.ok());
    ASSERT_FALSE(want.ok());
    const Diagnostic &d = got.status().diagnostics()[0];
    EXPECT_EQ(d.code, "runtime");
    EXPECT_EQ(d.loc, loc);
    EXPECT_EQ(d.message, c.message);
    EXPECT_EQ(d.message, want.status().diagnostics()[0].message);
  }
}

// expand's sizes are ONNX Expand's, never negative (inferExpand rejects torch's -1): a call
// with one breaks the kernel's contract and is an error, not a read out of bounds.
TEST(CpuMovement, ExpandWithANegativeSizeIsOutsideItsContract) {
  CpuDevice b(checked(1));
  const OpInfo &info = opInfo(OpKind::Expand);
  for (const Shape &to : {Shape{-1, 3}, Shape{2, -1}, Shape{-5}}) {
    const std::vector<NamedAttr> attrs{attrIs("shape", to)};
    SCOPED_TRACE(shapeStr(to));
    Expected<TensorData> got =
        runKernelOnly(b, info, {TensorData(DType::F32, {2, 3})}, completeAttrs(info, attrs),
                      TensorType{DType::F32, {2, 3}});
    ASSERT_FALSE(got.ok());
    EXPECT_EQ(got.status().diagnostics()[0].code, "internal");
    EXPECT_NE(got.status().message().find("does not broadcast to " + shapeStr(to)),
              std::string::npos)
        << got.status().message();
  }
}

// The strided copies walk their outer dims with an index on the stack, as deep as artifact files
// allow ranks (64): a result of higher rank is refused when the step is prepared.
TEST(CpuMovement, RanksPastSixtyFourAreRefusedWhenPrepared) {
  CpuDevice b(checked(1));
  const OpInfo &expand = opInfo(OpKind::Expand), &transpose = opInfo(OpKind::Transpose);
  const Shape deep(65, 1);
  Expected<TensorData> got =
      runKernelOnly(b, expand, {TensorData(DType::F32, {1})},
                    completeAttrs(expand, {attrIs("shape", deep)}), TensorType{DType::F32, deep});
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().diagnostics()[0].code, "internal");
  EXPECT_NE(got.status().message().find("has more than 64 dims"), std::string::npos)
      << got.status().message();
  got = runKernelOnly(b, transpose, {TensorData(DType::F32, deep)}, completeAttrs(transpose, {}),
                      TensorType{DType::F32, deep});
  ASSERT_FALSE(got.ok());
  EXPECT_NE(got.status().message().find("has more than 64 dims"), std::string::npos)
      << got.status().message();
  // Rank 64 runs.
  const Shape most(64, 1);
  got = runKernelOnly(b, transpose, {TensorData(DType::F32, most)}, completeAttrs(transpose, {}),
                      TensorType{DType::F32, most});
  ASSERT_TRUE(got.ok()) << got.status().message();
}

// Tensors of about half a million elements: the kernels split their rows, pieces of rows and tiles
// across the pool, and chunk boundaries fall inside rows and tiles.
TEST(CpuMovement, LargeTensorsMatchTheReferenceAcrossParallelChunks) {
  CpuDevice b(checked(1));
  uint64_t seed = 5000;
  struct Large {
    OpKind op;
    std::vector<TensorData> in;
    std::vector<NamedAttr> attrs;
  };
  std::mt19937_64 rng(42);
  auto randomIndices = [&](DType t, int64_t n, int64_t dim) {
    TensorData idx(t, {n});
    for (int64_t i = 0; i < n; ++i)
      idx.setInt(i, static_cast<int64_t>(rng() % static_cast<uint64_t>(2 * dim)) - dim);
    return idx;
  };
  const std::vector<Large> cases{
      {OpKind::Transpose, {randomBytes(DType::F32, {32, 97, 130}, seed++)}, {}},
      {OpKind::Transpose,
       {randomBytes(DType::F32, {32, 97, 130}, seed++)},
       {attrIs("perm", {1, 0, 2})}},
      {OpKind::Transpose,
       {randomBytes(DType::U8, {3, 515, 677}, seed++)},
       {attrIs("perm", {0, 2, 1})}},
      {OpKind::Transpose,
       {randomBytes(DType::F16, {17, 2, 129, 130}, seed++)},
       {attrIs("perm", {3, 1, 0, 2})}},
      {OpKind::Transpose, {randomBytes(DType::F64, {515, 1029}, seed++)}, {}},
      {OpKind::Concat,
       {randomBytes(DType::F32, {1, 1 << 20}, seed++), randomBytes(DType::F32, {1, 3}, seed++),
        randomBytes(DType::F32, {1, 100000}, seed++)},
       {attrI("axis", 1)}},
      {OpKind::Concat,
       {randomBytes(DType::BF16, {501, 301}, seed++), randomBytes(DType::BF16, {501, 700}, seed++)},
       {attrI("axis", -1)}},
      {OpKind::Slice,
       {randomBytes(DType::I64, {512, 1030}, seed++)},
       {attrIs("starts", {1, -1}), attrIs("ends", {kMax, kMin}), attrIs("steps", {1, -1})}},
      {OpKind::Slice,
       {randomBytes(DType::I32, {1024, 1024}, seed++)},
       {attrIs("starts", {5, 3}), attrIs("ends", {1000, 1000}), attrIs("steps", {2, 3})}},
      {OpKind::Slice,
       {randomBytes(DType::I8, {3, 1 << 19}, seed++)},
       {attrIs("starts", {1}), attrIs("ends", {3})}},
      {OpKind::Gather,
       {randomBytes(DType::F32, {4096, 257}, seed++), randomIndices(DType::I64, 1501, 4096)},
       {}},
      {OpKind::Gather,
       {randomBytes(DType::U8, {500, 1024}, seed++), randomIndices(DType::I32, 1003, 1024)},
       {attrI("axis", 1)}},
      {OpKind::Gather,
       {randomBytes(DType::F64, {2, 1 << 19}, seed++), randomIndices(DType::I32, 3, 2)},
       {}},
      {OpKind::Expand, {randomBytes(DType::F32, {515, 1}, seed++)}, {attrIs("shape", {515, 1029})}},
      {OpKind::Expand,
       {randomBytes(DType::F16, {1, 1029}, seed++)},
       {attrIs("shape", {515, 1029})}},
      {OpKind::Expand, {randomBytes(DType::U8, {1}, seed++)}, {attrIs("shape", {3, 1 << 19})}},
  };
  for (const Large &c : cases) {
    SCOPED_TRACE(std::string(opInfo(c.op).name) + " " + traceOf(c.in, c.attrs));
    EXPECT_TRUE(matchesReference(b, c.op, c.in, c.attrs));
  }
}

// The elementwise kernels, where, cast and the copies on about a million elements, with
// broadcasting whose rows do not line up with the chunks: each chunk starts its cursors inside a
// row.
TEST(CpuMovement, ElementwiseAndCopiesSplitAcrossThePoolMatchTheReference) {
  CpuDevice b(checked(1));
  uint64_t seed = 6000;
  struct Big {
    OpKind op;
    std::vector<TensorData> in;
    std::vector<NamedAttr> attrs;
  };
  const std::vector<Big> cases{
      {OpKind::Exp, {sample(DType::F32, {1 << 20}, OpKind::Exp, seed++)}, {}},
      {OpKind::Gelu,
       {sample(DType::F16, {1001, 1047}, OpKind::Gelu, seed++)},
       {{"approximate", std::string("tanh")}}},
      {OpKind::Neg, {sample(DType::I32, {1 << 20}, OpKind::Neg, seed++)}, {}},
      {OpKind::Add,
       {sample(DType::F32, {1001, 1047}, OpKind::Add, seed++),
        sample(DType::F32, {1, 1047}, OpKind::Add, seed++)},
       {}},
      {OpKind::Mul,
       {sample(DType::I64, {37, 1, 1031}, OpKind::Mul, seed++),
        sample(DType::I64, {1, 29, 1}, OpKind::Mul, seed++)},
       {}},
      {OpKind::Sub,
       {sample(DType::BF16, {1001, 1}, OpKind::Sub, seed++),
        sample(DType::BF16, {1001, 1047}, OpKind::Sub, seed++)},
       {}},
      {OpKind::Less,
       {sample(DType::F64, {1001, 1047}, OpKind::Less, seed++),
        sample(DType::F64, {1001, 1}, OpKind::Less, seed++)},
       {}},
      {OpKind::Where,
       {sample(DType::Bool, {1001, 1}, OpKind::Where, seed++),
        sample(DType::F32, {1, 1047}, OpKind::Where, seed++),
        sample(DType::F32, {1001, 1047}, OpKind::Where, seed++)},
       {}},
      {OpKind::Cast, {sample(DType::F32, {1 << 20}, OpKind::Cast, seed++)}, {{"to", DType::F16}}},
      {OpKind::Cast,
       {sample(DType::I64, {1001, 1047}, OpKind::Cast, seed++)},
       {{"to", DType::F32}}},
      {OpKind::Reshape,
       {sample(DType::F32, {1001, 1047}, OpKind::Reshape, seed++)},
       {attrIs("shape", {-1})}},
      {OpKind::Identity, {sample(DType::U8, {3, 1 << 20}, OpKind::Identity, seed++)}, {}},
  };
  for (const Big &c : cases) {
    SCOPED_TRACE(std::string(opInfo(c.op).name) + " " + traceOf(c.in, c.attrs));
    const OpInfo &info = opInfo(c.op);
    std::vector<TensorType> types;
    for (const TensorData &t : c.in) types.push_back(t.type());
    const TensorType result =
        std::get<TensorType>(inferType(info, types, completeAttrs(info, c.attrs)));
    EXPECT_TRUE(matchesReference(b, c.op, c.in, c.attrs, tolerance(result.dtype)));
  }
  // A large constant is written as is.
  const TensorData value = sample(DType::F64, {1 << 18}, OpKind::Constant, seed++);
  const OpInfo &k = opInfo(OpKind::Constant);
  Expected<TensorData> got = runOnCpu(b, k, {}, completeAttrs(k, {{"value", value}}), value.type());
  ASSERT_TRUE(got.ok()) << got.status().message();
  EXPECT_TRUE(sameBytes(*got, value));
}

}  // namespace
}  // namespace ferry
