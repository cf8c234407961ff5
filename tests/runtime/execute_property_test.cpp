// tests/runtime/execute_property_test.cpp — random graphs compiled for {cpu, cpu:1}, lowered,
// and run by a Session on the CPU backend (real transfers between the two virtual devices,
// ownership checked before every kernel, transfers checked against the plan), with outputs
// compared to the reference interpreter on the same compiled graph.
//
// Each seed makes one graph (tests/common/random_graph.h) and compiles it under one of the
// policy combinations (auto placement most of the time, so that most graphs have transfers;
// strict ones that are rejected are counted and skipped). Graphs of well-conditioned ops with
// small values are compared within a tolerance from the narrowest float dtype the compiled
// graph computes in; the others (every op, extreme values) must fail exactly when the
// reference fails and otherwise agree in their exact (bool and integer) outputs and within the
// same tolerance wherever the reference's values are finite and moderate.
#include <gtest/gtest.h>

#include <cmath>

#include "backends/reference/interpreter.h"
#include "common/random_graph.h"
#include "common/value_check.h"
#include "ir/printer.h"
#include "runtime/session.h"

namespace ferry {
namespace {

constexpr int kGraphs = 2800;
constexpr int kShards = 4;
constexpr int kMaxFailures = 5;

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

class ExecuteProperty : public ::testing::TestWithParam<int> {};

TEST_P(ExecuteProperty, CompiledGraphsRunOnTheCpuBackendAsTheReferenceDoes) {
  const int shard = GetParam();
  int graphs = 0, ran = 0, rejected = 0, withTransfers = 0, bothFailed = 0, failures = 0;
  for (int seed = shard; seed < kGraphs && failures < kMaxFailures; seed += kShards) {
    ++graphs;
    const bool conditioned = seed % 3 != 0;
    testutil::RandomGraphOptions gen{.maxNodes = 12,
                                     .insertedRate = 0,
                                     .devices = {Device::cpu(), Device::cpu(1)},
                                     .pinRate = (seed / 2) % 2 == 0 ? 0.3 : 1.0,
                                     .dtypePinRate = 0.1,
                                     .extremeValues = !conditioned,
                                     .compileReady = true};
    if (conditioned) gen.ops = kWellConditioned;
    const Graph g = testutil::randomGraph(static_cast<uint64_t>(seed) + 1000003, gen);
    const Policy policy = policyFor(seed);
    CompileOptions options;
    options.devices = {Device::cpu(), Device::cpu(1)};
    options.placement = policy.placement;
    options.dtype = policy.dtype;
    options.capabilities = backendCapabilities();
    CompileResult r = compile(g, options);
    if (!r.ok()) {
      ++rejected;
      continue;
    }
    auto context = [&] {
      return "seed " + std::to_string(seed) + "\ncompiled:\n" + printGraph(r.graph);
    };
    Expected<Executable> exe = lower(r.graph, options);
    if (!exe.ok()) {
      ADD_FAILURE() << "lower failed: " << exe.status().message() << context();
      ++failures;
      continue;
    }
    withTransfers += exe->planTransfers > 0;
    Session::Options so;
    so.checkPlan = true;
    Expected<Session> session = Session::create(std::move(exe).value(), so);
    if (!session.ok()) {
      ADD_FAILURE() << "session: " << session.status().message() << context();
      ++failures;
      continue;
    }
    const std::map<std::string, TensorData> inputs =
        testutil::randomInputs(r.graph, static_cast<uint64_t>(seed));
    std::vector<NamedTensor> given;
    for (const auto &[name, t] : inputs) {
      // Inputs arrive on their declared devices.
      const Device d = *r.graph.value(*r.graph.findValue(name)).device;
      Expected<Tensor> on = Tensor(t).to(d);
      ASSERT_TRUE(on.ok());
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
    ++ran;
    if (got->stats.transfers != session->executable().planTransfers) {
      ADD_FAILURE() << got->stats.transfers << " transfers, the plan has "
                    << session->executable().planTransfers << "\n"
                    << context();
      ++failures;
    }
    // The CPU kernels compute f16/bf16 in f32 and may sum in another order than the
    // reference: a tolerance from the narrowest float dtype of the graph, scaled by its values.
    double narrowest = 0x1p-24;
    for (NodeId id : r.graph.order())
      narrowest = std::max(
          narrowest, testutil::unitRoundoff(r.graph.value(r.graph.node(id).result).type.dtype));
    const double scale = testutil::valueScale(r.graph, inputs);
    if (!conditioned && !(scale < 1e6))
      continue;  // overflowing graphs: the failure check above only
    const double tol = narrowest * scale * (8 + 4 * static_cast<double>(r.graph.order().size()));
    const std::string diff = testutil::compareOutputs(*want, outputsOf(*got), tol);
    if (!diff.empty()) {
      ADD_FAILURE() << "values differ: " << diff << "\n" << context();
      ++failures;
    }
  }
  std::printf(
      "shard %d: %d graphs, %d ran and compared, %d rejected by compile, %d failed in both, "
      "%d with transfers\n",
      shard, graphs, ran, rejected, bothFailed, withTransfers);
  EXPECT_EQ(graphs, kGraphs / kShards);
  // At least 2,000 executed graphs over all shards, and transfers in a good share of them.
  EXPECT_GE(ran, 2000 / kShards);
  EXPECT_GT(withTransfers, ran / 10);
}

INSTANTIATE_TEST_SUITE_P(Shards, ExecuteProperty, ::testing::Range(0, kShards));

}  // namespace
}  // namespace ferry
