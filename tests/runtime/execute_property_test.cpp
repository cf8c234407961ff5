// tests/runtime/execute_property_test.cpp — random graphs compiled for {cpu, cpu:1}, lowered,
// and run by a Session on the CPU backend (real transfers between the two virtual devices,
// ownership checked before every kernel, transfers checked against the plan), with outputs
// compared to the reference interpreter on the same compiled graph. Weights pinned to one device
// and read on the other are copied once, when the Session is created: the load-time copies are
// counted and checked against the plan there, and never again in a run.
//
// Each seed makes one graph (tests/common/random_graph.h) and compiles it under one of the
// policy combinations (auto placement most of the time, so that most graphs have transfers;
// strict ones that are rejected are counted and skipped). Every graph that runs must run
// exactly when the reference does, and with the plan's transfers. Its outputs are then compared:
// bool and integer outputs exactly, float outputs within a tolerance from the narrowest float
// dtype the compiled graph computes in, scaled by its values. Graphs of well-conditioned ops
// with small values are always compared; the others (every op, extreme values) only when the
// reference's values stay finite and moderate (below 1e6) — the rest overflow, are counted
// apart, and only their failure behaviour is checked.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "backends/reference/interpreter.h"
#include "backends/registry.h"
#include "common/random_graph.h"
#include "common/value_check.h"
#include "ir/printer.h"
#include "passes/lower.h"
#include "runtime/session.h"

#ifdef FERRY_HAVE_CUDA
#include "backends/cuda/cuda_target.h"
#endif

namespace ferry {
namespace {

// The backends a graph compiles and runs with: this build's, except that on cuda:N nine graphs
// in ten compile to PTX only (CudaTargetOptions): cubins take twice NVRTC's time, and every
// tenth graph still runs the cubins of the GPU at hand where it has them.
std::vector<BackendEntry> backendsFor(int seed) {
  std::vector<BackendEntry> registry = builtinBackends();
#ifdef FERRY_HAVE_CUDA
  if (seed % 10 != 0)
    for (BackendEntry &e : registry)
      if (e.kind == DeviceKind::Cuda)
        e.target = [] {
          return std::unique_ptr<Target>(std::make_unique<CudaTarget>(CudaTargetOptions{.cubins = false}));
        };
#else
  (void)seed;
#endif
  return registry;
}

constexpr int kGraphs = 2800;
constexpr int kShards = 4;
constexpr int kMaxFailures = 5;
constexpr int kMinCompared = 2000;

const std::vector<OpKind> &kWellConditioned = testutil::wellConditionedOps();

struct Policy {
  PlacementPolicy placement;
  DTypePolicy dtype;
};

Policy policyFor(int seed) {
  const DTypePolicy dtypes[] = {{DTypePolicy::Kind::Promote, DType::F16},
                                {DTypePolicy::Kind::Strict, DType::F16},
                                {DTypePolicy::Kind::Autocast, DType::F16},
                                {DTypePolicy::Kind::Autocast, DType::BF16}};
  return {seed % 5 == 4 ? PlacementPolicy::Strict : PlacementPolicy::Auto, dtypes[(seed / 5) % 4]};
}

// Outputs as the Session returns them, in order.
std::vector<TensorData> outputsOf(const RunResult &r) {
  std::vector<TensorData> out;
  for (const NamedTensor &o : r.outputs) out.push_back(o.tensor.data());
  return out;
}

// The same on {cpu, second}: cpu:1, or cuda:0 where this build has CUDA and the machine a GPU.
void runShard(int shard, Device second) {
  int graphs = 0, rejected = 0, bothFailed = 0, overflowed = 0, compared = 0, withTransfers = 0,
      withLoadTransfers = 0, exactOutputs = 0, failures = 0;
  for (int seed = shard; seed < kGraphs && failures < kMaxFailures; seed += kShards) {
    ++graphs;
    const bool conditioned = seed % 3 != 0;
    testutil::RandomGraphOptions gen{.maxNodes = 12,
                                     .insertedRate = 0,
                                     .devices = {Device::cpu(), second},
                                     .pinRate = (seed / 2) % 2 == 0 ? 0.3 : 1.0,
                                     .dtypePinRate = 0.1,
                                     .extremeValues = !conditioned,
                                     .compileReady = true};
    if (conditioned) gen.ops = kWellConditioned;
    const Graph g = testutil::randomGraph(static_cast<uint64_t>(seed) + 1000003, gen);
    const Policy policy = policyFor(seed);
    CompileOptions options;
    options.devices = {Device::cpu(), second};
    options.placement = policy.placement;
    options.dtype = policy.dtype;
    const std::vector<BackendEntry> registry = backendsFor(seed);
    options.capabilities = backendCapabilities(registry);
    CompileResult r = compile(g, options);
    if (!r.ok()) {
      ++rejected;
      continue;
    }
    auto context = [&] {
      return "seed " + std::to_string(seed) + "\ncompiled:\n" + printGraph(r.graph);
    };
    Expected<Executable> exe = lower(r.graph, options, registry);
    if (!exe.ok()) {
      ADD_FAILURE() << "lower failed: " << exe.status().message() << context();
      ++failures;
      continue;
    }
    Session::Options so;
    so.checkPlan = true;
    so.backends = registry;
    Expected<Session> session = Session::create(std::move(exe).value(), so);
    if (!session.ok()) {
      ADD_FAILURE() << "session: " << session.status().message() << context();
      ++failures;
      continue;
    }
    {
      const Executable &plan = session->executable();
      const LoadStats &load = session->loadStats();
      if (load.steps != static_cast<int>(plan.loadSteps.size()) ||
          load.transfers != plan.planLoadTransfers ||
          load.transferBytes != plan.planLoadTransferBytes ||
          load.transfers != r.stats.loadTransfers ||
          load.transferBytes != r.stats.loadTransferBytes) {
        ADD_FAILURE() << "at load: " << load.transfers << " transfers of " << load.transferBytes
                      << " bytes in " << load.steps << " steps; the plan has "
                      << plan.planLoadTransfers << " of " << plan.planLoadTransferBytes
                      << ", the compile counted " << r.stats.loadTransfers << " of "
                      << r.stats.loadTransferBytes << "\n"
                      << context();
        ++failures;
        continue;
      }
    }
    const std::map<std::string, TensorData> inputs =
        testutil::randomInputs(r.graph, static_cast<uint64_t>(seed));
    std::vector<NamedTensor> given;
    for (const auto &[name, t] : inputs) {
      // Inputs arrive on their declared devices.
      const Device d = *r.graph.value(*r.graph.findValue(name)).device;
      Expected<Tensor> on = Tensor(t).to(d);
      ASSERT_TRUE(on.ok()) << on.status().message();
      given.push_back({name, *on});
    }
    Expected<RunResult> got = session->run(given);
    Expected<std::vector<TensorData>> want = reference::run(r.graph, inputs);
    if (got.ok() != want.ok()) {
      ADD_FAILURE() << "the session " << (got.ok() ? "ran" : "failed: " + got.status().message())
                    << "; the reference "
                    << (want.ok() ? "ran" : "failed: " + want.status().message()) << "\n"
                    << context();
      ++failures;
      continue;
    }
    if (!got.ok()) {
      ++bothFailed;
      continue;
    }
    const Executable &plan = session->executable();
    if (got->stats.transfers != plan.planTransfers ||
        got->stats.transferBytes != plan.planTransferBytes) {
      ADD_FAILURE() << got->stats.transfers << " transfers of " << got->stats.transferBytes
                    << " bytes, the plan has " << plan.planTransfers << " of "
                    << plan.planTransferBytes << "\n"
                    << context();
      ++failures;
      continue;
    }
    // The CPU kernels compute f16/bf16 in f32 and may sum in another order than the
    // reference: a tolerance from the narrowest float dtype of the graph, scaled by its values.
    double narrowest = 0x1p-24;
    for (NodeId id : r.graph.order())
      narrowest = std::max(
          narrowest, testutil::unitRoundoff(r.graph.value(r.graph.node(id).result).type.dtype));
    const double scale = testutil::valueScale(r.graph, inputs);
    if (!conditioned && !(scale < 1e6)) {
      ++overflowed;  // the failure and transfer checks above only
      continue;
    }
    const double tol = narrowest * scale * (8 + 4 * static_cast<double>(r.graph.order().size()));
    const std::vector<TensorData> outputs = outputsOf(*got);
    std::string diff = outputs.size() == want->size() ? "" : "the number of outputs differs";
    int exact = 0;
    for (size_t k = 0; k < outputs.size() && diff.empty(); ++k) {
      // Bool and integer outputs exactly; floats within the tolerance.
      const bool isExact = !isFloating((*want)[k].dtype());
      exact += isExact;
      diff = testutil::compareOutputs({(*want)[k]}, {outputs[k]}, isExact ? 0 : tol);
      if (!diff.empty()) diff = "output " + std::to_string(k) + ": " + diff;
    }
    if (!diff.empty()) {
      ADD_FAILURE() << "values differ: " << diff << "\n" << context();
      ++failures;
      continue;
    }
    ++compared;
    exactOutputs += exact;
    withTransfers += plan.planTransfers > 0;
    withLoadTransfers += plan.planLoadTransfers > 0;
  }
  std::printf("%s, shard %d: %d graphs: %d rejected by compile, %d failed in both, %d ran but "
              "overflowed (not compared), %d ran and compared (%d with transfers per run, %d "
              "with weights copied at load, %d bool or integer outputs compared exactly)\n",
              second.str().c_str(), shard, graphs, rejected, bothFailed, overflowed, compared, withTransfers,
              withLoadTransfers, exactOutputs);
  EXPECT_EQ(graphs, kGraphs / kShards);
  EXPECT_EQ(rejected + bothFailed + overflowed + compared + failures, graphs);
  // At least 2,000 graphs compared over all shards, transfers per run and at load in a good
  // share of them, and exact outputs among them.
  EXPECT_GE(compared, kMinCompared / kShards);
  EXPECT_GT(withTransfers, compared / 20);
  EXPECT_GT(withLoadTransfers, compared / 20);
  EXPECT_GT(exactOutputs, 0);
}

class ExecuteProperty : public ::testing::TestWithParam<int> {};

TEST_P(ExecuteProperty, CompiledGraphsRunOnTheCpuBackendAsTheReferenceDoes) {
  runShard(GetParam(), Device::cpu(1));
}

// With a GPU: the CUDA backend's kernels, cuBLASLt GEMMs and copies between host and GPU.
TEST_P(ExecuteProperty, CompiledGraphsRunOnTheCpuAndCuda0AsTheReferenceDoes) {
  const std::vector<Device> here = machineDevices();
  if (std::find(here.begin(), here.end(), Device::cuda(0)) == here.end())
    GTEST_SKIP() << "no cuda:0 on this machine (or no CUDA in this build)";
  runShard(GetParam(), Device::cuda(0));
}

INSTANTIATE_TEST_SUITE_P(Shards, ExecuteProperty, ::testing::Range(0, kShards));

}  // namespace
}  // namespace ferry
