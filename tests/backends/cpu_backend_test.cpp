// tests/backends/cpu_backend_test.cpp — the CPU backend: arenas of virtual devices, copies,
// uploads and downloads with their ownership checks, plans the device refuses, the dtypes the
// elementwise kernels claim, integer wraparound and NaN by hand, transfers through
// DeviceRuntime::copy, and exp's underflow. Every kernel against the reference interpreter, for every dtype it claims:
// tests/backends/conformance_test.cpp.
#include <gtest/gtest.h>

#include <cstring>

#include <algorithm>

#include "cpu_test_util.h"

namespace ferry {
namespace {

using reftest::completeAttrs;
using reftest::sameTensor;
using namespace cputest;

TEST(CpuBackend, ArenasOwnTheirAllocationsOnly) {
  CpuDevice b(checked(2));
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

// Host memory lent in place (a weight read where it lies): owned by the device while lent, counted
// in no arena's bytes, lent again for a second slot of the same weight, and never freed here
// (ASan would report a free of memory the arena did not allocate). Unaligned memory is refused.
TEST(CpuBackend, LendsAlignedHostMemoryInPlace) {
  CpuDevice b(checked(2));
  alignas(64) std::byte host[256] = {};
  EXPECT_EQ(b.borrowHost(Device::cpu(1), host, 256), host);
  EXPECT_EQ(b.borrowHost(Device::cpu(1), host, 256), host);
  EXPECT_EQ(b.borrowHost(Device::cpu(1), host + 1, 8), nullptr);
  EXPECT_TRUE(b.owns(Device::cpu(1), host + 128, 128));
  EXPECT_FALSE(b.owns(Device::cpu(1), host + 128, 129));
  EXPECT_FALSE(b.owns(Device::cpu(0), host, 256));
  EXPECT_EQ(b.bytesInUse(Device::cpu(1)), 0u);
  Expected<std::byte *> p = b.allocate(Device::cpu(1), 256);
  ASSERT_TRUE(p.ok());
  EXPECT_TRUE(b.copy(Device::cpu(1), host, Device::cpu(1), *p, 256, Stream{}).ok());
  b.release(Device::cpu(1), host);
  EXPECT_TRUE(b.owns(Device::cpu(1), host, 256));  // lent twice, given back once
  b.release(Device::cpu(1), host);
  EXPECT_FALSE(b.owns(Device::cpu(1), host, 1));
  b.release(Device::cpu(1), *p);
}

TEST(CpuBackendDeathTest, ReleasingMemoryOfAnotherDeviceIsABug) {
  CpuDevice b(checked(2));
  std::byte *p = *b.allocate(Device::cpu(1), 16);
  EXPECT_DEATH(b.release(Device::cpu(0), p), "not an allocation of cpu");
  EXPECT_DEATH((void)b.allocate(Device::cpu(5), 1), "cpu:5 is not a device of this CPU backend");
  b.release(Device::cpu(1), p);
}

TEST(CpuBackend, CopiesBetweenVirtualDevicesAndChecksBothSides) {
  CpuDevice b(checked(2));
  const TensorData x =
      TensorData::fromDoubles(DType::F32, {2, 3}, std::vector<double>{1, 2, 3, 4, 5, 6});
  DeviceTensor from = upload(b, x, Device::cpu(0));
  DeviceTensor to = upload(b, TensorData(DType::F32, {2, 3}), Device::cpu(1));
  ASSERT_TRUE(b.copy(from.device, from.data, to.device, to.data, 24, Stream{}).ok());
  EXPECT_TRUE(sameTensor(download(b, to), x, 0));
  // A source that claims cpu:1 but points into cpu:0's arena is caught.
  Status s = b.copy(Device::cpu(1), from.data, to.device, to.data, 24, Stream{});
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.diagnostics()[0].code, "internal");
  EXPECT_NE(s.message().find("copy from cpu:1 reads 24 bytes that are not that device's memory"),
            std::string::npos)
      << s.message();
  // A destination too small for the bytes is refused, not overrun.
  DeviceTensor small = upload(b, TensorData(DType::F32, {2}), Device::cpu(1));
  s = b.copy(from.device, from.data, small.device, small.data, 24, Stream{});
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("copy to cpu:1 writes 24 bytes that are not that device's memory"),
            std::string::npos)
      << s.message();
  for (DeviceTensor *d : {&from, &to, &small}) b.release(d->device, d->data);
}

// Host memory in and out: ownership and sizes checked on the device side.
TEST(CpuBackend, UploadsAndDownloadsCheckTheirSide) {
  CpuDevice b(checked(2));
  const TensorData x = randomBytes(DType::I64, {5}, 3);
  DeviceTensor d = upload(b, TensorData(DType::I64, {5}), Device::cpu(1));
  ASSERT_TRUE(b.upload(x.bytes().data(), Device::cpu(1), d.data, 40, Stream{}).ok());
  EXPECT_TRUE(sameBytes(download(b, d), x));
  std::vector<std::byte> host(48);
  Status s = b.upload(host.data(), Device::cpu(1), d.data, 48, Stream{});
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.diagnostics()[0].code, "internal");
  EXPECT_NE(s.message().find("upload to cpu:1 writes 48 bytes that are not that device's memory"),
            std::string::npos)
      << s.message();
  s = b.download(Device::cpu(0), d.data, host.data(), 40, Stream{});
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("download from cpu reads 40 bytes that are not that device's memory"),
            std::string::npos)
      << s.message();
  // Empty tensors move nothing, and still succeed.
  DeviceTensor empty = upload(b, TensorData(DType::F32, {0, 3}), Device::cpu(1));
  EXPECT_TRUE(b.download(empty.device, empty.data, nullptr, 0, Stream{}).ok());
  for (DeviceTensor *t : {&d, &empty}) b.release(t->device, t->data);
}

// A plan for another op, a kernel name this build does not have, or a payload: prepare() says
// so once, with the step's location, instead of a launch misbehaving.
TEST(CpuBackend, PrepareRefusesPlansThatDoNotFitTheStep) {
  CpuDevice b(checked(1));
  const OpInfo &add = opInfo(OpKind::Add);
  const Attrs attrs = completeAttrs(add, {});
  const std::vector<TensorType> in{{DType::F32, {4}}, {DType::F32, {4}}};
  const TensorType out{DType::F32, {4}};
  const Location loc{"model.fy", 12, 5};
  const StepSpec step{add, attrs, in, out, Device::cpu(), loc};
  Expected<KernelPlan> plan = CpuTarget().lower(step);
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  EXPECT_EQ(plan->kernel, "cpu.add");
  EXPECT_TRUE(b.prepare(*plan, step).ok());
  for (KernelPlan bad : {KernelPlan{"cpu.mul", 0, {}}, KernelPlan{"cuda.add", 0, {}},
                         KernelPlan{"cpu.add", 0, "ptx"}}) {
    Expected<std::unique_ptr<PreparedKernel>> k = b.prepare(bad, step);
    ASSERT_FALSE(k.ok()) << bad.kernel;
    EXPECT_EQ(k.status().diagnostics()[0].code, "internal");
    EXPECT_EQ(k.status().diagnostics()[0].loc.line, 12);
    EXPECT_NE(k.status().message().find("the kernel plan '" + bad.kernel + "' of 'add' on cpu"),
              std::string::npos)
        << k.status().message();
  }
  // The target refuses what compile() never makes: a transfer as a kernel, a wrong result type.
  const OpInfo &transfer = opInfo(OpKind::Transfer);
  const Attrs to = completeAttrs(transfer, {{"to", Device::cpu(1)}});
  const std::vector<TensorType> one{{DType::F32, {4}}};
  Expected<KernelPlan> t = CpuTarget().lower(StepSpec{transfer, to, one, out, Device::cpu(1), loc});
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("a 'transfer' is not lowered to a kernel"), std::string::npos)
      << t.status().message();
  const TensorType wrong{DType::F32, {5}};
  t = CpuTarget().lower(StepSpec{add, attrs, in, wrong, Device::cpu(), loc});
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("its result is f32[5], the op gives f32[4]"),
            std::string::npos)
      << t.status().message();
}

TEST(CpuBackend, RefusesCallsOutsideItsContract) {
  CpuDevice b(checked(1));
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
  EXPECT_FALSE(cpuSupports(OpKind::Exp, DType::I32));
  r = runOnCpu(b, exp, {TensorData(DType::I32, {2})}, completeAttrs(exp, {}),
               TensorType{DType::I32, {2}});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("no kernel computes it in i32"), std::string::npos)
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
  CpuDevice b(checked(1));
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
        EXPECT_FALSE(cpuSupports(info.kind, t));
      } else {
        EXPECT_EQ(cpuSupports(info.kind, t), accepts);
      }
    }
  }
}

TEST(CpuBackend, IntegerArithmeticWrapsAndFloatsKeepNaNLikeTheReference) {
  CpuDevice b(checked(1));
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

// pow with an exponent of 2 is a multiply: the reference's result exactly (a double product of
// two f32 is exact, rounded once), with inf, -0 and NaN as pow gives them; a block with any other
// exponent still takes pow.
TEST(CpuBackend, PowByTwoIsTheSquareExactly) {
  CpuDevice b(checked(1));
  const OpInfo &info = opInfo(OpKind::Pow);
  const Attrs attrs = completeAttrs(info, {});
  auto run = [&](const TensorData &x, const TensorData &y, TensorData &want) {
    const TensorType result = std::get<TensorType>(inferType(info, std::vector{x.type(), y.type()}, attrs));
    Expected<TensorData> got = runOnCpu(b, info, {x, y}, attrs, result);
    Expected<TensorData> ref = reference::evalOp(info, std::vector{x, y}, attrs, result);
    FERRY_CHECK(got.ok() && ref.ok());
    want = *ref;
    return *got;
  };
  const double inf = std::numeric_limits<double>::infinity();
  TensorData x = TensorData::randn(DType::F32, {1000}, 77);
  for (int64_t i = 0; i < 5; ++i) x.set(i, std::vector<double>{-inf, inf, -0.0, std::nan(""), 3e19}[i]);
  TensorData want;
  const TensorData squares = run(x, TensorData::full(DType::F32, {1}, 2), want);
  EXPECT_TRUE(sameTensor(squares, want, 0));
  EXPECT_EQ(squares.at(0), inf);
  EXPECT_FALSE(std::signbit(squares.at(2)));
  EXPECT_TRUE(std::isnan(squares.at(3)));
  EXPECT_EQ(squares.at(4), inf);  // 9e38 overflows f32
  TensorData mixed = TensorData::full(DType::F32, {1000}, 2);
  mixed.set(999, 3);
  const TensorData cubes = run(x, mixed, want);
  EXPECT_TRUE(sameTensor(cubes, want, 1e-6));
  EXPECT_NEAR(cubes.at(999), std::pow(x.at(999), 3), 1e-5 * std::fabs(std::pow(x.at(999), 3)));
}

// neg flips the sign of zero too: byte for byte the reference's, in every float dtype, over more
// elements than a vector holds (Eigen 3.4's AVX negation computes 0 - x, which gave +0 for +0:
// found by the TSan build, where fused and unfused kernels took different paths).
TEST(CpuBackend, NegOfZeroIsMinusZeroByteForByte) {
  CpuDevice b(checked(1));
  const OpInfo &info = opInfo(OpKind::Neg);
  const Attrs attrs = completeAttrs(info, {});
  for (DType t : {DType::F32, DType::F64, DType::F16, DType::BF16}) {
    SCOPED_TRACE(std::string(dtypeName(t)));
    TensorData x(t, {100});
    for (int64_t i = 0; i < 100; ++i) x.set(i, i % 3 == 0 ? 0.0 : i % 3 == 1 ? -0.0 : 0.5 * static_cast<double>(i));
    Expected<TensorData> got = runOnCpu(b, info, {x}, attrs, x.type());
    Expected<TensorData> want = reference::evalOp(info, std::vector{x}, attrs, x.type());
    ASSERT_TRUE(got.ok() && want.ok());
    EXPECT_TRUE(std::signbit(got->at(0)));
    EXPECT_FALSE(std::signbit(got->at(1)));
    EXPECT_EQ(std::memcmp(got->bytes().data(), want->bytes().data(), x.byteSize()), 0);
  }
}

// A transfer in every dtype through DeviceRuntime::copy, as the runtime sends transfer steps:
// equal to the reference's transfer byte for byte (the target refuses to lower a transfer to a
// kernel: PrepareRefusesPlansThatDoNotFitTheStep).
TEST(CpuBackend, TransfersCopyBetweenDevicesForEveryDType) {
  CpuDevice b(checked(2));
  const OpInfo &transfer = opInfo(OpKind::Transfer);
  uint64_t seed = 900;
  for (DType dtype : kAllDTypes) {
    SCOPED_TRACE(std::string(dtypeName(dtype)));
    EXPECT_TRUE(cpuSupports(OpKind::Transfer, dtype));
    const TensorData x = randomBytes(dtype, {3, 700}, seed++);
    const Attrs attrs = reftest::completeAttrs(transfer, {{"to", Device::cpu(1)}});
    Expected<TensorData> want = reference::evalOp(transfer, std::vector{x}, attrs, x.type());
    ASSERT_TRUE(want.ok()) << want.status().message();
    DeviceTensor from = upload(b, x, Device::cpu(0));
    DeviceTensor to = upload(b, TensorData(dtype, {3, 700}), Device::cpu(1));
    ASSERT_TRUE(b.copy(from.device, from.data, to.device, to.data, x.byteSize(), Stream{}).ok());
    EXPECT_TRUE(sameBytes(download(b, to), *want));
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
  CpuDevice b(checked(1));
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
