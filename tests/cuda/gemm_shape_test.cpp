// tests/cuda/gemm_shape_test.cpp — the CUDA backend's matmul and linear, as the column-major GEMM
// calls it hands cuBLASLt (backends/cuda/codegen/gemm_shape.h), computed here on the host with
// cuBLASLt's documented semantics (cudatest::hostGemm) and compared with the reference: the mapping
// from ferry's row-major tensors is checked without a GPU.
#include <gtest/gtest.h>

#include "backends/cuda/codegen/gemm_shape.h"
#include "backends/reference/interpreter.h"
#include "common/random_graph.h"
#include "common/value_check.h"
#include "cuda/codegen_steps.h"

namespace ferry {
namespace {

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
    // cuBLASLt's A is ferry's second operand, its B the first; what no call writes shows.
    TensorData d(DType::F64, result.shape);
    for (int64_t i = 0; i < d.numel(); ++i) d.set(i, -12345);
    const std::byte *bias = c.bias ? in[2].bytes().data() : nullptr;
    if (g->calls.empty()) {
      cudatest::hostGemm(*g, DType::F64, cuda::Epilogue::None, in[1].bytes().data(),
                         in[0].bytes().data(), bias, d.mutableBytes().data());
    } else {
      for (const auto &[offA, offB, offD] : g->calls)
        cudatest::hostGemm(*g, DType::F64, cuda::Epilogue::None, in[1].bytes().data() + offA * 8,
                           in[0].bytes().data() + offB * 8, bias, d.mutableBytes().data() + offD * 8);
    }
    const std::vector<double> got = values(d);
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
