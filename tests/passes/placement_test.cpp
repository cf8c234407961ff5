// tests/passes/placement_test.cpp — device placement: the failure stories of eager frameworks
// under strict (exact diagnostics) and auto (exact transfers), fallbacks, output pins, reasons,
// idempotence, determinism. Auto against a brute-force optimum: placement_optimum_test.cpp.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <set>
#include <string>
#include <vector>

#include "common/parse.h"
#include "ir/printer.h"
#include "passes/compile.h"
#include "passes/explain.h"
#include "passes/lower.h"
#include "passes/pass.h"
#include "passes/placement_test_util.h"

namespace ferry {
namespace {

constexpr auto kStrict = PlacementPolicy::Strict;
constexpr auto kAuto = PlacementPolicy::Auto;

std::string replaceAll(std::string s, const std::string &from, const std::string &to) {
  for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size()))
    s.replace(at, from.size(), to);
  return s;
}

int count(const CompileResult &r, Severity s) {
  int n = 0;
  for (const Diagnostic &d : r.diagnostics) n += d.severity == s;
  return n;
}

// The transfers placement inserted, in order: "%x -> cuda:0 as %x.cuda0; ...".
std::string transfers(const Graph &g) {
  std::string s;
  for (NodeId id : g.order()) {
    const Node &n = g.node(id);
    if (n.op != OpKind::Transfer || !n.inserted) continue;
    s += (s.empty() ? "" : "; ") + valueRef(g, n.operands[0]) + " -> " +
         attrDevice(n.info(), n.attrs, "to").str() + " as " + valueRef(g, n.result);
  }
  return s;
}

ValueId id(const Graph &g, const std::string &name) {
  std::optional<ValueId> v = g.findValue(name);
  EXPECT_TRUE(v.has_value()) << "%" << name;
  return v.value_or(0);
}

std::string deviceOf(const Graph &g, const std::string &name) {
  const Value &v = g.value(id(g, name));
  return v.device ? v.device->str() : "none";
}

// What must hold after any successful placement: every value has a device, every operand of a
// non-transfer node is on it, pinned outputs on their pin, one transfer per (value, device).
CompileResult place(const std::string &src, const CompileOptions &o) {
  CompileResult r = compile(parseOk(src), o);
  EXPECT_EQ(r.lastPass, "placement");
  if (r.ok()) {
    expectConsistent(r.graph);
    expectIdempotent(r, o);
  }
  return r;
}

// ---- story 1 (and 8): params pinned to an accelerator, the input left on the cpu -------------

const char *kStory1 = R"(graph mlp {
  input %x : f32[32,784]
  param %w1 : f32[256,784] @ACC = zeros
  param %b1 : f32[256] @ACC = zeros
  %h = linear(%x, %w1, %b1)
  %y = relu(%h)
  output %y
}
)";

class Accelerator : public ::testing::TestWithParam<Device> {};
INSTANTIATE_TEST_SUITE_P(Devices, Accelerator, ::testing::Values(Device::cuda(0), Device::cpu(1)),
                         [](const auto &p) { return p.param.isHost() ? "cpu1" : "cuda0"; });

TEST_P(Accelerator, Story1StrictNamesBothDevicesAndBothOrigins) {
  const std::string acc = GetParam().str();
  CompileResult r =
      place(replaceAll(kStory1, "ACC", acc), options(kStrict, {Device::cpu(), GetParam()}));
  EXPECT_EQ(count(r, Severity::Error), 1);
  const std::string pad(acc.size() - 3, ' ');  // the device column is as wide as its longest entry
  EXPECT_EQ(text(r),
            "t.fy:5:3: error: operands of 'linear' (%h) are on different devices: cpu and " + acc +
                " [device]\n"
                "  operand 0 (x)      %x  f32[32,784]  @cpu" +
                pad +
                "  input 'x', declared at t.fy:2:9\n"
                "  operand 1 (weight) %w1 f32[256,784] @" +
                acc +
                "  param 'w1', pinned at t.fy:3:9\n"
                "  operand 2 (bias)   %b1 f32[256]     @" +
                acc +
                "  param 'b1', pinned at t.fy:4:9\n"
                "  fix: move %x to " +
                acc + " with transfer(%x, to=" + acc +
                "), or compile with placement=auto to insert the transfer\n");
  // The node takes the side the user pinned, so its users are judged on their own: no cascade.
  EXPECT_EQ(deviceOf(r.graph, "h"), acc);
  EXPECT_EQ(deviceOf(r.graph, "y"), acc);
  EXPECT_EQ(transfers(r.graph), "");
}

TEST_P(Accelerator, Story1AutoMovesTheInputOnce) {
  const std::string acc = GetParam().str();
  const std::string suffix = GetParam().isHost() ? "cpu1" : "cuda0";
  CompileResult r =
      place(replaceAll(kStory1, "ACC", acc), options(kAuto, {Device::cpu(), GetParam()}));
  ASSERT_TRUE(r.ok()) << text(r);
  EXPECT_EQ(r.diagnostics.size(), 0u);
  if (GetParam().isHost()) {
    // cpu:1 computes no faster than cpu: the layer stays with its input, and the weights, whose
    // copies run once at load, come to it. Nothing moves per run.
    EXPECT_EQ(transfers(r.graph), "%w1 -> cpu as %w1.cpu; %b1 -> cpu as %b1.cpu");
    EXPECT_EQ(deviceOf(r.graph, "h"), "cpu");
    EXPECT_EQ(r.stats.transfers, 0);
    EXPECT_EQ(r.stats.loadTransfers, 2);
    EXPECT_EQ(r.stats.loadTransferBytes, (256 * 784 + 256) * 4);
    return;
  }
  EXPECT_EQ(transfers(r.graph), "%x -> " + acc + " as %x." + suffix);
  const Graph &g = r.graph;
  // Right after the producer: an input's transfer starts the order. It is where %h needs it.
  const Node &t = g.node(g.order()[0]);
  EXPECT_EQ(t.op, OpKind::Transfer);
  EXPECT_TRUE(t.inserted);
  EXPECT_EQ(t.loc.str(), "t.fy:5:3");
  EXPECT_EQ(g.producer(id(g, "h"))->operands[0], t.result);
  EXPECT_EQ(g.deviceReason(t.result).kind, Reason::Kind::Inserted);
  EXPECT_EQ(g.deviceReason(t.result).from, id(g, "x"));
  EXPECT_EQ(deviceOf(g, "h"), acc);
  EXPECT_EQ(g.deviceReason(id(g, "h")).kind, Reason::Kind::CostModel);
  EXPECT_EQ(r.stats.transfers, 1);
  EXPECT_EQ(r.stats.transferBytes, 32 * 784 * 4);
}

// ---- story 2: a constant created inside the model, no device ---------------------------------

const char *kStory2 = R"(graph g {
  input %x : f32[1024,1024] @cuda:0
  param %p : f32[1024] = ones
  %c = constant(value=f32[1]{2})
  %e = exp(%c)
  %s = mul(%x, %e)
  %y = add(%s, %p)
  output %y
}
)";

TEST(Story2, AConstantFollowsItsConsumersInStrict) {
  CompileResult r = place(kStory2, options(kStrict));
  ASSERT_TRUE(r.ok()) << text(r);
  EXPECT_EQ(r.diagnostics.size(), 0u);
  EXPECT_EQ(transfers(r.graph), "");
  for (const char *v : {"c", "e", "p", "s", "y"}) EXPECT_EQ(deviceOf(r.graph, v), "cuda:0") << v;
  EXPECT_EQ(explainDevice(r.graph, id(r.graph, "c")),
            "from its consumer %e (t.fy:5:3) <- from its consumer %s (t.fy:6:3) <- inherited "
            "from %x (t.fy:2:9) <- input 'x', declared at t.fy:2:9");
  EXPECT_EQ(explainDevice(r.graph, id(r.graph, "p")),
            "from its consumer %y (t.fy:7:3) <- inherited from %s (t.fy:6:3) <- inherited from %x "
            "(t.fy:2:9) <- input 'x', declared at t.fy:2:9");
}

TEST(Story2, AConstantCostsNothingToPlaceInAuto) {
  CompileResult r = place(kStory2, options(kAuto));
  ASSERT_TRUE(r.ok()) << text(r);
  EXPECT_EQ(transfers(r.graph), "");
  for (const char *v : {"c", "e", "p", "s", "y"}) EXPECT_EQ(deviceOf(r.graph, v), "cuda:0") << v;
  const Reason &c = r.graph.deviceReason(id(r.graph, "c"));
  EXPECT_EQ(c.kind, Reason::Kind::CostModel);
  EXPECT_EQ(explainDevice(r.graph, id(r.graph, "p")).substr(0, 41),
            "cost model: next to its consumer %y (t.fy");
}

// ---- story 3: one layer's weight pinned to the cpu in a cuda:0 model --------------------------

std::string story3(int batch) {
  return replaceAll(R"(graph g {
  input %x : f32[B,512] @cuda:0
  param %w1 : f32[512,512] @cuda:0 = zeros
  param %w2 : f32[512,512] @cpu = zeros
  param %w3 : f32[512,512] @cuda:0 = zeros
  %h1 = linear(%x, %w1)
  %h2 = linear(%h1, %w2)
  %h3 = linear(%h2, %w3)
  output %h3
}
)",
                    "B", std::to_string(batch));
}

TEST(Story3, StrictRejectsThatLayerOnly) {
  CompileResult r = place(story3(64), options(kStrict));
  EXPECT_EQ(count(r, Severity::Error), 1);
  const Diagnostic &d = r.diagnostics.at(0);
  EXPECT_EQ(d.code, "device");
  EXPECT_EQ(d.loc.str(), "t.fy:7:3");
  EXPECT_EQ(d.message, "operands of 'linear' (%h2) are on different devices: cuda:0 and cpu");
  ASSERT_EQ(d.notes.size(), 2u);
  EXPECT_EQ(d.notes[0].message,
            "operand 0 (x)      %h1 f32[64,512]  @cuda:0  inherited from %x (t.fy:2:9) <- input "
            "'x', declared at t.fy:2:9");
  EXPECT_EQ(d.notes[1].message,
            "operand 1 (weight) %w2 f32[512,512] @cpu     param 'w2', pinned at t.fy:4:9");
  // Each note carries the location it talks about: the operand's definition.
  EXPECT_EQ(d.notes[0].loc.str(), "t.fy:6:3");
  EXPECT_EQ(d.notes[1].loc.str(), "t.fy:4:9");
  // The weight was created on the wrong device: the fix is its pin, not a copy per run.
  ASSERT_EQ(d.fixes.size(), 1u);
  EXPECT_EQ(d.fixes[0], "drop the @cpu pin on %w2, or pin it to cuda:0");
}

// The estimate of running %h2 on `on` with everything else where it is pinned.
double story3Estimate(const CostModel &m, int batch, Device on) {
  TensorType act{DType::F32, {batch, 512}}, w{DType::F32, {512, 512}};
  std::vector<TensorType> in{act, w};
  double compute = m.computeSeconds(on, opCost(opInfo(OpKind::Linear), in, {}, act));
  double actBytes = double(act.byteSize());
  if (on.isHost())  // move the activations there and back, every run
    return compute + m.transferSeconds(Device::cuda(0), on, actBytes) +
           m.transferSeconds(on, Device::cuda(0), actBytes);
  return compute;  // the weight is copied once, at load: nothing per run
}

TEST(Story3, AutoMovesTheWeightWhenThatIsCheaper) {
  CompileOptions o = options(kAuto);
  ASSERT_LT(story3Estimate(o.cost, 64, Device::cuda(0)), story3Estimate(o.cost, 64, Device::cpu()));
  CompileResult r = place(story3(64), o);
  ASSERT_TRUE(r.ok()) << text(r);
  EXPECT_EQ(transfers(r.graph), "%w2 -> cuda:0 as %w2.cuda0");
  EXPECT_EQ(r.graph.node(r.graph.order()[0]).op, OpKind::Transfer);  // params' go first
  EXPECT_EQ(deviceOf(r.graph, "h2"), "cuda:0");
}

TEST(Story3, TheWeightMovesAtLoadEvenOverASlowLink) {
  // A slow link and a batch of one: copying the 1 MiB weight every run would cost more than
  // computing the layer on the cpu and copying 2 KiB of activations there and back, but the
  // weight is copied once, at load, so the layer runs on cuda:0 and nothing moves per run.
  CompileOptions o = options(kAuto);
  o.cost.hostToDevice = o.cost.deviceToHost = {1e9, 1e-6};
  ASSERT_LT(story3Estimate(o.cost, 1, Device::cuda(0)), story3Estimate(o.cost, 1, Device::cpu()));
  CompileResult r = place(story3(1), o);
  ASSERT_TRUE(r.ok()) << text(r);
  EXPECT_EQ(transfers(r.graph), "%w2 -> cuda:0 as %w2.cuda0");
  EXPECT_EQ(deviceOf(r.graph, "h2"), "cuda:0");
  EXPECT_EQ(r.stats.transfers, 0);
  EXPECT_EQ(r.stats.transferBytes, 0);
  EXPECT_EQ(r.stats.loadTransfers, 1);
  EXPECT_EQ(r.stats.loadTransferBytes, 512 * 512 * 4);
  EXPECT_EQ(r.graph.deviceReason(id(r.graph, "h2")).detail,
            "cost model: cuda:0 5.53 \u00b5s vs cpu 52.8 \u00b5s");
}

// The issue's story: a 64 MiB weight pinned to the host feeding a GEMM in a model on cuda:0, batch
// 4. Charged per run, the weight's copy (3.4 ms) costs more than running the layer on the cpu
// and copying the activations there and back, so auto used to do that in every run. The copy is
// made once, at load: the GEMM runs on cuda:0 and nothing crosses devices per run.
TEST(Story3, A64MiBWeightPinnedToTheHostIsCopiedOnceAndItsGemmRunsOnCuda) {
  constexpr const char *kPinned = R"(graph pinned_weight {
  input %x : f32[4,4096] @cuda:0
  param %w : f32[4096,4096] @cpu = zeros
  param %b : f32[4096] @cuda:0 = zeros
  %h = linear(%x, %w, %b)
  %y = relu(%h)
  output %y @cuda:0
}
)";
  CompileOptions o = options(kAuto);
  o.stopAfter.clear();
  const CostModel &m = o.cost;
  const TensorType act{DType::F32, {4, 4096}}, w{DType::F32, {4096, 4096}}, b{DType::F32, {4096}};
  auto compute = [&](Device d) {
    const std::vector<TensorType> in{act, w, b}, one{act};
    return m.computeSeconds(d, opCost(opInfo(OpKind::Linear), in, {}, act)) +
           m.computeSeconds(d, opCost(opInfo(OpKind::Relu), one, {}, act));
  };
  const double bytes = double(act.byteSize());
  const double onCpu = compute(Device::cpu()) +
                       m.transferSeconds(Device::cuda(0), Device::cpu(), bytes) +
                       m.transferSeconds(Device::cuda(0), Device::cpu(), double(b.byteSize())) +
                       m.transferSeconds(Device::cpu(), Device::cuda(0), bytes);
  const double weightPerRun =
      m.transferSeconds(Device::cpu(), Device::cuda(0), double(w.byteSize()));
  ASSERT_GT(compute(Device::cuda(0)) + weightPerRun, onCpu) << "charged per run, cpu would win";
  ASSERT_LT(compute(Device::cuda(0)), onCpu);

  CompileResult r = compile(parseOk(kPinned), o);
  ASSERT_TRUE(r.ok()) << text(r);
  EXPECT_EQ(transfers(r.graph), "%w -> cuda:0 as %w.cuda0");
  EXPECT_EQ(deviceOf(r.graph, "h"), "cuda:0");
  EXPECT_EQ(deviceOf(r.graph, "y"), "cuda:0");
  EXPECT_EQ(r.stats.transfers, 0);
  EXPECT_EQ(r.stats.transferBytes, 0);
  EXPECT_EQ(r.stats.loadTransfers, 1);
  EXPECT_EQ(r.stats.loadTransferBytes, int64_t{64} << 20);
  EXPECT_NEAR(r.stats.estimatedSeconds, compute(Device::cuda(0)), 1e-9);
  // Lowered for cuda:0 (this build has no cuda target: plans stay empty, the executable is whole),
  // the copy is a load step and no step of a run.
  Expected<Executable> exe = lower(r.graph, o);
  ASSERT_TRUE(exe.ok()) << exe.status().message();
  ASSERT_EQ(exe->loadSteps.size(), 1u);
  EXPECT_EQ(exe->loadSteps[0].op, OpKind::Transfer);
  EXPECT_EQ(exe->planTransfers, 0);
  EXPECT_EQ(exe->planLoadTransfers, 1);
  EXPECT_EQ(exe->planLoadTransferBytes, int64_t{64} << 20);
  for (const Step &st : exe->steps) EXPECT_NE(st.op, OpKind::Transfer);
}

TEST(Story3, ATieInComputeIsExplainedByTheTransfers) {
  // cpu and cpu:1 compute at the same speed: %a goes to cpu:1 with its operand, and the reason
  // says that the data, not the compute, decided.
  CompileOptions o = options(kAuto);
  o.devices = {Device::cpu(), Device::cpu(1)};
  o.target = Device::cpu();
  CompileResult r = place(R"(graph g {
  input %x : f32[64,64] @cpu:1
  %a = relu(%x)
  %b @cpu:1 = neg(%a)
  output %b
}
)",
                          o);
  ASSERT_TRUE(r.ok()) << text(r);
  EXPECT_EQ(deviceOf(r.graph, "a"), "cpu:1");
  const std::string why(r.graph.deviceReason(id(r.graph, "a")).detail.view());
  EXPECT_TRUE(why.starts_with("cost model: cpu:1 ")) << why;
  EXPECT_TRUE(why.ends_with("; as fast elsewhere: chosen for its transfers, or kept where "
                            "placement started if those tie too"))
      << why;
}

TEST(Story3, AutoReadsTheCapabilityTablesCostFactor) {
  // The same model where the weight moved: a linear on cuda:0 that takes 1000x the cost
  // model's estimate (a device kind whose kernel for it is slow) is cheaper on the cpu.
  CompileOptions o = options(kAuto);
  o.capabilities.setCostFactor(DeviceKind::Cuda, OpKind::Linear, DType::F32, 1000);
  CompileResult r = place(story3(64), o);
  ASSERT_TRUE(r.ok()) << text(r);
  EXPECT_EQ(deviceOf(r.graph, "h2"), "cpu");
  EXPECT_NE(r.graph.deviceReason(id(r.graph, "h2")).detail.view().find("cost model: cpu"),
            std::string::npos)
      << r.graph.deviceReason(id(r.graph, "h2")).detail;
  // Another dtype's factor does not apply.
  o.capabilities = {};
  o.capabilities.setCostFactor(DeviceKind::Cuda, OpKind::Linear, DType::F16, 1000);
  CompileResult same = place(story3(64), o);
  ASSERT_TRUE(same.ok()) << text(same);
  EXPECT_EQ(deviceOf(same.graph, "h2"), "cuda:0");
}

// ---- story 5 (and 8): operands on two accelerators --------------------------------------------

std::string story5(Device a, Device b) {
  return replaceAll(replaceAll(R"(graph g {
  input %a : f32[256,256] @A
  input %b : f32[256,256] @B
  %c = add(%a, %b)
  %d = relu(%c)
  output %d
}
)",
                               "@A", "@" + a.str()),
                    "@B", "@" + b.str());
}

class TwoAccelerators : public ::testing::TestWithParam<std::pair<Device, Device>> {};
INSTANTIATE_TEST_SUITE_P(Devices, TwoAccelerators,
                         ::testing::Values(std::pair{Device::cuda(0), Device::cuda(1)},
                                           std::pair{Device::cpu(1), Device::cpu(2)}),
                         [](const auto &p) { return p.param.first.isHost() ? "cpu" : "cuda"; });

TEST_P(TwoAccelerators, Story5StrictRejects) {
  auto [a, b] = GetParam();
  CompileResult r = place(story5(a, b), options(kStrict, {Device::cpu(), a, b}));
  EXPECT_EQ(count(r, Severity::Error), 1);
  EXPECT_EQ(r.diagnostics.at(0).message,
            "operands of 'add' (%c) are on different devices: " + a.str() + " and " + b.str());
  EXPECT_EQ(r.diagnostics.at(0).fixes.at(0),
            "move %b to " + a.str() + " with transfer(%b, to=" + a.str() +
                "), or compile with placement=auto to insert the transfer");
}

TEST_P(TwoAccelerators, Story5AutoCopiesOnceBetweenThem) {
  auto [a, b] = GetParam();
  const std::string suffix = a.isHost() ? "cpu1" : "cuda0";
  // Three devices (expansion moves) and exactly these two (one minimum cut).
  for (auto devices : {std::vector<Device>{Device::cpu(), a, b}, std::vector<Device>{a, b}}) {
    CompileResult r = place(story5(a, b), options(kAuto, devices));
    ASSERT_TRUE(r.ok()) << text(r);
    EXPECT_EQ(transfers(r.graph), "%b -> " + a.str() + " as %b." + suffix);
    EXPECT_EQ(deviceOf(r.graph, "d"), a.str());
    EXPECT_EQ(a.isHost() ? r.stats.bytesOf(TransferDirection::H2H)
                         : r.stats.bytesOf(TransferDirection::D2D),
              256 * 256 * 4);
  }
}

// ---- story 6: every conflict of a graph in one run, none twice, none cascading -----------------

const char *kStory6 = R"(graph g {
  input %x : f32[8,16]
  input %z : f32[8,16]
  param %w : f32[4,16] @cuda:0 = zeros
  param %q : f32[8,16] @cuda:0 = zeros
  %h = linear(%x, %w)
  %r = relu(%h)
  %s = add(%z, %q)
  %t = add(%s, %z)
  %u = concat(%x, %q, %s, axis=0)
  output %r, %t, %u
}
)";

TEST(Story6, StrictReportsEveryConflictOnce) {
  CompileResult r = place(kStory6, options(kStrict));
  ASSERT_EQ(count(r, Severity::Error), 4) << text(r);
  EXPECT_EQ(r.diagnostics[0].loc.str(), "t.fy:6:3");
  EXPECT_EQ(r.diagnostics[0].message,
            "operands of 'linear' (%h) are on different devices: cpu and cuda:0");
  EXPECT_EQ(r.diagnostics[1].loc.str(), "t.fy:8:3");
  EXPECT_EQ(r.diagnostics[1].message,
            "operands of 'add' (%s) are on different devices: cpu and cuda:0");
  // %t reads %s (on cuda:0, where its fix would put it) and %z (cpu): a conflict of its own.
  EXPECT_EQ(r.diagnostics[2].loc.str(), "t.fy:9:3");
  EXPECT_EQ(r.diagnostics[2].message,
            "operands of 'add' (%t) are on different devices: cuda:0 and cpu");
  // Three operands, two of them off %x's device: still one error for the node, one fix.
  EXPECT_EQ(r.diagnostics[3].loc.str(), "t.fy:10:3");
  EXPECT_EQ(r.diagnostics[3].notes.size(), 3u);
  EXPECT_EQ(r.diagnostics[3].notes[2].message,
            "operand 2 (x) %s f32[8,16] @cuda:0  inherited from %q (t.fy:5:9) <- param 'q', "
            "pinned at t.fy:5:9");
  EXPECT_EQ(r.diagnostics[3].fixes.at(0),
            "move %x to cuda:0 with transfer(%x, to=cuda:0), or compile with placement=auto to "
            "insert the transfer");
  // %r = relu(%h) follows %h to cuda:0 and is not reported.
  EXPECT_EQ(deviceOf(r.graph, "r"), "cuda:0");
}

TEST(Story6, AParamWantedOnTwoDevicesThroughUndecidedNodes) {
  // %p follows its first user %e to cpu:1; %r and %y have only %p to go by and nothing after
  // them, so they go to the target: %r then reads %p across devices.
  const char *src = R"(graph g {
  input %a : f32[4] @cpu:1
  param %p : f32[4] = ones
  %e = add(%p, %a)
  %r = rsqrt(%p)
  %y = neg(%r)
  output %e, %y
}
)";
  CompileResult r = place(src, options(kStrict, {Device::cpu(), Device::cpu(1)}));
  ASSERT_EQ(count(r, Severity::Error), 1) << text(r);
  EXPECT_EQ(r.diagnostics[0].loc.str(), "t.fy:5:3");
  EXPECT_EQ(r.diagnostics[0].message, "'rsqrt' (%r) is on cpu but its operand is on cpu:1");
  EXPECT_EQ(r.diagnostics[0].notes.at(0).message,
            "operand 0 (x) %p f32[4] @cpu:1  from its consumer %e (t.fy:4:3) <- inherited from %a "
            "(t.fy:2:9) <- input 'a', declared at t.fy:2:9");
  CompileResult a = place(src, options(kAuto, {Device::cpu(), Device::cpu(1)}));
  EXPECT_TRUE(a.ok()) << text(a);
}

TEST(Story6, AutoCompiles) {
  CompileResult r = place(kStory6, options(kAuto));
  ASSERT_TRUE(r.ok()) << text(r);
  EXPECT_EQ(r.diagnostics.size(), 0u);
}

// ---- story 7: an op a device has no kernel for -------------------------------------------------

const char *kStory7 = R"(graph g {
  input %x : f32[64,1024] @cuda:0
  %h = relu(%x)
  %s PIN= softmax(%h)
  %y = relu(%s)
  output %y
}
)";

CompileOptions noCudaSoftmax(PlacementPolicy policy, bool fallback = true,
                             std::optional<DType> dtype = DType::F32) {
  CompileOptions o = options(policy);
  o.capabilities.setMissing(DeviceKind::Cuda, OpKind::Softmax, dtype);
  o.fallback = fallback;
  return o;
}

TEST(Story7, StrictFallsBackToTheCpuWithAWarning) {
  for (const char *pin : {"", " @cuda:0"}) {
    CompileResult r = place(replaceAll(kStory7, " PIN", pin), noCudaSoftmax(kStrict));
    ASSERT_TRUE(r.ok()) << text(r);
    ASSERT_EQ(r.diagnostics.size(), 1u);
    const Diagnostic &d = r.diagnostics[0];
    EXPECT_EQ(d.severity, Severity::Warning);
    EXPECT_EQ(d.code, "fallback");
    EXPECT_EQ(d.loc.str(), "t.fy:4:3");
    EXPECT_EQ(d.message, "'softmax' (%s) has no kernel for f32 on cuda:0; it runs on cpu instead");
    EXPECT_EQ(d.notes.at(0).message,
              *pin ? "it wanted cuda:0: pinned at t.fy:4:3"
                   : "it wanted cuda:0: inherited from %h (t.fy:3:3) <- inherited from %x "
                     "(t.fy:2:9) <- input 'x', declared at t.fy:2:9");
    // The rest of the model stays on cuda:0; the fallback is the one opt-in copy there and back.
    EXPECT_EQ(transfers(r.graph), "%h -> cpu as %h.cpu; %s -> cuda:0 as %s.cuda0");
    EXPECT_EQ(deviceOf(r.graph, "s"), "cpu");
    EXPECT_EQ(deviceOf(r.graph, "y"), "cuda:0");
    EXPECT_EQ(explainDevice(r.graph, id(r.graph, "s")),
              "fallback to cpu: cuda:0 has no kernel for 'softmax' f32 at t.fy:4:3");
  }
}

TEST(Story7, AKernelMissingForAnotherDTypeIsNoFallback) {
  CompileResult r =
      place(replaceAll(kStory7, " PIN", ""), noCudaSoftmax(kStrict, true, DType::F16));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.diagnostics.size(), 0u);
  EXPECT_EQ(deviceOf(r.graph, "s"), "cuda:0");
}

TEST(Story7, WithoutFallbackItIsAnError) {
  for (auto policy : {kStrict, kAuto}) {
    CompileResult r = place(replaceAll(kStory7, " PIN", " @cuda:0"), noCudaSoftmax(policy, false));
    ASSERT_EQ(count(r, Severity::Error), 1) << text(r);
    EXPECT_EQ(r.diagnostics[0].code, "device");
    EXPECT_EQ(r.diagnostics[0].message, "'softmax' (%s) has no kernel for f32 on cuda:0");
    EXPECT_EQ(r.diagnostics[0].fixes.at(0),
              "compile with fallback on to run it on cpu, or place it on a device that has a "
              "kernel");
    EXPECT_EQ(transfers(r.graph), "");
  }
}

TEST(Story7, NowhereToFallBackTo) {
  CompileOptions o = noCudaSoftmax(kStrict);
  o.devices = {Device::cuda(0)};
  o.target = Device::cuda(0);
  CompileResult r = place(replaceAll(kStory7, " PIN", ""), o);
  ASSERT_EQ(count(r, Severity::Error), 1) << text(r);
  EXPECT_NE(text(r).find("cpu, where it would fall back to, is not among the available devices"),
            std::string::npos)
      << text(r);
}

// Auto avoids the device without the kernel and says so as strict does: the node between two
// cuda:0 nodes runs on the cpu, its data copied there and back every run.
TEST(Story7, AutoAvoidsTheDeviceAndWarnsAsStrictDoes) {
  {
    CompileResult r = place(replaceAll(kStory7, " PIN", ""), noCudaSoftmax(kAuto));
    ASSERT_TRUE(r.ok()) << text(r);
    ASSERT_EQ(r.diagnostics.size(), 1u) << text(r);
    const Diagnostic &d = r.diagnostics[0];
    EXPECT_EQ(d.severity, Severity::Warning);
    EXPECT_EQ(d.code, "fallback");
    EXPECT_EQ(d.loc.str(), "t.fy:4:3");
    EXPECT_EQ(d.message, "'softmax' (%s) has no kernel for f32 on cuda:0; it runs on cpu, its data "
                         "copied there and back");
    EXPECT_EQ(d.notes.at(0).message.rfind("auto placement had no other device for it: cost model: "
                                          "cpu ",
                                          0),
              0u)
        << d.notes.at(0).message;
    EXPECT_EQ(deviceOf(r.graph, "s"), "cpu");
    EXPECT_NE(r.graph.deviceReason(id(r.graph, "s")).detail.view().find("cuda:0 (no kernel)"),
              std::string::npos);
  }
  {
    // Nothing near it on an accelerator: nothing crosses, nothing to warn about.
    CompileResult r = place(R"(graph g {
  input %x : f32[64,1024] @cpu
  %s = softmax(%x)
  output %s @cpu
}
)",
                            noCudaSoftmax(kAuto));
    ASSERT_TRUE(r.ok()) << text(r);
    EXPECT_EQ(r.diagnostics.size(), 0u) << text(r);
  }
  {
    CompileResult r = place(replaceAll(kStory7, " PIN", " @cuda:0"), noCudaSoftmax(kAuto));
    ASSERT_TRUE(r.ok()) << text(r);
    ASSERT_EQ(r.diagnostics.size(), 1u);
    EXPECT_EQ(r.diagnostics[0].code, "fallback");
    EXPECT_EQ(deviceOf(r.graph, "s"), "cpu");
    EXPECT_EQ(r.graph.deviceReason(id(r.graph, "s")).kind, Reason::Kind::Fallback);
  }
}

TEST(Story7, WeightsOfAFallbackNodeStayWithIt) {
  // The norm's unpinned weight and bias follow it to the cpu instead of being copied there.
  CompileOptions o = options(kStrict);
  o.capabilities.setMissing(DeviceKind::Cuda, OpKind::LayerNorm, std::nullopt);
  CompileResult r = place(R"(graph g {
  input %x : f32[8,64] @cuda:0
  param %gamma : f32[64] = ones
  param %beta : f32[64] = zeros
  %n = layer_norm(%x, %gamma, %beta)
  %y = relu(%n)
  output %y
}
)",
                          o);
  ASSERT_TRUE(r.ok()) << text(r);
  EXPECT_EQ(transfers(r.graph), "%x -> cpu as %x.cpu; %n -> cuda:0 as %n.cuda0");
  EXPECT_EQ(deviceOf(r.graph, "gamma"), "cpu");
  EXPECT_EQ(deviceOf(r.graph, "beta"), "cpu");
  EXPECT_EQ(explainDevice(r.graph, id(r.graph, "gamma")).substr(0, 34),
            "from its consumer %n (t.fy:5:3) <-");
}

// ---- output pins, unavailable devices -----------------------------------------------------------

TEST(OutputPin, IsHonouredWithATransferUnderBothPolicies) {
  const char *src = R"(graph g {
  input %x : f32[1024,1024] @cuda:0
  %y = relu(%x)
  output %y @cpu, %y
}
)";
  for (auto policy : {kStrict, kAuto}) {
    CompileResult r = place(src, options(policy));
    ASSERT_TRUE(r.ok()) << text(r);
    EXPECT_EQ(r.diagnostics.size(), 0u);
    EXPECT_EQ(transfers(r.graph), "%y -> cpu as %y.cpu");
    EXPECT_EQ(r.graph.value(r.graph.outputs()[0].value).name, "y.cpu");
    EXPECT_EQ(r.graph.value(r.graph.outputs()[1].value).name, "y");  // the unpinned one stays
    EXPECT_EQ(deviceOf(r.graph, "y"), "cuda:0");
    EXPECT_EQ(r.graph.node(r.graph.order().back()).loc.str(), "t.fy:4:10");
  }
}

TEST(OutputPin, DecidesAValueNothingElseDecides) {
  CompileResult r = place(R"(graph g {
  %c = constant(value=f32[2]{1, 2})
  %y = neg(%c)
  output %y @cuda:0
}
)",
                          options(kStrict));
  ASSERT_TRUE(r.ok()) << text(r);
  EXPECT_EQ(transfers(r.graph), "");
  EXPECT_EQ(deviceOf(r.graph, "c"), "cuda:0");
  EXPECT_EQ(explainDevice(r.graph, id(r.graph, "y")), "pinned by an output at t.fy:4:10");
}

TEST(Unavailable, EveryPinAndInputOnAMissingDeviceIsAnError) {
  const char *src = R"(graph g {
  input %x : f32[4] @cuda:1
  param %w : f32[4] @cuda:0 = zeros
  %y @cuda:0 = add(%x, %w)
  output %y @cuda:0
}
)";
  for (auto policy : {kStrict, kAuto}) {
    CompileResult r = place(src, options(policy, {Device::cpu()}));
    ASSERT_GE(count(r, Severity::Error), 4) << text(r);
    EXPECT_EQ(r.diagnostics[0].loc.str(), "t.fy:2:9");
    EXPECT_EQ(r.diagnostics[0].message, "device cuda:1 is not available; available: cpu");
    EXPECT_EQ(r.diagnostics[0].fixes.at(0),
              "compile with --devices cpu,cuda:1 or declare %x on an available device");
    EXPECT_EQ(r.diagnostics[1].loc.str(), "t.fy:3:9");
    EXPECT_EQ(r.diagnostics[1].message, "device cuda:0 is not available; available: cpu");
    EXPECT_EQ(r.diagnostics[1].fixes.at(0), "compile with --devices cpu,cuda:0 or remove the pin");
    EXPECT_EQ(r.diagnostics[2].loc.str(), "t.fy:4:3");
    EXPECT_EQ(r.diagnostics[3].loc.str(), "t.fy:5:10");
    EXPECT_EQ(transfers(r.graph), "");
  }
}

// ---- transfers the user wrote; reason chains
// ------------------------------------------------------

TEST(UserTransfer, IsAnExplicitMoveAndIsReused) {
  const char *src = R"(graph g {
  input %x : f32[256,256]
  param %w : f32[256,256] @cuda:0 = zeros
  %t = transfer(%x, to=cuda:0)
  %y = matmul(%t, %w)
  %u @cuda:0 = relu(%x)
  %z = add(%x, %x)
  output %y, %u, %z
}
)";
  CompileResult strict = place(src, options(kStrict));
  ASSERT_EQ(count(strict, Severity::Error), 1) << text(strict);  // %u reads %x on cpu
  EXPECT_EQ(strict.diagnostics[0].message,
            "'relu' (%u) is pinned to cuda:0 but its operand is on cpu");
  EXPECT_EQ(explainDevice(strict.graph, id(strict.graph, "t")), "transfer(to=cuda:0) at t.fy:4:3");
  EXPECT_EQ(explainDevice(strict.graph, id(strict.graph, "y")),
            "inherited from %t (t.fy:4:3) <- transfer(to=cuda:0) at t.fy:4:3");

  CompileResult r = place(src, options(kAuto));
  ASSERT_TRUE(r.ok()) << text(r);
  EXPECT_EQ(transfers(r.graph), "");  // %u reads the user's copy: one per (value, device)
  EXPECT_EQ(r.graph.producer(id(r.graph, "u"))->operands[0], id(r.graph, "t"));
  // %x is on cuda:0 anyway: %z computes there too, from the same copy.
  EXPECT_EQ(deviceOf(r.graph, "z"), "cuda:0");
  EXPECT_EQ(r.graph.producer(id(r.graph, "z"))->operands[1], id(r.graph, "t"));
}

TEST(UserTransfer, APinThatContradictsItIsAnError) {
  CompileResult r = place(R"(graph g {
  input %x : f32[4]
  %t @cpu = transfer(%x, to=cuda:0)
  output %t
}
)",
                          options(kStrict));
  ASSERT_EQ(count(r, Severity::Error), 1) << text(r);
  EXPECT_EQ(r.diagnostics[0].message, "'transfer' (%t) is pinned to cpu but transfers to cuda:0");
}

TEST(Explain, LongChainsKeepTheirEnds) {
  std::string src = "graph g {\n  input %x : f32[4] @cuda:0\n";
  std::string prev = "x";
  for (int i = 0; i < 20; ++i) {
    src += "  %r" + std::to_string(i) + " = relu(%" + prev + ")\n";
    prev = "r" + std::to_string(i);
  }
  src += "  output %" + prev + "\n}\n";
  CompileResult r = place(src, options(kStrict));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(
      explainDevice(r.graph, id(r.graph, "r19")),
      "inherited from %r18 (t.fy:21:3) <- inherited from %r17 (t.fy:20:3) <- inherited from "
      "%r16 (t.fy:19:3) <- inherited from %r15 (t.fy:18:3) <- ... (14 more) <- inherited "
      "from %r0 (t.fy:3:3) <- inherited from %x (t.fy:2:9) <- input 'x', declared at t.fy:2:9");
  EXPECT_EQ(explainDevice(r.graph, id(r.graph, "x")), "input 'x', declared at t.fy:2:9");
  Graph unplaced = parseOk(src);
  EXPECT_EQ(explainDevice(unplaced, id(unplaced, "r3")), "not placed");
}

// explainDevices (every value at once, linear) says what explainDevice says value by value.
void expectAllExplainedAlike(const Graph &g) {
  const std::vector<std::string> all = explainDevices(g);
  ASSERT_EQ(all.size(), g.valueCount());
  for (size_t v = 0; v < all.size(); ++v)
    EXPECT_EQ(all[v], explainDevice(g, static_cast<ValueId>(v)))
        << "%" << g.value(static_cast<ValueId>(v)).name;
}

// A chain longer than explainDevice's bound (65536 steps) is cut there, with a "+" on the count;
// explainDevices finds the steps before the cut without walking the chain from every value.
TEST(Explain, AllValuesAtOnceMatchOneByOneBeyondTheBound) {
  const int length = 70000;
  std::string src = "graph g {\n  input %x : f32[4] @cpu\n  %r0 = relu(%x)\n";
  for (int i = 1; i < length; ++i)
    src += "  %r" + std::to_string(i) + " = relu(%r" + std::to_string(i - 1) + ")\n";
  src += "  output %r" + std::to_string(length - 1) + "\n}\n";
  CompileResult r = place(src, options(kStrict));
  ASSERT_TRUE(r.ok());
  const std::vector<std::string> all = explainDevices(r.graph);
  ASSERT_EQ(all.size(), r.graph.valueCount());
  for (int i : {length - 1, length - 2, 65540, 65536, 65535, 65534, 65530, 100, 0}) {
    const ValueId v = id(r.graph, "r" + std::to_string(i));
    EXPECT_EQ(all[static_cast<size_t>(v)], explainDevice(r.graph, v)) << "%r" << i;
  }
  EXPECT_NE(all[static_cast<size_t>(id(r.graph, "r69999"))].find("(65529+ more)"),
            std::string::npos);
}

TEST(Explain, AllValuesAtOnceMatchOneByOne) {
  for (int length : {1, 6, 7, 8, 9, 30}) {  // around the cut: 4 head + 3 tail steps
    std::string src = "graph g {\n  input %x : f32[4] @cuda:0\n";
    std::string prev = "x";
    for (int i = 0; i < length; ++i) {
      src += "  %r" + std::to_string(i) + " = relu(%" + prev + ")\n";
      prev = "r" + std::to_string(i);
    }
    src += "  output %" + prev + "\n}\n";
    CompileResult r = place(src, options(kStrict));
    ASSERT_TRUE(r.ok());
    expectAllExplainedAlike(r.graph);
    expectAllExplainedAlike(parseOk(src));  // nothing placed
  }
  CompileOptions slowLink = options(kAuto);
  slowLink.cost.hostToDevice = slowLink.cost.deviceToHost = {1e9, 1e-6};
  for (const auto &[src, o] : {std::pair{story3(64), options(kAuto)},
                               {story3(1), slowLink},
                               {replaceAll(kStory7, " PIN", ""), noCudaSoftmax(kAuto)}}) {
    CompileResult r = place(src, o);
    ASSERT_TRUE(r.ok()) << text(r);
    expectAllExplainedAlike(r.graph);
  }
}

TEST(Explain, UnconstrainedValuesGoToTheTarget) {
  CompileOptions o = options(kStrict);
  o.target = Device::cuda(0);
  CompileResult r = place(R"(graph g {
  param %unused : f32[2] = zeros
  %c = constant(value=f32[2]{1, 2})
  %y = neg(%c)
  output %y
}
)",
                          o);
  ASSERT_TRUE(r.ok()) << text(r);
  EXPECT_EQ(deviceOf(r.graph, "y"), "cuda:0");
  EXPECT_EQ(explainDevice(r.graph, id(r.graph, "y")),
            "nothing constrains it: default target cuda:0");
  EXPECT_EQ(explainDevice(r.graph, id(r.graph, "c")),
            "from its consumer %y (t.fy:4:3) <- nothing constrains it: default target cuda:0");
  EXPECT_EQ(deviceOf(r.graph, "unused"), "cuda:0");
}

// ---- the linear chain --------------------------------------------------------------------------

TEST(Chain, AutoMovesTheInputOnceThroughManyLayers) {
  const int layers = 50;
  std::string src = "graph chain {\n  input %x : f32[32,256] @cpu\n";
  for (int i = 0; i < layers; ++i)
    src += "  param %w" + std::to_string(i) + " : f32[256,256] @cuda:0 = zeros\n";
  std::string prev = "x";
  for (int i = 0; i < layers; ++i) {
    src += "  %h" + std::to_string(i) + " = linear(%" + prev + ", %w" + std::to_string(i) + ")\n";
    src += "  %a" + std::to_string(i) + " = relu(%h" + std::to_string(i) + ")\n";
    prev = "a" + std::to_string(i);
  }
  src += "  output %" + prev + "\n}\n";
  CompileResult r = place(src, options(kAuto));
  ASSERT_TRUE(r.ok()) << text(r);
  EXPECT_EQ(transfers(r.graph), "%x -> cuda:0 as %x.cuda0");
  EXPECT_EQ(r.stats.nodesPerDevice[Device::cuda(0)], 2 * layers + 1);
  EXPECT_EQ(r.stats.nodesPerDevice[Device::cpu()], 0);

  CompileResult strict = place(src, options(kStrict));
  EXPECT_EQ(count(strict, Severity::Error), 1) << text(strict);  // only the first layer
}

// ---- determinism, idempotence through the text format
// --------------------------------------------

TEST(Determinism, SameGraphSameResult) {
  for (auto policy : {kStrict, kAuto}) {
    for (const std::string &src : {std::string(kStory6), story3(1), std::string(kStory2)}) {
      CompileResult a = place(src, options(policy)), b = place(src, options(policy));
      EXPECT_EQ(printGraph(a.graph), printGraph(b.graph));
      EXPECT_EQ(text(a), text(b));
      for (ValueId v = 0; v < static_cast<ValueId>(a.graph.valueCount()); ++v)
        EXPECT_EQ(explainDevice(a.graph, v), explainDevice(b.graph, v));
    }
  }
}

TEST(Idempotence, APrintedPlacementRecompilesToItself) {
  CompileOptions o = options(kAuto);
  o.cost.hostToDevice = o.cost.deviceToHost = {1e9, 1e-6};
  for (auto policy : {kStrict, kAuto}) {
    o.placement = policy;
    for (const std::string &src : {story3(1), replaceAll(kStory1, "ACC", "cuda:0")}) {
      CompileResult first = place(src, options(kAuto));
      ASSERT_TRUE(first.ok());
      std::string printed = printGraph(first.graph);
      CompileResult again = place(printed, o);
      ASSERT_TRUE(again.ok()) << text(again) << printed;
      EXPECT_EQ(again.graph.nodeCount(), first.graph.nodeCount()) << printGraph(again.graph);
    }
  }
}

}  // namespace
}  // namespace ferry
