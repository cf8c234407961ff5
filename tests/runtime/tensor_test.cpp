// tests/runtime/tensor_test.cpp — runtime::Tensor: host bytes with a device label; copies share
// bytes, clone() and to() another device copy them, to() a device without a backend is an error.
#include <gtest/gtest.h>

#include <filesystem>

#include "common/scratch.h"
#include "backends/registry.h"
#include "runtime/tensor.h"

namespace ferry {
namespace {

TEST(Tensor, ADefaultTensorIsAnF32ScalarZeroOnTheHost) {
  const Tensor t;
  EXPECT_EQ(t.dtype(), DType::F32);
  EXPECT_TRUE(t.shape().empty());
  EXPECT_EQ(t.numel(), 1);
  EXPECT_EQ(t.byteSize(), 4u);
  EXPECT_EQ(t.device(), Device::cpu());
  EXPECT_EQ(t.data().at(0), 0.0);
  EXPECT_EQ(t.str(), "f32[] @cpu");
}

TEST(Tensor, CopiesShareBytesAndCloneDoesNot) {
  const TensorData d = TensorData::randn(DType::F16, {2, 3}, 4);
  Tensor a(d);
  EXPECT_TRUE(a.data().sharesBytesWith(d));  // wrapped, not copied
  EXPECT_EQ(a.type(), (TensorType{DType::F16, {2, 3}}));
  EXPECT_EQ(a.byteSize(), 12u);
  EXPECT_EQ(a.bytes().size(), 12u);
  Tensor b = a;
  EXPECT_TRUE(b.sharesStorageWith(a));
  Tensor c = a.clone();
  EXPECT_FALSE(c.sharesStorageWith(a));
  EXPECT_EQ(c.data(), a.data());
  EXPECT_EQ(c.device(), a.device());
  // A write through one copy shows in the other, not in the clone.
  b.data().set(0, 7.0);
  EXPECT_EQ(a.data().at(0), 7.0);
  EXPECT_NE(c.data().at(0), 7.0);
  const Tensor z = Tensor::zeros(DType::I8, {3});
  EXPECT_EQ(z.str(), "i8[3] @cpu");
  for (int64_t i = 0; i < 3; ++i) EXPECT_EQ(z.data().atInt(i), 0);
}

TEST(Tensor, ToAnotherHostDeviceCopiesAndLabels) {
  const Tensor a(TensorData::fromDoubles(DType::I32, {3}, std::vector<double>{1, 2, 3}));
  Expected<Tensor> same = a.to(Device::cpu());
  ASSERT_TRUE(same.ok());
  EXPECT_TRUE(same->sharesStorageWith(a));  // already there: itself, no copy
  Expected<Tensor> moved = a.to(Device::cpu(2));
  ASSERT_TRUE(moved.ok()) << moved.status().message();
  EXPECT_EQ(moved->device(), Device::cpu(2));
  EXPECT_FALSE(moved->sharesStorageWith(a));
  EXPECT_EQ(moved->data(), a.data());
  EXPECT_EQ(moved->str(), "i32[3] @cpu:2");
  // Back again: a copy labelled cpu; clone() keeps the label.
  Expected<Tensor> back = moved->to(Device::cpu());
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->device(), Device::cpu());
  EXPECT_FALSE(back->sharesStorageWith(*moved));
  EXPECT_EQ(moved->clone().device(), Device::cpu(2));
}

// A build without CUDA cannot label a tensor cuda:0; one with CUDA can (the bytes stay host
// memory that a Session uploads).
TEST(Tensor, ToACudaDeviceIsAnErrorOnlyInABuildWithoutCuda) {
  const Tensor a = Tensor::zeros(DType::F32, {2});
  Expected<Tensor> t = a.to(Device::cuda(0));
  if (builtWithCuda()) {
    ASSERT_TRUE(t.ok()) << t.status().message();
    EXPECT_EQ(t->device(), Device::cuda(0));
    EXPECT_FALSE(t->sharesStorageWith(a));
    return;
  }
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().diagnostics().front().code, "device");
  EXPECT_NE(t.status().message().find("cannot move f32[2] @cpu to cuda:0: this build of ferry "
                                      "has no backend for cuda:0"),
            std::string::npos)
      << t.status().message();
}

TEST(Tensor, NpyRoundTripAndErrors) {
  const testutil::ScratchDir dir("tensor_test");
  const std::string file = (dir / "tensor_test.npy").string();
  const Tensor a(TensorData::randn(DType::F64, {2, 2}, 1));
  ASSERT_TRUE(a.writeNpy(file).ok());
  Expected<Tensor> b = Tensor::fromNpy(file);
  ASSERT_TRUE(b.ok()) << b.status().message();
  EXPECT_EQ(b->data(), a.data());
  EXPECT_EQ(b->device(), Device::cpu());
  std::filesystem::remove(file);
  Expected<Tensor> missing = Tensor::fromNpy(file);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("tensor_test.npy"), std::string::npos)
      << missing.status().message();
}

}  // namespace
}  // namespace ferry
