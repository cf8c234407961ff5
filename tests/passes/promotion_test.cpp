// tests/passes/promotion_test.cpp — PyTorch's promotion tables (promote_types, result_type with
// zero-dim operands and with Python scalars), written out from its documentation, checked against
// ferry's lattice, core type inference, scalar literals in `.fy` text and the casts the dtype pass
// inserts under `promote`.
#include <gtest/gtest.h>

#include "ir/literal.h"
#include "ir/ops.h"
#include "ir/parser.h"
#include "ir/printer.h"
#include "passes/compile.h"
#include "passes/pass.h"

namespace ferry {
namespace {

using enum DType;

// Rows and columns in kAllDTypes order.
constexpr DType kOrder[] = {Bool, U8, I8, I32, I64, F16, BF16, F32, F64};

// torch.promote_types(row, column), from the table in c10/core/ScalarType.cpp that the "Type
// promotion" section of PyTorch's tensor_attributes documentation describes: the smallest dtype
// of the higher category (bool < integer < floating) that holds both; f16 with bf16 is f32.
// PyTorch answers u8 with i8 by i16, which ferry lacks: ferry says i32 (docs/decisions.md).
// clang-format off
constexpr DType kPromoteTypes[9][9] = {
    //          bool  u8    i8    i32   i64   f16   bf16  f32   f64
    /* bool */ {Bool, U8,   I8,   I32,  I64,  F16,  BF16, F32,  F64},
    /* u8   */ {U8,   U8,   I32,  I32,  I64,  F16,  BF16, F32,  F64},
    /* i8   */ {I8,   I32,  I8,   I32,  I64,  F16,  BF16, F32,  F64},
    /* i32  */ {I32,  I32,  I32,  I32,  I64,  F16,  BF16, F32,  F64},
    /* i64  */ {I64,  I64,  I64,  I64,  I64,  F16,  BF16, F32,  F64},
    /* f16  */ {F16,  F16,  F16,  F16,  F16,  F16,  F32,  F32,  F64},
    /* bf16 */ {BF16, BF16, BF16, BF16, BF16, F32,  BF16, F32,  F64},
    /* f32  */ {F32,  F32,  F32,  F32,  F32,  F32,  F32,  F32,  F64},
    /* f64  */ {F64,  F64,  F64,  F64,  F64,  F64,  F64,  F64,  F64},
};
// clang-format on

// torch.result_type(dimensioned tensor of the row's dtype, zero-dim tensor of the column's).
// The documented rule: "If a zero-dimension tensor operand has a higher category than
// dimensioned operands, we promote to a type with sufficient size and category to hold all
// zero-dim tensor operands of that category. If there are no higher-category zero-dim
// operands, we promote to a type with sufficient size and category to hold all dimensioned
// operands." So within a category the dimensioned operand wins (u8[2] + i64[] is u8, f16[2] +
// f64[] is f16), and a higher-category zero-dim operand's dtype is promoted in.
// clang-format off
constexpr DType kDimWithZeroDim[9][9] = {
    //          bool  u8    i8    i32   i64   f16   bf16  f32   f64     (zero-dim)
    /* bool */ {Bool, U8,   I8,   I32,  I64,  F16,  BF16, F32,  F64},
    /* u8   */ {U8,   U8,   U8,   U8,   U8,   F16,  BF16, F32,  F64},
    /* i8   */ {I8,   I8,   I8,   I8,   I8,   F16,  BF16, F32,  F64},
    /* i32  */ {I32,  I32,  I32,  I32,  I32,  F16,  BF16, F32,  F64},
    /* i64  */ {I64,  I64,  I64,  I64,  I64,  F16,  BF16, F32,  F64},
    /* f16  */ {F16,  F16,  F16,  F16,  F16,  F16,  F16,  F16,  F16},
    /* bf16 */ {BF16, BF16, BF16, BF16, BF16, BF16, BF16, BF16, BF16},
    /* f32  */ {F32,  F32,  F32,  F32,  F32,  F32,  F32,  F32,  F32},
    /* f64  */ {F64,  F64,  F64,  F64,  F64,  F64,  F64,  F64,  F64},
};
// clang-format on

// torch.result_type(tensor of the row's dtype, Python scalar of the column's kind), i.e. what
// `tensor + 1.0`, `tensor + 2` and `tensor + True` give. The documented rule: "If a zero-dimension
// tensor operand has a higher category than dimensioned operands, we promote to a type with
// sufficient size and category to hold all zero-dim tensor operands of that category. If there
// are no higher-category zero-dim operands, we promote to a type with sufficient size and
// category to hold all dimensioned operands. A Python scalar is treated as a zero-dim tensor of
// the lowest priority: a float scalar is of the default dtype (float32), an int scalar int64, a
// bool scalar bool" ("Type promotion" in tensor_attributes; c10's ResultTypeState keeps
// `wrappedResult` below `zeroResult`). The documentation's examples: int_tensor + 5 is int32,
// int_tensor + 5.5 is float32 (the default dtype), f16 + 1.0 stays float16.
// A zero-dim tensor alone meets a scalar the same way (f16[] + 1.0 is f16, i32[] + 1.0 is f32).
enum Scalar { PyFloat, PyInt, PyBool };
constexpr DTypeCategory kScalarKind[] = {DTypeCategory::Floating, DTypeCategory::Integer,
                                         DTypeCategory::Bool};
constexpr const char *kScalarText[] = {"1.0", "2", "true"};
// clang-format off
constexpr DType kWithScalar[9][3] = {
    //          float int   bool     (Python scalar)
    /* bool */ {F32,  I64,  Bool},
    /* u8   */ {F32,  U8,   U8},
    /* i8   */ {F32,  I8,   I8},
    /* i32  */ {F32,  I32,  I32},
    /* i64  */ {F32,  I64,  I64},
    /* f16  */ {F16,  F16,  F16},
    /* bf16 */ {BF16, BF16, BF16},
    /* f32  */ {F32,  F32,  F32},
    /* f64  */ {F64,  F64,  F64},
};
// clang-format on

DType resultType(std::initializer_list<std::pair<DType, bool>> operands) {
  ResultType r;
  for (auto [t, zeroDim] : operands) r.add(t, zeroDim);
  return r.get();
}

std::string pair(DType a, DType b) {
  return std::string(dtypeName(a)) + ", " + std::string(dtypeName(b));
}

TEST(Promotion, TheTableIsInFerrysDTypeOrder) {
  ASSERT_EQ(std::size(kOrder), kAllDTypes.size());
  for (size_t i = 0; i < kAllDTypes.size(); ++i) EXPECT_EQ(kOrder[i], kAllDTypes[i]);
}

TEST(Promotion, PromoteTypesMatchesPyTorchForEveryPair) {
  for (size_t i = 0; i < 9; ++i)
    for (size_t j = 0; j < 9; ++j)
      EXPECT_EQ(promoteTypes(kOrder[i], kOrder[j]), kPromoteTypes[i][j])
          << pair(kOrder[i], kOrder[j]);
}

TEST(Promotion, ResultTypeOfTensorsOfOneKindIsPromoteTypes) {
  for (size_t i = 0; i < 9; ++i)
    for (size_t j = 0; j < 9; ++j) {
      EXPECT_EQ(resultType({{kOrder[i], false}, {kOrder[j], false}}), kPromoteTypes[i][j])
          << "dimensioned " << pair(kOrder[i], kOrder[j]);
      EXPECT_EQ(resultType({{kOrder[i], true}, {kOrder[j], true}}), kPromoteTypes[i][j])
          << "zero-dim " << pair(kOrder[i], kOrder[j]);
    }
}

TEST(Promotion, ResultTypeOfDimensionedWithZeroDimMatchesPyTorch) {
  for (size_t i = 0; i < 9; ++i)
    for (size_t j = 0; j < 9; ++j) {
      EXPECT_EQ(resultType({{kOrder[i], false}, {kOrder[j], true}}), kDimWithZeroDim[i][j])
          << "dimensioned " << pair(kOrder[i], kOrder[j]) << " zero-dim";
      EXPECT_EQ(resultType({{kOrder[j], true}, {kOrder[i], false}}), kDimWithZeroDim[i][j])
          << "order does not matter";
    }
}

// The examples of PyTorch's documentation (tensor_attributes "Type promotion", result_type).
TEST(Promotion, ResultTypeReproducesTheDocumentedExamples) {
  EXPECT_EQ(resultType({{I32, false}, {I64, true}}), I32);   // int_tensor + long_zerodim
  EXPECT_EQ(resultType({{I64, false}, {I32, false}}), I64);  // long_tensor + int_tensor
  EXPECT_EQ(resultType({{Bool, false}, {I64, false}}), I64);
  EXPECT_EQ(resultType({{Bool, false}, {U8, false}}), U8);
  EXPECT_EQ(resultType({{F32, false}, {F64, false}}), F64);
  EXPECT_EQ(resultType({{Bool, false}, {I32, false}}), I32);
  EXPECT_EQ(resultType({{I64, false}, {F32, false}}), F32);
  EXPECT_EQ(resultType({{U8, false}, {I64, true}}), U8);  // torch.result_type example
  // Several operands: each kind is promoted first, then the zero-dim rule applies once.
  EXPECT_EQ(resultType({{I32, false}, {F16, true}, {F64, true}}), F64);
  EXPECT_EQ(resultType({{F16, false}, {I64, false}, {F64, true}}), F16);
  EXPECT_EQ(resultType({{Bool, false}, {I8, true}, {U8, true}}), I32);  // PyTorch: i16
  EXPECT_EQ(resultType({{F16, true}, {BF16, true}}), F32);              // only zero-dim ones
}

TEST(Promotion, ResultTypeWithAPythonScalarMatchesPyTorch) {
  for (size_t i = 0; i < 9; ++i)
    for (int k = 0; k < 3; ++k) {
      for (bool zeroDim : {false, true}) {
        ResultType r;
        r.add(kOrder[i], zeroDim);
        r.addWrapped(kScalarKind[k]);
        EXPECT_EQ(r.get(), kWithScalar[i][k])
            << dtypeName(kOrder[i]) << (zeroDim ? "[]" : "[2]") << " + " << kScalarText[k];
        ResultType first;  // the order does not matter
        first.addWrapped(kScalarKind[k]);
        first.add(kOrder[i], zeroDim);
        EXPECT_EQ(first.get(), kWithScalar[i][k]);
      }
    }
  // Scalars alone: the default dtypes; several: promoted among themselves.
  auto scalars = [](std::initializer_list<DTypeCategory> kinds) {
    ResultType r;
    for (DTypeCategory k : kinds) r.addWrapped(k);
    return r.get();
  };
  EXPECT_EQ(scalars({DTypeCategory::Floating}), F32);
  EXPECT_EQ(scalars({DTypeCategory::Integer, DTypeCategory::Bool}), I64);
  EXPECT_EQ(scalars({DTypeCategory::Integer, DTypeCategory::Floating}), F32);
  // All three tiers: each decides only when the ones above it are of a lower category.
  ResultType r;
  r.add(I32, false);
  r.add(F16, true);
  r.addWrapped(DTypeCategory::Floating);
  EXPECT_EQ(r.get(), F16);  // i32[2] + f16[] + 1.0: the zero-dim f16 decides, not the scalar
  ResultType u;
  u.add(U8, false);
  u.add(I8, true);
  u.addWrapped(DTypeCategory::Floating);
  EXPECT_EQ(u.get(), F32);  // u8[2] + i8[] + 1.0: the scalar is the only float
}

// `.fy` literals: `op(%a, LITERAL)` and `op(LITERAL, %a)` for add and mul give the table's dtype;
// the literal is stored in it, and compiling inserts no cast for it (nor for %a, which already
// has it whenever PyTorch does not promote).
TEST(Promotion, LiteralsInTheTextTakeThePyTorchDType) {
  for (const char *op : {"add", "mul"})
    for (size_t i = 0; i < 9; ++i)
      for (int k = 0; k < 3; ++k)
        for (bool literalFirst : {false, true}) {
          const DType a = kOrder[i], want = kWithScalar[i][k];
          const std::string call = std::string(op) + "(" +
                                   (literalFirst ? std::string(kScalarText[k]) + ", %a"
                                                 : "%a, " + std::string(kScalarText[k])) +
                                   ")";
          const std::string what = std::string(dtypeName(a)) + "[2]: " + call;
          SCOPED_TRACE(what);
          const std::string text = "graph g {\n  input %a : " + std::string(dtypeName(a)) +
                                   "[2]\n  %r = " + call + "\n  output %r\n}\n";
          Expected<Graph> g = parseGraph(text, "t.fy");
          ASSERT_TRUE(g.ok()) << g.status().message();
          const Node &n = *g->producer(*g->findValue("r"));
          const ValueId lit = n.operands[literalFirst ? 0 : 1];
          ASSERT_TRUE(isLiteral(*g, lit));
          EXPECT_EQ(g->value(n.result).type.dtype, want);
          EXPECT_EQ(g->value(lit).type, (TensorType{want, {}}));
          for (DTypePolicy::Kind policy : {DTypePolicy::Kind::Strict, DTypePolicy::Kind::Promote}) {
            CompileOptions options;
            options.dtype = {policy, F16};
            CompileResult r = compile(*g, options);
            ASSERT_TRUE(r.ok()) << renderText(r.diagnostics);
            EXPECT_EQ(r.stats.castsInserted, a != want ? 1 : 0) << printGraph(r.graph);
            const Node &c = *r.graph.producer(r.graph.outputs()[0].value);
            EXPECT_EQ(r.graph.value(c.result).type.dtype, want);
            for (ValueId o : c.operands) EXPECT_EQ(r.graph.value(o).type.dtype, want);
          }
        }
}

// Core type inference applies the same rule, so parsed graphs are already typed by it.
TEST(Promotion, TypeInferenceUsesResultType) {
  auto infer = [](OpKind op, std::vector<TensorType> operands) {
    InferResult r = inferType(opInfo(op), operands, *makeAttrs(opInfo(op), {}, {}));
    EXPECT_TRUE(std::holds_alternative<TensorType>(r));
    return std::get<TensorType>(r).dtype;
  };
  EXPECT_EQ(infer(OpKind::Add, {{F16, {4}}, {F32, {}}}), F16);
  EXPECT_EQ(infer(OpKind::Mul, {{I32, {4}}, {F64, {}}}), F64);
  EXPECT_EQ(infer(OpKind::Div, {{U8, {4}}, {I64, {}}}), F32);
  EXPECT_EQ(infer(OpKind::Where, {{Bool, {4}}, {I32, {4}}, {F64, {}}}), F64);
  EXPECT_EQ(infer(OpKind::Less, {{F16, {4}}, {F64, {}}}), Bool);
  EXPECT_EQ(infer(OpKind::Add, {{F16, {}}, {BF16, {}}}), F32);
}

// Under `promote` the pass casts exactly the operands whose dtype differs from the table's.
TEST(Promotion, ThePassCastsExactlyTheOperandsTheTableSays) {
  CompileOptions options;
  options.dtype = {DTypePolicy::Kind::Promote, F16};
  for (bool zeroDim : {false, true})
    for (size_t i = 0; i < 9; ++i)
      for (size_t j = 0; j < 9; ++j) {
        DType a = kOrder[i], b = kOrder[j];
        DType want = zeroDim ? kDimWithZeroDim[i][j] : kPromoteTypes[i][j];
        std::string text = "graph g {\n  input %a : " + std::string(dtypeName(a)) +
                           "[2]\n  input %b : " + std::string(dtypeName(b)) +
                           (zeroDim ? "[]" : "[2]") + "\n  %r = add(%a, %b)\n  output %r\n}\n";
        Expected<Graph> g = parseGraph(text, "t.fy");
        ASSERT_TRUE(g.ok()) << g.status().message();
        for (ValueId v = 0; v < static_cast<ValueId>(g->valueCount()); ++v)
          g->value(v).device = Device::cpu();
        DiagnosticEngine diags;
        CompileStats stats;
        PassContext ctx{options, diags, stats};
        assignDTypes(*g, ctx);
        const std::string what = pair(a, b) + (zeroDim ? "[]" : "");
        ASSERT_FALSE(diags.hasErrors()) << what;
        const Node &add = *g->producer(*g->findValue("r"));
        EXPECT_EQ(g->value(add.result).type.dtype, want) << what;
        EXPECT_EQ(stats.castsInserted, (a != want) + (b != want)) << what;
        for (ValueId o : add.operands) EXPECT_EQ(g->value(o).type.dtype, want) << what;
      }
}

}  // namespace
}  // namespace ferry
