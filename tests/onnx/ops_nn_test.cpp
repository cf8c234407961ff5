// tests/onnx/ops_nn_test.cpp — the converters of ops_nn.cpp: each ONNX op imported, run on the
// reference interpreter and compared with values worked out by hand or, where noted, computed by
// onnxruntime 1.32 on the same model (pasted here); what ferry lacks is an error naming the node.
#include <cmath>
#include <limits>

#include "onnx/ops_test_util.h"

namespace ferry::onnx_test {
namespace {

using Ints = std::vector<int64_t>;
using Floats = std::vector<double>;

const double kInf = std::numeric_limits<double>::infinity();

TEST(OnnxNnOps, MatMulFollowsNumpy) {
  Model m;
  m.input("v", DType::F32, {2});
  m.initializer("w", tensor(DType::F32, {2, 2, 3}, {1, 2, 3, 4, 5, 6, 1, 0, 0, 0, 1, 0}));
  m.node("MatMul", {"v", "w"}, {"y"});
  m.output("y");
  auto out = runOk(importOk(m), {{"v", tensor(DType::F32, {2}, {1, 10})}});
  ASSERT_EQ(out.size(), 1u);
  // A 1-D left operand is a row, its dim dropped; the batch dim of w stays.
  expectNear(out[0], DType::F32, {2, 3}, {41, 52, 63, 1, 10, 0});
}

TEST(OnnxNnOps, GemmWithTransposedWeightAndVectorBiasIsLinear) {
  Model m;
  m.input("x", DType::F32, {1, 2});
  m.initializer("w", tensor(DType::F32, {3, 2}, {1, 0, 0, 1, 1, 1}));
  m.initializer("b", tensor(DType::F32, {3}, {10, 20, 30}));
  attr(m.node("Gemm", {"x", "w", "b"}, {"y"}), "transB", int64_t{1});
  m.output("y");
  Graph g = importOk(m);
  EXPECT_EQ(opsOf(g), "linear");
  auto out = runOk(g, {{"x", tensor(DType::F32, {1, 2}, {2, 5})}});
  ASSERT_EQ(out.size(), 1u);
  expectNear(out[0], DType::F32, {1, 3}, {12, 25, 37});
}

TEST(OnnxNnOps, GemmWithAllAttributesScalesAndBroadcastsC) {
  // Y = alpha * A^T * B + beta * C with A [K=2, M=2] and C [M, 1] broadcast along N.
  Model m;
  m.input("a", DType::F32, {2, 2});
  m.initializer("b", tensor(DType::F32, {2, 3}, {1, 2, 3, 4, 5, 6}));
  m.initializer("c", tensor(DType::F32, {2, 1}, {1, -1}));
  auto &n = m.node("Gemm", {"a", "b", "c"}, {"y"});
  attr(n, "transA", int64_t{1});
  attr(n, "alpha", 0.5);
  attr(n, "beta", 2.0);
  m.output("y");
  Graph g = importOk(m);
  // beta * C folds at import (both known); alpha is a scalar constant.
  EXPECT_EQ(opsOf(g), "transpose matmul constant mul constant add");
  auto out = runOk(g, {{"a", tensor(DType::F32, {2, 2}, {1, 2, 3, 4})}});
  ASSERT_EQ(out.size(), 1u);
  // A^T = [[1, 3], [2, 4]]; A^T B = [[13, 17, 21], [18, 24, 30]]
  expectNear(out[0], DType::F32, {2, 3}, {8.5, 10.5, 12.5, 7, 10, 13});
}

TEST(OnnxNnOps, GemmRejectsCThatDoesNotBroadcastOneWay) {
  Model m;
  m.input("a", DType::F32, {2, 3});
  m.input("b", DType::F32, {3, 4});
  m.input("c", DType::F32, {3, 4});
  m.node("Gemm", {"a", "b", "c"}, {"y"}, "gemm");
  m.output("y");
  std::string e = importErrors(m);
  EXPECT_NE(e.find("node 'gemm' (#0, Gemm): Gemm: input 2 (C) is f32[3,4], expected a shape "
                   "that broadcasts to the result's [2,4]"),
            std::string::npos)
      << e;
}

TEST(OnnxNnOps, ConvAsymmetricPadsAndStrides) {
  // ones [1,1,4,4] * ones 3x3 with pads top 1, left 0, bottom 0, right 1 and strides [2, 1]: each
  // output counts the window's cells inside the input.
  Model m;
  m.input("x", DType::F32, {1, 1, 4, 4});
  m.initializer("w", TensorData::full(DType::F32, {1, 1, 3, 3}, 1));
  auto &n = m.node("Conv", {"x", "w"}, {"y"});
  attr(n, "pads", Ints{1, 0, 0, 1});
  attr(n, "strides", Ints{2, 1});
  attr(n, "kernel_shape", Ints{3, 3});
  m.output("y");
  auto out = runOk(importOk(m), {{"x", TensorData::full(DType::F32, {1, 1, 4, 4}, 1)}});
  ASSERT_EQ(out.size(), 1u);
  expectNear(out[0], DType::F32, {1, 1, 2, 3}, {6, 6, 4, 9, 9, 6});
}

TEST(OnnxNnOps, ConvAutoPadSameUpperAndLower) {
  // A 2x2 kernel of ones over 0..15 [4x4]: one row and column of padding, at the end (SAME_UPPER)
  // or the beginning (SAME_LOWER). Expected values from onnxruntime.
  struct Case {
    const char *autoPad;
    Floats want;
  };
  for (const Case &c :
       {Case{"SAME_UPPER", {10, 14, 18, 10, 26, 30, 34, 18, 42, 46, 50, 26, 25, 27, 29, 15}},
        Case{"SAME_LOWER", {0, 1, 3, 5, 4, 10, 14, 18, 12, 26, 30, 34, 20, 42, 46, 50}}}) {
    Model m;
    m.input("x", DType::F32, {1, 1, 4, 4});
    m.initializer("w", TensorData::full(DType::F32, {1, 1, 2, 2}, 1));
    attr(m.node("Conv", {"x", "w"}, {"y"}), "auto_pad", std::string(c.autoPad));
    m.output("y");
    auto out = runOk(importOk(m), {{"x", iota({1, 1, 4, 4})}});
    ASSERT_EQ(out.size(), 1u);
    expectNear(out[0], DType::F32, {1, 1, 4, 4}, c.want);
  }
}

TEST(OnnxNnOps, Conv1dThroughAUnitDim) {
  // x = 0..5, w = [1, 10], pads [1, 2], stride 2, dilation 2 (onnxruntime: 10, 31, 53, 5), bias 1.
  Model m;
  m.input("x", DType::F32, {1, 1, 6});
  m.initializer("w", tensor(DType::F32, {1, 1, 2}, {1, 10}));
  m.initializer("b", tensor(DType::F32, {1}, {1}));
  auto &n = m.node("Conv", {"x", "w", "b"}, {"y"});
  attr(n, "pads", Ints{1, 2});
  attr(n, "strides", Ints{2});
  attr(n, "dilations", Ints{2});
  m.output("y");
  auto out = runOk(importOk(m), {{"x", iota({1, 1, 6})}});
  ASSERT_EQ(out.size(), 1u);
  expectNear(out[0], DType::F32, {1, 1, 4}, {11, 32, 54, 6});
}

TEST(OnnxNnOps, ConvProblemsNameTheNode) {
  Model m;
  m.input("x", DType::F32, {1, 1, 2, 2, 2});
  m.input("w", DType::F32, {1, 1, 1, 1, 1});
  m.node("Conv", {"x", "w"}, {"y"}, "conv3d");
  m.input("x2", DType::F32, {1, 1, 4, 4});
  m.input("w2", DType::F32, {1, 1, 3, 3});
  attr(m.node("Conv", {"x2", "w2"}, {"z"}, "k"), "kernel_shape", Ints{2, 2});
  auto &p = m.node("Conv", {"x2", "w2"}, {"q"}, "pad");
  attr(p, "auto_pad", std::string("SAME"));
  m.output("y");
  m.output("z");
  m.output("q");
  std::string e = importErrors(m);
  EXPECT_NE(e.find("3-D Conv"), std::string::npos) << e;
  EXPECT_NE(e.find("node 'k' (#1, Conv): Conv: attribute 'kernel_shape' is [2, 2] but the weight "
                   "f32[1,1,3,3] has the kernel [3, 3]"),
            std::string::npos)
      << e;
  EXPECT_NE(e.find("node 'pad' (#2, Conv): Conv: attribute 'auto_pad' is \"SAME\", expected "
                   "NOTSET, SAME_UPPER, SAME_LOWER or VALID"),
            std::string::npos)
      << e;
}

TEST(OnnxNnOps, MaxPoolCeilModeAndDefaultStrideOfOne) {
  Model m;
  m.input("x", DType::F32, {1, 1, 4, 4});
  auto &c = m.node("MaxPool", {"x"}, {"ceil"});
  attr(c, "kernel_shape", Ints{2, 2});
  attr(c, "strides", Ints{3, 3});
  attr(c, "ceil_mode", int64_t{1});
  // ONNX's strides default to 1, not to the kernel as PyTorch's.
  attr(m.node("MaxPool", {"x"}, {"dense"}), "kernel_shape", Ints{3, 3});
  m.output("ceil");
  m.output("dense");
  auto out = runOk(importOk(m), {{"x", iota({1, 1, 4, 4})}});
  ASSERT_EQ(out.size(), 2u);
  expectNear(out[0], DType::F32, {1, 1, 2, 2}, {5, 7, 13, 15});
  expectNear(out[1], DType::F32, {1, 1, 2, 2}, {10, 11, 14, 15});
}

TEST(OnnxNnOps, MaxPool1dAndUint8) {
  Model m;
  m.input("x", DType::F32, {1, 1, 6});
  auto &n = m.node("MaxPool", {"x"}, {"y"});
  attr(n, "kernel_shape", Ints{2});
  attr(n, "pads", Ints{1, 1});
  attr(n, "strides", Ints{2});
  m.input("u", DType::U8, {1, 1, 2, 2});
  attr(m.node("MaxPool", {"u"}, {"v"}), "kernel_shape", Ints{2, 2});
  m.output("y");
  m.output("v");
  auto out = runOk(importOk(m), {{"x", iota({1, 1, 6})},
                                 {"u", tensor(DType::U8, {1, 1, 2, 2}, {3, 255, 7, 0})}});
  ASSERT_EQ(out.size(), 2u);
  expectNear(out[0], DType::F32, {1, 1, 4}, {0, 2, 4, 5});
  expectNear(out[1], DType::U8, {1, 1, 1, 1}, {255});
}

TEST(OnnxNnOps, MaxPoolIndicesAndLargePadsWithCeilModeAreUnsupported) {
  Model m;
  m.input("x", DType::F32, {1, 1, 4, 4});
  attr(m.node("MaxPool", {"x"}, {"y", "idx"}, "argmax"), "kernel_shape", Ints{2, 2});
  auto &p = m.node("MaxPool", {"x"}, {"z"}, "bigpad");
  attr(p, "kernel_shape", Ints{3, 3});
  attr(p, "pads", Ints{2, 2, 2, 2});
  attr(p, "ceil_mode", int64_t{1});
  m.output("y");
  m.output("idx");
  m.output("z");
  std::string e = importErrors(m);
  EXPECT_NE(e.find("MaxPool whose output 1 (Indices) is used"), std::string::npos) << e;
  EXPECT_NE(e.find("MaxPool with ceil_mode and pads [2, 2, 2, 2] beyond half the window"),
            std::string::npos)
      << e;
}

TEST(OnnxNnOps, PoolPadsBeyondHalfTheWindowArePaddedExplicitly) {
  // 0..8 [3x3], 3x3 windows, pads top 2, left 0, bottom 1, right 2, strides [2, 1]: ferry's pools
  // take at most 1; the rest is concatenated. Expected values from onnxruntime.
  struct Case {
    const char *op;
    int64_t includePad;
    Floats want;
  };
  for (const Case &c :
       {Case{"MaxPool", 0, {2, 2, 2, 8, 8, 8}}, Case{"AveragePool", 0, {1, 1.5, 2, 4, 4.5, 5}},
        Case{"AveragePool", 1, {3.0 / 9, 3.0 / 9, 2.0 / 9, 4, 3, 15.0 / 9}}}) {
    Model m;
    m.input("x", DType::F32, {1, 1, 3, 3});
    auto &n = m.node(c.op, {"x"}, {"y"});
    attr(n, "kernel_shape", Ints{3, 3});
    attr(n, "pads", Ints{2, 0, 1, 2});
    attr(n, "strides", Ints{2, 1});
    if (c.includePad) attr(n, "count_include_pad", int64_t{1});
    m.output("y");
    auto out = runOk(importOk(m), {{"x", iota({1, 1, 3, 3})}});
    ASSERT_EQ(out.size(), 1u);
    expectNear(out[0], DType::F32, {1, 1, 2, 3}, c.want);
  }
}

TEST(OnnxNnOps, AveragePoolCountIncludePad) {
  // 0..15 [4x4], 3x3 windows, pads 1, strides 2: the corner window holds 0, 1, 4, 5 (sum 10) and
  // 5 padding cells. Expected values from onnxruntime.
  for (int64_t include : {0, 1}) {
    Model m;
    m.input("x", DType::F32, {1, 1, 4, 4});
    auto &n = m.node("AveragePool", {"x"}, {"y"});
    attr(n, "kernel_shape", Ints{3, 3});
    attr(n, "pads", Ints{1, 1, 1, 1});
    attr(n, "strides", Ints{2, 2});
    attr(n, "count_include_pad", include);
    m.output("y");
    auto out = runOk(importOk(m), {{"x", iota({1, 1, 4, 4})}});
    ASSERT_EQ(out.size(), 1u);
    expectNear(out[0], DType::F32, {1, 1, 2, 2},
               include ? Floats{10.0 / 9, 24.0 / 9, 51.0 / 9, 10} : Floats{2.5, 4, 8.5, 10});
  }
}

TEST(OnnxNnOps, AveragePoolSameUpperExcludesPadding) {
  Model m;
  m.input("x", DType::F32, {1, 1, 4, 4});
  auto &n = m.node("AveragePool", {"x"}, {"y"});
  attr(n, "kernel_shape", Ints{2, 2});
  attr(n, "auto_pad", std::string("SAME_UPPER"));
  m.output("y");
  auto out = runOk(importOk(m), {{"x", iota({1, 1, 4, 4})}});
  ASSERT_EQ(out.size(), 1u);
  expectNear(out[0], DType::F32, {1, 1, 4, 4},
             {2.5, 3.5, 4.5, 5, 6.5, 7.5, 8.5, 9, 10.5, 11.5, 12.5, 13, 12.5, 13.5, 14.5, 15});
}

TEST(OnnxNnOps, GlobalAveragePoolOfOneAndTwoSpatialDims) {
  Model m;
  m.input("x", DType::F32, {1, 2, 3});
  m.input("z", DType::F32, {1, 1, 2, 2});
  m.node("GlobalAveragePool", {"x"}, {"y"});
  m.node("GlobalAveragePool", {"z"}, {"w"});
  m.output("y");
  m.output("w");
  auto out = runOk(importOk(m), {{"x", iota({1, 2, 3})}, {"z", iota({1, 1, 2, 2})}});
  ASSERT_EQ(out.size(), 2u);
  expectNear(out[0], DType::F32, {1, 2, 1}, {1, 4});
  expectNear(out[1], DType::F32, {1, 1, 1, 1}, {1.5});
}

TEST(OnnxNnOps, BatchNormalizationInference) {
  Model m;
  m.input("x", DType::F32, {1, 2, 2});
  m.initializer("scale", tensor(DType::F32, {2}, {1, 2}));
  m.initializer("bias", tensor(DType::F32, {2}, {0, 1}));
  m.initializer("mean", tensor(DType::F32, {2}, {1, 0}));
  m.initializer("var", tensor(DType::F32, {2}, {4, 1}));
  auto &n = m.node("BatchNormalization", {"x", "scale", "bias", "mean", "var"}, {"y"});
  attr(n, "epsilon", 0.0);
  attr(n, "momentum", 0.5);
  m.output("y");
  auto out = runOk(importOk(m), {{"x", tensor(DType::F32, {1, 2, 2}, {1, 3, 2, -1})}});
  ASSERT_EQ(out.size(), 1u);
  // channel 0: (x - 1) / 2; channel 1: x * 2 + 1
  expectNear(out[0], DType::F32, {1, 2, 2}, {0, 1, 5, -1});
}

// Training mode: the batch's own statistics normalise, and the running ones are updated with
// momentum (hand-worked: channel 0 has batch mean 2 and variance 1, channel 1 mean 12, var 4).
TEST(OnnxNnOps, BatchNormalizationTrainingUsesTheBatchStatistics) {
  Model m;
  m.input("x", DType::F32, {2, 2});
  for (const char *p : {"s", "b", "m", "v"}) m.input(p, DType::F32, {2});
  onnx::NodeProto &bn =
      m.node("BatchNormalization", {"x", "s", "b", "m", "v"}, {"y", "rm", "rv"}, "bn");
  attr(bn, "training_mode", int64_t{1});
  attr(bn, "momentum", 0.5);
  attr(bn, "epsilon", 0.0);
  m.output("y");
  m.output("rm");
  m.output("rv");
  auto out = runOk(importOk(m), {{"x", tensor(DType::F32, {2, 2}, {1, 10, 3, 14})},
                                 {"s", tensor(DType::F32, {2}, {1, 2})},
                                 {"b", tensor(DType::F32, {2}, {0, 1})},
                                 {"m", tensor(DType::F32, {2}, {0.5, 4})},
                                 {"v", tensor(DType::F32, {2}, {1, 2})}});
  ASSERT_EQ(out.size(), 3u);
  expectNear(out[0], DType::F32, {2, 2}, {-1, -1, 1, 3});
  expectNear(out[1], DType::F32, {2}, {1.25, 8});
  expectNear(out[2], DType::F32, {2}, {1, 3});
  // training_mode is 0 or 1.
  Model bad;
  bad.input("x", DType::F32, {2, 2});
  for (const char *p : {"s", "b", "m", "v"}) bad.input(p, DType::F32, {2});
  attr(bad.node("BatchNormalization", {"x", "s", "b", "m", "v"}, {"y"}, "bn"), "training_mode",
       int64_t{2});
  bad.output("y");
  EXPECT_NE(importErrors(bad).find("'training_mode' is 2, expected 0 or 1"), std::string::npos)
      << importErrors(bad);
}

TEST(OnnxNnOps, SoftmaxAndLogSoftmaxOverOneAxis) {
  Model m;
  m.input("x", DType::F32, {2, 2});
  attr(m.node("Softmax", {"x"}, {"s"}), "axis", int64_t{0});
  m.node("LogSoftmax", {"x"}, {"l"});  // axis -1
  m.output("s");
  m.output("l");
  auto out = runOk(importOk(m), {{"x", tensor(DType::F32, {2, 2}, {0, 0, std::log(3.0), 0})}});
  ASSERT_EQ(out.size(), 2u);
  expectNear(out[0], DType::F32, {2, 2}, {0.25, 0.5, 0.75, 0.5});
  expectNear(out[1], DType::F32, {2, 2},
             {-std::log(2.0), -std::log(2.0), std::log(0.75), std::log(0.25)});
}

TEST(OnnxNnOps, LayerNormalizationBroadcastsScaleAndGivesStatistics) {
  // Scale [1, 4] and B [1] broadcast to the normalized shape [4]; Mean and InvStdDev keep the
  // normalized dim as 1. Expected values from onnxruntime.
  Model m;
  m.input("x", DType::F32, {2, 4});
  m.initializer("s", tensor(DType::F32, {1, 4}, {1, 2, 1, 2}));
  m.initializer("b", tensor(DType::F32, {1}, {0.5}));
  m.node("LayerNormalization", {"x", "s", "b"}, {"y", "mean", "inv"});
  m.output("y");
  m.output("mean");
  m.output("inv");
  Graph g = importOk(m);
  auto out = runOk(g, {{"x", tensor(DType::F32, {2, 4}, {1, 2, 3, 4, 2, 2, 2, 6})}});
  ASSERT_EQ(out.size(), 3u);
  expectNear(out[0], DType::F32, {2, 4},
             {-0.8416354, -0.3944236, 0.9472118, 3.1832709, -0.0773493, -0.6546986, -0.0773493,
              3.9640958});
  expectNear(out[1], DType::F32, {2, 1}, {2.5, 3});
  expectNear(out[2], DType::F32, {2, 1}, {1 / std::sqrt(1.25 + 1e-5), 1 / std::sqrt(3 + 1e-5)});
}

TEST(OnnxNnOps, LayerNormalizationScaleOverTheWholeInput) {
  // Scale [2, 1] broadcasts over X's leading dim, not the normalized one: normalise, then multiply.
  Model m;
  m.input("x", DType::F32, {2, 2});
  m.initializer("s", tensor(DType::F32, {2, 1}, {1, 3}));
  auto &n = m.node("LayerNormalization", {"x", "s"}, {"y"});
  attr(n, "epsilon", 0.0);
  m.output("y");
  auto out = runOk(importOk(m), {{"x", tensor(DType::F32, {2, 2}, {0, 2, 5, 1})}});
  ASSERT_EQ(out.size(), 1u);
  expectNear(out[0], DType::F32, {2, 2}, {-1, 1, 3, -3});
}

TEST(OnnxNnOps, ReductionsKeepDimsAndDTypes) {
  Model m;
  m.input("x", DType::F32, {2, 3});
  m.input("i", DType::I32, {2, 3});
  attr(m.node("ReduceMean", {"x"}, {"mean"}), "axes", Ints{-1});  // keepdims 1
  auto &mx = m.node("ReduceMax", {"x"}, {"max"});
  attr(mx, "axes", Ints{0});
  attr(mx, "keepdims", int64_t{0});
  m.initializer("ax", tensor(DType::I64, {1}, {1}));
  attr(m.node("ReduceSum", {"i", "ax"}, {"sum"}), "keepdims", int64_t{0});
  m.node("ReduceSum", {"i"}, {"all"});  // no axes: every dim
  m.output("mean");
  m.output("max");
  m.output("sum");
  m.output("all");
  auto out = runOk(importOk(m),
                   {{"x", iota({2, 3})}, {"i", tensor(DType::I32, {2, 3}, {1, 2, 3, -4, 5, 6})}});
  ASSERT_EQ(out.size(), 4u);
  expectNear(out[0], DType::F32, {2, 1}, {1, 4});
  expectNear(out[1], DType::F32, {3}, {3, 4, 5});
  // ONNX keeps the integer dtype where ferry's sum would give i64.
  expectNear(out[2], DType::I32, {2}, {6, 7});
  expectNear(out[3], DType::I32, {1, 1}, {13});
}

TEST(OnnxNnOps, ReduceSumNoopWithEmptyAxesAndMaxOfNothing) {
  Model m;
  m.input("x", DType::F32, {2, 2});
  m.input("e", DType::F32, {2, 0});
  m.initializer("none", tensor(DType::I64, {0}, {}));
  attr(m.node("ReduceSum", {"x", "none"}, {"same"}), "noop_with_empty_axes", int64_t{1});
  attr(m.node("ReduceMax", {"e"}, {"lowest"}), "axes", Ints{1});
  m.output("same");
  m.output("lowest");
  auto out = runOk(importOk(m), {{"x", iota({2, 2})}, {"e", TensorData(DType::F32, {2, 0})}});
  ASSERT_EQ(out.size(), 2u);
  expectNear(out[0], DType::F32, {2, 2}, {0, 1, 2, 3});
  expectNear(out[1], DType::F32, {2, 1}, {-kInf, -kInf});
}

}  // namespace
}  // namespace ferry::onnx_test
