// tests/ir/shape_rules_test.cpp — every op's shape rule and its errors (makeAttrs and the op
// table: op_table_test.cpp).
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "ir/ops.h"
#include "ir/shape_test_util.h"

namespace ferry {
namespace {

using namespace testing_shapes;
using enum DType;

// ---- elementwise --------------------------------------------------------------------------

TEST(ShapeRules, UnaryKeepsShapeAndAppliesDTypeRule) {
  struct Case {
    OpKind op;
    DType in, out;
  };
  const Case cases[] = {
      {OpKind::Neg, I32, I32},   {OpKind::Abs, I64, I64},        {OpKind::Exp, I32, F32},
      {OpKind::Exp, F16, F16},   {OpKind::Log, Bool, F32},       {OpKind::Sqrt, U8, F32},
      {OpKind::Rsqrt, F64, F64}, {OpKind::Tanh, BF16, BF16},     {OpKind::Sigmoid, I64, F32},
      {OpKind::Relu, I8, I8},    {OpKind::Gelu, F16, F16},       {OpKind::Erf, I32, F32},
      {OpKind::Silu, F32, F32},  {OpKind::Identity, Bool, Bool},
  };
  for (const Case &c : cases)
    EXPECT_TRUE(isType(infer(c.op, {T(c.in, {2, 0, 3})}), T(c.out, {2, 0, 3})))
        << opInfo(c.op).name << " " << dtypeName(c.in);
  EXPECT_TRUE(isType(infer(OpKind::Neg, {T(F32, {})}), T(F32, {})));
}

TEST(ShapeRules, AcceptedDTypesAreCheckedBeforeTheRule) {
  EXPECT_TRUE(isError(infer(OpKind::Relu, {T(Bool, {2})}), "dtype", {"'relu'", "bool[2]"}));
  EXPECT_TRUE(isError(infer(OpKind::Silu, {T(I32, {2})}), "dtype", {"'silu'", "floating"}));
  EXPECT_TRUE(isError(infer(OpKind::Add, {T(F32, {2})}), "arity", {"'add'", "got 1"}));
}

TEST(ShapeRules, Gelu) {
  EXPECT_TRUE(isType(infer(OpKind::Gelu, {T(F32, {4})}, {S("approximate", "tanh")}), T(F32, {4})));
  EXPECT_TRUE(
      isType(infer(OpKind::Gelu, {T(BF16, {4})}, {S("approximate", "none")}), T(BF16, {4})));
  EXPECT_TRUE(isError(infer(OpKind::Gelu, {T(F32, {4})}, {S("approximate", "fast")}), "attr",
                      {"'gelu'", "approximate=\"fast\"", "\"none\" or \"tanh\""}));
}

TEST(ShapeRules, BroadcastBinary) {
  EXPECT_TRUE(isType(infer(OpKind::Add, {T(F32, {2, 3}), T(F32, {3})}), T(F32, {2, 3})));
  EXPECT_TRUE(isType(infer(OpKind::Add, {T(F32, {4, 1, 5}), T(I64, {3, 1})}), T(F32, {4, 3, 5})));
  EXPECT_TRUE(isType(infer(OpKind::Add, {T(I32, {}), T(F16, {2})}), T(F16, {2})));
  EXPECT_TRUE(isType(infer(OpKind::Add, {T(F32, {0, 3}), T(F32, {1, 3})}), T(F32, {0, 3})));
  EXPECT_TRUE(isType(infer(OpKind::Add, {T(F32, {}), T(F32, {})}), T(F32, {})));
  EXPECT_TRUE(isType(infer(OpKind::Sub, {T(I8, {1, 2}), T(I8, {3, 1})}), T(I8, {3, 2})));
  EXPECT_TRUE(isType(infer(OpKind::Mul, {T(U8, {2}), T(I8, {2})}), T(I32, {2})));
  EXPECT_TRUE(isType(infer(OpKind::Div, {T(I32, {2, 3}), T(I32, {3})}), T(F32, {2, 3})));
  EXPECT_TRUE(isType(infer(OpKind::Div, {T(F64, {1}), T(I32, {5})}), T(F64, {5})));
  EXPECT_TRUE(isType(infer(OpKind::Pow, {T(F32, {2, 1}), T(I64, {})}), T(F32, {2, 1})));
  EXPECT_TRUE(isType(infer(OpKind::Maximum, {T(BF16, {3}), T(F16, {3})}), T(F32, {3})));
  EXPECT_TRUE(isType(infer(OpKind::Minimum, {T(Bool, {3}), T(Bool, {1})}), T(Bool, {3})));
  EXPECT_TRUE(isType(infer(OpKind::Equal, {T(F32, {2, 1}), T(F64, {1, 4})}), T(Bool, {2, 4})));
  EXPECT_TRUE(isType(infer(OpKind::Less, {T(I32, {5}), T(F16, {1})}), T(Bool, {5})));
  EXPECT_TRUE(isType(infer(OpKind::Greater, {T(I64, {}), T(I64, {2, 2})}), T(Bool, {2, 2})));
}

TEST(ShapeRules, BroadcastErrors) {
  EXPECT_TRUE(isError(infer(OpKind::Add, {T(F32, {2, 3}), T(F32, {4})}), "shape",
                      {"'add' cannot broadcast operand 0 (a) f32[2,3] with operand 1 (b) f32[4]: "
                       "dim 1 is 3 vs 4"}));
  // A size-0 dim broadcasts only against 1.
  EXPECT_TRUE(isError(infer(OpKind::Mul, {T(F32, {0}), T(F32, {3})}), "shape",
                      {"'mul'", "dim 0 is 0 vs 3"}));
  EXPECT_TRUE(isError(infer(OpKind::Less, {T(I32, {5, 2}), T(I32, {3, 1})}), "shape",
                      {"'less'", "i32[5,2]", "i32[3,1]", "dim 0 is 5 vs 3"}));
}

TEST(ShapeRules, Where) {
  EXPECT_TRUE(isType(infer(OpKind::Where, {T(Bool, {2, 1}), T(F32, {1, 3}), T(I32, {2, 3})}),
                     T(F32, {2, 3})));
  EXPECT_TRUE(isType(infer(OpKind::Where, {T(Bool, {4}), T(I8, {}), T(U8, {})}), T(I32, {4})));
  EXPECT_TRUE(isError(
      infer(OpKind::Where, {T(Bool, {2}), T(F32, {3}), T(F32, {1})}), "shape",
      {"'where'", "operand 0 (cond) bool[2] with operand 1 (a) f32[3]", "dim 0 is 2 vs 3"}));
  EXPECT_TRUE(isError(infer(OpKind::Where, {T(F32, {2}), T(F32, {2}), T(F32, {2})}), "dtype",
                      {"operand 0 (cond)", "must be bool"}));
}

// ---- linear algebra -----------------------------------------------------------------------

TEST(ShapeRules, MatmulFollowsNumpy) {
  struct Case {
    Shape a, b, out;
  };
  const Case cases[] = {
      {{2, 3}, {3, 4}, {2, 4}},
      {{3}, {3}, {}},
      {{3}, {3, 4}, {4}},
      {{2, 3}, {3}, {2}},
      {{5, 2, 3}, {3, 4}, {5, 2, 4}},
      {{2, 1, 2, 3}, {5, 3, 4}, {2, 5, 2, 4}},
      {{3}, {5, 3, 4}, {5, 4}},
      {{5, 2, 3}, {3}, {5, 2}},
      {{0, 3}, {3, 4}, {0, 4}},
      {{2, 0}, {0, 4}, {2, 4}},
  };
  for (const Case &c : cases)
    EXPECT_TRUE(isType(infer(OpKind::Matmul, {T(F32, c.a), T(F32, c.b)}), T(F32, c.out)))
        << shapeStr(c.a) << " x " << shapeStr(c.b);
  EXPECT_TRUE(isType(infer(OpKind::Matmul, {T(I32, {2, 3}), T(I64, {3, 4})}), T(I64, {2, 4})));
  EXPECT_TRUE(isType(infer(OpKind::Matmul, {T(F16, {2, 3}), T(F32, {3, 4})}), T(F32, {2, 4})));
}

TEST(ShapeRules, MatmulErrors) {
  EXPECT_TRUE(isError(infer(OpKind::Matmul, {T(F32, {2, 3}), T(F32, {4, 5})}), "shape",
                      {"'matmul' cannot multiply operand 0 (a) f32[2,3] by operand 1 (b) f32[4,5]",
                       "contracted dims are 3 vs 4"}));
  EXPECT_TRUE(isError(infer(OpKind::Matmul, {T(F32, {3}), T(F32, {4})}), "shape", {"3 vs 4"}));
  EXPECT_TRUE(isError(infer(OpKind::Matmul, {T(F32, {}), T(F32, {3})}), "shape",
                      {"'matmul'", "operand 0 (a) f32[]", "at least 1-D"}));
  EXPECT_TRUE(
      isError(infer(OpKind::Matmul, {T(F32, {3}), T(F32, {})}), "shape", {"operand 1 (b) f32[]"}));
  EXPECT_TRUE(isError(infer(OpKind::Matmul, {T(F32, {2, 3, 4}), T(F32, {3, 4, 5})}), "shape",
                      {"the batch dims [2] of operand 0 (a) f32[2,3,4]",
                       "[3] of operand 1 (b) f32[3,4,5]", "dim 0 is 2 vs 3"}));
  EXPECT_TRUE(
      isError(infer(OpKind::Matmul, {T(Bool, {2, 2}), T(Bool, {2, 2})}), "dtype", {"'matmul'"}));
}

TEST(ShapeRules, Linear) {
  EXPECT_TRUE(isType(infer(OpKind::Linear, {T(F32, {8, 16}), T(F32, {32, 16}), T(F32, {32})}),
                     T(F32, {8, 32})));
  EXPECT_TRUE(
      isType(infer(OpKind::Linear, {T(F32, {2, 5, 16}), T(F32, {32, 16})}), T(F32, {2, 5, 32})));
  EXPECT_TRUE(isType(infer(OpKind::Linear, {T(F32, {16}), T(F32, {32, 16})}), T(F32, {32})));
  EXPECT_TRUE(isType(infer(OpKind::Linear, {T(F16, {4, 16}), T(F32, {8, 16}), T(F16, {8})}),
                     T(F32, {4, 8})));
}

TEST(ShapeRules, LinearErrors) {
  EXPECT_TRUE(isError(infer(OpKind::Linear, {T(F32, {8, 15}), T(F32, {32, 16})}), "shape",
                      {"'linear'", "operand 0 (x) f32[8,15] has 15 input features",
                       "operand 1 (weight) f32[32,16]", "takes 16"}));
  EXPECT_TRUE(isError(infer(OpKind::Linear, {T(F32, {8, 16}), T(F32, {16})}), "shape",
                      {"operand 1 (weight) f32[16] must be 2-D [out, in]"}));
  EXPECT_TRUE(isError(infer(OpKind::Linear, {T(F32, {8, 16}), T(F32, {32, 16}), T(F32, {16})}),
                      "shape", {"operand 2 (bias) f32[16] must be [32]"}));
  EXPECT_TRUE(isError(infer(OpKind::Linear, {T(F32, {}), T(F32, {32, 16})}), "shape",
                      {"operand 0 (x) f32[] must be at least 1-D"}));
}

TEST(ShapeRules, Conv2d) {
  const TensorType x = T(F32, {1, 3, 32, 32}), w = T(F32, {16, 3, 3, 3});
  EXPECT_TRUE(isType(infer(OpKind::Conv2d, {x, w}), T(F32, {1, 16, 30, 30})));
  // floor((32 + 2 - 3) / 2) + 1 = 16
  EXPECT_TRUE(isType(
      infer(OpKind::Conv2d, {x, w, T(F32, {16})}, {L("stride", {2, 2}), L("padding", {1, 1})}),
      T(F32, {1, 16, 16, 16})));
  // Dilation 2 makes the kernel extent 5: 32 + 4 - 5 + 1 = 32.
  EXPECT_TRUE(isType(infer(OpKind::Conv2d, {x, w}, {L("dilation", {2, 2}), L("padding", {2, 2})}),
                     T(F32, {1, 16, 32, 32})));
  // [top, left, bottom, right]: H 10 + 1 + 2 - 3 + 1 = 11, W 12 + 0 + 1 - 3 + 1 = 11.
  EXPECT_TRUE(isType(infer(OpKind::Conv2d, {T(F32, {2, 4, 10, 12}), T(F32, {8, 4, 3, 3})},
                           {L("padding", {1, 0, 2, 1})}),
                     T(F32, {2, 8, 11, 11})));
  // Different strides per dim: (7 - 3) / 2 + 1 = 3 and (7 - 3) / 3 + 1 = 2.
  EXPECT_TRUE(isType(
      infer(OpKind::Conv2d, {T(F32, {1, 1, 7, 7}), T(F32, {1, 1, 3, 3})}, {L("stride", {2, 3})}),
      T(F32, {1, 1, 3, 2})));
  EXPECT_TRUE(
      isType(infer(OpKind::Conv2d, {T(F32, {1, 4, 8, 8}), T(F32, {6, 2, 3, 3})}, {I("groups", 2)}),
             T(F32, {1, 6, 6, 6})));
  EXPECT_TRUE(
      isType(infer(OpKind::Conv2d, {T(F16, {1, 4, 8, 8}), T(F16, {4, 1, 3, 3})}, {I("groups", 4)}),
             T(F16, {1, 4, 6, 6})));
  EXPECT_TRUE(isType(infer(OpKind::Conv2d, {T(F32, {0, 3, 5, 5}), T(F32, {2, 3, 5, 5})}),
                     T(F32, {0, 2, 1, 1})));
}

TEST(ShapeRules, Conv2dErrors) {
  const TensorType x = T(F32, {1, 3, 8, 8}), w = T(F32, {16, 3, 3, 3});
  EXPECT_TRUE(isError(infer(OpKind::Conv2d, {x, w}, {L("stride", {1})}), "attr",
                      {"'conv2d'", "stride=[1]", "2 values"}));
  EXPECT_TRUE(isError(infer(OpKind::Conv2d, {x, w}, {L("stride", {0, 1})}), "attr",
                      {"stride=[0, 1] must be positive"}));
  EXPECT_TRUE(isError(infer(OpKind::Conv2d, {x, w}, {L("dilation", {1, -1})}), "attr",
                      {"dilation=[1, -1] must be positive"}));
  EXPECT_TRUE(isError(infer(OpKind::Conv2d, {x, w}, {L("padding", {1, 1, 1})}), "attr",
                      {"padding=[1, 1, 1]", "[top, left, bottom, right]"}));
  EXPECT_TRUE(isError(infer(OpKind::Conv2d, {x, w}, {L("padding", {-1, 0})}), "attr",
                      {"padding=[-1, 0] must be non-negative"}));
  EXPECT_TRUE(isError(infer(OpKind::Conv2d, {x, w}, {I("groups", 0)}), "attr",
                      {"groups=0 must be positive"}));
  EXPECT_TRUE(isError(infer(OpKind::Conv2d, {x, T(F32, {16, 1, 3, 3})}, {I("groups", 2)}), "shape",
                      {"groups=2 does not divide the 3 channels of operand 0 (x) f32[1,3,8,8]"}));
  EXPECT_TRUE(
      isError(infer(OpKind::Conv2d, {T(F32, {1, 4, 8, 8}), T(F32, {3, 2, 3, 3})}, {I("groups", 2)}),
              "shape", {"does not divide the 3 output channels of operand 1 (weight)"}));
  EXPECT_TRUE(isError(infer(OpKind::Conv2d, {x, T(F32, {16, 4, 3, 3})}), "shape",
                      {"operand 1 (weight) f32[16,4,3,3] takes 4 input channels per group",
                       "operand 0 (x) f32[1,3,8,8]", "has 3"}));
  EXPECT_TRUE(isError(infer(OpKind::Conv2d, {T(F32, {1, 1, 4, 4}), T(F32, {1, 1, 5, 5})}), "shape",
                      {"the kernel does not fit operand 0 (x) f32[1,1,4,4]",
                       "dim 2 is 4 + padding 0 + 0 < kernel extent 5"}));
  EXPECT_TRUE(isError(
      infer(OpKind::Conv2d, {T(F32, {1, 1, 4, 4}), T(F32, {1, 1, 3, 3})}, {L("dilation", {2, 2})}),
      "shape", {"kernel extent 5", "dilation [2,2]"}));
  EXPECT_TRUE(isError(infer(OpKind::Conv2d, {T(F32, {3, 8, 8}), w}), "shape",
                      {"operand 0 (x) f32[3,8,8] must be 4-D [N, C, H, W]"}));
  EXPECT_TRUE(isError(infer(OpKind::Conv2d, {x, T(F32, {16, 3, 3})}), "shape",
                      {"operand 1 (weight) f32[16,3,3] must be 4-D"}));
  EXPECT_TRUE(isError(infer(OpKind::Conv2d, {x, w, T(F32, {8})}), "shape",
                      {"operand 2 (bias) f32[8] must be [16]"}));
  EXPECT_TRUE(
      isError(infer(OpKind::Conv2d, {x, T(F32, {16, 3, 0, 3})}), "shape", {"empty kernel"}));
  EXPECT_TRUE(isError(infer(OpKind::Conv2d, {T(I32, {1, 3, 8, 8}), T(I32, {16, 3, 3, 3})}), "dtype",
                      {"'conv2d'", "floating"}));
  EXPECT_TRUE(isError(infer(OpKind::Conv2d, {x, w}, {L("dilation", {int64_t{1} << 62, 1})}), "attr",
                      {"overflow"}));
  EXPECT_TRUE(
      isError(infer(OpKind::Conv2d, {x, w}, {L("padding", {kMax, kMax})}), "attr", {"overflow"}));
}

// ---- pooling and normalisation ------------------------------------------------------------

TEST(ShapeRules, MaxPool2d) {
  const TensorType x = T(F32, {1, 3, 32, 32});
  // An empty stride means stride = kernel.
  EXPECT_TRUE(isType(infer(OpKind::MaxPool2d, {x}, {L("kernel", {2, 2})}), T(F32, {1, 3, 16, 16})));
  // (32 + 2 - 3) / 2 + 1 = 16
  EXPECT_TRUE(isType(infer(OpKind::MaxPool2d, {x},
                           {L("kernel", {3, 3}), L("stride", {2, 2}), L("padding", {1, 1})}),
                     T(F32, {1, 3, 16, 16})));
  // Dilation 2: kernel extent 5, 10 - 5 + 1 = 6.
  EXPECT_TRUE(isType(infer(OpKind::MaxPool2d, {T(F16, {1, 1, 10, 10})},
                           {L("kernel", {3, 3}), L("stride", {1, 1}), L("dilation", {2, 2})}),
                     T(F16, {1, 1, 6, 6})));
}

TEST(ShapeRules, PoolCeilMode) {
  const std::vector<NamedAttr> k3s2p1 = {L("kernel", {3, 3}), L("stride", {2, 2}),
                                         L("padding", {1, 1})};
  // 4 + 2 - 3 = 3 of room: floor(3/2) + 1 = 2, ceil(3/2) + 1 = 3.
  EXPECT_TRUE(
      isType(infer(OpKind::MaxPool2d, {T(F32, {1, 1, 4, 4})}, k3s2p1), T(F32, {1, 1, 2, 2})));
  std::vector<NamedAttr> ceil = k3s2p1;
  ceil.push_back(B("ceil_mode", true));
  EXPECT_TRUE(isType(infer(OpKind::MaxPool2d, {T(F32, {1, 1, 4, 4})}, ceil), T(F32, {1, 1, 3, 3})));
  // 5 + 2 - 2 = 5 of room gives ceil(5/2) + 1 = 4 windows, but the 4th would start at 6, in the
  // right padding (5 + 1 left), so PyTorch drops it: 3.
  EXPECT_TRUE(isType(
      infer(OpKind::MaxPool2d, {T(F32, {1, 1, 5, 5})},
            {L("kernel", {2, 2}), L("stride", {2, 2}), L("padding", {1, 1}), B("ceil_mode", true)}),
      T(F32, {1, 1, 3, 3})));
  EXPECT_TRUE(isType(
      infer(OpKind::AvgPool2d, {T(F32, {1, 1, 5, 5})}, {L("kernel", {2, 2}), B("ceil_mode", true)}),
      T(F32, {1, 1, 3, 3})));
  EXPECT_TRUE(isType(infer(OpKind::AvgPool2d, {T(F32, {1, 1, 5, 5})}, {L("kernel", {2, 2})}),
                     T(F32, {1, 1, 2, 2})));
}

TEST(ShapeRules, AvgPool2d) {
  EXPECT_TRUE(isType(infer(OpKind::AvgPool2d, {T(F32, {2, 8, 7, 7})},
                           {L("kernel", {3, 3}), L("stride", {1, 1}), L("padding", {1, 1}),
                            B("count_include_pad", false)}),
                     T(F32, {2, 8, 7, 7})));
  // [top, left, bottom, right] = [0, 0, 1, 1]: (5 + 1 - 2) / 2 + 1 = 3.
  EXPECT_TRUE(isType(infer(OpKind::AvgPool2d, {T(BF16, {1, 1, 5, 5})},
                           {L("kernel", {2, 2}), L("padding", {0, 0, 1, 1})}),
                     T(BF16, {1, 1, 3, 3})));
  EXPECT_TRUE(isType(
      infer(OpKind::AvgPool2d, {T(F32, {1, 2, 6, 9})}, {L("kernel", {2, 3}), L("stride", {2, 3})}),
      T(F32, {1, 2, 3, 3})));
}

TEST(ShapeRules, PoolErrors) {
  const TensorType x = T(F32, {1, 3, 8, 8});
  EXPECT_TRUE(isError(infer(OpKind::MaxPool2d, {x}, {L("kernel", {2})}), "attr",
                      {"'max_pool2d'", "kernel=[2]", "2 values"}));
  EXPECT_TRUE(isError(infer(OpKind::AvgPool2d, {x}, {L("kernel", {0, 2})}), "attr",
                      {"'avg_pool2d'", "kernel=[0, 2] must be positive"}));
  EXPECT_TRUE(isError(infer(OpKind::MaxPool2d, {x}, {L("kernel", {2, 2}), L("stride", {2, 2, 2})}),
                      "attr", {"stride=[2, 2, 2]"}));
  EXPECT_TRUE(isError(infer(OpKind::MaxPool2d, {x}, {L("kernel", {2, 2}), L("stride", {0, 2})}),
                      "attr", {"stride=[0, 2] must be positive"}));
  EXPECT_TRUE(isError(infer(OpKind::MaxPool2d, {x}, {L("kernel", {2, 2}), L("dilation", {0, 1})}),
                      "attr", {"dilation=[0, 1] must be positive"}));
  EXPECT_TRUE(isError(infer(OpKind::MaxPool2d, {x}, {L("kernel", {3, 3}), L("padding", {2, 2})}),
                      "attr", {"padding=[2, 2] exceeds half the kernel extent", "at most 1"}));
  EXPECT_TRUE(isError(infer(OpKind::AvgPool2d, {x}, {L("kernel", {2, 2}), L("padding", {0, 0, 1})}),
                      "attr", {"padding=[0, 0, 1]"}));
  EXPECT_TRUE(isError(infer(OpKind::MaxPool2d, {T(F32, {1, 1, 2, 2})}, {L("kernel", {3, 3})}),
                      "shape",
                      {"the kernel does not fit operand 0 (x) f32[1,1,2,2]", "kernel=[3, 3]"}));
  EXPECT_TRUE(isError(infer(OpKind::MaxPool2d, {T(F32, {1, 1, 0, 4})}, {L("kernel", {1, 1})}),
                      "shape", {"f32[1,1,0,4] has an empty spatial dim 2"}));
  EXPECT_TRUE(isError(infer(OpKind::AvgPool2d, {T(F32, {3, 8, 8})}, {L("kernel", {2, 2})}), "shape",
                      {"operand 0 (x) f32[3,8,8] must be 4-D"}));
  EXPECT_TRUE(isError(infer(OpKind::MaxPool2d, {x}), "test", {"requires attribute 'kernel'"}));
}

TEST(ShapeRules, GlobalAvgPool) {
  EXPECT_TRUE(isType(infer(OpKind::GlobalAvgPool, {T(F32, {2, 8, 7, 7})}), T(F32, {2, 8, 1, 1})));
  EXPECT_TRUE(isType(infer(OpKind::GlobalAvgPool, {T(BF16, {1, 3, 1, 5})}), T(BF16, {1, 3, 1, 1})));
  EXPECT_TRUE(isError(infer(OpKind::GlobalAvgPool, {T(F32, {2, 8})}), "shape",
                      {"'global_avg_pool'", "operand 0 (x) f32[2,8] must be 4-D"}));
}

TEST(ShapeRules, BatchNorm) {
  const TensorType c = T(F32, {3});
  EXPECT_TRUE(
      isType(infer(OpKind::BatchNorm, {T(F32, {2, 3, 4, 4}), c, c, c, c}), T(F32, {2, 3, 4, 4})));
  EXPECT_TRUE(isType(infer(OpKind::BatchNorm, {T(F32, {5, 3}), c, c, c, c}, {I("eps", 1)}),
                     T(F32, {5, 3})));
  EXPECT_TRUE(isType(infer(OpKind::BatchNorm, {T(F16, {2, 3, 4}), c, c, c, c}), T(F32, {2, 3, 4})));
  EXPECT_TRUE(isError(infer(OpKind::BatchNorm, {T(F32, {2, 3, 4, 4}), T(F32, {4}), c, c, c}),
                      "shape",
                      {"'batch_norm'", "operand 1 (scale) f32[4] must be [3]",
                       "the channels of operand 0 (x) f32[2,3,4,4]"}));
  EXPECT_TRUE(isError(infer(OpKind::BatchNorm, {T(F32, {2, 3}), c, c, c, T(F32, {3, 1})}), "shape",
                      {"operand 4 (var) f32[3,1] must be [3]"}));
  EXPECT_TRUE(isError(infer(OpKind::BatchNorm, {T(F32, {3}), c, c, c, c}), "shape",
                      {"operand 0 (x) f32[3] must be at least 2-D"}));
}

TEST(ShapeRules, LayerNorm) {
  const TensorType x = T(F32, {2, 5, 8});
  EXPECT_TRUE(isType(infer(OpKind::LayerNorm, {x, T(F32, {8}), T(F32, {8})}), T(F32, {2, 5, 8})));
  EXPECT_TRUE(isType(infer(OpKind::LayerNorm, {x, T(F32, {5, 8})}, {I("axis", 1)}), x));
  EXPECT_TRUE(
      isType(infer(OpKind::LayerNorm, {x, T(F32, {5, 8}), T(F32, {5, 8})}, {I("axis", -2)}), x));
  EXPECT_TRUE(isType(infer(OpKind::LayerNorm, {x}, {I("axis", 0)}), x));
  EXPECT_TRUE(isType(infer(OpKind::LayerNorm, {T(F16, {4, 6}), T(F16, {6})}), T(F16, {4, 6})));
  EXPECT_TRUE(isError(infer(OpKind::LayerNorm, {x, T(F32, {5})}), "shape",
                      {"'layer_norm'", "operand 1 (weight) f32[5] must have shape [8]",
                       "operand 0 (x) f32[2,5,8] from axis=-1"}));
  EXPECT_TRUE(isError(infer(OpKind::LayerNorm, {x, T(F32, {5, 8}), T(F32, {8})}, {I("axis", 1)}),
                      "shape", {"operand 2 (bias) f32[8] must have shape [5,8]"}));
  EXPECT_TRUE(isError(infer(OpKind::LayerNorm, {x}, {I("axis", 3)}), "shape",
                      {"axis=3 is out of range for operand 0 (x) f32[2,5,8] (rank 3)"}));
  EXPECT_TRUE(isError(infer(OpKind::LayerNorm, {T(F32, {})}), "shape", {"axis=-1", "rank 0"}));
}

// ---- reductions ---------------------------------------------------------------------------

TEST(ShapeRules, Reductions) {
  const TensorType x = T(F32, {2, 3, 4});
  EXPECT_TRUE(isType(infer(OpKind::Sum, {x}), T(F32, {})));
  EXPECT_TRUE(isType(infer(OpKind::Sum, {x}, {B("keepdims", true)}), T(F32, {1, 1, 1})));
  EXPECT_TRUE(isType(infer(OpKind::Sum, {x}, {L("axes", {1})}), T(F32, {2, 4})));
  EXPECT_TRUE(
      isType(infer(OpKind::Sum, {x}, {L("axes", {1}), B("keepdims", true)}), T(F32, {2, 1, 4})));
  EXPECT_TRUE(isType(infer(OpKind::Mean, {x}, {L("axes", {-1, 0})}), T(F32, {3})));
  EXPECT_TRUE(isType(infer(OpKind::Max, {x}, {L("axes", {2, 0, 1})}), T(F32, {})));
  EXPECT_TRUE(isType(infer(OpKind::Sum, {T(I32, {4})}), T(I64, {})));
  EXPECT_TRUE(isType(infer(OpKind::Sum, {T(Bool, {4, 2})}, {L("axes", {0})}), T(I64, {2})));
  EXPECT_TRUE(isType(infer(OpKind::Sum, {T(F16, {4})}), T(F16, {})));
  EXPECT_TRUE(isType(infer(OpKind::Mean, {T(BF16, {4, 2})}, {L("axes", {1})}), T(BF16, {4})));
  EXPECT_TRUE(isType(infer(OpKind::Max, {T(I32, {4, 2})}, {L("axes", {1})}), T(I32, {4})));
  EXPECT_TRUE(isType(infer(OpKind::Max, {T(Bool, {4})}), T(Bool, {})));
  EXPECT_TRUE(isType(infer(OpKind::Sum, {T(F32, {})}), T(F32, {})));
  EXPECT_TRUE(isType(infer(OpKind::Sum, {T(F32, {})}, {B("keepdims", true)}), T(F32, {})));
  // Empty reductions: sum and mean have an identity (0, nan), max has none.
  EXPECT_TRUE(isType(infer(OpKind::Sum, {T(F32, {0, 3})}, {L("axes", {0})}), T(F32, {3})));
  EXPECT_TRUE(isType(infer(OpKind::Mean, {T(F32, {0, 3})}, {L("axes", {0})}), T(F32, {3})));
  EXPECT_TRUE(isType(infer(OpKind::Max, {T(F32, {0, 3})}, {L("axes", {1})}), T(F32, {0})));
}

TEST(ShapeRules, ReductionErrors) {
  const TensorType x = T(F32, {2, 3});
  EXPECT_TRUE(
      isError(infer(OpKind::Sum, {x}, {L("axes", {2})}), "shape",
              {"'sum'", "axes=[2]: axis 2 is out of range for operand 0 (x) f32[2,3] (rank 2)"}));
  EXPECT_TRUE(isError(infer(OpKind::Mean, {x}, {L("axes", {-3})}), "shape", {"axis -3"}));
  EXPECT_TRUE(isError(infer(OpKind::Max, {x}, {L("axes", {1, -1})}), "attr",
                      {"'max'", "axes=[1, -1] names dim 1 more than once"}));
  EXPECT_TRUE(isError(infer(OpKind::Max, {T(F32, {0, 3})}, {L("axes", {0})}), "shape",
                      {"'max' cannot reduce the empty dim 0 of operand 0 (x) f32[0,3]"}));
  EXPECT_TRUE(isError(infer(OpKind::Max, {T(F32, {3, 0})}), "shape", {"empty dim 1"}));
  EXPECT_TRUE(isError(infer(OpKind::Mean, {T(I32, {3})}), "dtype", {"'mean'"}));
}

TEST(ShapeRules, Softmax) {
  EXPECT_TRUE(isType(infer(OpKind::Softmax, {T(F32, {2, 5})}), T(F32, {2, 5})));
  EXPECT_TRUE(isType(infer(OpKind::LogSoftmax, {T(F16, {2, 5})}, {I("axis", 0)}), T(F16, {2, 5})));
  EXPECT_TRUE(isError(infer(OpKind::Softmax, {T(F32, {2, 5})}, {I("axis", 2)}), "shape",
                      {"'softmax'", "axis=2 is out of range for operand 0 (x) f32[2,5] (rank 2)"}));
  EXPECT_TRUE(isError(infer(OpKind::LogSoftmax, {T(F32, {})}), "shape",
                      {"'log_softmax'", "axis=-1", "rank 0"}));
  EXPECT_TRUE(isError(infer(OpKind::Softmax, {T(I64, {2})}), "dtype", {"'softmax'"}));
}

// ---- data movement ------------------------------------------------------------------------

TEST(ShapeRules, Reshape) {
  const TensorType x = T(I64, {2, 3, 4});
  EXPECT_TRUE(isType(infer(OpKind::Reshape, {x}, {L("shape", {6, 4})}), T(I64, {6, 4})));
  EXPECT_TRUE(isType(infer(OpKind::Reshape, {x}, {L("shape", {-1, 4})}), T(I64, {6, 4})));
  EXPECT_TRUE(isType(infer(OpKind::Reshape, {x}, {L("shape", {2, -1})}), T(I64, {2, 12})));
  EXPECT_TRUE(isType(infer(OpKind::Reshape, {x}, {L("shape", {24})}), T(I64, {24})));
  EXPECT_TRUE(isType(infer(OpKind::Reshape, {x}, {L("shape", {-1})}), T(I64, {24})));
  EXPECT_TRUE(isType(infer(OpKind::Reshape, {T(F32, {1})}, {L("shape", {})}), T(F32, {})));
  EXPECT_TRUE(isType(infer(OpKind::Reshape, {T(F32, {})}, {L("shape", {1, -1})}), T(F32, {1, 1})));
  // 0 is a literal size-0 dim, not "copy the input's dim".
  EXPECT_TRUE(
      isType(infer(OpKind::Reshape, {T(F32, {0, 4})}, {L("shape", {0, 8})}), T(F32, {0, 8})));
  EXPECT_TRUE(isType(infer(OpKind::Reshape, {T(F32, {2, 0})}, {L("shape", {0})}), T(F32, {0})));
}

TEST(ShapeRules, ReshapeErrors) {
  const TensorType x = T(F32, {2, 3});
  EXPECT_TRUE(isError(infer(OpKind::Reshape, {x}, {L("shape", {-1, -1})}), "attr",
                      {"'reshape'", "shape=[-1, -1] has more than one -1"}));
  EXPECT_TRUE(isError(infer(OpKind::Reshape, {x}, {L("shape", {-2, 3})}), "attr",
                      {"shape=[-2, 3] has the negative size -2"}));
  EXPECT_TRUE(isError(infer(OpKind::Reshape, {x}, {L("shape", {4, 2})}), "shape",
                      {"cannot reshape operand 0 (x) f32[2,3] (6 elements) to shape=[4, 2] (8 "
                       "elements)"}));
  EXPECT_TRUE(isError(infer(OpKind::Reshape, {x}, {L("shape", {4, -1})}), "shape",
                      {"shape=[4, -1]", "6 is not a multiple of 4"}));
  EXPECT_TRUE(isError(infer(OpKind::Reshape, {T(F32, {0, 4})}, {L("shape", {4, 0, -1})}), "shape",
                      {"cannot infer the -1 in shape=[4, 0, -1]", "f32[0,4] (0 elements)"}));
  EXPECT_TRUE(isError(
      infer(OpKind::Reshape, {T(F32, {1})}, {L("shape", {int64_t{1} << 40, int64_t{1} << 40})}),
      "shape", {"2^62"}));
}

TEST(ShapeRules, Transpose) {
  const TensorType x = T(Bool, {2, 3, 4});
  EXPECT_TRUE(isType(infer(OpKind::Transpose, {x}), T(Bool, {4, 3, 2})));
  EXPECT_TRUE(isType(infer(OpKind::Transpose, {x}, {L("perm", {0, 2, 1})}), T(Bool, {2, 4, 3})));
  EXPECT_TRUE(isType(infer(OpKind::Transpose, {x}, {L("perm", {-1, 0, 1})}), T(Bool, {4, 2, 3})));
  EXPECT_TRUE(isType(infer(OpKind::Transpose, {T(F32, {})}), T(F32, {})));
  EXPECT_TRUE(isError(infer(OpKind::Transpose, {x}, {L("perm", {0, 1})}), "shape",
                      {"'transpose'", "perm=[0, 1] has 2 entries but operand 0 (x) bool[2,3,4] has "
                                      "rank 3"}));
  EXPECT_TRUE(isError(infer(OpKind::Transpose, {x}, {L("perm", {0, 0, 1})}), "attr",
                      {"perm=[0, 0, 1] names dim 0 more than once"}));
  EXPECT_TRUE(isError(infer(OpKind::Transpose, {x}, {L("perm", {0, 1, 3})}), "shape",
                      {"axis 3 is out of range"}));
}

TEST(ShapeRules, Concat) {
  EXPECT_TRUE(isType(infer(OpKind::Concat, {T(F32, {2, 3}), T(F32, {4, 3})}), T(F32, {6, 3})));
  EXPECT_TRUE(isType(
      infer(OpKind::Concat, {T(F32, {2, 3}), T(F32, {2, 5}), T(F32, {2, 1})}, {I("axis", 1)}),
      T(F32, {2, 9})));
  EXPECT_TRUE(isType(infer(OpKind::Concat, {T(F32, {2, 3}), T(F32, {2, 5})}, {I("axis", -1)}),
                     T(F32, {2, 8})));
  EXPECT_TRUE(isType(infer(OpKind::Concat, {T(I8, {7})}), T(I8, {7})));
  EXPECT_TRUE(isType(infer(OpKind::Concat, {T(I32, {2}), T(F16, {3})}), T(F16, {5})));
  EXPECT_TRUE(isType(infer(OpKind::Concat, {T(F32, {0, 3}), T(F32, {2, 3})}), T(F32, {2, 3})));
}

TEST(ShapeRules, ConcatErrors) {
  EXPECT_TRUE(isError(infer(OpKind::Concat, {T(F32, {2, 3}), T(F32, {3})}), "shape",
                      {"'concat'", "operand 1 (x) f32[3] has rank 1 but operand 0 (x) f32[2,3] has "
                                   "rank 2"}));
  EXPECT_TRUE(isError(infer(OpKind::Concat, {T(F32, {2, 3}), T(F32, {2, 4})}), "shape",
                      {"operand 1 (x) f32[2,4] does not match operand 0 (x) f32[2,3] in dim 1: 4 "
                       "vs 3 (only axis=0 may differ)"}));
  EXPECT_TRUE(isError(infer(OpKind::Concat, {T(F32, {2, 3}), T(F32, {2, 3})}, {I("axis", 2)}),
                      "shape", {"axis=2 is out of range", "rank 2"}));
  EXPECT_TRUE(isError(infer(OpKind::Concat, {T(F32, {}), T(F32, {})}), "shape",
                      {"cannot concatenate the scalar operand 0 (x) f32[]"}));
  EXPECT_TRUE(isError(infer(OpKind::Concat, {}), "arity", {"'concat'"}));
}

TEST(ShapeRules, SliceFollowsOnnx) {
  const TensorType x = T(F32, {10, 20});
  auto slice = [&](std::vector<NamedAttr> attrs) { return infer(OpKind::Slice, {x}, attrs); };
  EXPECT_TRUE(isType(slice({L("starts", {2}), L("ends", {7})}), T(F32, {5, 20})));
  EXPECT_TRUE(isType(slice({L("starts", {0, 5}), L("ends", {10, 1000})}), T(F32, {10, 15})));
  EXPECT_TRUE(
      isType(slice({L("starts", {-5}), L("ends", {kMax}), L("axes", {1})}), T(F32, {10, 5})));
  EXPECT_TRUE(
      isType(slice({L("starts", {-5}), L("ends", {kMax}), L("axes", {-1})}), T(F32, {10, 5})));
  EXPECT_TRUE(isType(slice({L("starts", {kMin}), L("ends", {kMax})}), T(F32, {10, 20})));
  // 1, 4, 7 and 1, 5, 9.
  EXPECT_TRUE(isType(slice({L("starts", {1}), L("ends", {10}), L("steps", {3})}), T(F32, {3, 20})));
  EXPECT_TRUE(isType(slice({L("starts", {1}), L("ends", {10}), L("steps", {4})}), T(F32, {3, 20})));
  EXPECT_TRUE(isType(slice({L("starts", {5}), L("ends", {2})}), T(F32, {0, 20})));
  // Reversal: start 9, end clamped to -1.
  EXPECT_TRUE(
      isType(slice({L("starts", {-1}), L("ends", {kMin}), L("steps", {-1})}), T(F32, {10, 20})));
  // 8, 6, 4.
  EXPECT_TRUE(isType(slice({L("starts", {8}), L("ends", {2}), L("steps", {-2})}), T(F32, {3, 20})));
  // With a negative step the start clamps to 0, the end to -1: element 0 only.
  EXPECT_TRUE(
      isType(slice({L("starts", {-100}), L("ends", {-100}), L("steps", {-1})}), T(F32, {1, 20})));
  EXPECT_TRUE(
      isType(slice({L("starts", {1000}), L("ends", {15}), L("axes", {1}), L("steps", {-3})}),
             T(F32, {10, 2})));
  EXPECT_TRUE(
      isType(slice({L("starts", {9}), L("ends", {kMin}), L("steps", {kMin})}), T(F32, {1, 20})));
  EXPECT_TRUE(
      isType(slice({L("starts", {0}), L("ends", {10}), L("steps", {kMax})}), T(F32, {1, 20})));
  EXPECT_TRUE(isType(slice({L("starts", {}), L("ends", {})}), x));
  EXPECT_TRUE(isType(
      infer(OpKind::Slice, {T(I32, {0})}, {L("starts", {0}), L("ends", {-1}), L("steps", {-1})}),
      T(I32, {0})));
}

TEST(ShapeRules, SliceErrors) {
  const TensorType x = T(F32, {10, 20});
  auto slice = [&](std::vector<NamedAttr> attrs) { return infer(OpKind::Slice, {x}, attrs); };
  EXPECT_TRUE(isError(slice({L("starts", {0, 1}), L("ends", {2})}), "attr",
                      {"'slice'", "starts=[0, 1] and ends=[2] differ in length"}));
  EXPECT_TRUE(isError(slice({L("starts", {0}), L("ends", {2}), L("axes", {0, 1})}), "attr",
                      {"axes=[0, 1] and starts=[0] differ in length"}));
  EXPECT_TRUE(isError(slice({L("starts", {0}), L("ends", {2}), L("steps", {1, 1})}), "attr",
                      {"steps=[1, 1]"}));
  EXPECT_TRUE(isError(slice({L("starts", {0}), L("ends", {2}), L("steps", {0})}), "attr",
                      {"steps=[0] has a zero step"}));
  EXPECT_TRUE(isError(slice({L("starts", {0}), L("ends", {2}), L("axes", {2})}), "shape",
                      {"axes=[2]: axis 2 is out of range for operand 0 (x) f32[10,20] (rank 2)"}));
  EXPECT_TRUE(isError(slice({L("starts", {0, 0}), L("ends", {2, 2}), L("axes", {0, -2})}), "attr",
                      {"axes=[0, -2] names dim 0 more than once"}));
  EXPECT_TRUE(isError(infer(OpKind::Slice, {x}, {L("starts", {0})}), "test",
                      {"requires attribute 'ends'"}));
}

TEST(ShapeRules, Gather) {
  const TensorType data = T(F32, {5, 4});
  EXPECT_TRUE(isType(infer(OpKind::Gather, {data, T(I64, {3})}), T(F32, {3, 4})));
  EXPECT_TRUE(
      isType(infer(OpKind::Gather, {data, T(I32, {2, 2})}, {I("axis", 1)}), T(F32, {5, 2, 2})));
  EXPECT_TRUE(
      isType(infer(OpKind::Gather, {data, T(I32, {2, 2})}, {I("axis", -1)}), T(F32, {5, 2, 2})));
  EXPECT_TRUE(isType(infer(OpKind::Gather, {data, T(I64, {})}), T(F32, {4})));
  EXPECT_TRUE(isType(infer(OpKind::Gather, {T(I32, {2, 3, 4}), T(I64, {6})}, {I("axis", 1)}),
                     T(I32, {2, 6, 4})));
  EXPECT_TRUE(isType(infer(OpKind::Gather, {T(F32, {0, 4}), T(I64, {0})}), T(F32, {0, 4})));
}

TEST(ShapeRules, GatherErrors) {
  EXPECT_TRUE(isError(infer(OpKind::Gather, {T(F32, {}), T(I64, {1})}), "shape",
                      {"'gather'", "operand 0 (data) f32[] must be at least 1-D"}));
  EXPECT_TRUE(isError(infer(OpKind::Gather, {T(F32, {5, 4}), T(I64, {1})}, {I("axis", 2)}), "shape",
                      {"axis=2 is out of range for operand 0 (data) f32[5,4] (rank 2)"}));
  EXPECT_TRUE(isError(infer(OpKind::Gather, {T(F32, {0, 4}), T(I64, {3})}), "shape",
                      {"cannot take operand 1 (indices) i64[3] from the empty dim 0 of operand 0 "
                       "(data) f32[0,4]"}));
  EXPECT_TRUE(isError(infer(OpKind::Gather, {T(F32, {5}), T(F32, {1})}), "dtype",
                      {"operand 1 (indices)", "i32 or i64"}));
}

TEST(ShapeRules, Unsqueeze) {
  const TensorType x = T(F32, {2, 3});
  EXPECT_TRUE(isType(infer(OpKind::Unsqueeze, {x}, {L("axes", {0})}), T(F32, {1, 2, 3})));
  EXPECT_TRUE(isType(infer(OpKind::Unsqueeze, {x}, {L("axes", {-1})}), T(F32, {2, 3, 1})));
  EXPECT_TRUE(isType(infer(OpKind::Unsqueeze, {x}, {L("axes", {1, 3})}), T(F32, {2, 1, 3, 1})));
  EXPECT_TRUE(isType(infer(OpKind::Unsqueeze, {x}, {L("axes", {3, 0})}), T(F32, {1, 2, 3, 1})));
  EXPECT_TRUE(isType(infer(OpKind::Unsqueeze, {T(F32, {})}, {L("axes", {0})}), T(F32, {1})));
  EXPECT_TRUE(isType(infer(OpKind::Unsqueeze, {x}, {L("axes", {})}), x));
  EXPECT_TRUE(isError(infer(OpKind::Unsqueeze, {x}, {L("axes", {3})}), "shape",
                      {"'unsqueeze'", "axes=[3]: axis 3 is out of range", "f32[2,3]", "(rank 3)"}));
  EXPECT_TRUE(isError(infer(OpKind::Unsqueeze, {x}, {L("axes", {0, -4})}), "attr",
                      {"axes=[0, -4] names dim 0 more than once"}));
  EXPECT_TRUE(isError(infer(OpKind::Unsqueeze, {x}), "test", {"requires attribute 'axes'"}));
}

TEST(ShapeRules, Squeeze) {
  const TensorType x = T(F32, {1, 3, 1, 2});
  EXPECT_TRUE(isType(infer(OpKind::Squeeze, {x}), T(F32, {3, 2})));
  EXPECT_TRUE(isType(infer(OpKind::Squeeze, {x}, {L("axes", {0})}), T(F32, {3, 1, 2})));
  EXPECT_TRUE(isType(infer(OpKind::Squeeze, {x}, {L("axes", {-2, 0})}), T(F32, {3, 2})));
  EXPECT_TRUE(isType(infer(OpKind::Squeeze, {T(F32, {1})}), T(F32, {})));
  EXPECT_TRUE(isType(infer(OpKind::Squeeze, {T(F32, {})}), T(F32, {})));
  EXPECT_TRUE(isError(infer(OpKind::Squeeze, {x}, {L("axes", {1})}), "shape",
                      {"'squeeze' cannot squeeze dim 1 of operand 0 (x) f32[1,3,1,2]: its size "
                       "is 3, not 1"}));
  EXPECT_TRUE(isError(infer(OpKind::Squeeze, {x}, {L("axes", {4})}), "shape", {"out of range"}));
  EXPECT_TRUE(isError(infer(OpKind::Squeeze, {x}, {L("axes", {0, 0})}), "attr",
                      {"names dim 0 more than once"}));
}

TEST(ShapeRules, Flatten) {
  const TensorType x = T(F32, {2, 3, 4});
  EXPECT_TRUE(isType(infer(OpKind::Flatten, {x}), T(F32, {24})));
  EXPECT_TRUE(isType(infer(OpKind::Flatten, {x}, {I("start", 1)}), T(F32, {2, 12})));
  EXPECT_TRUE(isType(infer(OpKind::Flatten, {x}, {I("start", 1), I("end", 1)}), x));
  EXPECT_TRUE(isType(infer(OpKind::Flatten, {x}, {I("end", -2)}), T(F32, {6, 4})));
  EXPECT_TRUE(isType(infer(OpKind::Flatten, {T(F32, {})}), T(F32, {1})));
  EXPECT_TRUE(isType(infer(OpKind::Flatten, {T(F32, {2, 0, 3})}, {I("start", 1)}), T(F32, {2, 0})));
  EXPECT_TRUE(isError(infer(OpKind::Flatten, {x}, {I("start", 2), I("end", 1)}), "shape",
                      {"'flatten'", "start=2 comes after end=1 for operand 0 (x) f32[2,3,4]"}));
  EXPECT_TRUE(
      isError(infer(OpKind::Flatten, {x}, {I("start", 3)}), "shape", {"start=3 is out of range"}));
  EXPECT_TRUE(isError(infer(OpKind::Flatten, {T(F32, {})}, {I("start", 1)}), "shape",
                      {"start=1 is out of range"}));
}

TEST(ShapeRules, ExpandIsBidirectional) {
  EXPECT_TRUE(
      isType(infer(OpKind::Expand, {T(F32, {3, 1})}, {L("shape", {2, 3, 4})}), T(F32, {2, 3, 4})));
  EXPECT_TRUE(isType(infer(OpKind::Expand, {T(F32, {2, 3})}, {L("shape", {1})}), T(F32, {2, 3})));
  EXPECT_TRUE(
      isType(infer(OpKind::Expand, {T(F32, {2, 1})}, {L("shape", {1, 5})}), T(F32, {2, 5})));
  EXPECT_TRUE(isType(infer(OpKind::Expand, {T(I64, {})}, {L("shape", {2, 2})}), T(I64, {2, 2})));
  EXPECT_TRUE(isType(infer(OpKind::Expand, {T(F32, {1})}, {L("shape", {})}), T(F32, {1})));
  EXPECT_TRUE(isError(infer(OpKind::Expand, {T(F32, {2, 3})}, {L("shape", {4})}), "shape",
                      {"'expand' cannot broadcast operand 0 (x) f32[2,3] with shape [4]: dim 1 is "
                       "3 vs 4"}));
  EXPECT_TRUE(isError(infer(OpKind::Expand, {T(F32, {3})}, {L("shape", {-1, 3})}), "attr",
                      {"shape=[-1, 3] has the negative size -1"}));
}

// ---- types and sources --------------------------------------------------------------------

TEST(ShapeRules, CastTransferConstant) {
  EXPECT_TRUE(isType(infer(OpKind::Cast, {T(F32, {2, 3})}, {{"to", F16}}), T(F16, {2, 3})));
  EXPECT_TRUE(isType(infer(OpKind::Cast, {T(I64, {})}, {{"to", Bool}}), T(Bool, {})));
  EXPECT_TRUE(
      isType(infer(OpKind::Transfer, {T(BF16, {4})}, {{"to", Device::cuda(0)}}), T(BF16, {4})));
  EXPECT_TRUE(
      isType(infer(OpKind::Constant, {}, {{"value", TensorData(I32, {2, 2})}}), T(I32, {2, 2})));
  EXPECT_TRUE(
      isType(infer(OpKind::Constant, {}, {{"value", TensorData::full(F64, {}, 1.5)}}), T(F64, {})));
  EXPECT_TRUE(isError(infer(OpKind::Cast, {T(F32, {2})}), "test", {"requires attribute 'to'"}));
  EXPECT_TRUE(isError(infer(OpKind::Constant, {T(F32, {2})}, {{"value", TensorData(I32, {2})}}),
                      "arity", {"'constant' takes 0 operands"}));
}

TEST(ShapeRules, ElementCountsBeyond2To62AreRejected) {
  const int64_t big = int64_t{1} << 32;
  EXPECT_TRUE(isType(infer(OpKind::Neg, {T(U8, {big / 2, big / 2})}), T(U8, {big / 2, big / 2})));
  EXPECT_TRUE(isError(infer(OpKind::Neg, {T(F32, {big, big})}), "shape", {"'neg'", "2^62"}));
  EXPECT_TRUE(
      isError(infer(OpKind::Expand, {T(F32, {1})}, {L("shape", {big, big})}), "shape", {"2^62"}));
  EXPECT_TRUE(
      isError(infer(OpKind::Matmul, {T(F32, {big, 1}), T(F32, {1, big})}), "shape", {"2^62"}));
  EXPECT_TRUE(
      isError(infer(OpKind::Flatten, {T(F32, {big, big, 0})}, {I("end", 1)}), "shape", {"2^62"}));
  EXPECT_TRUE(
      isError(infer(OpKind::Reshape, {T(F32, {big, big})}, {L("shape", {-1})}), "shape", {"2^62"}));
}

// A result the saved executable could not hold is refused here, where it is made (typeLimitError):
// 2^63 bytes or more, zero dims counted as 1, or more than 64 dims.
TEST(ShapeRules, ResultsBeyondTheTypeLimitAreRejected) {
  const int64_t huge = int64_t{1} << 62;
  EXPECT_TRUE(isError(infer(OpKind::Expand, {T(F32, {0, 1})}, {L("shape", {0, huge})}), "shape",
                      {"'expand' result f32[0,4611686018427387904] takes 2^63 bytes or more "
                       "(zero dims counted as 1)"}));
  EXPECT_TRUE(isError(infer(OpKind::Reshape, {T(F32, {0})}, {L("shape", {0, huge, 4})}), "shape",
                      {"'reshape' result", "2^63 bytes"}));
  EXPECT_TRUE(isError(infer(OpKind::Expand, {T(F64, {1})}, {L("shape", {int64_t{1} << 60})}),
                      "shape", {"2^63 bytes"}));
  EXPECT_TRUE(isType(infer(OpKind::Expand, {T(F32, {0, 1})}, {L("shape", {0, huge / 8})}),
                     T(F32, {0, huge / 8})));
  EXPECT_TRUE(isType(infer(OpKind::Unsqueeze, {T(F32, Shape(63, 1))}, {L("axes", {0})}),
                     T(F32, Shape(64, 1))));
  EXPECT_TRUE(isError(infer(OpKind::Unsqueeze, {T(F32, Shape(64, 1))}, {L("axes", {0})}), "shape",
                      {"'unsqueeze' result", "has 65 dims, at most 64"}));
}

// Every op with extreme attribute values and odd shapes: a type or a coded error, never a crash
// (inferType aborts on a negative dim; the sanitizer build catches overflow).
TEST(ShapeRules, ExtremeAttributesNeverCrash) {
  const std::vector<std::vector<int64_t>> intsValues = {{},
                                                        {kMin},
                                                        {kMax},
                                                        {kMin, kMax},
                                                        {kMax, kMin},
                                                        {-1, -1},
                                                        {0, 0},
                                                        {kMax, kMax, kMax, kMax},
                                                        {1, 2, 3, 4, 5},
                                                        {-1, 0, 1, 2}};
  const std::vector<int64_t> intValues = {kMin, kMax, -5, -1, 0, 1, 4};
  const std::vector<Shape> shapes = {{2, 3, 4, 5}, {0, 1, 3, 1}, {}, {1}, {7, 0}};
  const std::set<std::string> codes = {"shape", "attr", "dtype", "arity"};
  int calls = 0;
  for (const OpInfo &op : allOps()) {
    for (const Shape &shape : shapes) {
      std::vector<TensorType> operands;
      int n = op.maxOperands < 0 ? 2 : op.maxOperands;
      for (int i = 0; i < n; ++i) {
        OperandRole role = op.operand(i).role;
        operands.push_back(T(role == OperandRole::Bool    ? Bool
                             : role == OperandRole::Index ? I64
                                                          : F32,
                             shape));
      }
      Attrs base;
      for (const AttrSpec &s : op.attrs) {
        if (!s.required)
          base.push_back(s.defaultValue);
        else if (s.kind == AttrKind::Ints)
          base.push_back(std::vector<int64_t>{1, 1});
        else if (s.kind == AttrKind::DType)
          base.push_back(F16);
        else if (s.kind == AttrKind::Device)
          base.push_back(Device::cpu(1));
        else
          base.push_back(TensorData(I8, {2}));
      }
      auto check = [&](const Attrs &attrs) {
        ++calls;
        InferResult r = inferType(op, operands, attrs);
        if (const auto *e = std::get_if<InferError>(&r)) {
          EXPECT_TRUE(codes.count(e->code)) << e->code;
          EXPECT_NE(e->message.find("'" + std::string(op.name) + "'"), std::string::npos)
              << e->message;
        }
      };
      check(base);
      for (size_t i = 0; i < op.attrs.size(); ++i) {
        Attrs attrs = base;
        if (op.attrs[i].kind == AttrKind::Ints)
          for (const std::vector<int64_t> &v : intsValues) check((attrs[i] = v, attrs));
        if (op.attrs[i].kind == AttrKind::Int)
          for (int64_t v : intValues) check((attrs[i] = v, attrs));
      }
    }
  }
  EXPECT_GT(calls, 1000);
}

}  // namespace
}  // namespace ferry
