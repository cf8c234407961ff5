// tests/cuda/gemm_shape_test.cpp — the CUDA backend's matmul and linear, as the column-major GEMM
// calls it hands cuBLASLt (backends/cuda/codegen/gemm_shape.h), computed here on the host with
// cuBLASLt's documented semantics (D = op(A) B per batch; column-major with leading dimensions;
// strided batches; a bias per row of D) and compared with the reference interpreter: the mapping
// from ferry's row-major tensors is checked without a GPU.
#include <gtest/gtest.h>

#include "backends/cuda/codegen/gemm_shape.h"
#include "backends/reference/interpreter.h"
#include "common/random_graph.h"
#include "common/value_check.h"

namespace ferry {
namespace {

// cuBLASLt's matmul on host doubles: D[i + j*ldd] = sum_l opA(i,l) B[l + j*ldb] (+ bias[i]),
// opA(i,l) = A[l + i*lda] when transposed, A[i + l*lda] otherwise; per strided batch, or per call.
std::vector<double> columnMajorGemm(const cuda::GemmShape &g, const std::vector<double> &a,
                                    const std::vector<double> &b, const std::vector<double> *bias,
                                    size_t resultSize) {
  std::vector<double> d(resultSize, -12345);  // what no call writes shows
  auto one = [&](int64_t offA, int64_t offB, int64_t offD) {
    for (int64_t j = 0; j < g.n; ++j)
      for (int64_t i = 0; i < g.m; ++i) {
        double acc = 0;
        for (int64_t l = 0; l < g.k; ++l) {
          const double av = g.transposeA ? a[static_cast<size_t>(offA + l + i * g.lda)]
                                         : a[static_cast<size_t>(offA + i + l * g.lda)];
          acc += av * b[static_cast<size_t>(offB + l + j * g.ldb)];
        }
        if (bias) acc += (*bias)[static_cast<size_t>(i)];
        d.at(static_cast<size_t>(offD + i + j * g.ldd)) = acc;
      }
  };
  if (!g.calls.empty()) {
    for (const auto &[offA, offB, offD] : g.calls) one(offA, offB, offD);
  } else {
    for (int64_t batch = 0; batch < g.batch; ++batch)
      one(batch * g.strideA, batch * g.strideB, batch * g.strideD);
  }
  return d;
}

std::vector<double> values(const TensorData &t) {
  std::vector<double> v;
  for (int64_t i = 0; i < t.numel(); ++i) v.push_back(t.at(i));
  return v;
}

struct Case {
  OpKind op;
  Shape x, w;
  bool bias = false;
};

TEST(CudaGemmShape, MatmulAndLinearAsCuBlasLtComputeThemMatchTheReference) {
  const std::vector<Case> cases = {
      {OpKind::Matmul, {4, 6}, {6, 5}},
      {OpKind::Matmul, {1, 7}, {7, 1}},
      {OpKind::Matmul, {7}, {7, 3}},           // a row
      {OpKind::Matmul, {2, 7}, {7}},           // a column
      {OpKind::Matmul, {7}, {7}},              // a dot product
      {OpKind::Matmul, {3, 4, 6}, {6, 5}},     // the weight for every batch (stride 0)
      {OpKind::Matmul, {4, 6}, {3, 6, 5}},     // the input for every batch
      {OpKind::Matmul, {2, 3, 4, 6}, {2, 3, 6, 5}},  // equal batches
      {OpKind::Matmul, {2, 1, 4, 6}, {3, 6, 5}},     // batches that broadcast partly
      {OpKind::Matmul, {2, 1, 4, 6}, {1, 3, 6, 5}},
      {OpKind::Matmul, {3, 1, 2, 6}, {3, 4, 6, 5}},
      {OpKind::Linear, {4, 6}, {5, 6}},
      {OpKind::Linear, {4, 6}, {5, 6}, true},
      {OpKind::Linear, {6}, {5, 6}, true},      // one row
      {OpKind::Linear, {2, 3, 6}, {5, 6}, true},  // rows of a rank-3 input
  };
  testutil::Rng rng(5);
  auto random = [&](const Shape &s) {
    TensorData t(DType::F64, s);
    for (int64_t i = 0; i < t.numel(); ++i) t.set(i, static_cast<double>(rng.range(-8, 8)) / 4);
    return t;
  };
  int partial = 0, strided = 0;
  for (const Case &c : cases) {
    std::vector<TensorData> in{random(c.x), random(c.w)};
    if (c.bias) in.push_back(random({c.w[0]}));
    std::vector<TensorType> types;
    for (const TensorData &t : in) types.push_back(t.type());
    const OpInfo &info = opInfo(c.op);
    const Attrs attrs = makeAttrs(info, {}, {}).value();
    const InferResult inferred = inferType(info, types, attrs);
    ASSERT_TRUE(std::holds_alternative<TensorType>(inferred)) << shapeStr(c.x) << " " << shapeStr(c.w);
    const TensorType result = std::get<TensorType>(inferred);
    Expected<TensorData> want = reference::evalOp(info, in, attrs, result);
    ASSERT_TRUE(want.ok()) << want.status().message();
    Expected<cuda::GemmShape> g = cuda::gemmShape(c.op, types, result);
    ASSERT_TRUE(g.ok()) << g.status().message();
    partial += !g->calls.empty();
    strided += g->batch > 1;
    const std::vector<double> bias = c.bias ? values(in[2]) : std::vector<double>{};
    // cuBLASLt's A is ferry's second operand, its B the first.
    const std::vector<double> got =
        columnMajorGemm(*g, values(in[1]), values(in[0]), c.bias ? &bias : nullptr,
                        static_cast<size_t>(result.numel()));
    const std::vector<double> expected = values(*want);
    ASSERT_EQ(got.size(), expected.size());
    for (size_t i = 0; i < got.size(); ++i)
      ASSERT_DOUBLE_EQ(got[i], expected[i])
          << opInfo(c.op).name << " " << shapeStr(c.x) << " x " << shapeStr(c.w) << " element " << i;
  }
  EXPECT_EQ(partial, 3);
  EXPECT_EQ(strided, 3);
}

TEST(CudaGemmShape, WhatIsNoCuBlasLtGemmIsAnError) {
  const TensorType f{DType::F32, {2, 2}};
  const std::vector<TensorType> one{f};
  EXPECT_FALSE(cuda::gemmShape(OpKind::Matmul, one, f).ok());
  const std::vector<TensorType> two{f, f};
  EXPECT_FALSE(cuda::gemmShape(OpKind::Conv2d, two, f).ok());
}

}  // namespace
}  // namespace ferry
