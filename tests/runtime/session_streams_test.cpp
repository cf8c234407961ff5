// tests/runtime/session_streams_test.cpp — the Session orders work across streams itself: a
// device runtime with queued streams (tests/runtime/hosted_device.h: work runs only when waited
// for, as on a GPU) gives the reference's results for models whose steps and transfers span
// several devices of one runtime and several runtimes.
#include <gtest/gtest.h>

#include <cmath>

#include "backends/reference/interpreter.h"
#include "common/parse.h"
#include "passes/lower.h"
#include "runtime/hosted_device.h"
#include "runtime/session.h"

namespace ferry {
namespace {

// Runs `text` with cpu and a queued hosted cuda runtime of two devices, twice (the second run
// reuses the workspace), against the reference.
// Returns the runtime's synchronize calls of the two runs.
int expectReference(std::string_view text, bool hostAccessible, bool readsHostOnIssue = false) {
  CompileOptions o;
  o.devices = {Device::cpu(), Device::cuda(0), Device::cuda(1)};
  o.placement = PlacementPolicy::Auto;
  const std::vector<BackendEntry> registry{
      builtinBackends().front(),
      hosted(DeviceKind::Cuda, hostAccessible, /*queued=*/true, readsHostOnIssue)};
  Expected<Executable> exe = build(parseOk(text), o, nullptr, registry);
  EXPECT_TRUE(exe.ok()) << exe.status().message();
  if (!exe) return -1;
  Session::Options so;
  so.backends = registry;
  Expected<Session> s = Session::create(std::move(*exe), so);
  EXPECT_TRUE(s.ok()) << s.status().message();
  if (!s) return -1;
  const int synchronizes = HostedDevice::synchronizes;
  for (uint64_t seed : {1, 2}) {
    const TensorData x = TensorData::randn(DType::F32, {64, 32}, seed);
    Expected<std::vector<TensorData>> want = reference::run(parseOk(text), {{"x", x}});
    EXPECT_TRUE(want.ok()) << want.status().message();
    Expected<RunResult> r = s->run({{"x", x}});
    EXPECT_TRUE(r.ok()) << r.status().message();
    if (!want || !r) return -1;
    EXPECT_EQ(r->outputs.size(), want->size());
    for (size_t k = 0; k < want->size() && k < r->outputs.size(); ++k) {
      const TensorData &got = r->outputs[k].tensor.data();
      EXPECT_EQ(got.type(), (*want)[k].type());
      if (got.type() != (*want)[k].type()) return -1;
      for (int64_t i = 0; i < got.numel(); ++i) {
        EXPECT_NEAR(got.at(i), (*want)[k].at(i), 1e-5) << "output " << k << " element " << i;
        if (std::fabs(got.at(i) - (*want)[k].at(i)) > 1e-5) return -1;
      }
    }
  }
  return HostedDevice::synchronizes - synchronizes;
}

// Weights moved at load on queued streams: %w copied from cuda:1 within the runtime, %b uploaded
// from cpu, %s sent as f16 and widened on cuda:0 by a kernel at load. All of it must be done
// before the first run reads it.
TEST(SessionStreams, WeightsMovedAtLoadAreInPlaceBeforeTheFirstRun) {
  for (bool hostAccessible : {false, true}) {
    SCOPED_TRACE(hostAccessible ? "host-accessible" : "device memory");
    (void)expectReference(R"(graph g {
      input %x : f32[64,32] @cpu
      param %w : f32[16,32] @cuda:1 = randn(seed=1)
      param %b : f32[16] @cpu = randn(seed=2)
      param %s : f16[16] @cpu = randn(seed=3)
      %h @cuda:0 = linear(%x, %w, %b)
      %y @cuda:0 = mul(%h, %s)
      output %y @cpu
    })",
                    hostAccessible);
  }
}

// cuda:1 computes, cuda:0 copies its result and goes on: the copy on cuda:0's stream must wait
// for cuda:1's stream (an event), or it reads the bytes before relu wrote them.
TEST(SessionStreams, ACopyBetweenDevicesOfOneRuntimeWaitsForItsSource) {
  for (bool hostAccessible : {false, true}) {
    SCOPED_TRACE(hostAccessible ? "host-accessible" : "device memory");
    (void)expectReference(R"(graph g {
      input %x : f32[64,32] @cpu
      %a @cuda:1 = relu(%x)
      %b @cuda:0 = tanh(%a)
      %c @cuda:0 = neg(%b)
      output %c @cpu
    })",
                    hostAccessible);
  }
}

// The host's bytes go up to cuda:0 and the CPU goes on computing into memory the plan may
// reuse; what comes back is read by the CPU at once.
constexpr std::string_view kBackAndForth = R"(graph g {
      input %x : f32[64,32] @cpu
      %a @cpu = relu(%x)
      %b @cuda:0 = exp(%a)
      %c @cpu = sigmoid(%x)
      %d @cpu = neg(%c)
      %e @cuda:0 = tanh(%b)
      %f @cpu = add(%e, %d)
      %g @cuda:1 = sub(%f, %a)
      output %g @cpu
    })";

TEST(SessionStreams, CopiesBetweenRuntimesFinishBeforeEitherSideGoesOn) {
  for (bool hostAccessible : {false, true}) {
    SCOPED_TRACE(hostAccessible ? "host-accessible" : "device memory");
    (void)expectReference(kBackAndForth, hostAccessible);
  }
}

// An upload that takes the host's bytes when issued (as the CUDA runtime's staged uploads) is
// not waited for: the host computes on (here %c and %d, into memory the plan may give %a's bytes
// to) while the device's queue holds the copy, and the results are still the reference's.
TEST(SessionStreams, UploadsThatReadTheHostOnIssueAreNotWaitedFor) {
  const int waited = expectReference(kBackAndForth, /*hostAccessible=*/false);
  const int notWaited =
      expectReference(kBackAndForth, /*hostAccessible=*/false, /*readsHostOnIssue=*/true);
  ASSERT_GE(waited, 0);
  ASSERT_GE(notWaited, 0);
  // The uploads (of %a and %f) are not followed by a wait for the device's stream.
  EXPECT_LT(notWaited, waited);
}

}  // namespace
}  // namespace ferry
