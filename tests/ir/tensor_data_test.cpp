// tests/ir/tensor_data_test.cpp — host tensors, element conversion rules, the seeded generator.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "ir/tensor_data.h"

namespace ferry {
namespace {

double roundTrip(DType t, double v) {
  std::byte buf[8];
  storeDouble(t, buf, v);
  return loadDouble(t, buf);
}

// Truncated toward zero into int64 (saturating there), then wrapped to the width.
TEST(TensorData, IntegersTruncateTowardZeroAndWrap) {
  EXPECT_EQ(roundTrip(DType::U8, 300.7), 44);
  EXPECT_EQ(roundTrip(DType::U8, -4), 252);
  EXPECT_EQ(roundTrip(DType::I8, -129), 127);
  EXPECT_EQ(roundTrip(DType::I32, -1.5), -1);
  EXPECT_EQ(roundTrip(DType::I32, 2.9), 2);
  EXPECT_EQ(roundTrip(DType::I32, 1e10), 1410065408);  // 1e10 mod 2^32
  EXPECT_EQ(roundTrip(DType::I32, std::nan("")), 0);
  EXPECT_EQ(roundTrip(DType::I64, 1e30), static_cast<double>(std::numeric_limits<int64_t>::max()));
  EXPECT_EQ(roundTrip(DType::I64, -1e30), static_cast<double>(std::numeric_limits<int64_t>::min()));
  EXPECT_EQ(roundTrip(DType::Bool, 0.25), 1);
  EXPECT_EQ(roundTrip(DType::Bool, 0.0), 0);
}

TEST(TensorData, CastsIntoIntegersWrapFromIntegersAndFloatsAlike) {
  auto cast = [](TensorData x, DType to) {
    std::vector<double> out;
    TensorData y = castTensor(x, to);
    for (int64_t i = 0; i < y.numel(); ++i)
      out.push_back(loadDouble(to, y.bytes().data() + i * dtypeSize(to)));
    return out;
  };
  const std::vector<double> big{300, -1, -129, 5e9};
  EXPECT_EQ(cast(TensorData::fromDoubles(DType::I64, {4}, big), DType::U8),
            (std::vector<double>{44, 255, 127, 0}));  // 5e9 = 0x12A05F200
  EXPECT_EQ(cast(TensorData::fromDoubles(DType::I64, {4}, big), DType::I8),
            (std::vector<double>{44, -1, 127, 0}));
  EXPECT_EQ(cast(TensorData::fromDoubles(DType::I64, {4}, big), DType::I32),
            (std::vector<double>{300, -1, -129, 705032704}));
  EXPECT_EQ(cast(TensorData::fromDoubles(DType::F64, {4}, big), DType::U8),
            (std::vector<double>{44, 255, 127, 0}));  // as from i64: one rule
  EXPECT_EQ(cast(TensorData::fromDoubles(DType::I64, {4}, big), DType::Bool),
            (std::vector<double>{1, 1, 1, 1}));
}

// castTensor converts floats in blocks with the dtype switches hoisted; it must give the bytes
// convertElement gives one element at a time, across block edges and for special values.
TEST(TensorData, CastBetweenFloatsMatchesConvertElementBitForBit) {
  const DType floats[] = {DType::F16, DType::BF16, DType::F32, DType::F64};
  std::vector<double> values{0.0,
                             -0.0,
                             1.0,
                             -2.5,
                             65504,
                             70000,
                             1e-8,
                             1e300,
                             -1e-300,
                             std::numeric_limits<double>::infinity(),
                             -std::numeric_limits<double>::infinity(),
                             std::nan("")};
  for (int i = 0; values.size() < 600; ++i)
    values.push_back(std::ldexp(1.0 + i / 7.0, i % 40 - 20));
  for (DType from : floats) {
    const TensorData x =
        TensorData::fromDoubles(from, {static_cast<int64_t>(values.size())}, values);
    for (DType to : floats) {
      SCOPED_TRACE(std::string(dtypeName(from)) + " -> " + std::string(dtypeName(to)));
      const TensorData y = castTensor(x, to);
      ASSERT_EQ(y.dtype(), to);
      ASSERT_EQ(y.numel(), x.numel());
      std::vector<std::byte> one(dtypeSize(to));
      for (int64_t i = 0; i < x.numel(); ++i) {
        convertElement(from, x.bytes().data() + i * dtypeSize(from), to, one.data());
        ASSERT_EQ(std::memcmp(one.data(), y.bytes().data() + i * dtypeSize(to), one.size()), 0)
            << "element " << i << " (" << values[static_cast<size_t>(i)] << ")";
      }
    }
  }
}

TEST(TensorData, HalfTypesRoundToNearestEven) {
  EXPECT_EQ(roundTrip(DType::F16, 1.0 + 1.0 / 2048), 1.0);               // tie -> even
  EXPECT_EQ(roundTrip(DType::F16, 1.0 + 3.0 / 2048), 1.0 + 2.0 / 1024);  // tie -> even (up)
  EXPECT_EQ(roundTrip(DType::F16, 65504), 65504);
  EXPECT_TRUE(std::isinf(roundTrip(DType::F16, 70000)));
  EXPECT_EQ(roundTrip(DType::BF16, 1.00390625), 1.0);       // 1 + 2^-8: a tie, rounds to even
  EXPECT_EQ(roundTrip(DType::BF16, 1.01171875), 1.015625);  // 1 + 3·2^-8 -> 1 + 2^-6
  EXPECT_EQ(roundTrip(DType::BF16, 3.0e38), 3.00405527047391e+38);  // RNE of f32 bits 0x7f61b1e6
  EXPECT_TRUE(std::isnan(roundTrip(DType::F16, std::nan(""))));
  EXPECT_EQ(roundTrip(DType::F32, 0.1), static_cast<double>(0.1f));
}

TEST(TensorData, ExactIntegerAccessKeepsFullI64Range) {
  TensorData t(DType::I64, {2});
  t.setInt(0, std::numeric_limits<int64_t>::max());
  t.setInt(1, -9007199254740993);  // 2^53 + 1: not representable in double
  EXPECT_EQ(t.atInt(0), std::numeric_limits<int64_t>::max());
  EXPECT_EQ(t.atInt(1), -9007199254740993);
}

TEST(TensorData, CopiesShareStorageAndCloneDoesNot) {
  TensorData a = TensorData::full(DType::F32, {2, 2}, 1.5);
  TensorData shared = a;
  TensorData copy = a.clone();
  a.set(0, 7);
  EXPECT_EQ(shared.at(0), 7);
  EXPECT_EQ(copy.at(0), 1.5);
  EXPECT_EQ(copy.byteSize(), 16u);
  EXPECT_FALSE(a == copy);
  copy.set(0, 7);
  EXPECT_TRUE(a == copy);
  EXPECT_EQ(TensorData::zeros(DType::F16, {3, 0}).byteSize(), 0u);
}

TEST(TensorData, FromDoublesConvertsEachValue) {
  std::vector<double> v{1.7, -2.2, 3};
  TensorData t = TensorData::fromDoubles(DType::I32, {3}, v);
  EXPECT_EQ(t.toDoubles(), (std::vector<double>{1, -2, 3}));
}

TEST(TensorData, RandnIsDeterministicPerSeedAndStandardNormal) {
  TensorData a = TensorData::randn(DType::F64, {100001}, 42);
  TensorData b = TensorData::randn(DType::F64, {100001}, 42);
  TensorData c = TensorData::randn(DType::F64, {100001}, 43);
  EXPECT_TRUE(a == b);
  EXPECT_FALSE(a == c);
  double sum = 0, sq = 0;
  for (int64_t i = 0; i < a.numel(); ++i) {
    sum += a.at(i);
    sq += a.at(i) * a.at(i);
  }
  double mean = sum / a.numel(), var = sq / a.numel() - mean * mean;
  EXPECT_NEAR(mean, 0.0, 0.01);
  EXPECT_NEAR(var, 1.0, 0.02);
  // The f32 tensor holds the f64 samples rounded: the dtype does not change the stream.
  TensorData f = TensorData::randn(DType::F32, {4}, 42);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(f.at(i), static_cast<double>(static_cast<float>(a.at(i))));
}

}  // namespace
}  // namespace ferry

namespace ferry {
namespace {

// Tensors a model or a file sizes: allocate() and allocateRandn() give an error that names what,
// the type and the bytes when the host cannot hold them (4 PB: past x86-64's address space).
TEST(TensorData, AllocationsTheHostCannotHoldAreErrors) {
  const Shape huge{1000000, 1000000, 1000};
  Expected<TensorData> t = TensorData::allocate(DType::F32, huge, "output 'y'");
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().diagnostics()[0].code, "memory");
  EXPECT_EQ(t.status().diagnostics()[0].message,
            "out of memory: output 'y' (f32[1000000,1000000,1000]) needs 4000000000000000 bytes, "
            "which the host could not allocate");
  EXPECT_FALSE(TensorData::allocateRandn(DType::F16, huge, 1, "input 'x'").ok());
  Expected<TensorData> small = TensorData::allocateRandn(DType::F32, {2, 3}, 7, "input 'x'");
  ASSERT_TRUE(small.ok());
  EXPECT_TRUE(*small == TensorData::randn(DType::F32, {2, 3}, 7));
}

// Storage is 64-byte aligned (device memory is, so that the host can read a weight in place). A
// view holds its owner while it or a copy lives, copies nothing, and turns into a copy of its
// own when written, leaving the viewed bytes as they were.
TEST(TensorData, ViewsShareTheirOwnersBytesUntilWritten) {
  EXPECT_EQ(reinterpret_cast<uintptr_t>(TensorData(DType::F32, {3}).bytes().data()) % 64, 0u);
  auto owner = std::make_shared<std::vector<float>>(std::vector<float>{1, 2, 3, 4});
  const std::weak_ptr<std::vector<float>> watch = owner;
  std::span<const std::byte> raw = std::as_bytes(std::span<const float>(*owner));
  TensorData v = TensorData::view({DType::F32, {2, 2}}, raw, owner);
  owner.reset();
  ASSERT_FALSE(watch.expired());
  EXPECT_TRUE(v.isView());
  EXPECT_EQ(v.bytes().data(), raw.data());
  EXPECT_EQ(v.at(3), 4.0);
  TensorData copy = v;
  EXPECT_TRUE(copy.sharesBytesWith(v));
  EXPECT_EQ(v, TensorData::fromDoubles(DType::F32, {2, 2}, std::vector<double>{1, 2, 3, 4}));
  TensorData written = v;
  written.set(0, 9);
  EXPECT_FALSE(written.isView());
  EXPECT_NE(written.bytes().data(), raw.data());
  EXPECT_EQ(v.at(0), 1.0);
  EXPECT_EQ(written.at(0), 9.0);
  v = TensorData();
  EXPECT_FALSE(watch.expired());  // `copy` still views it
  copy = TensorData();
  EXPECT_TRUE(watch.expired());
}

}  // namespace
}  // namespace ferry
