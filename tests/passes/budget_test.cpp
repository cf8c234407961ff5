// tests/passes/budget_test.cpp — the data-movement budgets: each transfer direction allowed,
// warned about or rejected with its edge, bytes and location; the per-run byte total and the
// number of casts, each just at and just over its limit; and, under auto placement, budgets as
// constraints of the plan: a plan within them is found when one exists, else the error names
// the pins that force the copy or the bytes.
#include <gtest/gtest.h>

#include "ir/parser.h"
#include "passes/compile.h"
#include "passes/pass.h"
#include "passes/pass_test_util.h"

namespace ferry {
namespace {

std::vector<Diagnostic> budgetDiagnostics(const Graph &g, const Budgets &b) {
  CompileOptions o;
  o.devices = {Device::cpu(), Device::cpu(1), Device::cuda(0), Device::cuda(1)};
  o.budgets = b;
  DiagnosticEngine diags;
  CompileStats stats;
  PassContext ctx{o, diags, stats};
  Graph copy = g;
  checkBudgets(copy, ctx);
  return diags.take();
}

std::string text(const std::vector<Diagnostic> &ds) { return renderText(ds, {.snippet = false}); }

// The model's output is computed on the device and wanted on the host (line 4).
const char *kDeviceToHost = R"(graph m {
  input %x : f32[32,256] @cuda:0
  %a @cuda:0 = relu(%x)
  %t @cpu = transfer(%a, to=cpu)
  %y @cpu = neg(%t)
  output %y
})";

TEST(Budget, ADeviceToHostCopyIsRejectedWithD2hErrorNamingTheEdgeAndItsBytes) {
  Graph g = placed(kDeviceToHost);
  std::vector<Diagnostic> ds = budgetDiagnostics(g, {.d2h = BudgetAction::Error});
  ASSERT_EQ(ds.size(), 1u);
  EXPECT_EQ(ds[0].severity, Severity::Error);
  EXPECT_EQ(ds[0].code, "budget");
  EXPECT_EQ(ds[0].loc, (Location{"t.fy", 4, 3}));
  EXPECT_EQ(text(ds),
            "t.fy:4:3: error: device-to-host transfer of %a from cuda:0 to cpu: 32768 bytes per "
            "run (f32[32,256]), budget d2h=error [budget]\n"
            "t.fy:5:3: note: needed on cpu by %y\n"
            "  fix: pin %y to cuda:0, or allow d2h transfers\n");
}

TEST(Budget, WithD2hWarnItCompilesWithAWarningAndWithAllowSilently) {
  Graph g = placed(kDeviceToHost);
  std::vector<Diagnostic> ds = budgetDiagnostics(g, {.d2h = BudgetAction::Warn});
  ASSERT_EQ(ds.size(), 1u);
  EXPECT_EQ(ds[0].severity, Severity::Warning);
  EXPECT_EQ(text(ds),
            "t.fy:4:3: warning: device-to-host transfer of %a from cuda:0 to cpu: 32768 bytes per "
            "run (f32[32,256]), budget d2h=warn [budget]\n"
            "t.fy:5:3: note: needed on cpu by %y\n"
            "  fix: pin %y to cuda:0, or allow d2h transfers\n");
  EXPECT_TRUE(budgetDiagnostics(g, {}).empty());
  // Budgets of the other directions do not apply to this copy.
  EXPECT_TRUE(
      budgetDiagnostics(
          g, {.h2d = BudgetAction::Error, .d2d = BudgetAction::Error, .h2h = BudgetAction::Error})
          .empty());
}

TEST(Budget, EveryDirectionIsClassifiedAndEveryOffenderReportedInOneRun) {
  Graph g = placed(R"(graph m {
  input %x : f32[4] @cpu
  %a @cuda:0 = transfer(%x, to=cuda:0)
  %b @cuda:1 = transfer(%a, to=cuda:1)
  %c @cpu:1 = transfer(%x, to=cpu:1)
  %d @cpu = transfer(%b, to=cpu)
  %e @cpu = transfer(%a, to=cpu)
  %s @cpu = add(%d, %e)
  output %s, %c @cpu:1
})");
  std::vector<Diagnostic> ds = budgetDiagnostics(g, {.h2d = BudgetAction::Warn,
                                                     .d2h = BudgetAction::Error,
                                                     .d2d = BudgetAction::Error,
                                                     .h2h = BudgetAction::Warn});
  ASSERT_EQ(ds.size(), 5u);
  EXPECT_EQ(text(ds),
            "t.fy:3:3: warning: host-to-device transfer of %x from cpu to cuda:0: 16 bytes per "
            "run (f32[4]), budget h2d=warn [budget]\n"
            "t.fy:4:3: note: needed on cuda:0 by %b, %e\n"
            "  fix: pin %b, %e to cpu, or allow h2d transfers\n"
            "t.fy:4:3: error: device-to-device transfer of %a from cuda:0 to cuda:1: 16 bytes per "
            "run (f32[4]), budget d2d=error [budget]\n"
            "t.fy:6:3: note: needed on cuda:1 by %d\n"
            "  fix: pin %d to cuda:0, or allow d2d transfers\n"
            "t.fy:5:3: warning: host-to-host transfer of %x from cpu to cpu:1: 16 bytes per run "
            "(f32[4]), budget h2h=warn [budget]\n"
            "t.fy:9:14: note: output %c is pinned to cpu:1\n"
            "  fix: leave output %c on cpu (drop its @cpu:1 pin), or allow h2h transfers\n"
            "t.fy:6:3: error: device-to-host transfer of %b from cuda:1 to cpu: 16 bytes per run "
            "(f32[4]), budget d2h=error [budget]\n"
            "t.fy:8:3: note: needed on cpu by %s\n"
            "  fix: pin %s to cuda:1, or allow d2h transfers\n"
            "t.fy:7:3: error: device-to-host transfer of %a from cuda:0 to cpu: 16 bytes per run "
            "(f32[4]), budget d2h=error [budget]\n"
            "t.fy:8:3: note: needed on cpu by %s\n"
            "  fix: pin %s to cuda:0, or allow d2h transfers\n");
}

// Through compile(): the output is computed on the device and wanted on the host (line 4).
TEST(BudgetEndToEnd, D2hErrorRejectsTheModelD2hWarnCompilesItWithAWarning) {
  const char *model = R"(graph m {
  input %x : f32[32,256] @cuda:0
  %y = relu(%x)
  output %y @cpu
})";
  Expected<Graph> g = parseGraph(model, "t.fy");
  ASSERT_TRUE(g.ok());
  CompileOptions o;
  o.devices = {Device::cpu(), Device::cuda(0)};
  o.budgets.d2h = BudgetAction::Error;
  CompileResult rejected = compile(*g, o);
  EXPECT_FALSE(rejected.ok());
  EXPECT_EQ(rejected.lastPass, "budget");
  ASSERT_EQ(rejected.diagnostics.size(), 1u) << text(rejected.diagnostics);
  const Diagnostic &d = rejected.diagnostics[0];
  EXPECT_EQ(d.code, "budget");
  EXPECT_EQ(d.loc.line, 4);  // where the copy is needed: the pinned output
  // %y is the output's name, so the value computed on cuda:0 is %y.cuda0.
  EXPECT_EQ(d.message.rfind("device-to-host transfer of %y.cuda0 from cuda:0 to cpu: 32768 bytes per "
                            "run (f32[32,256]), budget d2h=error",
                            0),
            0u)
      << d.message;

  o.budgets.d2h = BudgetAction::Warn;
  CompileResult warned = compile(*g, o);
  EXPECT_TRUE(warned.ok()) << text(warned.diagnostics);
  ASSERT_EQ(warned.diagnostics.size(), 1u);
  EXPECT_EQ(warned.diagnostics[0].severity, Severity::Warning);
  EXPECT_EQ(warned.diagnostics[0].code, "budget");
  EXPECT_EQ(warned.stats.bytesOf(TransferDirection::D2H), 32768);
}

const char *kTwoTransfersTwoCasts = R"(graph m {
  input %x : f32[8] @cpu
  %a @cuda:0 = transfer(%x, to=cuda:0)
  %h @cuda:0 = cast(%a, to=f16)
  %r @cuda:0 = relu(%h)
  %f @cuda:0 = cast(%r, to=f32)
  %y @cpu = transfer(%f, to=cpu)
  output %y
})";

TEST(Budget, DirectionsAreClassifiedOnceForBudgetsAndStatistics) {
  const Device cpu = Device::cpu(), cpu1 = Device::cpu(1), gpu = Device::cuda(0);
  EXPECT_EQ(transferDirection(cpu, gpu), TransferDirection::H2D);
  EXPECT_EQ(transferDirection(gpu, cpu1), TransferDirection::D2H);
  EXPECT_EQ(transferDirection(gpu, Device::cuda(1)), TransferDirection::D2D);
  EXPECT_EQ(transferDirection(cpu1, cpu), TransferDirection::H2H);
  Budgets b{.h2d = BudgetAction::Warn, .d2h = BudgetAction::Error};
  EXPECT_EQ(b.action(TransferDirection::H2D), BudgetAction::Warn);
  EXPECT_EQ(b.action(TransferDirection::D2H), BudgetAction::Error);
  EXPECT_EQ(b.action(TransferDirection::D2D), BudgetAction::Allow);
  EXPECT_EQ(b.action(TransferDirection::H2H), BudgetAction::Allow);
  EXPECT_EQ(directionKey(TransferDirection::D2D), "d2d");
  EXPECT_EQ(directionName(TransferDirection::H2D), "host-to-device");
}

TEST(Budget, MaxTransferBytesIsAPerRunTotalOneErrorListingEachTransfer) {
  Graph g = placed(kTwoTransfersTwoCasts);
  EXPECT_TRUE(budgetDiagnostics(g, {.maxTransferBytes = 64}).empty());
  std::vector<Diagnostic> ds = budgetDiagnostics(g, {.maxTransferBytes = 63});
  ASSERT_EQ(ds.size(), 1u);
  EXPECT_EQ(text(ds), "error: transfers move 64 bytes per run, over the budget of 63 "
                      "(max_transfer_bytes, --max-transfer-bytes) [budget]\n"
                      "t.fy:3:3: note: transfer of %x from cpu to cuda:0: 32 bytes\n"
                      "t.fy:7:3: note: transfer of %f from cuda:0 to cpu: 32 bytes\n"
                      "  fix: pin the values so that less data crosses devices, or raise "
                      "max_transfer_bytes (--max-transfer-bytes) to 64\n");
}

TEST(Budget, MaxCastsCountsTheCastsLeftOneErrorListingEachCast) {
  Graph g = placed(kTwoTransfersTwoCasts);
  EXPECT_TRUE(budgetDiagnostics(g, {.maxCasts = 2}).empty());
  std::vector<Diagnostic> ds = budgetDiagnostics(g, {.maxCasts = 1});
  ASSERT_EQ(ds.size(), 1u);
  EXPECT_EQ(text(ds), "error: 2 casts are left in the graph, over the budget of 1 (max_casts, "
                      "--max-casts) [budget]\n"
                      "t.fy:4:3: note: cast of %a from f32 to f16 on cuda:0: 32 -> 16 bytes\n"
                      "t.fy:6:3: note: cast of %r from f16 to f32 on cuda:0: 16 -> 32 bytes\n"
                      "  fix: give params and inputs the dtypes the ops compute in, or raise "
                      "max_casts (--max-casts) to "
                      "2\n");
  // One cast over a budget of none: the message counts it in the singular.
  std::vector<Diagnostic> one = budgetDiagnostics(placed(R"(graph m {
  input %x : f32[8] @cpu
  %h @cpu = cast(%x, to=f16)
  output %h
})"),
                                                  {.maxCasts = 0});
  ASSERT_EQ(one.size(), 1u);
  EXPECT_EQ(one[0].message,
            "1 cast is left in the graph, over the budget of 0 (max_casts, --max-casts)");
  // Both limits and a direction at once: all three reported in one run.
  EXPECT_EQ(budgetDiagnostics(g, {.d2h = BudgetAction::Error, .maxTransferBytes = 0, .maxCasts = 0})
                .size(),
            3u);
}

// Budgets govern runs: a weight's copy to the device, and its cast there, are made once, at load
// (like the upload of the weights themselves), and count against no budget. The input's copy
// beside them does.
TEST(Budget, TransfersAndCastsOfWeightsAreMadeAtLoadAndCountAgainstNoBudget) {
  Graph g = placed(R"(graph m {
  input %x : f32[4,8] @cpu
  param %w : f16[16,8] @cpu = randn(seed=1)
  %t @cuda:0 = transfer(%w, to=cuda:0)
  %c @cuda:0 = cast(%t, to=f32)
  %xd @cuda:0 = transfer(%x, to=cuda:0)
  %y @cuda:0 = linear(%xd, %c)
  output %y
})");
  const Budgets none{.h2d = BudgetAction::Error, .maxTransferBytes = 4 * 8 * 4, .maxCasts = 0};
  std::vector<Diagnostic> ds = budgetDiagnostics(g, none);
  ASSERT_EQ(ds.size(), 1u) << text(ds);
  EXPECT_EQ(ds[0].message.substr(0, 46), "host-to-device transfer of %x from cpu to cuda");
  EXPECT_TRUE(budgetDiagnostics(g, {.maxTransferBytes = 4 * 8 * 4, .maxCasts = 0}).empty());
}

TEST(Budget, ACastFoldedAtCompileTimeIsFree) {
  // The weight's cast folds in simplify: nothing is left for max_casts=0 to count. Before that
  // it is free as well: a cast of a weight runs once, at load, not per run.
  Graph g = placed(R"(graph m {
  input %x : f16[2,4] @cpu
  param %w : f32[3,4] @cpu = randn(seed=1)
  %c @cpu = cast(%w, to=f16)
  %y @cpu = linear(%x, %c)
  output %y
})");
  CompileOptions o;
  o.budgets.maxCasts = 0;
  DiagnosticEngine diags;
  CompileStats stats;
  PassContext ctx{o, diags, stats};
  EXPECT_EQ(budgetDiagnostics(g, o.budgets).size(), 0u);
  simplify(g, ctx);
  checkBudgets(g, ctx);
  EXPECT_FALSE(diags.hasErrors()) << text(diags.diagnostics());
  EXPECT_EQ(stats.castsFolded, 1);
}

// ---- budgets steer auto placement ------------------------------------------------------------

CompileOptions autoPlacement(std::vector<Device> devices = {Device::cpu(), Device::cuda(0)}) {
  CompileOptions o;
  o.devices = std::move(devices);
  o.placement = PlacementPolicy::Auto;
  return o;
}

CompileResult compileText(const char *model, const CompileOptions &o) {
  Expected<Graph> g = parseGraph(model, "t.fy");
  EXPECT_TRUE(g.ok()) << g.status().message();
  return compile(std::move(*g), o);
}

Device deviceOf(const CompileResult &r, std::string_view name) {
  return *r.graph.value(*r.graph.findValue(name)).device;
}

// The loss of a batch whose predictions arrive on the GPU (examples/loss_on_gpu.fy): after the
// reduction, a few ops on one number, each a kernel launch on the GPU.
const char *kLossOnGpu = R"(graph loss {
  input %pred : f32[64,1000] @cuda:0
  input %target : f32[64,1000] @cuda:0
  %diff = sub(%pred, %target)
  %sq = mul(%diff, %diff)
  %mse = mean(%sq)
  %rmse = sqrt(%mse)
  %scale = constant(value=f32[]{0.5})
  %half = mul(%rmse, %scale)
  %loss = log(%half)
  output %loss
})";

TEST(BudgetSteersAuto, D2hErrorFindsThePlanWithoutDeviceToHostCopies) {
  CompileOptions o = autoPlacement();
  // Unconstrained, the cheapest plan copies the mean back and finishes on the cpu.
  CompileResult cheapest = compileText(kLossOnGpu, o);
  ASSERT_TRUE(cheapest.ok()) << text(cheapest.diagnostics);
  EXPECT_EQ(cheapest.stats.transfersOf(TransferDirection::D2H), 1);
  EXPECT_EQ(cheapest.stats.bytesOf(TransferDirection::D2H), 4);
  EXPECT_EQ(deviceOf(cheapest, "loss"), Device::cpu());

  o.budgets.d2h = BudgetAction::Error;
  CompileResult steered = compileText(kLossOnGpu, o);
  ASSERT_TRUE(steered.ok()) << text(steered.diagnostics);
  EXPECT_TRUE(steered.diagnostics.empty()) << text(steered.diagnostics);
  EXPECT_EQ(steered.stats.transfers, 0);
  for (const char *v : {"rmse", "half", "loss"}) EXPECT_EQ(deviceOf(steered, v), Device::cuda(0));
  EXPECT_GT(steered.stats.estimatedSeconds, cheapest.stats.estimatedSeconds);
  // The reason says why a value is where its own estimate is not the lowest.
  const ValueId rmse = *steered.graph.findValue("rmse");
  EXPECT_EQ(steered.graph.deviceReason(rmse).detail.str(),
            "cost model: cuda:0 5 \u00b5s vs cpu 200 ns; moving data would cost more, or break a "
            "budget");

  // Warn is a check after placement, as before: the cheapest plan, with a warning.
  o.budgets.d2h = BudgetAction::Warn;
  CompileResult warned = compileText(kLossOnGpu, o);
  ASSERT_TRUE(warned.ok());
  EXPECT_EQ(warned.stats.transfersOf(TransferDirection::D2H), 1);
  ASSERT_EQ(warned.diagnostics.size(), 1u);
  EXPECT_EQ(warned.diagnostics[0].severity, Severity::Warning);
}

TEST(BudgetSteersAuto, ACopyThePinsForceIsAnErrorNamingThePins) {
  const char *model = R"(graph m {
  input %x : f32[32,256] @cpu
  %y @cuda:0 = relu(%x)
  output %y @cpu
})";
  CompileOptions o = autoPlacement();
  o.budgets.d2h = BudgetAction::Error;
  CompileResult r = compileText(model, o);
  EXPECT_FALSE(r.ok());
  // Placement reports the forced copy; the dtype pass still runs (every problem in one run), and
  // nothing after it.
  EXPECT_EQ(r.lastPass, "dtype");
  EXPECT_EQ(text(r.diagnostics),
            "t.fy:4:10: error: device-to-host transfer of %y from cuda:0 to cpu is forced: 'relu' "
            "(%y) is pinned @cuda:0 at t.fy:3:3 and output %y is pinned @cpu at t.fy:4:10 "
            "(budget d2h=error) [budget]\n"
            "  fix: drop the @cuda:0 pin of 'relu' (%y), or drop the @cpu pin of output %y, or "
            "allow d2h transfers (--transfers d2h=warn)\n");
  // Both directions forbidden: the input's copy is forced as well, by its declaration.
  o.budgets.h2d = BudgetAction::Error;
  CompileResult both = compileText(model, o);
  ASSERT_EQ(both.diagnostics.size(), 2u) << text(both.diagnostics);
  EXPECT_EQ(both.diagnostics[0].message,
            "host-to-device transfer of %x from cpu to cuda:0 is forced: input %x is declared "
            "@cpu at t.fy:2:9 and 'relu' (%y) is pinned @cuda:0 at t.fy:3:3 (budget h2d=error)");
  EXPECT_EQ(both.diagnostics[0].fixes[0],
            "declare input %x @cuda:0, or drop the @cuda:0 pin of 'relu' (%y), or allow h2d "
            "transfers (--transfers h2d=warn)");
}

TEST(BudgetSteersAuto, ACopyForcedAcrossFreeValuesNamesBothEndsAndTheValuesBetween) {
  // However %a, %b and %c are placed, the data goes from the GPU to the host somewhere.
  CompileOptions o = autoPlacement();
  o.budgets.d2h = BudgetAction::Error;
  CompileResult chain = compileText(R"(graph m {
  input %x : f32[32,256] @cuda:0
  %a = relu(%x)
  %b = neg(%a)
  %c = exp(%b)
  output %c @cpu
})",
                                    o);
  ASSERT_EQ(chain.diagnostics.size(), 1u) << text(chain.diagnostics);
  EXPECT_EQ(text(chain.diagnostics),
            "t.fy:3:3: error: device-to-host transfer of %x from cuda:0 to cpu is forced: input "
            "%x is declared @cuda:0 at t.fy:2:9 and output %c is pinned @cpu at t.fy:6:10 "
            "(budget d2h=error) [budget]\n"
            "  needed on cpu by 'relu' (%a)\n"
            "  in between, %a, %b, %c: wherever they are placed, some copy on the way is in a "
            "direction the budgets forbid\n"
            "  fix: declare input %x @cpu, or drop the @cpu pin of output %c, or allow d2h "
            "transfers (--transfers d2h=warn)\n");
  // Two inputs on two devices meet in one node, and neither may cross: the declarations force it,
  // also with a third device to go to.
  o.budgets.h2d = BudgetAction::Error;
  o.devices.push_back(Device::cuda(1));
  CompileResult meet = compileText(R"(graph m {
  input %x : f32[32,256] @cpu
  input %y : f32[32,256] @cuda:0
  %a = relu(%x)
  %z = add(%a, %y)
  output %z
})",
                                   o);
  ASSERT_EQ(meet.diagnostics.size(), 1u) << text(meet.diagnostics);
  EXPECT_EQ(meet.diagnostics[0].message.substr(meet.diagnostics[0].message.find(" is forced")),
            " is forced: input %x is declared @cpu at t.fy:2:9 and input %y is declared @cuda:0 "
            "at t.fy:3:9 (budget " +
                std::string(meet.diagnostics[0].message.starts_with("host") ? "h2d" : "d2h") +
                "=error)");
}

TEST(BudgetSteersAuto, AnOpWithoutAKernelOnTheDeviceCanForceTheCopy) {
  CompileOptions o = autoPlacement();
  o.budgets.d2h = BudgetAction::Error;
  o.capabilities.setMissing(DeviceKind::Cuda, OpKind::Erf);
  CompileResult r = compileText(R"(graph m {
  input %x : f32[32,256] @cuda:0
  %a = relu(%x)
  %e = erf(%a)
  output %e
})",
                                o);
  ASSERT_EQ(r.diagnostics.size(), 1u) << text(r.diagnostics);
  EXPECT_EQ(r.diagnostics[0].message.substr(r.diagnostics[0].message.find(" is forced")),
            " is forced: input %x is declared @cuda:0 at t.fy:2:9 and 'erf' (%e) has a kernel only "
            "on cpu (budget d2h=error)");
  EXPECT_EQ(r.diagnostics[0].fixes[0], "declare input %x @cpu, or allow d2h transfers "
                                       "(--transfers d2h=warn)");
}

// Two layers on inputs that arrive on the host: each is much faster on the GPU, for a copy of
// 1 MiB.
const char *kTwoLayers = R"(graph m {
  input %x1 : f32[256,1024] @cpu
  input %x2 : f32[256,1024] @cpu
  param %w : f32[1024,1024] = randn(seed=1)
  %h1 = linear(%x1, %w)
  %h2 = linear(%x2, %w)
  output %h1, %h2
})";

TEST(BudgetSteersAuto, AByteCapPicksTheCheapestPlanThatFitsIt) {
  CompileOptions o = autoPlacement();
  CompileResult cheapest = compileText(kTwoLayers, o);
  ASSERT_TRUE(cheapest.ok());
  EXPECT_EQ(cheapest.stats.transferBytes, 2 << 20);  // both inputs to the GPU
  // Room for one input: one layer on the GPU, the other on the cpu, within the budget.
  o.budgets.maxTransferBytes = (3 << 20) / 2;
  CompileResult one = compileText(kTwoLayers, o);
  ASSERT_TRUE(one.ok()) << text(one.diagnostics);
  EXPECT_EQ(one.stats.transferBytes, 1 << 20);
  EXPECT_NE(deviceOf(one, "h1"), deviceOf(one, "h2"));
  EXPECT_EQ(one.stats.autoFewestTransferBytes, 0);  // all on the cpu: nothing to copy
  // Room for none: everything on the cpu.
  o.budgets.maxTransferBytes = 1000;
  CompileResult none = compileText(kTwoLayers, o);
  ASSERT_TRUE(none.ok()) << text(none.diagnostics);
  EXPECT_EQ(none.stats.transfers, 0);
  EXPECT_GT(none.stats.estimatedSeconds, one.stats.estimatedSeconds);
}

TEST(BudgetSteersAuto, AByteCapNoPlanMeetsNamesWhatForcesEachTransfer) {
  CompileOptions o = autoPlacement();
  o.budgets.maxTransferBytes = 100;
  CompileResult r = compileText(R"(graph m {
  input %x : f32[256,1024] @cpu
  param %w : f32[1024,1024] = randn(seed=1)
  %h @cuda:0 = linear(%x, %w)
  %y = relu(%h)
  output %y @cpu
})",
                                o);
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.lastPass, "budget");
  EXPECT_EQ(text(r.diagnostics),
            "error: transfers move 2097152 bytes per run, over the budget of 100 "
            "(max_transfer_bytes, --max-transfer-bytes) [budget]\n"
            "t.fy:4:3: note: transfer of %x from cpu to cuda:0: 1048576 bytes; input %x is "
            "declared @cpu at t.fy:2:9, and 'linear' (%h) is pinned @cuda:0 at t.fy:4:3\n"
            "t.fy:6:10: note: transfer of %y.cuda0 from cuda:0 to cpu: 1048576 bytes; 'linear' "
            "(%h) is pinned @cuda:0 at t.fy:4:3, and output %y is pinned @cpu at t.fy:6:10\n"
            "  auto placement looked for a plan within the budget: no plan copies fewer than "
            "2097152 bytes per run (counted in the dtypes before the dtype pass)\n"
            "  fix: change the pins and declarations named above so that less data must cross "
            "devices, or raise max_transfer_bytes (--max-transfer-bytes) to 2097152\n");
  EXPECT_EQ(r.stats.autoFewestTransferBytes, 2097152);
  EXPECT_TRUE(r.stats.autoFewestExact);
}

}  // namespace
}  // namespace ferry
