// tests/ir/dtype_device_test.cpp — dtype names, sizes, promotion; device parsing and printing.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "ir/device.h"
#include "ir/dtype.h"
#include "ir/tensor_data.h"
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

// convertElements converts f32 <-> f16/bf16 in bulk (F16C where the build has it); each result
// must be the bits the element-by-element conversion gives.
void expectBulkMatchesElementwise(DType from, DType to, const std::vector<std::byte> &in) {
  const size_t inSize = dtypeSize(from), outSize = dtypeSize(to), n = in.size() / inSize;
  std::vector<std::byte> bulk(n * outSize), one(n * outSize);
  convertElements(from, in.data(), to, bulk.data(), n);
  for (size_t i = 0; i < n; ++i)
    convertElement(from, in.data() + i * inSize, to, one.data() + i * outSize);
  int mismatches = 0;
  for (size_t i = 0; i < n && mismatches < 5; ++i) {
    if (std::memcmp(bulk.data() + i * outSize, one.data() + i * outSize, outSize) == 0) continue;
    // NaNs may differ in payload; both must be NaN.
    const double a = loadDouble(to, bulk.data() + i * outSize),
                 b = loadDouble(to, one.data() + i * outSize);
    if (std::isnan(a) && std::isnan(b)) continue;
    ++mismatches;
    ADD_FAILURE() << dtypeName(from) << " -> " << dtypeName(to) << " element " << i << ": " << a
                  << " in bulk, " << b << " one by one";
  }
}

TEST(ConvertElements, HalvesInBulkMatchTheScalarConversionBitForBit) {
  // Every f16 and bf16 bit pattern to f32.
  std::vector<std::byte> halves(2 * 65536);
  for (uint32_t b = 0; b < 65536; ++b) {
    const auto v = static_cast<uint16_t>(b);
    std::memcpy(halves.data() + 2 * b, &v, 2);
  }
  expectBulkMatchesElementwise(DType::F16, DType::F32, halves);
  expectBulkMatchesElementwise(DType::BF16, DType::F32, halves);
  // f32 to both: specials, values halfway between two halves (ties round to even), subnormals,
  // overflow, and a spread of bit patterns over the whole range.
  std::vector<float> floats{0.0f,
                            -0.0f,
                            1.0f,
                            -1.0f,
                            65504.0f,
                            65520.0f,
                            65519.99f,
                            1e-8f,
                            -6e-8f,
                            1e30f,
                            -1e30f,
                            std::nanf(""),
                            -std::nanf(""),
                            INFINITY,
                            -INFINITY,
                            1.0f + 0x1p-11f,
                            1.0f + 0x1p-10f + 0x1p-11f,
                            1.0f + 0x1p-8f,
                            1.0f + 0x1p-7f + 0x1p-8f,
                            0x1p-149f};
  for (uint64_t b = 0; b < (uint64_t{1} << 32); b += 4099) {
    const auto u = static_cast<uint32_t>(b);
    float f;
    std::memcpy(&f, &u, 4);
    floats.push_back(f);
  }
  std::vector<std::byte> in(floats.size() * 4);
  std::memcpy(in.data(), floats.data(), in.size());
  expectBulkMatchesElementwise(DType::F32, DType::F16, in);
  expectBulkMatchesElementwise(DType::F32, DType::BF16, in);
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
