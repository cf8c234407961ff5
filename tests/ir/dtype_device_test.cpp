// tests/ir/dtype_device_test.cpp — dtype names, sizes, promotion; device parsing and printing.
#include <gtest/gtest.h>

#include "ir/device.h"
#include "ir/dtype.h"
#include "ir/types.h"

namespace ferry {
namespace {

TEST(DType, NamesRoundTripAndSizes) {
  for (DType t : kAllDTypes) {
    auto parsed = parseDType(dtypeName(t));
    ASSERT_TRUE(parsed.has_value()) << dtypeName(t);
    EXPECT_EQ(*parsed, t);
  }
  EXPECT_EQ(dtypeSize(DType::Bool), 1u);
  EXPECT_EQ(dtypeSize(DType::F16), 2u);
  EXPECT_EQ(dtypeSize(DType::BF16), 2u);
  EXPECT_EQ(dtypeSize(DType::I64), 8u);
  EXPECT_EQ(dtypeCategory(DType::U8), DTypeCategory::Integer);
  EXPECT_TRUE(isFloating(DType::BF16));
  EXPECT_FALSE(isFloating(DType::I32));
}

TEST(DType, BadNamesAreRejected) {
  for (const char *s : {"", "float", "F32", "f8", "int", "f32 ", "bfloat16", "i16"})
    EXPECT_FALSE(parseDType(s).has_value()) << "'" << s << "'";
}

// Expected values written from torch.promote_types (PyTorch 2.x), with i16 results mapped to
// ferry's next wider integer type, i32.
TEST(DType, PromotionMatchesPyTorchTable) {
  using enum DType;
  struct Case {
    DType a, b, want;
  };
  const Case cases[] = {
      {Bool, Bool, Bool}, {Bool, U8, U8},   {Bool, I64, I64}, {Bool, F16, F16}, {U8, I8, I32},
      {U8, I32, I32},     {I8, I32, I32},   {I32, I64, I64},  {I64, F16, F16},  {I64, BF16, BF16},
      {U8, F32, F32},     {F16, BF16, F32}, {F16, F32, F32},  {BF16, F32, F32}, {F32, F64, F64},
      {F16, F64, F64},    {I8, I8, I8},     {U8, U8, U8},     {Bool, F64, F64}, {I32, F16, F16},
  };
  for (const Case &c : cases) {
    EXPECT_EQ(promoteTypes(c.a, c.b), c.want) << dtypeName(c.a) << " + " << dtypeName(c.b);
    EXPECT_EQ(promoteTypes(c.b, c.a), c.want)
        << "symmetry: " << dtypeName(c.b) << " + " << dtypeName(c.a);
  }
}

TEST(DType, PromotionIsCommutativeAndIdempotent) {
  for (DType a : kAllDTypes) {
    EXPECT_EQ(promoteTypes(a, a), a);
    for (DType b : kAllDTypes) {
      DType r = promoteTypes(a, b);
      EXPECT_EQ(r, promoteTypes(b, a));
      EXPECT_GE(dtypeCategory(r), dtypeCategory(a));
      EXPECT_GE(dtypeCategory(r), dtypeCategory(b));
    }
  }
}

// torch.result_type's zero-dim rule (the full tables are in tests/passes/promotion_test.cpp).
TEST(DType, ResultTypeLetsZeroDimOperandsInOnlyFromAHigherCategory) {
  using enum DType;
  auto resultType = [](std::initializer_list<std::pair<DType, bool>> operands) {
    ResultType r;
    for (auto [t, zeroDim] : operands) r.add(t, zeroDim);
    return r.get();
  };
  EXPECT_EQ(resultType({{F16, false}, {F32, false}}), F32);
  EXPECT_EQ(resultType({{F16, false}, {F64, true}}), F16);
  EXPECT_EQ(resultType({{U8, false}, {I64, true}}), U8);
  EXPECT_EQ(resultType({{I32, false}, {F64, true}}), F64);
  EXPECT_EQ(resultType({{Bool, false}, {I8, true}}), I8);
  EXPECT_EQ(resultType({{F16, true}, {BF16, true}}), F32);
  EXPECT_TRUE(ResultType().empty());
}

TEST(Device, ParsesAndPrintsCanonically) {
  struct Case {
    const char *in;
    const char *out;
  };
  for (Case c : {Case{"cpu", "cpu"}, Case{"cpu:0", "cpu"}, Case{"cpu:3", "cpu:3"},
                 Case{"cuda:0", "cuda:0"}, Case{"cuda:12", "cuda:12"}}) {
    auto d = parseDevice(c.in);
    ASSERT_TRUE(d.ok()) << c.in << ": " << d.status().message();
    EXPECT_EQ(d->str(), c.out);
  }
  EXPECT_EQ(*parseDevice("cuda:1"), Device::cuda(1));
  EXPECT_EQ(*parseDevice("cpu:2"), Device::cpu(2));
  EXPECT_LT(Device::cpu(), Device::cuda(0));
}

TEST(Device, BadStringsSayWhatWasExpected) {
  for (const char *s : {"gpu", "cuda", "cuda:", "cuda:x", "cuda:-1", "cuda:+1", "cuda:1x", "CPU",
                        "", "cpu:", "cuda:0:1", "cuda:99999999999", "cuda:1024", " cpu"}) {
    auto d = parseDevice(s);
    ASSERT_FALSE(d.ok()) << "'" << s << "' was accepted as " << d->str();
    const std::string msg = d.status().message();
    EXPECT_NE(msg.find("invalid device '" + std::string(s) + "'"), std::string::npos) << msg;
    EXPECT_EQ(d.status().diagnostics()[0].code, "device");
  }
  EXPECT_NE(parseDevice("gpu").status().message().find("expected 'cpu', 'cpu:N' or 'cuda:N'"),
            std::string::npos);
}

TEST(Shape, BroadcastFollowsNumPy) {
  EXPECT_EQ(*broadcastShapes(Shape{2, 1, 4}, Shape{3, 1}), (Shape{2, 3, 4}));
  EXPECT_EQ(*broadcastShapes(Shape{}, Shape{5}), (Shape{5}));
  EXPECT_EQ(*broadcastShapes(Shape{0, 1}, Shape{1, 3}), (Shape{0, 3}));
  EXPECT_EQ(*broadcastShapes(Shape{1}, Shape{0}), (Shape{0}));
  EXPECT_FALSE(broadcastShapes(Shape{2, 3}, Shape{4}).has_value());
  EXPECT_FALSE(broadcastShapes(Shape{0}, Shape{2}).has_value());
  EXPECT_EQ(numel(Shape{}), 1);
  EXPECT_EQ(numel(Shape{3, 0}), 0);
  EXPECT_EQ(shapeStr(Shape{32, 784}), "[32,784]");
  EXPECT_EQ((TensorType{DType::F16, {2, 3}}.str()), "f16[2,3]");
  EXPECT_EQ(normalizeAxis(-1, 3), 2);
  EXPECT_FALSE(normalizeAxis(3, 3).has_value());
  EXPECT_FALSE(normalizeAxis(-4, 3).has_value());
}

}  // namespace
}  // namespace ferry
