// tests/passes/compile_test.cpp — compile()'s pipeline, option strings and validation, the cost
// model's arithmetic and the statistics that describe a graph.
#include <gtest/gtest.h>

#include <limits>

#include "common/parse.h"
#include "passes/compile.h"
#include "passes/pass.h"

namespace ferry {
namespace {

std::string allMessages(const std::vector<Diagnostic> &ds) {
  return renderText(ds, {.snippet = false});
}

TEST(Options, PolicyStringsParseAndBadOnesSayWhatWasExpected) {
  EXPECT_EQ(*parsePlacementPolicy("auto"), PlacementPolicy::Auto);
  EXPECT_EQ(*parsePlacementPolicy("strict"), PlacementPolicy::Strict);
  EXPECT_EQ(parsePlacementPolicy("sideways").status().message(),
            "error: invalid placement policy 'sideways': expected strict or auto [options]");
  EXPECT_EQ(parseDTypePolicy("autocast=bf16")->low, DType::BF16);
  EXPECT_EQ(parseDTypePolicy("autocast=bf16")->str(), "autocast=bf16");
  EXPECT_EQ(parseDTypePolicy("promote")->kind, DTypePolicy::Kind::Promote);
  EXPECT_NE(parseDTypePolicy("autocast=f32")
                .status()
                .message()
                .find("expected strict, promote, autocast=f16 or autocast=bf16"),
            std::string::npos);
  EXPECT_EQ(*parseBudgetAction("warn"), BudgetAction::Warn);
  EXPECT_FALSE(parseBudgetAction("maybe").ok());
  auto devices = parseDeviceList("cpu,cuda:0,cpu:2");
  ASSERT_TRUE(devices.ok());
  EXPECT_EQ(*devices, (std::vector<Device>{Device::cpu(), Device::cuda(0), Device::cpu(2)}));
  auto bad = parseDeviceList("cpu,cuda:x,gpu");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().diagnostics().size(), 2u);  // both bad items, not just the first
  EXPECT_FALSE(parseDeviceList("").ok());
  EXPECT_FALSE(parseDeviceList("cpu,").ok());
}

TEST(Options, ValidateReportsEveryProblem) {
  CompileOptions o;
  o.devices = {Device::cpu(), Device::cpu()};
  o.target = Device::cuda(0);
  o.dtype = {DTypePolicy::Kind::Autocast, DType::F32};
  o.stopAfter = "fusing";
  o.budgets.maxCasts = -1;
  Status s = o.validate();
  ASSERT_FALSE(s.ok());
  const std::string m = s.message();
  EXPECT_NE(m.find("device cpu is listed twice"), std::string::npos) << m;
  EXPECT_NE(m.find("target device cuda:0 is not among the available devices (cpu, cpu)"),
            std::string::npos)
      << m;
  EXPECT_NE(m.find("autocast computes in f16 or bf16, not f32"), std::string::npos) << m;
  EXPECT_NE(m.find("unknown pass 'fusing' to stop after; passes: verify, placement, dtype, "
                   "simplify, budget, fusion"),
            std::string::npos)
      << m;
  EXPECT_NE(m.find("max_casts must be >= 0"), std::string::npos) << m;
  EXPECT_EQ(s.diagnostics().size(), 5u);
  EXPECT_TRUE(CompileOptions{}.validate().ok());
}

TEST(Compile, BadOptionsAreDiagnosticsNotCrashes) {
  CompileOptions o;
  o.devices = {};
  CompileResult r =
      compile(parseOk("graph g {\n input %x : f32[2]\n %y = relu(%x)\n output %y\n}\n"), o);
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.lastPass, "");
  EXPECT_NE(allMessages(r.diagnostics).find("no devices"), std::string::npos);
}

TEST(Compile, StopsAfterTheRequestedPass) {
  const char *text = "graph g {\n input %x : f32[2]\n %y = relu(%x)\n output %y\n}\n";
  for (const Pass &p : pipeline()) {
    CompileOptions o;
    o.stopAfter = std::string(p.name);
    CompileResult r = compile(parseOk(text), o);
    EXPECT_TRUE(r.ok()) << p.name << ": " << allMessages(r.diagnostics);
    EXPECT_EQ(r.lastPass, p.name);
    EXPECT_EQ(r.stats.passSeconds.size(), static_cast<size_t>(&p - pipeline().data()) + 1);
  }
  CompileResult full = compile(parseOk(text), {});
  EXPECT_EQ(full.lastPass, "fusion");
}

TEST(Compile, AGraphBrokenAsAWholeStopsInVerify) {
  Graph g =
      parseOk("graph g {\n input %x : f32[2]\n %y = relu(%x)\n %z = neg(%y)\n output %z\n}\n");
  g.setOperand(g.producer(*g.findValue("y"))->id, 0, *g.findValue("z"));  // read before defined
  CompileResult r = compile(std::move(g), {});
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.lastPass, "verify");
  EXPECT_NE(allMessages(r.diagnostics).find("%z is used before it is defined"), std::string::npos)
      << allMessages(r.diagnostics);
}

// A node typed other than its op gives is one node's mistake: reported once (its readers are not
// judged by its type), and placement and dtype still judge the rest of the model.
TEST(Compile, AWrongTypeIsOneNodesMistakeAndTheRestIsStillJudged) {
  Graph g = parseOk(R"(graph g {
  input %x : f32[2,4]
  param %w : f16[3,4] = ones
  param %v : f32[3,4] @cpu:1 = ones
  %y = relu(%x)
  %l = linear(%y, %w)
  %k = linear(%x, %v)
  output %l, %k
}
)");
  g.value(*g.findValue("y")).type = {DType::F16, {2, 4}};  // a graph broken after parsing
  CompileOptions o;
  o.devices = {Device::cpu(), Device::cpu(1)};
  CompileResult r = compile(std::move(g), o);
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.lastPass, "dtype");
  const std::string all = allMessages(r.diagnostics);
  ASSERT_EQ(r.diagnostics.size(), 2u) << all;
  EXPECT_NE(all.find("%y is typed f16[2,4] but 'relu' gives f32[2,4]"), std::string::npos) << all;
  EXPECT_EQ(r.diagnostics[1].code, "device") << all;  // %k: x on cpu, v pinned to cpu:1
  // %l (f16 %y x f16 %w) is not judged by %y's wrong type: no dtype error.
}

TEST(Compile, StopAfterStopsAtThatPassEvenWithErrors) {
  const char *text = R"(graph g {
  input %x : f32[2,4]
  param %w : f16[3,4] @cpu:1 = ones
  %l = linear(%x, %w)
  output %l
}
)";
  CompileOptions o;
  o.devices = {Device::cpu(), Device::cpu(1)};
  o.stopAfter = "placement";
  CompileResult placed = compile(parseOk(text), o);
  EXPECT_EQ(placed.lastPass, "placement");
  ASSERT_EQ(placed.diagnostics.size(), 1u);
  EXPECT_EQ(placed.diagnostics[0].code, "device");
  o.stopAfter.clear();
  CompileResult all = compile(parseOk(text), o);
  EXPECT_EQ(all.lastPass, "dtype");
  ASSERT_EQ(all.diagnostics.size(), 2u) << allMessages(all.diagnostics);
  EXPECT_EQ(all.diagnostics[1].code, "dtype");
  EXPECT_EQ(all.stats.passSeconds.size(), 3u);  // simplify and budget never ran
}

TEST(CostModel, ComputeIsBoundByTheSlowerOfFlopsAndBytesPlusLaunch) {
  CostModel m;
  m.host = {1e9, 1e9, 1e-6};
  EXPECT_DOUBLE_EQ(m.computeSeconds(Device::cpu(), {2e9, 1e9}), 2.0 + 1e-6);
  EXPECT_DOUBLE_EQ(m.computeSeconds(Device::cpu(3), {1e9, 4e9}), 4.0 + 1e-6);
  m.hostToDevice = {1e9, 1e-5};
  m.deviceToHost = {2e9, 2e-5};
  m.hostToHost = {4e9, 0};
  EXPECT_DOUBLE_EQ(m.transferSeconds(Device::cpu(), Device::cuda(0), 1e9), 1.0 + 1e-5);
  EXPECT_DOUBLE_EQ(m.transferSeconds(Device::cuda(1), Device::cpu(), 1e9), 0.5 + 2e-5);
  EXPECT_DOUBLE_EQ(m.transferSeconds(Device::cpu(), Device::cpu(1), 1e9), 0.25);
  EXPECT_EQ(m.transferSeconds(Device::cuda(0), Device::cuda(0), 1e9), 0);
}

TEST(Capabilities, MissingEntriesCoverADTypeOrAllOfThem) {
  Capabilities c;
  c.setMissing(DeviceKind::Cuda, OpKind::Gather, std::nullopt);
  c.setMissing(DeviceKind::Cuda, OpKind::Matmul, DType::I64);
  EXPECT_FALSE(c.supports(Device::cuda(0), OpKind::Gather, DType::F32));
  EXPECT_TRUE(c.supports(Device::cpu(), OpKind::Gather, DType::F32));
  EXPECT_FALSE(c.supports(Device::cuda(1), OpKind::Matmul, DType::I64));
  EXPECT_TRUE(c.supports(Device::cuda(1), OpKind::Matmul, DType::F32));
  EXPECT_TRUE(c.anyMissing());
  EXPECT_FALSE(Capabilities().anyMissing());
}

TEST(Capabilities, CostFactorsDefaultToOneAndAreKeyedByKindOpAndDType) {
  Capabilities c;
  EXPECT_EQ(c.costFactor(Device::cpu(), OpKind::Matmul, DType::F16), 1);
  c.setCostFactor(DeviceKind::Cpu, OpKind::Matmul, DType::F16, 1.5);
  c.setCostFactor(DeviceKind::Cuda, OpKind::Relu, std::nullopt, 0.25);
  EXPECT_EQ(c.costFactor(Device::cpu(2), OpKind::Matmul, DType::F16), 1.5);
  EXPECT_EQ(c.costFactor(Device::cpu(), OpKind::Matmul, DType::F32), 1);
  EXPECT_EQ(c.costFactor(Device::cuda(0), OpKind::Matmul, DType::F16), 1);
  for (DType t : kAllDTypes) EXPECT_EQ(c.costFactor(Device::cuda(3), OpKind::Relu, t), 0.25);
  EXPECT_FALSE(c.anyMissing());
  // A missing kernel that gets a factor is present again, and the count follows.
  c.setMissing(DeviceKind::Cpu, OpKind::Exp);
  EXPECT_TRUE(c.anyMissing());
  for (DType t : kAllDTypes) c.setCostFactor(DeviceKind::Cpu, OpKind::Exp, t, 2);
  EXPECT_FALSE(c.anyMissing());
  EXPECT_TRUE(c.supports(Device::cpu(), OpKind::Exp, DType::F32));
}

TEST(Capabilities, MergeKeepsEveryGapAndTakesTheOtherTablesFactors) {
  Capabilities backend, user;
  backend.setMissing(DeviceKind::Cpu, OpKind::Exp, DType::I32);
  backend.setCostFactor(DeviceKind::Cpu, OpKind::Matmul, DType::F16, 1.5);
  backend.setCostFactor(DeviceKind::Cpu, OpKind::Matmul, DType::F64, 2);
  user.setMissing(DeviceKind::Cuda, OpKind::Gather);
  user.setCostFactor(DeviceKind::Cpu, OpKind::Matmul, DType::F16, 3);
  user.setCostFactor(DeviceKind::Cpu, OpKind::Exp, DType::I32, 5);  // cannot add a kernel
  backend.merge(user);
  EXPECT_FALSE(backend.supports(Device::cpu(), OpKind::Exp, DType::I32));
  EXPECT_FALSE(backend.supports(Device::cuda(0), OpKind::Gather, DType::F32));
  EXPECT_EQ(backend.costFactor(Device::cpu(), OpKind::Matmul, DType::F16), 3);
  EXPECT_EQ(backend.costFactor(Device::cpu(), OpKind::Matmul, DType::F64), 2);
  // Merging into an empty table copies it.
  Capabilities empty;
  empty.merge(backend);
  EXPECT_FALSE(empty.supports(Device::cpu(), OpKind::Exp, DType::I32));
  EXPECT_EQ(empty.costFactor(Device::cpu(), OpKind::Matmul, DType::F16), 3);
}

TEST(CapabilitiesDeathTest, AFactorMustBePositiveAndFinite) {
  Capabilities c;
  for (double bad : {0.0, -1.0, std::numeric_limits<double>::infinity(),
                     std::numeric_limits<double>::quiet_NaN()})
    EXPECT_DEATH(c.setCostFactor(DeviceKind::Cpu, OpKind::Relu, std::nullopt, bad),
                 "a cost factor is positive and finite");
}

TEST(Stats, TheEstimateIncludesTheCapabilityTablesCostFactor) {
  const char *src = R"(graph g {
  input %x : f16[64,256] @cpu
  param %w : f16[256,256] = zeros
  %y = matmul(%x, %w)
  output %y
})";
  CompileOptions o;
  CompileResult plain = compile(parseOk(src), o);
  o.capabilities.setCostFactor(DeviceKind::Cpu, OpKind::Matmul, DType::F16, 4);
  CompileResult slow = compile(parseOk(src), o);
  ASSERT_TRUE(plain.ok() && slow.ok());
  const std::vector<TensorType> operands{{DType::F16, {64, 256}}, {DType::F16, {256, 256}}};
  const double matmul = o.cost.computeSeconds(
      Device::cpu(), opCost(opInfo(OpKind::Matmul), operands, {}, {DType::F16, {64, 256}}));
  EXPECT_NEAR(slow.stats.estimatedSeconds - plain.stats.estimatedSeconds, 3 * matmul, 1e-12);
}

TEST(Stats, DescribeGraphCountsTransfersByDirectionAndNodesPerDevice) {
  // A graph already placed by hand: x on cpu, copied to cpu:1, cast there.
  Graph g = parseOk(R"(graph g {
  input %x : f32[4,8] @cpu
  %r @cpu = relu(%x)
  %t @cpu:1 = transfer(%r, to=cpu:1)
  %c @cpu:1 = cast(%t, to=f16)
  output %c
})");
  for (NodeId id : g.order()) g.value(g.node(id).result).device = g.node(id).pinDevice;
  CompileOptions o;
  o.devices = {Device::cpu(), Device::cpu(1)};
  CompileStats s;
  describeGraph(g, o, s);
  EXPECT_EQ(s.transfers, 1);
  EXPECT_EQ(s.transferBytes, 4 * 8 * 4);
  EXPECT_EQ(s.bytesOf(TransferDirection::H2H), 128);
  EXPECT_EQ(s.bytesOf(TransferDirection::H2D) + s.bytesOf(TransferDirection::D2H) +
                s.bytesOf(TransferDirection::D2D),
            0);
  EXPECT_EQ(s.transfersOf(TransferDirection::H2H), 1);
  EXPECT_EQ(s.transfersOf(TransferDirection::H2D) + s.transfersOf(TransferDirection::D2H) +
                s.transfersOf(TransferDirection::D2D),
            0);
  EXPECT_EQ(s.transfersOf(TransferDirection::H2H), 1);
  EXPECT_EQ(s.bytesOf(TransferDirection::H2H), 128);
  EXPECT_EQ(s.bytesOf(TransferDirection::D2H), 0);
  // Described again, the counts start over rather than add up.
  describeGraph(g, o, s);
  EXPECT_EQ(s.transfersOf(TransferDirection::H2H), 1);
  EXPECT_EQ(s.bytesOf(TransferDirection::H2H), 128);
  EXPECT_EQ(s.casts, 1);
  EXPECT_EQ(s.nodesPerDevice[Device::cpu()], 1);
  EXPECT_EQ(s.nodesPerDevice[Device::cpu(1)], 2);
  EXPECT_GT(s.estimatedSeconds, o.cost.transferSeconds(Device::cpu(), Device::cpu(1), 128));
}

}  // namespace
}  // namespace ferry
