// tests/tools/ferry_compile_budget_test.cpp — budgets under --placement auto, as a user of
// ferry-compile meets them: an `error` direction makes auto find the plan without such a copy
// (examples/loss_on_gpu.fy keeps its loss on the GPU), a copy that pins force is an error that
// names them, and a byte cap picks a plan within it or says what forces the bytes.
#include <gtest/gtest.h>

#include <string>

#include "json_test_util.h"
#include "tool_test_util.h"

namespace ferry {
namespace {

using namespace tooltest;

class FerryCompileBudget : public FerryCompileTest {};

const std::string kLoss = shellQuote(std::string(FERRY_SOURCE_DIR) + "/examples/loss_on_gpu.fy");

TEST_F(FerryCompileBudget, D2hErrorKeepsTheLossOnTheGpu) {
  const std::string args = "--devices cpu,cuda:0 --placement auto --stats " + kLoss;
  Result cheapest = run(args);
  ASSERT_EQ(cheapest.exit, 0) << cheapest.err;
  EXPECT_TRUE(contains(cheapest.out, "%mse.cpu : f32[] @cpu = transfer(%mse, to=cpu)"))
      << cheapest.out;
  EXPECT_TRUE(contains(cheapest.err, "    d2h: 1, 4 bytes\n")) << cheapest.err;

  Result steered = run("--transfers d2h=error " + args);
  ASSERT_EQ(steered.exit, 0) << steered.err;
  EXPECT_FALSE(contains(steered.out, "transfer(")) << steered.out;
  EXPECT_TRUE(contains(steered.out, "%loss : f32[] @cuda:0 = log(%half)")) << steered.out;
  EXPECT_TRUE(contains(steered.err, "  transfers: 0 per run, 0 bytes\n")) << steered.err;
  EXPECT_FALSE(contains(steered.err, "[budget]")) << steered.err;
  // --explain %v says why a value is where its own estimate is not the lowest.
  Result why = run("--transfers d2h=error --emit none --explain %rmse " + args);
  EXPECT_TRUE(contains(why.err, "  device: cost model: cuda:0 5 \u00b5s vs cpu 200 ns; moving data "
                                "would cost more, or break a budget\n"))
      << why.err;
}

TEST_F(FerryCompileBudget, ACopyThePinsForceIsRejectedNamingThePinsAndExplained) {
  const std::string model = write("forced.fy", R"(graph forced {
  input %x : f32[32,256] @cuda:0
  %y @cuda:0 = relu(%x)
  %z = neg(%y)
  output %z @cpu
}
)");
  Result r = run("--devices cpu,cuda:0 --placement auto --transfers d2h=error --explain " +
                 shellQuote(model));
  EXPECT_EQ(r.exit, 1);
  EXPECT_EQ(r.out, "");
  EXPECT_TRUE(contains(r.err, "error: device-to-host transfer of %y from cuda:0 to cpu is forced: "
                              "'relu' (%y) is pinned @cuda:0 at " +
                                  model + ":3:3 and output %z is pinned @cpu at " + model +
                                  ":5:10 (budget d2h=error) [budget]\n"))
      << r.err;
  EXPECT_TRUE(contains(r.err, "  in between, %z: wherever it is placed, some copy on the way is "
                              "in a direction the budgets forbid\n"))
      << r.err;
  EXPECT_TRUE(contains(r.err, "  fix: drop the @cuda:0 pin of 'relu' (%y), or drop the @cpu pin "
                              "of output %z, or allow d2h transfers (--transfers d2h=warn)\n"))
      << r.err;
  EXPECT_TRUE(contains(r.err, "  compiles with --transfers d2h=warn: 1 transfer (32768 bytes per "
                              "run), 0 casts\n"))
      << r.err;
  // As JSON: the same error, code "budget".
  Result json = run("--devices cpu,cuda:0 --placement auto --transfers d2h=error --diagnostics "
                    "json " +
                    shellQuote(model));
  const Json all = parseJson(json.err);
  ASSERT_FALSE(all.items.empty()) << json.err;
  EXPECT_EQ(all.items[0]["code"].text, "budget");
  EXPECT_EQ(all.items[0]["severity"].text, "error");
  EXPECT_EQ(all.items[0]["line"].text, "4");  // where the copy is needed: %z on cpu
}

TEST_F(FerryCompileBudget, AByteCapPicksAPlanWithinItOrNamesWhatForcesTheBytes) {
  const std::string free = write("layer.fy", R"(graph layer {
  input %x : f32[256,1024] @cpu
  param %w : f32[1024,1024] = randn(seed=1)
  %h = linear(%x, %w)
  output %h
}
)");
  const std::string args = "--devices cpu,cuda:0 --placement auto --emit none --stats ";
  Result cheapest = run(args + shellQuote(free));
  ASSERT_EQ(cheapest.exit, 0) << cheapest.err;
  EXPECT_TRUE(contains(cheapest.err, "  transfers: 1 per run, 1048576 bytes\n")) << cheapest.err;
  Result capped = run(args + "--max-transfer-bytes 1000 " + shellQuote(free));
  ASSERT_EQ(capped.exit, 0) << capped.err;
  EXPECT_TRUE(contains(capped.err, "  transfers: 0 per run, 0 bytes\n")) << capped.err;

  const std::string pinned = write("pinned.fy", R"(graph pinned {
  input %x : f32[256,1024] @cpu
  param %w : f32[1024,1024] = randn(seed=1)
  %h @cuda:0 = linear(%x, %w)
  output %h
}
)");
  Result r = run(args + "--max-transfer-bytes 1000 " + shellQuote(pinned));
  EXPECT_EQ(r.exit, 1);
  EXPECT_TRUE(contains(r.err, "note: transfer of %x from cpu to cuda:0: 1048576 bytes; input %x "
                              "is declared @cpu at " +
                                  pinned + ":2:9, and 'linear' (%h) is pinned @cuda:0 at " +
                                  pinned + ":4:3\n"))
      << r.err;
  EXPECT_TRUE(contains(r.err, "  auto placement looked for a plan within the budget: no plan "
                              "copies fewer than 1048576 bytes per run"))
      << r.err;
}

}  // namespace
}  // namespace ferry
