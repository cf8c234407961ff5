// tests/runtime/session_streams_test.cpp — the Session orders work across streams itself: a
// device runtime with queued streams (tests/runtime/hosted_device.h: work runs only when waited
// for, as on a GPU) gives the reference's results for models whose steps and transfers span
// several devices of one runtime and several runtimes. With copy streams
// (DeviceRuntime::createCopyStream) each model runs twice more: once with streams that run only
// what is waited for (work that reads too early shows), once with streams that run ahead as far
// as they may (work that overwrites what a slower copy still reads shows).
#include <gtest/gtest.h>

#include <cmath>

#include "backends/reference/interpreter.h"
#include "common/parse.h"
#include "common/random_graph.h"
#include "common/value_check.h"
#include "ir/printer.h"
#include "passes/lower.h"
#include "runtime/hosted_device.h"
#include "runtime/session.h"

namespace ferry {
namespace {

// The ways a queued hosted runtime's streams are tested: without copy streams, and with them,
// lazily and eagerly run.
const HostedStreams kModes[] = {
    {.queued = true},
    {.queued = true, .copyStreams = true},
    {.queued = true, .copyStreams = true, .eager = true},
    {.queued = true, .readsHostOnIssue = true, .copyStreams = true, .pinsHost = true},
    {.queued = true, .readsHostOnIssue = true, .copyStreams = true, .eager = true, .pinsHost = true}};

std::string modeName(const HostedStreams &m) {
  return std::string(!m.copyStreams ? "no copy streams"
                     : m.eager      ? "copy streams, eager"
                                    : "copy streams, lazy") +
         (m.pinsHost ? ", host workspaces registered" : "");
}

// Runs `text` with cpu and a queued hosted cuda runtime of two devices, twice (the second run
// reuses the workspace), against the reference.
// Returns the runtime's synchronize calls of the two runs.
int expectReference(std::string_view text, bool hostAccessible, HostedStreams streams) {
  CompileOptions o;
  o.devices = {Device::cpu(), Device::cuda(0), Device::cuda(1)};
  o.placement = PlacementPolicy::Auto;
  const std::vector<BackendEntry> registry{builtinBackends().front(),
                                           hosted(DeviceKind::Cuda, hostAccessible, streams)};
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

// The same in every mode of kModes, with device memory and with host-accessible memory.
void expectReferenceInEveryMode(std::string_view text) {
  for (const HostedStreams &mode : kModes)
    for (bool hostAccessible : {false, true}) {
      SCOPED_TRACE(modeName(mode) + (hostAccessible ? ", host-accessible" : ", device memory"));
      (void)expectReference(text, hostAccessible, mode);
    }
}

// Weights moved at load on queued streams: %w copied from cuda:1 within the runtime, %b uploaded
// from cpu, %s sent as f16 and widened on cuda:0 by a kernel at load. All of it must be done
// before the first run reads it.
TEST(SessionStreams, WeightsMovedAtLoadAreInPlaceBeforeTheFirstRun) {
  expectReferenceInEveryMode(R"(graph g {
      input %x : f32[64,32] @cpu
      param %w : f32[16,32] @cuda:1 = randn(seed=1)
      param %b : f32[16] @cpu = randn(seed=2)
      param %s : f16[16] @cpu = randn(seed=3)
      %h @cuda:0 = linear(%x, %w, %b)
      %y @cuda:0 = mul(%h, %s)
      output %y @cpu
    })");
}

// cuda:1 computes, cuda:0 copies its result and goes on: the copy on cuda:0's stream must wait
// for cuda:1's stream (an event), or it reads the bytes before relu wrote them.
TEST(SessionStreams, ACopyBetweenDevicesOfOneRuntimeWaitsForItsSource) {
  expectReferenceInEveryMode(R"(graph g {
      input %x : f32[64,32] @cpu
      %a @cuda:1 = relu(%x)
      %b @cuda:0 = tanh(%a)
      %c @cuda:0 = neg(%b)
      output %c @cpu
    })");
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

TEST(SessionStreams, CopiesBetweenRuntimesAreOrderedWithTheWorkOnEitherSide) {
  expectReferenceInEveryMode(kBackAndForth);
}

// An upload that takes the host's bytes when issued (as the CUDA runtime's staged uploads) is
// not waited for: the host computes on (here %c and %d, into memory the plan may give %a's bytes
// to) while the device's queue holds the copy, and the results are still the reference's.
TEST(SessionStreams, UploadsThatReadTheHostOnIssueAreNotWaitedFor) {
  const int waited = expectReference(kBackAndForth, /*hostAccessible=*/false, {.queued = true});
  const int notWaited = expectReference(kBackAndForth, /*hostAccessible=*/false,
                                        {.queued = true, .readsHostOnIssue = true});
  ASSERT_GE(waited, 0);
  ASSERT_GE(notWaited, 0);
  // The uploads (of %a and %f) are not followed by a wait for the device's stream.
  EXPECT_LT(notWaited, waited);
}

// A value goes down to the CPU while cuda:0 goes on with kernels that do not need it and may
// be given its bytes (%c, %d, %e); the CPU reads it (%b) only later. With copy streams the host
// never waits for cuda:0's kernels before the run's end: the copy waits for them, on the device.
TEST(SessionStreams, ACopyStreamLetsTheHostGoOnWithoutWaitingForTheKernels) {
  constexpr std::string_view kDownAndOn = R"(graph g {
      input %x : f32[64,32] @cpu
      %a @cuda:0 = exp(%x)
      %c @cuda:0 = tanh(%x)
      %d @cuda:0 = sigmoid(%c)
      %e @cuda:0 = relu(%d)
      %b @cpu = neg(%a)
      %f @cpu = add(%b, %e)
      output %f @cpu
    })";
  auto kernelWaits = [&](HostedStreams mode) {
    const int before = HostedDevice::kernelStreamSynchronizes;
    EXPECT_GE(expectReference(kDownAndOn, /*hostAccessible=*/false, mode), 0);
    return HostedDevice::kernelStreamSynchronizes - before;
  };
  const int without = kernelWaits({.queued = true, .readsHostOnIssue = true});
  const int with = kernelWaits({.queued = true, .readsHostOnIssue = true, .copyStreams = true});
  // Two runs; with copy streams only their ends wait for cuda:0's kernel stream.
  EXPECT_EQ(with, 2);
  EXPECT_GT(without, with);
  EXPECT_GE(kernelWaits({.queued = true, .readsHostOnIssue = true, .copyStreams = true,
                         .eager = true}),
            0);
}

// A run that fails part way (a gather's index out of range, on the CPU) while a copy into the
// caller's output is still queued on cuda:0's copy stream: before run() returns, that copy is
// done, so nothing writes the caller's memory afterwards, and the next run is right.
TEST(SessionStreams, ARunThatFailsLeavesNoWorkInFlight) {
  constexpr std::string_view kFailsLate = R"(graph g {
      input %x : f32[64,32] @cpu
      input %i : i64[4] @cpu
      %a @cuda:0 = exp(%x)
      %b @cpu = neg(%a)
      %c @cuda:0 = tanh(%x)
      %g @cpu = gather(%x, %i)
      output %b @cpu
      output %c @cpu
      output %g @cpu
    })";
  CompileOptions o;
  o.devices = {Device::cpu(), Device::cuda(0)};
  o.placement = PlacementPolicy::Auto;
  const std::vector<BackendEntry> registry{
      builtinBackends().front(),
      hosted(DeviceKind::Cuda, false, {.queued = true, .readsHostOnIssue = true, .copyStreams = true})};
  Expected<Executable> exe = build(parseOk(kFailsLate), o, nullptr, registry);
  ASSERT_TRUE(exe.ok()) << exe.status().message();
  Session::Options so;
  so.backends = registry;
  Expected<Session> s = Session::create(std::move(*exe), so);
  ASSERT_TRUE(s.ok()) << s.status().message();
  const TensorData x = TensorData::randn(DType::F32, {64, 32}, 3);
  const std::vector<double> badIndices{0, 1, 2, 64}, goodIndices{0, 1, 2, 63};
  const TensorData bad = TensorData::fromDoubles(DType::I64, {4}, badIndices);
  const TensorData good = TensorData::fromDoubles(DType::I64, {4}, goodIndices);
  Expected<RunResult> failed = s->run({{"x", x}, {"i", bad}});
  ASSERT_FALSE(failed.ok());
  EXPECT_NE(failed.status().message().find("out of range"), std::string::npos)
      << failed.status().message();
  EXPECT_EQ(HostedDevice::notRun, 0);
  Expected<RunResult> r = s->run({{"x", x}, {"i", good}});
  ASSERT_TRUE(r.ok()) << r.status().message();
  Expected<std::vector<TensorData>> want = reference::run(parseOk(kFailsLate), {{"x", x}, {"i", good}});
  ASSERT_TRUE(want.ok()) << want.status().message();
  std::vector<TensorData> got;
  for (const NamedTensor &t : r->outputs) got.push_back(t.tensor.data());
  EXPECT_EQ(testutil::compareOutputs(*want, got, 1e-6), "");
}

// Random graphs on cpu, cuda:0 and cuda:1, with copy streams run lazily and eagerly, against the
// reference: transfers in every direction, chains of them, and memory the plan hands from one
// value to the next while a copy may still be reading or writing it.
TEST(SessionStreams, RandomGraphsWithCopyStreamsRunAsTheReferenceDoes) {
  constexpr int kGraphs = 1000;
  for (int mode = 1; mode < 5; ++mode) {
    const HostedStreams streams = kModes[mode];
    const bool eager = streams.eager;
    SCOPED_TRACE(modeName(streams));
    const int registrations = HostedDevice::registrations;
    const int fromRegistered = HostedDevice::uploadsFromRegistered;
    const std::vector<BackendEntry> registry{
        builtinBackends().front(), hosted(DeviceKind::Cuda, /*hostAccessible=*/false, streams)};
    int compared = 0, withTransfers = 0, failures = 0;
    const int copyStreamWork = HostedDevice::copyStreamWork;
    for (int seed = 0; seed < kGraphs && failures < 3; ++seed) {
      const testutil::RandomGraphOptions gen{.maxNodes = 12,
                                             .insertedRate = 0,
                                             .devices = {Device::cpu(), Device::cuda(0), Device::cuda(1)},
                                             .pinRate = 1.0,
                                             .dtypePinRate = 0,
                                             .ops = testutil::wellConditionedOps(),
                                             .extremeValues = false,
                                             .compileReady = true};
      const Graph g = testutil::randomGraph(static_cast<uint64_t>(seed) + 7000001, gen);
      CompileOptions o;
      o.devices = {Device::cpu(), Device::cuda(0), Device::cuda(1)};
      o.placement = PlacementPolicy::Auto;
      useBackendCapabilities(o, registry);
      CompileResult r = compile(g, o);
      if (!r.ok()) continue;
      auto context = [&] { return "seed " + std::to_string(seed) + "\n" + printGraph(r.graph); };
      Expected<Executable> exe = lower(r.graph, o, registry);
      if (!exe) {
        ADD_FAILURE() << exe.status().message() << context();
        ++failures;
        continue;
      }
      const bool transfers = exe->planTransfers > 0;
      Session::Options so;
      so.backends = registry;
      so.checkPlan = true;
      Expected<Session> s = Session::create(std::move(*exe), so);
      if (!s) {
        ADD_FAILURE() << s.status().message() << context();
        ++failures;
        continue;
      }
      const std::map<std::string, TensorData> inputs =
          testutil::randomInputs(r.graph, static_cast<uint64_t>(seed));
      std::vector<NamedTensor> given;
      for (const auto &[name, t] : inputs) given.push_back({name, Tensor(t)});
      Expected<std::vector<TensorData>> want = reference::run(r.graph, inputs);
      for (int run = 0; run < 2; ++run) {  // the second run reuses the workspace
        Expected<RunResult> got = s->run(given);
        if (!got || !want) {
          ADD_FAILURE() << "the session " << (got ? "ran" : got.status().message())
                        << "; the reference " << (want ? "ran" : want.status().message())
                        << context();
          ++failures;
          break;
        }
        std::vector<TensorData> outputs;
        for (const NamedTensor &t : got->outputs) outputs.push_back(t.tensor.data());
        const double tol = 0x1p-24 * testutil::valueScale(r.graph, inputs) *
                           (8 + 4 * static_cast<double>(r.graph.order().size()));
        if (std::string diff = testutil::compareOutputs(*want, outputs, tol); !diff.empty()) {
          ADD_FAILURE() << "run " << run << ": " << diff << context();
          ++failures;
          break;
        }
        compared += run == 0;
      }
      withTransfers += transfers;
    }
    const int onCopyStreams = HostedDevice::copyStreamWork - copyStreamWork;
    std::printf("%s: %d graphs compared, %d with transfers per run, %d items of work on copy "
                "streams\n",
                modeName(streams).c_str(), compared, withTransfers, onCopyStreams);
    (void)eager;
    EXPECT_EQ(HostedDevice::registrations, registrations);  // every session unregistered
    // With registration, the transfers read the CPU's workspace late, as DMA does.
    if (streams.pinsHost) {
      EXPECT_GE(HostedDevice::uploadsFromRegistered - fromRegistered, 100);
    }
    EXPECT_EQ(failures, 0);
    EXPECT_GE(compared, kGraphs / 2);
    EXPECT_GE(withTransfers, compared / 4);
    EXPECT_GE(onCopyStreams, withTransfers);
  }
}

}  // namespace
}  // namespace ferry
