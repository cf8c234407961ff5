// tests/runtime/session_backends_test.cpp — a Session uses its backends only through the Backend
// interface, chosen per device kind by a registry: a second device kind is one registry entry,
// transfers between two backends go through host memory, and the check of a run's copies
// against the plan fails loudly when a backend copies more or less than the plan says.
#include <gtest/gtest.h>

#include "backends/cpu/cpu_backend.h"
#include "backends/reference/interpreter.h"
#include "common/parse.h"
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

// A backend for devices `kind:0..N-1` that keeps their memory in a CPU backend's virtual
// devices cpu:0..N-1 and runs the CPU kernels: what a second backend looks like to the Session,
// on a machine without one. `fault` breaks its copies on purpose.
class HostedBackend final : public Backend {
 public:
  enum class Fault { None, DropTransfer, RepeatTransfer, UncountedUpload };

  HostedBackend(DeviceKind kind, int devices, Fault fault)
      : kind_(kind), fault_(fault), inner_(CpuBackend::Options{devices, true}) {
    for (int i = 0; i < devices; ++i) devices_.push_back({kind, i});
  }

  std::span<const Device> devices() const override { return devices_; }
  Expected<std::byte *> allocate(Device d, size_t bytes) override {
    return inner_.allocate(inner(d), bytes);
  }
  void release(Device d, std::byte *data) override { inner_.release(inner(d), data); }
  bool owns(Device d, const std::byte *data, size_t bytes) const override {
    return d.kind == kind_ && inner_.owns(inner(d), data, bytes);
  }
  Status copy(const TensorView &from, const TensorView &to, Traffic *traffic) override {
    if (fault_ == Fault::DropTransfer && from.device != to.device) return Status();
    Traffic inside;  // counted on this backend's devices, not the inner ones
    FERRY_TRY(inner_.copy(inner(from), inner(to), &inside));
    if (fault_ == Fault::RepeatTransfer && from.device != to.device)
      FERRY_TRY(inner_.copy(inner(from), inner(to), &inside));
    if (traffic && from.device != to.device) {
      traffic->copies += inside.copies;
      traffic->bytes += inside.bytes;
    }
    return Status();
  }
  Status upload(std::span<const std::byte> from, Device source, const TensorView &to,
                Traffic *traffic) override {
    FERRY_TRY(inner_.upload(from, inner(to.device), inner(to), nullptr));
    if (traffic && source != to.device && fault_ != Fault::UncountedUpload) {
      ++traffic->copies;
      traffic->bytes += static_cast<int64_t>(from.size());
    }
    return Status();
  }
  Status download(const TensorView &from, std::span<std::byte> to) override {
    return inner_.download(inner(from), to);
  }
  KernelCapability capability(OpKind op, DType dtype) const override {
    return inner_.capability(op, dtype);
  }
  Status run(const KernelCall &call) override {
    std::vector<TensorView> operands;
    for (const TensorView &o : call.operands) operands.push_back(inner(o));
    return inner_.run(KernelCall{call.op, call.attrs, operands, inner(call.result), call.loc});
  }

 private:
  Device inner(Device d) const {
    FERRY_CHECK(d.kind == kind_) << d.str() << " is not a device of this backend";
    return Device::cpu(d.index);
  }
  TensorView inner(const TensorView &v) const { return {v.data, v.type, inner(v.device)}; }

  DeviceKind kind_;
  Fault fault_;
  CpuBackend inner_;
  std::vector<Device> devices_;
};

BackendEntry hosted(DeviceKind kind, HostedBackend::Fault fault = HostedBackend::Fault::None) {
  return {kind, "hosted " + Device{kind, 0}.str(),
          [kind, fault](const BackendOptions &o) -> Expected<std::unique_ptr<Backend>> {
            return std::unique_ptr<Backend>(
                std::make_unique<HostedBackend>(kind, o.devices, fault));
          }};
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
  Expected<std::unique_ptr<Backend>> b = cpu->make(BackendOptions{.devices = 3});
  ASSERT_TRUE(b.ok()) << b.status().message();
  EXPECT_EQ((*b)->devices().size(), 3u);
  EXPECT_FALSE(cpu->make(BackendOptions{.devices = 0}).ok());
  EXPECT_EQ(findBackend(builtinBackends(), DeviceKind::Cuda), nullptr);
}

// A model split over cpu and cuda:0, run with the CPU backend for cpu and a hosted backend for
// cuda: no pass knows, the transfers go through host memory between the two backends, and
// every one of them is counted.
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
  Expected<Executable> exe = build(parseOk(text), o);
  ASSERT_TRUE(exe.ok()) << exe.status().message();
  ASSERT_GE(exe->planTransfers, 2);  // x there, something back
  const Executable plan = *exe;
  Expected<Session> s = Session::create(
      std::move(*exe), withBackends({builtinBackends().front(), hosted(DeviceKind::Cuda)}));
  ASSERT_TRUE(s.ok()) << s.status().message();
  const TensorData x = TensorData::randn(DType::F32, {4, 3}, 9);
  Expected<RunResult> r = s->run({{"x", x}});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->stats.transfers, plan.planTransfers);
  EXPECT_EQ(r->stats.transferBytes, plan.planTransferBytes);
  Expected<std::vector<TensorData>> want = reference::run(parseOk(text), {{"x", x}});
  ASSERT_TRUE(want.ok()) << want.status().message();
  const TensorData &got = r->outputs[0].tensor.data();
  ASSERT_EQ(got.type(), (*want)[0].type());
  for (int64_t i = 0; i < got.numel(); ++i) EXPECT_NEAR(got.at(i), (*want)[0].at(i), 1e-5) << i;

  // Without the entry, the same executable is refused, naming the device and the backends.
  Expected<Session> none = Session::create(plan, withBackends({builtinBackends().front()}));
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find("runs on cuda:0, and this build of ferry has no backend "
                                         "for it (backends: cpu, with virtual devices cpu:N)"),
            std::string::npos)
      << none.status().message();
}

// A registry an app supplies may be broken: an entry that makes nothing, or has no maker, is an
// error from Session::create, not a crash.
TEST(SessionBackends, ABrokenRegistryEntryIsAnError) {
  const Executable exe = twoDevices();
  BackendEntry nothing{DeviceKind::Cpu, "an app's cpu backend",
                       [](const BackendOptions &) -> Expected<std::unique_ptr<Backend>> {
                         return std::unique_ptr<Backend>();
                       }};
  Expected<Session> s = Session::create(exe, withBackends({nothing}));
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().diagnostics().front().message,
            "the backend for cpu (an app's cpu backend) made no backend object");
  BackendEntry noMaker{DeviceKind::Cpu, "an app's cpu backend", {}};
  Expected<Session> t = Session::create(exe, withBackends({noMaker}));
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().diagnostics().front().message,
            "the registry entry for cpu (an app's cpu backend) has no way to make its backend");
}

// What a backend's copies really did is checked against the plan: a transfer dropped, a
// transfer made twice, an input move not counted each fail a checked run with the counts (an
// "internal" error: the backend may be the app's own, so it is not an abort).
TEST(SessionBackends, CopiesThatDifferFromThePlanFailACheckedRun) {
  using Fault = HostedBackend::Fault;
  const Executable exe = twoDevices();
  ASSERT_EQ(exe.planTransfers, 1);
  ASSERT_EQ(exe.planTransferBytes, 48);
  const TensorData x = TensorData::randn(DType::F32, {4, 3}, 1);
  auto session = [&](Fault fault, bool checkPlan) {
    Expected<Session> s =
        Session::create(exe, withBackends({hosted(DeviceKind::Cpu, fault)}, checkPlan));
    FERRY_CHECK(s.ok()) << s.status().message();
    return std::move(s).value();
  };
  // Faultless, the hosted backend runs the plan as the CPU backend does.
  Expected<RunResult> fine = session(Fault::None, true).run({{"x", x}});
  ASSERT_TRUE(fine.ok()) << fine.status().message();
  EXPECT_EQ(fine->stats.transfers, 1);

  auto failure = [](Expected<RunResult> r) {
    EXPECT_FALSE(r.ok());
    if (r.ok()) return std::string();
    EXPECT_EQ(r.status().diagnostics().front().code, "internal");
    return r.status().diagnostics().front().message;
  };
  EXPECT_EQ(failure(session(Fault::DropTransfer, true).run({{"x", x}})),
            "run of 'two': the backends copied 0 tensors between devices (0 bytes), but the plan "
            "has 1 transfers (48 bytes) and 0 inputs were moved (0 bytes)");
  EXPECT_EQ(failure(session(Fault::RepeatTransfer, true).run({{"x", x}})),
            "run of 'two': the backends copied 2 tensors between devices (96 bytes), but the plan "
            "has 1 transfers (48 bytes) and 0 inputs were moved (0 bytes)");
  // An input on cpu:1 moved to cpu, but not counted by the backend that uploaded it.
  const Expected<Tensor> onCpu1 = Tensor(x).to(Device::cpu(1));
  ASSERT_TRUE(onCpu1.ok());
  EXPECT_EQ(failure(session(Fault::UncountedUpload, true).run({{"x", *onCpu1}})),
            "run of 'two': the backends copied 1 tensors between devices (48 bytes), but the plan "
            "has 1 transfers (48 bytes) and 1 inputs were moved (48 bytes)");

  // Unchecked (release builds), the same runs go on and report what the backends counted.
  Expected<RunResult> twice = session(Fault::RepeatTransfer, false).run({{"x", x}});
  ASSERT_TRUE(twice.ok()) << twice.status().message();
  EXPECT_EQ(twice->stats.transfers, 2);
  EXPECT_EQ(twice->stats.transferBytes, 96);
}

}  // namespace
}  // namespace ferry
