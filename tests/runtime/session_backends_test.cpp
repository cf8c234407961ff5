// tests/runtime/session_backends_test.cpp — a Session uses its devices only through the
// DeviceRuntime interface, chosen per device kind by a registry: a second device kind is one
// registry entry (a target and a device runtime), transfers between two runtimes go through the
// side the host can address or through host staging, steps lowered without a target are refused
// at create.
#include <gtest/gtest.h>

#include "backends/reference/interpreter.h"
#include "common/parse.h"
#include "passes/lower.h"
#include "runtime/hosted_device.h"
#include "runtime/session.h"

namespace ferry {
namespace {

// The input crosses to cpu:1, where everything runs (one transfer of 48 bytes).
constexpr std::string_view kTwoDevices = R"(graph two {
  input %x : f32[4,3] @cpu
  param %w : f32[3,3] @cpu:1 = randn(seed=5)
  %h @cpu:1 = relu(%x)
  %y = matmul(%h, %w)
  %z = tanh(%y)
  output %z
})";

Executable twoDevices() {
  CompileOptions o;
  o.devices = {Device::cpu(), Device::cpu(1)};
  o.placement = PlacementPolicy::Auto;
  Expected<Executable> exe = build(parseOk(kTwoDevices), o);
  EXPECT_TRUE(exe.ok()) << exe.status().message();
  return std::move(exe).value();
}

Session::Options withBackends(std::vector<BackendEntry> backends, bool checkPlan = true) {
  Session::Options o;
  o.checkPlan = checkPlan;
  o.backends = std::move(backends);
  return o;
}

TEST(SessionBackends, TheBuiltinRegistryHasTheCpuBackend) {
  const BackendEntry *cpu = findBackend(builtinBackends(), DeviceKind::Cpu);
  ASSERT_NE(cpu, nullptr);
  Expected<std::unique_ptr<DeviceRuntime>> b = cpu->device(DeviceOptions{.devices = 3});
  ASSERT_TRUE(b.ok()) << b.status().message();
  EXPECT_EQ((*b)->devices().size(), 3u);
  EXPECT_TRUE((*b)->hostAccessible());
  EXPECT_FALSE(cpu->device(DeviceOptions{.devices = 0}).ok());
  EXPECT_EQ(cpu->target()->kind(), DeviceKind::Cpu);
  // CUDA's entry is there exactly when the build found the toolkit.
  EXPECT_EQ(findBackend(builtinBackends(), DeviceKind::Cuda) != nullptr, builtWithCuda());
}

// A model split over cpu and cpu:1... and the same over cpu and a second device kind, run with
// the CPU device for cpu and a hosted runtime for the other kind: the transfers between the two
// runtimes go through the side the host can address, or through host staging when neither
// can, and every one of them is counted.
TEST(SessionBackends, ASecondDeviceKindIsOneRegistryEntry) {
  constexpr std::string_view text = R"(graph split {
    input %x : f32[4,3] @cpu
    param %w : f32[3,5] = randn(seed=3)
    %h @cuda:0 = matmul(%x, %w)
    %a @cuda:0 = relu(%h)
    %y = tanh(%a)
    output %y @cpu
  })";
  CompileOptions o;
  o.devices = {Device::cpu(), Device::cuda(0)};
  o.placement = PlacementPolicy::Auto;
  const TensorData x = TensorData::randn(DType::F32, {4, 3}, 9);
  Expected<std::vector<TensorData>> want = reference::run(parseOk(text), {{"x", x}});
  ASSERT_TRUE(want.ok()) << want.status().message();
  for (bool hostAccessible : {true, false}) {
    SCOPED_TRACE(hostAccessible ? "host-accessible" : "device memory");
    const std::vector<BackendEntry> registry{builtinBackends().front(),
                                             hosted(DeviceKind::Cuda, hostAccessible)};
    Expected<Executable> exe = build(parseOk(text), o, nullptr, registry);
    ASSERT_TRUE(exe.ok()) << exe.status().message();
    ASSERT_GE(exe->planTransfers, 2);  // x there, something back
    const Executable plan = *exe;
    Expected<Session> s = Session::create(std::move(*exe), withBackends(registry));
    ASSERT_TRUE(s.ok()) << s.status().message();
    HostedDevice::uploads = HostedDevice::downloads = 0;
    Expected<RunResult> r = s->run({{"x", x}});
    ASSERT_TRUE(r.ok()) << r.status().message();
    EXPECT_EQ(r->stats.transfers, plan.planTransfers);
    EXPECT_EQ(r->stats.transferBytes, plan.planTransferBytes);
    // The CPU's arenas are host memory: the hosted runtime uploads what goes in; what comes
    // back it downloads, unless the CPU can read its memory directly.
    EXPECT_GE(HostedDevice::uploads, 1);
    if (hostAccessible)
      EXPECT_EQ(HostedDevice::downloads, 0);
    else
      EXPECT_GE(HostedDevice::downloads, 1);
    const TensorData &got = r->outputs[0].tensor.data();
    ASSERT_EQ(got.type(), (*want)[0].type());
    for (int64_t i = 0; i < got.numel(); ++i) EXPECT_NEAR(got.at(i), (*want)[0].at(i), 1e-5) << i;

    // Without the entry, the same executable is refused, naming the device and the backends.
    Expected<Session> none = Session::create(plan, withBackends({builtinBackends().front()}));
    ASSERT_FALSE(none.ok());
    EXPECT_NE(none.status().message().find("runs on cuda:0, and this build of ferry has no "
                                           "backend for it (backends: cpu, with virtual devices "
                                           "cpu:N)"),
              std::string::npos)
        << none.status().message();
  }
}

// Compiled by a build without a target for the kind, the steps there have no kernel plan: the
// executable is still whole, and a runtime for that kind refuses it at create, naming the step.
TEST(SessionBackends, StepsLoweredWithoutATargetAreRefusedAtCreate) {
  constexpr std::string_view text = R"(graph g {
    input %x : f32[4] @cpu
    %y @cuda:0 = relu(%x)
    output %y @cpu
  })";
  CompileOptions o;
  o.devices = {Device::cpu(), Device::cuda(0)};
  o.placement = PlacementPolicy::Auto;
  // A build without a cuda target (whether or not this one has it).
  Expected<Executable> exe = build(parseOk(text), o, nullptr, {builtinBackends().front()});
  ASSERT_TRUE(exe.ok()) << exe.status().message();
  Expected<Executable> loaded = Executable::deserialize(exe->serialize(), "g.ferry");
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  Expected<Session> s = Session::create(
      std::move(*loaded), withBackends({builtinBackends().front(), hosted(DeviceKind::Cuda)}));
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().diagnostics().front().code, "device");
  EXPECT_NE(s.status().message().find("step 'relu' %y.cuda0 on cuda:0 has no kernel: the executable "
                                      "was compiled by a build without a cuda target"),
            std::string::npos)
      << s.status().message();
}

// A registry an app supplies may be broken: an entry that makes nothing, or has no maker, is an
// error from Session::create, not a crash.
TEST(SessionBackends, ABrokenRegistryEntryIsAnError) {
  const Executable exe = twoDevices();
  BackendEntry nothing{DeviceKind::Cpu, "an app's cpu backend", {},
                       [](const DeviceOptions &) -> Expected<std::unique_ptr<DeviceRuntime>> {
                         return std::unique_ptr<DeviceRuntime>();
                       }};
  Expected<Session> s = Session::create(exe, withBackends({nothing}));
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().diagnostics().front().message,
            "the backend for cpu (an app's cpu backend) made no device runtime");
  BackendEntry noMaker{DeviceKind::Cpu, "an app's cpu backend", {}, {}};
  Expected<Session> t = Session::create(exe, withBackends({noMaker}));
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().diagnostics().front().message,
            "the registry entry for cpu (an app's cpu backend) has no way to make its device "
            "runtime");
}

// Between two runtimes neither of which the host can address, a transfer goes through host
// staging memory; the session counts each copy it issues and the checked run agrees with the
// plan.
TEST(SessionBackends, TransfersBetweenTwoDeviceRuntimesStageThroughTheHost) {
  constexpr std::string_view text = R"(graph g {
    input %x : f32[4,3] @cpu
    %h @cuda:0 = relu(%x)
    %y @cpu = tanh(%h)
    %z @cuda:0 = neg(%y)
    output %z
  })";
  CompileOptions o;
  o.devices = {Device::cpu(), Device::cuda(0)};
  o.target = Device::cuda(0);
  o.placement = PlacementPolicy::Auto;
  // The "cpu" of this registry is a hosted runtime too: no side is host memory.
  const std::vector<BackendEntry> registry{hosted(DeviceKind::Cpu), hosted(DeviceKind::Cuda)};
  Expected<Executable> exe = build(parseOk(text), o, nullptr, registry);
  ASSERT_TRUE(exe.ok()) << exe.status().message();
  ASSERT_EQ(exe->planTransfers, 3);
  Expected<Session> s = Session::create(*exe, withBackends(registry));
  ASSERT_TRUE(s.ok()) << s.status().message();
  HostedDevice::staged = 0;
  const TensorData x = TensorData::randn(DType::F32, {4, 3}, 2);
  Expected<RunResult> r = s->run({{"x", x}});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(HostedDevice::staged, 3);
  EXPECT_EQ(r->stats.transfers, 3);
  Expected<std::vector<TensorData>> want = reference::run(parseOk(text), {{"x", x}});
  ASSERT_TRUE(want.ok()) << want.status().message();
  const TensorData &got = r->outputs[0].tensor.data();
  for (int64_t i = 0; i < got.numel(); ++i) EXPECT_NEAR(got.at(i), (*want)[0].at(i), 1e-5) << i;
}

}  // namespace
}  // namespace ferry
