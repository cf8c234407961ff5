// tests/ir/cost_test.cpp — flops and bytes of every cost rule, computed by hand.
#include <gtest/gtest.h>

#include <vector>

#include "ir/ops.h"

namespace ferry {
namespace {

using enum DType;

TensorType T(DType d, Shape s) { return TensorType{d, std::move(s)}; }

/// The cost of `k` on `operands`, with the result type from inference.
OpCost cost(OpKind k, std::vector<TensorType> operands, std::vector<NamedAttr> given = {}) {
  const OpInfo &op = opInfo(k);
  Expected<Attrs> attrs = makeAttrs(op, given, Location{});
  EXPECT_TRUE(attrs.ok()) << op.name;
  if (!attrs.ok()) return {-1, -1};
  InferResult r = inferType(op, operands, *attrs);
  const auto *out = std::get_if<TensorType>(&r);
  EXPECT_NE(out, nullptr) << op.name << ": " << std::get<InferError>(r).message;
  if (!out) return {-1, -1};
  return opCost(op, operands, *attrs, *out);
}

void expectCost(const OpCost &c, double flops, double bytes) {
  EXPECT_DOUBLE_EQ(c.flops, flops);
  EXPECT_DOUBLE_EQ(c.bytes, bytes);
}

TEST(Cost, NoneIsFree) {
  expectCost(cost(OpKind::Constant, {}, {{"value", TensorData(F32, {100})}}), 0, 0);
  expectCost(cost(OpKind::Identity, {T(F32, {100})}), 0, 0);
}

TEST(Cost, Elementwise) {
  // One flop per result element; 24 bytes read, 24 written.
  expectCost(cost(OpKind::Relu, {T(F32, {2, 3})}), 6, 48);
  expectCost(cost(OpKind::Exp, {T(F16, {8})}), 8, 32);
  // cast: f32[4] read (16 bytes), f16[4] written (8).
  expectCost(cost(OpKind::Cast, {T(F32, {4})}, {{"to", F16}}), 4, 24);
  // Broadcast operands are read once: 24 + 12 read, 24 written.
  expectCost(cost(OpKind::Add, {T(F32, {2, 3}), T(F32, {3})}), 6, 60);
  // bool[2,3] cond (6 bytes) + two f32[2,3] (48) read, f32[2,3] written (24).
  expectCost(cost(OpKind::Where, {T(Bool, {2, 3}), T(F32, {2, 3}), T(F32, {2, 3})}), 6, 78);
  // Comparisons write bool.
  expectCost(cost(OpKind::Less, {T(F32, {10}), T(F32, {10})}), 10, 90);
}

TEST(Cost, Matmul) {
  // 2·M·N·K = 2·2·4·3; bytes (6 + 12 + 8)·4.
  expectCost(cost(OpKind::Matmul, {T(F32, {2, 3}), T(F32, {3, 4})}), 48, 104);
  // batch 5: 2·5·2·4·3; bytes (30 + 12 + 40)·4.
  expectCost(cost(OpKind::Matmul, {T(F32, {5, 2, 3}), T(F32, {3, 4})}), 240, 328);
  // dot product: 2·3; bytes (3 + 3 + 1)·4.
  expectCost(cost(OpKind::Matmul, {T(F32, {3}), T(F32, {3})}), 6, 28);
  // [3] x [5,3,4]: M = 1, batch 5: 2·5·4·3; bytes (3 + 60 + 20)·2.
  expectCost(cost(OpKind::Matmul, {T(F16, {3}), T(F16, {5, 3, 4})}), 120, 166);
}

TEST(Cost, Linear) {
  // 2·rows·in·out = 2·8·16·32 = 8192, + 256 bias adds; bytes (128 + 512 + 32 + 256)·4.
  expectCost(cost(OpKind::Linear, {T(F32, {8, 16}), T(F32, {32, 16}), T(F32, {32})}), 8448, 3712);
  expectCost(cost(OpKind::Linear, {T(F32, {8, 16}), T(F32, {32, 16})}), 8192, 3584);
  // rows = 2·5.
  expectCost(cost(OpKind::Linear, {T(F32, {2, 5, 4}), T(F32, {3, 4})}), 240, (40 + 12 + 30) * 4);
}

TEST(Cost, Conv2d) {
  // Output [1,16,30,30] = 14400 elements, each 2·3·3·3 flops; bytes (3072 + 432 + 14400)·4.
  expectCost(cost(OpKind::Conv2d, {T(F32, {1, 3, 32, 32}), T(F32, {16, 3, 3, 3})}), 777600, 71616);
  // groups 2: output [1,6,6,6] = 216, each 2·(4/2)·3·3 = 36 flops, + 216 bias adds;
  // bytes (256 + 108 + 6 + 216)·4.
  expectCost(cost(OpKind::Conv2d, {T(F32, {1, 4, 8, 8}), T(F32, {6, 2, 3, 3}), T(F32, {6})},
                  {{"groups", int64_t{2}}}),
             7992, 2344);
}

TEST(Cost, Pool) {
  // Output [1,3,16,16] = 768 elements, 2·2 each; bytes (3072 + 768)·4.
  expectCost(
      cost(OpKind::MaxPool2d, {T(F32, {1, 3, 32, 32})}, {{"kernel", std::vector<int64_t>{2, 2}}}),
      3072, 15360);
  // Output [2,8,7,7] = 784 elements, 3·3 each; bytes (784 + 784)·2.
  expectCost(cost(OpKind::AvgPool2d, {T(F16, {2, 8, 7, 7})},
                  {{"kernel", std::vector<int64_t>{3, 3}},
                   {"stride", std::vector<int64_t>{1, 1}},
                   {"padding", std::vector<int64_t>{1, 1}}}),
             7056, 3136);
  // A reduction: one flop per input element; bytes (784 + 16)·4.
  expectCost(cost(OpKind::GlobalAvgPool, {T(F32, {2, 8, 7, 7})}), 784, 3200);
}

TEST(Cost, NormsAndReductions) {
  // Norms: 5 flops per input element.
  expectCost(cost(OpKind::LayerNorm, {T(F32, {2, 5, 8}), T(F32, {8}), T(F32, {8})}), 400, 704);
  expectCost(cost(OpKind::Softmax, {T(F32, {2, 5})}), 50, 80);
  expectCost(cost(OpKind::LogSoftmax, {T(F64, {4})}), 20, 64);
  const TensorType c = T(F32, {3});
  // x [2,3,4,4] = 96 elements; bytes (96 + 4·3 + 96)·4.
  expectCost(cost(OpKind::BatchNorm, {T(F32, {2, 3, 4, 4}), c, c, c, c}), 480, 816);
  // Reductions: 1 flop per input element; bytes (24 + 8)·4.
  expectCost(cost(OpKind::Sum, {T(F32, {2, 3, 4})}, {{"axes", std::vector<int64_t>{1}}}), 24, 128);
  // i32[4] read (16 bytes), i64[] written (8).
  expectCost(cost(OpKind::Sum, {T(I32, {4})}), 4, 24);
  expectCost(cost(OpKind::Max, {T(F16, {10, 10})}, {{"keepdims", true}}), 100, 202);
}

TEST(Cost, DataMovementReadsAndWritesTheResult) {
  expectCost(cost(OpKind::Reshape, {T(F32, {2, 3})}, {{"shape", std::vector<int64_t>{6}}}), 0, 48);
  expectCost(cost(OpKind::Transfer, {T(F16, {10})}, {{"to", Device::cuda(0)}}), 0, 40);
  expectCost(cost(OpKind::Gather, {T(F32, {5, 4}), T(I64, {3})}), 0, 96);
  expectCost(cost(OpKind::Concat, {T(F32, {2, 3}), T(F32, {4, 3})}), 0, 144);
  // Only the slice's result counts, not the whole input.
  expectCost(cost(OpKind::Slice, {T(F32, {100})},
                  {{"starts", std::vector<int64_t>{0}}, {"ends", std::vector<int64_t>{10}}}),
             0, 80);
  expectCost(cost(OpKind::Expand, {T(U8, {1})}, {{"shape", std::vector<int64_t>{4, 4}}}), 0, 32);
}

TEST(Cost, HugeShapesDoNotOverflow) {
  const int64_t n = int64_t{1} << 30;
  // 2^59 elements of f64 (the largest power of two of bytes a type may take, typeLimitError):
  // 2^62 bytes each way, 2^63 in all, beyond int64 but fine in double.
  OpCost c = cost(OpKind::Neg, {T(F64, {n, n / 2})});
  EXPECT_DOUBLE_EQ(c.flops, 0x1p59);
  EXPECT_DOUBLE_EQ(c.bytes, 0x1p63);
}

}  // namespace
}  // namespace ferry
