// tests/passes/cost_settings_test.cpp — the cost model as key=value settings (--cost,
// --cost-file): each key sets its number, bad keys and values are errors that say what was
// expected, a file reports every bad line with its position, and the printed settings read back.
#include <gtest/gtest.h>

#include "common/parse.h"
#include "passes/compile.h"
#include "passes/cost_settings.h"

namespace ferry {
namespace {

TEST(CostSettings, EachKeySetsItsNumber) {
  CostModel c;
  ASSERT_TRUE(applyCostSettings(c, "cpu.flops=2e11, cuda.launch=0,h2d.bandwidth=1.5e10").ok());
  EXPECT_EQ(c.host.flopsPerSecond, 2e11);
  EXPECT_EQ(c.cuda.launchSeconds, 0);
  EXPECT_EQ(c.hostToDevice.bytesPerSecond, 1.5e10);
  EXPECT_EQ(c.deviceToHost.bytesPerSecond, CostModel{}.deviceToHost.bytesPerSecond);  // untouched
  ASSERT_TRUE(applyCostSettings(c, "cpu.flops=1e9,cpu.flops=3e9").ok());  // a later one wins
  EXPECT_EQ(c.host.flopsPerSecond, 3e9);
}

TEST(CostSettings, BadSettingsSayWhatWasExpected) {
  CostModel c;
  const CostModel before = c;
  struct Case {
    const char *settings, *message;
  } cases[] = {
      {"gpu.flops=1", "unknown cost setting 'gpu.flops'; the settings: cpu.flops, cpu.bandwidth"},
      {"cpu.flops=0", "cpu.flops: expected a positive number (e.g. 2e10), got '0'"},
      {"cpu.flops=fast", "cpu.flops: expected a positive number (e.g. 2e10), got 'fast'"},
      {"h2d.latency=-1e-5", "h2d.latency: expected a number >= 0 (seconds, e.g. 1e-5), got '-1e-5'"},
      {"d2h.bandwidth=inf", "d2h.bandwidth: expected a positive number (e.g. 2e10), got 'inf'"},
      {"cpu.flops", "expected KEY=VALUE[,KEY=VALUE...], got 'cpu.flops'"},
      {"cpu.flops=1e9,", "expected KEY=VALUE[,KEY=VALUE...], got ''"},
  };
  for (const Case &k : cases) {
    Status s = applyCostSettings(c, k.settings);
    ASSERT_FALSE(s.ok()) << k.settings;
    EXPECT_EQ(s.diagnostics().front().message.rfind(k.message, 0), 0u)
        << k.settings << ": " << s.message();
  }
  EXPECT_EQ(c.cuda.flopsPerSecond, before.cuda.flopsPerSecond);
}

TEST(CostSettings, AFileReportsEveryBadLineWithItsPosition) {
  CostModel c;
  Status s = applyCostFile(c,
                           "# measured on the lab box\n"
                           "cpu.flops = 2e11   # one socket\n"
                           "\n"
                           "  h2d.latency = -1\n"
                           "bogus\n"
                           "d2h.bandwidth=1e10\n",
                           "box.cost");
  ASSERT_FALSE(s.ok());
  ASSERT_EQ(s.diagnostics().size(), 2u) << s.message();
  EXPECT_EQ(s.diagnostics()[0].loc.str(), "box.cost:4:3");
  EXPECT_EQ(s.diagnostics()[1].loc.str(), "box.cost:5:1");
  EXPECT_EQ(s.diagnostics()[1].message, "expected KEY = VALUE, got 'bogus'");
  EXPECT_EQ(c.host.flopsPerSecond, 2e11);  // the good lines still count
  EXPECT_EQ(c.deviceToHost.bytesPerSecond, 1e10);
}

TEST(CostSettings, ThePrintedSettingsReadBack) {
  CostModel c;
  ASSERT_TRUE(applyCostSettings(c, "cuda.flops=1.25e13,h2h.latency=3e-6").ok());
  const std::string text = costSettingsText(c);
  EXPECT_NE(text.find("cuda.flops=1.25e+13\n"), std::string::npos) << text;
  CostModel back;
  ASSERT_TRUE(applyCostFile(back, text, "printed").ok());
  EXPECT_EQ(costSettingsText(back), text);
  EXPECT_EQ(back.cuda.flopsPerSecond, 1.25e13);
}

// The settings steer auto placement: a GEMM on cuda:0 pays for its input's copy while the link
// is fast, and stays on the cpu when the link is made slow.
TEST(CostSettings, AutoPlacementFollowsTheCostModel) {
  constexpr std::string_view text = R"(graph g {
    input %x : f32[256,1024] @cpu
    param %w : f32[1024,1024] = randn(seed=1)
    %y = matmul(%x, %w)
    output %y @cpu
  })";
  CompileOptions o;
  o.devices = {Device::cpu(), Device::cuda(0)};
  o.placement = PlacementPolicy::Auto;
  auto gemmDevice = [](const Graph &g) {
    for (NodeId id : g.order())
      if (g.node(id).op == OpKind::Matmul) return *g.value(g.node(id).result).device;
    return Device::cpu(99);
  };
  CompileResult fast = compile(parseOk(text), o);
  ASSERT_TRUE(fast.ok());
  EXPECT_EQ(gemmDevice(fast.graph), Device::cuda(0));
  EXPECT_GT(fast.stats.transfers, 0);
  ASSERT_TRUE(applyCostSettings(o.cost, "h2d.bandwidth=1e6,d2h.bandwidth=1e6").ok());
  CompileResult slow = compile(parseOk(text), o);
  ASSERT_TRUE(slow.ok());
  EXPECT_EQ(gemmDevice(slow.graph), Device::cpu());
  EXPECT_EQ(slow.stats.transfers, 0);
}

}  // namespace
}  // namespace ferry
