// tests/runtime/load_time_test.cpp — weights move once: a transfer or cast of a weight (a param,
// a constant, or a copy or cast of one) is a load step that Session::create runs once, never a
// step of a run. From an app's side, on two virtual host devices (real copies between arenas):
// compiled, created, run twice, every copy counted and checked against the plan, outputs compared
// with the reference interpreter on the model as written.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "backends/reference/interpreter.h"
#include "common/parse.h"
#include "passes/lower.h"
#include "runtime/session.h"

namespace ferry {
namespace {

CompileOptions twoHosts(PlacementPolicy placement = PlacementPolicy::Auto,
                        DTypePolicy::Kind dtype = DTypePolicy::Kind::Strict) {
  CompileOptions o;
  o.devices = {Device::cpu(), Device::cpu(1)};
  o.placement = placement;
  o.dtype.kind = dtype;
  o.fusion = false;  // the tests name the run's steps, one per node
  return o;
}

Executable built(std::string_view text, const CompileOptions &options) {
  Expected<Executable> exe = build(parseOk(text), options);
  EXPECT_TRUE(exe.ok()) << exe.status().message();
  return exe.ok() ? std::move(exe).value() : Executable{};
}

Session created(Executable exe) {
  Session::Options so;
  so.checkPlan = true;  // the load-time copies against the plan, then each run's
  Expected<Session> s = Session::create(std::move(exe), so);
  EXPECT_TRUE(s.ok()) << s.status().message();
  return std::move(s).value();
}

std::vector<std::string> opsOf(const std::vector<Step> &steps) {
  std::vector<std::string> ops;
  for (const Step &st : steps) ops.emplace_back(opInfo(st.op).name);
  return ops;
}

// Runs `s` twice on `inputs` (each on the device the model declares it on): no copy between
// devices in either run, and the outputs of both equal the reference interpreter's on `text`.
void expectTwoRunsWithoutCopies(const Session &s, std::string_view text,
                                const std::map<std::string, TensorData> &inputs,
                                const std::map<std::string, Device> &on, double tolerance = 1e-5) {
  Expected<std::vector<TensorData>> want = reference::run(parseOk(text), inputs);
  ASSERT_TRUE(want.ok()) << want.status().message();
  std::vector<NamedTensor> given;
  for (const auto &[name, data] : inputs) {
    Expected<Tensor> t = Tensor(data).to(on.at(name));
    ASSERT_TRUE(t.ok()) << t.status().message();
    given.push_back({name, *t});
  }
  for (int run = 0; run < 2; ++run) {
    SCOPED_TRACE("run " + std::to_string(run));
    Expected<RunResult> r = s.run(given);
    ASSERT_TRUE(r.ok()) << r.status().message();
    EXPECT_EQ(r->stats.transfers, 0);
    EXPECT_EQ(r->stats.transferBytes, 0);
    EXPECT_EQ(r->stats.inputMoves, 0);
    ASSERT_EQ(r->outputs.size(), want->size());
    for (size_t o = 0; o < want->size(); ++o) {
      const TensorData &got = r->outputs[o].tensor.data(), &ref = (*want)[o];
      ASSERT_EQ(got.type(), ref.type());
      for (int64_t i = 0; i < got.numel(); ++i)
        ASSERT_NEAR(got.at(i), ref.at(i), tolerance * (1 + std::fabs(ref.at(i))))
            << "output " << o << " element " << i;
    }
  }
}

// A weight pinned to cpu, its layer on cpu:1 (where the input arrives): the copy is a load step,
// made once at create and counted there; no run copies anything; the session keeps the copy only.
TEST(LoadTime, AParamPinnedToOneDeviceAndReadOnAnotherIsCopiedOnceAtCreate) {
  constexpr std::string_view text = R"(graph pinned {
  input %x : f32[4,6] @cpu:1
  param %w : f32[6,5] @cpu = randn(seed=7)
  %y = matmul(%x, %w)
  %z = tanh(%y)
  output %z
})";
  Executable exe = built(text, twoHosts());
  EXPECT_EQ(opsOf(exe.loadSteps), std::vector<std::string>{"transfer"});
  EXPECT_EQ(opsOf(exe.steps), (std::vector<std::string>{"matmul", "tanh"}));
  EXPECT_EQ(exe.planTransfers, 0);
  EXPECT_EQ(exe.planLoadTransfers, 1);
  EXPECT_EQ(exe.planLoadTransferBytes, 6 * 5 * 4);
  const Slot &copy = exe.slots[static_cast<size_t>(exe.loadSteps[0].result)];
  EXPECT_EQ(copy.kind, SlotKind::Loaded);
  EXPECT_EQ(copy.device, Device::cpu(1));

  Session s = created(std::move(exe));
  const LoadStats &load = s.loadStats();
  EXPECT_EQ(load.steps, 1);
  EXPECT_EQ(load.transfers, 1);
  EXPECT_EQ(load.transferBytes, 6 * 5 * 4);
  EXPECT_EQ(s.weightBytes(), size_t{6 * 5 * 4}) << "the copy on cpu:1; the original is released";
  expectTwoRunsWithoutCopies(s, text, {{"x", TensorData::randn(DType::F32, {4, 6}, 1)}},
                             {{"x", Device::cpu(1)}});
  // Counted once: runs leave the load statistics alone.
  EXPECT_EQ(s.loadStats().transfers, 1);
}

// The bias story: a layer on cpu:1 whose bias was left on cpu. Under auto placement the bias is
// copied once, at load, and the layer stays with its input: before, the bias crossed every run.
TEST(LoadTime, ABiasLeftOnAnotherDeviceIsCopiedOnceNotInEveryRun) {
  constexpr std::string_view text = R"(graph bias {
  input %x : f32[8,16] @cpu:1
  param %w : f32[4,16] = randn(seed=1)
  param %b : f32[4] @cpu = randn(seed=2)
  %h = linear(%x, %w, %b)
  %y = relu(%h)
  output %y
})";
  Executable exe = built(text, twoHosts());
  ASSERT_EQ(exe.loadSteps.size(), 1u);
  EXPECT_EQ(exe.slots[static_cast<size_t>(exe.loadSteps[0].operands[0])].name, "b");
  for (const Step &st : exe.steps)
    EXPECT_EQ(exe.slots[static_cast<size_t>(st.result)].device, Device::cpu(1));
  Session s = created(std::move(exe));
  EXPECT_EQ(s.loadStats().transfers, 1);
  EXPECT_EQ(s.loadStats().transferBytes, 4 * 4);
  expectTwoRunsWithoutCopies(s, text, {{"x", TensorData::randn(DType::F32, {8, 16}, 3)}},
                             {{"x", Device::cpu(1)}});
}

// Chains: an f16 weight on cpu:1 computed with in f32 on cpu is sent as f16 and widened there
// (transfer, then cast, both at load); a constant made on cpu:1 is copied to cpu at load.
TEST(LoadTime, ChainsOfTransfersAndCastsOfWeightsAndConstantsAllRunAtLoad) {
  constexpr std::string_view text = R"(graph chain {
  input %x : f32[4,8] @cpu
  param %w : f16[6,8] @cpu:1 = randn(seed=3)
  %k @cpu:1 = constant(value=f32[6]{0.5, -1, 2, 0.25, 3, -0.5})
  %h = linear(%x, %w)
  %y = mul(%h, %k)
  output %y
})";
  Executable exe = built(text, twoHosts(PlacementPolicy::Auto, DTypePolicy::Kind::Promote));
  EXPECT_EQ(opsOf(exe.loadSteps), (std::vector<std::string>{"transfer", "cast", "transfer"}));
  EXPECT_EQ(opsOf(exe.steps), (std::vector<std::string>{"linear", "mul"}));
  EXPECT_EQ(exe.planTransfers, 0);
  EXPECT_EQ(exe.planLoadTransfers, 2);
  EXPECT_EQ(exe.planLoadTransferBytes, 6 * 8 * 2 + 6 * 4);  // the f16 weight, the constant
  // Saved and loaded, the load steps are the same.
  Expected<Executable> back = Executable::deserialize(exe.serialize(), "chain.ferry");
  ASSERT_TRUE(back.ok()) << back.status().message();
  Session s = created(std::move(back).value());
  EXPECT_EQ(s.loadStats().steps, 3);
  EXPECT_EQ(s.loadStats().transfers, 2);
  EXPECT_EQ(s.loadStats().transferBytes, 6 * 8 * 2 + 6 * 4);
  expectTwoRunsWithoutCopies(s, text, {{"x", TensorData::randn(DType::F32, {4, 8}, 4)}},
                             {{"x", Device::cpu()}});
}

// Strict placement moves nothing implicitly, but a transfer the user wrote of a param is a
// weight's copy all the same: made once, at load.
TEST(LoadTime, ATransferOfAParamWrittenInTheModelRunsAtLoadUnderStrict) {
  constexpr std::string_view text = R"(graph written {
  input %x : f32[3,4] @cpu:1
  param %w : f32[4] @cpu = randn(seed=5)
  %w1 = transfer(%w, to=cpu:1)
  %y = add(%x, %w1)
  output %y
})";
  Executable exe = built(text, twoHosts(PlacementPolicy::Strict));
  EXPECT_EQ(opsOf(exe.loadSteps), std::vector<std::string>{"transfer"});
  EXPECT_FALSE(exe.loadSteps[0].inserted);
  EXPECT_EQ(exe.planTransfers, 0);
  Session s = created(std::move(exe));
  EXPECT_EQ(s.loadStats().transfers, 1);
  expectTwoRunsWithoutCopies(s, text, {{"x", TensorData::randn(DType::F32, {3, 4}, 6)}},
                             {{"x", Device::cpu(1)}});
}

// A weight that is also an output, copied to where the output is pinned: the output is the
// loaded copy, handed back by every run without a copy between devices.
TEST(LoadTime, AWeightReturnedOnAnotherDeviceIsTheLoadedCopy) {
  constexpr std::string_view text = R"(graph out {
  input %x : f32[4] @cpu
  param %w : f32[4] @cpu = randn(seed=8)
  %y = add(%x, %w)
  output %y
  output %w @cpu:1
})";
  Executable exe = built(text, twoHosts());
  ASSERT_EQ(exe.loadSteps.size(), 1u);
  EXPECT_EQ(exe.slots[static_cast<size_t>(exe.outputs[1])].kind, SlotKind::Loaded);
  Session s = created(std::move(exe));
  expectTwoRunsWithoutCopies(s, text, {{"x", TensorData::randn(DType::F32, {4}, 9)}},
                             {{"x", Device::cpu()}});
  // Both the original (read by %y) and the copy (returned) are kept.
  EXPECT_EQ(s.weightBytes(), size_t{2 * 4 * 4});
}

}  // namespace
}  // namespace ferry
