// tests/backends/cpu_backend_test.cpp — the CPU backend: arenas of virtual devices, copies,
// uploads and downloads with their traffic counts, the ownership check, the dtypes the elementwise
// kernels claim, integer wraparound and NaN by hand, transfers through Backend::copy, and exp's
// underflow. Every kernel against the reference interpreter, for every dtype it claims:
// tests/backends/conformance_test.cpp.
#include <gtest/gtest.h>

#include <algorithm>

#include "cpu_test_util.h"

namespace ferry {
namespace {

using reftest::completeAttrs;
using reftest::sameTensor;
using namespace cputest;

TEST(CpuBackend, ArenasOwnTheirAllocationsOnly) {
  CpuBackend b(checked(2));
  ASSERT_EQ(b.devices().size(), 2u);
  Expected<std::byte *> p0 = b.allocate(Device::cpu(0), 100), p1 = b.allocate(Device::cpu(1), 8);
  ASSERT_TRUE(p0.ok() && p1.ok());
  EXPECT_EQ(reinterpret_cast<uintptr_t>(*p0) % 64, 0u);
  EXPECT_TRUE(b.owns(Device::cpu(0), *p0, 100));
  EXPECT_TRUE(b.owns(Device::cpu(0), *p0 + 60, 40));
  EXPECT_FALSE(b.owns(Device::cpu(0), *p0 + 60, 41));  // runs past the block
  EXPECT_FALSE(b.owns(Device::cpu(1), *p0, 100));      // another device's memory
  EXPECT_FALSE(b.owns(Device::cpu(2), *p0, 100));      // no such device
  EXPECT_FALSE(b.owns(Device::cuda(0), *p0, 100));
  EXPECT_EQ(b.bytesInUse(Device::cpu(0)), 100u);
  EXPECT_EQ(b.bytesInUse(Device::cpu(1)), 8u);
  Expected<std::byte *> empty = b.allocate(Device::cpu(0), 0);
  ASSERT_TRUE(empty.ok());
  EXPECT_NE(*empty, *p0);
  EXPECT_TRUE(b.owns(Device::cpu(0), *empty, 0));
  b.release(Device::cpu(0), *p0);
  EXPECT_FALSE(b.owns(Device::cpu(0), *p0, 1));
  EXPECT_EQ(b.bytesInUse(Device::cpu(0)), 0u);
  b.release(Device::cpu(0), *empty);
  b.release(Device::cpu(1), *p1);
}

TEST(CpuBackendDeathTest, ReleasingMemoryOfAnotherDeviceIsABug) {
  CpuBackend b(checked(2));
  std::byte *p = *b.allocate(Device::cpu(1), 16);
  EXPECT_DEATH(b.release(Device::cpu(0), p), "not an allocation of cpu");
  EXPECT_DEATH((void)b.allocate(Device::cpu(5), 1), "cpu:5 is not a device of this CPU backend");
  b.release(Device::cpu(1), p);
}

TEST(CpuBackend, CopiesBetweenVirtualDevicesAndChecksBothSides) {
  CpuBackend b(checked(2));
  const TensorData x =
      TensorData::fromDoubles(DType::F32, {2, 3}, std::vector<double>{1, 2, 3, 4, 5, 6});
  DeviceTensor from = upload(b, x, Device::cpu(0));
  DeviceTensor to = upload(b, TensorData(DType::F32, {2, 3}), Device::cpu(1));
  Traffic traffic;
  ASSERT_TRUE(b.copy(from.view(), to.view(), &traffic).ok());
  EXPECT_TRUE(sameTensor(download(b, to), x, 0));
  EXPECT_EQ(traffic.copies, 1);
  EXPECT_EQ(traffic.bytes, 24);
  // A copy within one device moves no bytes between devices.
  DeviceTensor same = upload(b, TensorData(DType::F32, {2, 3}), Device::cpu(1));
  ASSERT_TRUE(b.copy(to.view(), same.view(), &traffic).ok());
  EXPECT_TRUE(sameTensor(download(b, same), x, 0));
  EXPECT_EQ(traffic.copies, 1);
  // A view that claims cpu:1 but points into cpu:0's arena is caught.
  TensorView liar = from.view();
  liar.device = Device::cpu(1);
  Status s = b.copy(liar, to.view(), &traffic);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("copy from cpu:1 reads memory that is not that device's"),
            std::string::npos)
      << s.message();
  // Mismatched element counts are refused, not overrun.
  DeviceTensor small = upload(b, TensorData(DType::F32, {2}), Device::cpu(1));
  s = b.copy(from.view(), small.view(), &traffic);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("must match"), std::string::npos) << s.message();
  // Refused copies moved nothing and count nothing.
  EXPECT_EQ(traffic.copies, 1);
  EXPECT_EQ(traffic.bytes, 24);
  for (DeviceTensor *d : {&from, &to, &same, &small}) b.release(d->device, d->data);
}

// Host memory in and out: sizes and ownership checked, an upload counted as a copy between
// devices exactly when the bytes stand for another device than the destination.
TEST(CpuBackend, UploadsAndDownloadsCheckTheirSideAndCountMoves) {
  CpuBackend b(checked(2));
  const TensorData x = randomBytes(DType::I64, {5}, 3);
  DeviceTensor d = upload(b, TensorData(DType::I64, {5}), Device::cpu(1));
  Traffic traffic;
  ASSERT_TRUE(b.upload(x.bytes(), Device::cpu(1), d.view(), &traffic).ok());
  EXPECT_EQ(traffic.copies, 0);  // bytes of cpu:1 into cpu:1
  EXPECT_TRUE(sameBytes(download(b, d), x));
  ASSERT_TRUE(b.upload(x.bytes(), Device::cpu(), d.view(), &traffic).ok());
  EXPECT_EQ(traffic.copies, 1);  // bytes of cpu into cpu:1: a move
  EXPECT_EQ(traffic.bytes, 40);
  ASSERT_TRUE(b.upload(x.bytes(), Device::cpu(), d.view(), nullptr).ok());  // not counted

  std::vector<std::byte> host(39);
  Status s = b.upload(host, Device::cpu(1), d.view(), &traffic);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.diagnostics()[0].code, "internal");
  EXPECT_NE(s.message().find("upload of 39 bytes into i64[5] (40 bytes) on cpu:1"),
            std::string::npos)
      << s.message();
  s = b.download(d.view(), host);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("download of i64[5] on cpu:1 (40 bytes) into 39 bytes"),
            std::string::npos)
      << s.message();
  TensorView liar = d.view();
  liar.device = Device::cpu(0);
  host.resize(40);
  s = b.upload(host, Device::cpu(), liar, &traffic);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("upload to cpu writes memory that is not that device's"),
            std::string::npos)
      << s.message();
  s = b.download(liar, host);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("download from cpu reads memory that is not that device's"),
            std::string::npos)
      << s.message();
  EXPECT_EQ(traffic.copies, 1);
  // Empty tensors move nothing, and still succeed.
  DeviceTensor empty = upload(b, TensorData(DType::F32, {0, 3}), Device::cpu(1));
  EXPECT_TRUE(b.download(empty.view(), std::span<std::byte>()).ok());
  for (DeviceTensor *t : {&d, &empty}) b.release(t->device, t->data);
}

TEST(CpuBackend, AKernelReadingAnotherDevicesMemoryIsAMissingTransfer) {
  CpuBackend b(checked(2));
  const OpInfo &add = opInfo(OpKind::Add);
  const TensorData x = TensorData::full(DType::F32, {4}, 1.0);
  DeviceTensor a = upload(b, x, Device::cpu(0)), c = upload(b, x, Device::cpu(1));
  DeviceTensor out = upload(b, TensorData(DType::F32, {4}), Device::cpu(0));
  // Operand 1 claims cpu:0, as a planner that forgot the transfer would hand it over.
  TensorView views[] = {a.view(), {c.data, &c.type, Device::cpu(0)}};
  const Attrs attrs = completeAttrs(add, {});
  const Location loc{"model.fy", 12, 5};
  Status s = b.run(KernelCall{add, attrs, views, out.view(), loc});
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.diagnostics()[0].code, "internal");
  EXPECT_EQ(s.diagnostics()[0].loc.line, 12);
  EXPECT_NE(s.message().find("'add' at model.fy:12:5 runs on cpu but operand 1 (f32[4]) is not "
                             "in cpu's memory: a transfer is missing"),
            std::string::npos)
      << s.message();
  // With the transfer done (a copy into cpu:0's arena), the same call runs.
  DeviceTensor moved = upload(b, TensorData(DType::F32, {4}), Device::cpu(0));
  ASSERT_TRUE(b.copy(c.view(), moved.view(), nullptr).ok());
  views[1] = moved.view();
  ASSERT_TRUE(b.run(KernelCall{add, attrs, views, out.view(), loc}).ok());
  EXPECT_TRUE(sameTensor(download(b, out), TensorData::full(DType::F32, {4}, 2.0), 0));
  for (DeviceTensor *d : {&a, &c, &out, &moved}) b.release(d->device, d->data);
}

TEST(CpuBackend, RefusesCallsOutsideItsContract) {
  CpuBackend b(checked(1));
  // An operand in another dtype than the op computes in: a cast is missing.
  const OpInfo &mul = opInfo(OpKind::Mul);
  Expected<TensorData> r =
      runOnCpu(b, mul, {TensorData(DType::F32, {2}), TensorData(DType::F16, {2})},
               completeAttrs(mul, {}), TensorType{DType::F32, {2}});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("operand 1 is f16[2], expected f32 (a cast is missing)"),
            std::string::npos)
      << r.status().message();
  // A pair the backend does not claim: exp computes in a float (the dtype pass casts first).
  const OpInfo &exp = opInfo(OpKind::Exp);
  EXPECT_FALSE(b.supports(OpKind::Exp, DType::I32));
  r = runOnCpu(b, exp, {TensorData(DType::I32, {2})}, completeAttrs(exp, {}),
               TensorType{DType::I32, {2}});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("no kernel for 'exp' in i32"), std::string::npos)
      << r.status().message();
}

constexpr OpKind kUnary[] = {OpKind::Neg,  OpKind::Abs,   OpKind::Exp,  OpKind::Log,
                             OpKind::Sqrt, OpKind::Rsqrt, OpKind::Tanh, OpKind::Sigmoid,
                             OpKind::Relu, OpKind::Gelu,  OpKind::Erf,  OpKind::Silu};
constexpr OpKind kBinary[] = {OpKind::Add,  OpKind::Sub,     OpKind::Mul,     OpKind::Div,
                              OpKind::Pow,  OpKind::Maximum, OpKind::Minimum, OpKind::Equal,
                              OpKind::Less, OpKind::Greater};

// The ops whose result is a float even for bool/integer operands (torch.exp(int) is float):
// the dtype pass casts their operands to a float first, so the backend needs no integer kernel.
constexpr OpKind kFloatResult[] = {OpKind::Exp,  OpKind::Log,     OpKind::Sqrt, OpKind::Rsqrt,
                                   OpKind::Tanh, OpKind::Sigmoid, OpKind::Erf,  OpKind::Div};

template <size_t N> bool isOneOf(OpKind k, const OpKind (&list)[N]) {
  return std::find(std::begin(list), std::end(list), k) != std::end(list);
}

// supports() is true exactly for the dtypes each elementwise op accepts, but for the float-result
// ops on bool and integers: false there, by design, and those ops are exactly the PromoteFloat
// ones of the op table.
TEST(CpuBackend, ElementwiseClaimsEveryDTypeTheOpsAcceptButFloatResultsOnIntegers) {
  CpuBackend b(checked(1));
  for (OpKind k : kUnary) EXPECT_FALSE(isOneOf(k, kBinary)) << opInfo(k).name;
  for (const OpInfo &info : allOps()) {
    if (!isOneOf(info.kind, kUnary) && !isOneOf(info.kind, kBinary)) continue;
    const bool floatResult = isOneOf(info.kind, kFloatResult);
    EXPECT_EQ(floatResult, info.dtypeRule == DTypeRule::PromoteFloat) << info.name;
    for (DType t : kAllDTypes) {
      SCOPED_TRACE(std::string(info.name) + " " + std::string(dtypeName(t)));
      const bool accepts = acceptsDType(info.accepts, t);
      if (floatResult && !isFloating(t)) {
        EXPECT_TRUE(accepts);  // the op takes integers; the backend never sees them
        EXPECT_FALSE(b.supports(info.kind, t));
      } else {
        EXPECT_EQ(b.supports(info.kind, t), accepts);
      }
    }
  }
}

TEST(CpuBackend, IntegerArithmeticWrapsAndFloatsKeepNaNLikeTheReference) {
  CpuBackend b(checked(1));
  auto run = [&](OpKind k, TensorData x, TensorData y) {
    const OpInfo &info = opInfo(k);
    const Attrs attrs = completeAttrs(info, {});
    const TensorType result =
        std::get<TensorType>(inferType(info, std::vector{x.type(), y.type()}, attrs));
    Expected<TensorData> got = runOnCpu(b, info, {x, y}, attrs, result);
    Expected<TensorData> want = reference::evalOp(info, std::vector{x, y}, attrs, result);
    FERRY_CHECK(got.ok() && want.ok());
    return std::make_pair(*got, *want);
  };
  auto [sum, sumRef] = run(OpKind::Add, reftest::ints(DType::U8, {2}, {200, 255}),
                           reftest::ints(DType::U8, {2}, {100, 1}));
  EXPECT_EQ(sum.atInt(0), 44);
  EXPECT_EQ(sum.atInt(1), 0);
  EXPECT_TRUE(sameTensor(sum, sumRef, 0));
  auto [prod, prodRef] = run(OpKind::Mul, reftest::ints(DType::I32, {1}, {1 << 20}),
                             reftest::ints(DType::I32, {1}, {1 << 12}));
  EXPECT_EQ(prod.atInt(0), 0);  // 2^32 wraps to 0
  EXPECT_TRUE(sameTensor(prod, prodRef, 0));
  const double nan = std::nan("");
  auto [mx, mxRef] =
      run(OpKind::Maximum, reftest::f32({3}, {nan, 1, 2}), reftest::f32({3}, {0, nan, 3}));
  EXPECT_TRUE(std::isnan(mx.at(0)) && std::isnan(mx.at(1)));
  EXPECT_EQ(mx.at(2), 3);
  EXPECT_TRUE(sameTensor(mx, mxRef, 0));
  auto [orr, orRef] =
      run(OpKind::Add, reftest::bools({4}, {0, 1, 0, 1}), reftest::bools({4}, {0, 0, 1, 1}));
  EXPECT_TRUE(sameTensor(orr, reftest::bools({4}, {0, 1, 1, 1}), 0));
  EXPECT_TRUE(sameTensor(orr, orRef, 0));
}

// A transfer in every dtype through Backend::copy, as the runtime sends transfer steps: counted
// once in the traffic and equal to the reference's transfer byte for byte. Backend::run refuses a
// transfer node: bytes cross devices only where they are counted.
TEST(CpuBackend, TransfersCopyBetweenDevicesForEveryDType) {
  CpuBackend b(checked(2));
  const OpInfo &transfer = opInfo(OpKind::Transfer);
  const Location loc{"model.fy", 7, 3};
  uint64_t seed = 900;
  for (DType dtype : kAllDTypes) {
    SCOPED_TRACE(std::string(dtypeName(dtype)));
    EXPECT_TRUE(b.supports(OpKind::Transfer, dtype));
    const TensorData x = randomBytes(dtype, {3, 700}, seed++);
    const Attrs attrs = reftest::completeAttrs(transfer, {{"to", Device::cpu(1)}});
    Expected<TensorData> want = reference::evalOp(transfer, std::vector{x}, attrs, x.type());
    ASSERT_TRUE(want.ok()) << want.status().message();
    DeviceTensor from = upload(b, x, Device::cpu(0));
    DeviceTensor to = upload(b, TensorData(dtype, {3, 700}), Device::cpu(1));
    Traffic traffic;
    ASSERT_TRUE(b.copy(from.view(), to.view(), &traffic).ok());
    EXPECT_TRUE(sameBytes(download(b, to), *want));
    EXPECT_EQ(traffic.copies, 1);
    EXPECT_EQ(traffic.bytes, static_cast<int64_t>(x.byteSize()));
    const TensorView operands[] = {from.view()};
    Status s = b.run(KernelCall{transfer, attrs, operands, to.view(), loc});
    ASSERT_FALSE(s.ok());
    EXPECT_EQ(s.diagnostics()[0].code, "internal");
    EXPECT_NE(s.message().find("a transfer is a copy between devices; the runtime runs it with "
                               "Backend::copy, not Backend::run"),
              std::string::npos)
        << s.message();
    EXPECT_EQ(traffic.copies, 1) << "a refused run copies nothing";
    for (DeviceTensor *d : {&from, &to}) b.release(d->device, d->data);
  }
}

}  // namespace
}  // namespace ferry

namespace ferry {
namespace {

using namespace cputest;

// Eigen's vectorised exp clamps its argument; the kernels must still underflow as exp does:
// subnormals where they exist, then exactly 0 (softmax of far-apart logits gives 0, not 2.9e-39).
TEST(CpuBackend, ExpAndSoftmaxUnderflowToSubnormalsAndZeroLikeTheReference) {
  CpuBackend b(checked(1));
  for (DType t : {DType::F32, DType::F64}) {
    const std::vector<double> xs = {-1000, -760, -745,  -720,  -700, -104, -103, -100,
                                    -95,   -90,  -88.8, -88.5, -80,  -1,   0,    1};
    const TensorData x = TensorData::fromDoubles(t, {static_cast<int64_t>(xs.size())}, xs);
    const OpInfo &exp = opInfo(OpKind::Exp);
    Expected<TensorData> got = runOnCpu(b, exp, {x}, reftest::completeAttrs(exp, {}), x.type());
    ASSERT_TRUE(got.ok()) << got.status().message();
    for (size_t i = 0; i < xs.size(); ++i) {
      const double want = t == DType::F32 ? static_cast<double>(std::exp(static_cast<float>(xs[i])))
                                          : std::exp(xs[i]);
      EXPECT_NEAR(got->at(static_cast<int64_t>(i)), want, want * 1e-5)
          << dtypeName(t) << " exp(" << xs[i] << ")";
      if (want == 0) {
        EXPECT_EQ(got->at(static_cast<int64_t>(i)), 0.0) << xs[i];
      }
    }
    const OpInfo &softmax = opInfo(OpKind::Softmax);
    const TensorData logits =
        TensorData::fromDoubles(t, {1, 3}, std::vector<double>{0, -900, -2000});
    Expected<TensorData> p =
        runOnCpu(b, softmax, {logits}, reftest::completeAttrs(softmax, {}), logits.type());
    ASSERT_TRUE(p.ok()) << p.status().message();
    EXPECT_EQ(p->at(0), 1.0);
    EXPECT_EQ(p->at(1), 0.0) << dtypeName(t);
    EXPECT_EQ(p->at(2), 0.0) << dtypeName(t);
  }
}

}  // namespace
}  // namespace ferry
