// tests/tools/ferry_compile_explain_test.cpp — ferry-compile --explain beyond the basics: values of
// a rejected model, the budget changes that would compile a plan its budgets reject, the budget
// diagnostics' wording, and stderr as one JSON document under --diagnostics json.
#include <gtest/gtest.h>

#include <string>

#include "json_test_util.h"
#include "tool_test_util.h"

namespace ferry {
namespace {

using namespace tooltest;

class FerryCompileExplain : public FerryCompileTest {};

// --explain %V on a rejected model explains V as the last pass that judged it (dtype) left it.
TEST_F(FerryCompileExplain, ExplainsTheValuesOfARejectedModel) {
  const std::string model = write("two.fy", kTwoDevices);
  Result r = run("--devices cpu,cpu:1 --explain %h,%x " + shellQuote(model));
  EXPECT_EQ(r.exit, 1);
  EXPECT_EQ(r.out, "");
  EXPECT_TRUE(contains(r.err, "error: operands of 'linear' (%h) are on different devices"))
      << r.err;
  EXPECT_TRUE(contains(r.err, "explain: the model is rejected; its values as the pass 'dtype' "
                              "left them:\n%h : f32[4,16] @cpu:1\n  device: inherited from %w (" +
                                  model + ":3:9) <- param 'w', pinned at " + model + ":3:9\n"))
      << r.err;
  EXPECT_TRUE(contains(r.err, "%x : f32[4,8] @cpu\n  device: input 'x', declared at " + model))
      << r.err;
  // A name the rejected graph does not have is still a usage error.
  expectUsageError("--devices cpu,cpu:1 --explain %nope " + shellQuote(model),
                   "--explain: no value %nope in 'two' (its values: %x, %w, %h, %y)", Match::Whole);
  // A model that does not parse has no values: said, not ignored.
  Result broken = run("--explain %h " + shellQuote(write("bad.fy", "graph bad {\n  %h = \n}\n")));
  EXPECT_EQ(broken.exit, 1);
  EXPECT_TRUE(contains(broken.err, "explain: the model does not parse or type-check, which no "
                                   "option changes, and it has no values to explain yet"))
      << broken.err;
}

// The cost of an option that compiles says what moves per run and, apart, what moves once at load:
// the bias left on cpu is copied to cpu:1 when a session is created, not in every run.
TEST_F(FerryCompileExplain, TheCostOfAnAlternativeSaysWhatMovesAtLoad) {
  const std::string model = std::string(FERRY_SOURCE_DIR) + "/examples/bias_elsewhere.fy";
  Result r = run("--devices cpu,cpu:1 --explain " + shellQuote(model));
  EXPECT_EQ(r.exit, 1);
  EXPECT_TRUE(contains(r.err, "  compiles with --placement auto: 0 transfers (0 bytes per run), "
                              "0 casts; at load, once: 1 weight copied (1024 bytes)\n"))
      << r.err;
}

// A plan only its budgets reject comes with the budget flags that let it pass.
TEST_F(FerryCompileExplain, BudgetRejectionsSuggestTheBudgetThatCompiles) {
  const std::string mixed = shellQuote(write("mixed.fy", kMixedDTypes));
  Result casts = run("--dtype promote --max-casts 0 --explain " + mixed);
  EXPECT_EQ(casts.exit, 1);
  EXPECT_TRUE(contains(casts.err, "error: 1 cast is left in the graph, over the budget of 0 "
                                  "(max_casts, --max-casts) [budget]\n"))
      << casts.err;
  EXPECT_TRUE(contains(casts.err, "  fix: give params and inputs the dtypes the ops compute in, "
                                  "or raise max_casts (--max-casts) to 1\n"))
      << casts.err;
  EXPECT_TRUE(contains(casts.err, "explain: the model as written is rejected under these options, "
                                  "but it\n  compiles with --max-casts 1: 0 transfers (0 bytes "
                                  "per run), 1 cast\n"))
      << casts.err;
  EXPECT_FALSE(contains(casts.err, "no change of policy")) << casts.err;

  const std::string two = shellQuote(write("two.fy", kTwoDevices));
  Result direction =
      run("--devices cpu,cpu:1 --placement auto --transfers h2h=error --explain " + two);
  EXPECT_EQ(direction.exit, 1);
  EXPECT_TRUE(contains(direction.err, "  compiles with --transfers h2h=warn: 1 transfer (128 bytes "
                                      "per run), 0 casts\n"))
      << direction.err;
  Result bytes =
      run("--devices cpu,cpu:1 --placement auto --max-transfer-bytes 100 --explain " + two);
  EXPECT_EQ(bytes.exit, 1);
  EXPECT_TRUE(contains(bytes.err, "transfers move 128 bytes per run, over the budget of 100 "
                                  "(max_transfer_bytes, --max-transfer-bytes)"))
      << bytes.err;
  EXPECT_TRUE(contains(bytes.err, "raise max_transfer_bytes (--max-transfer-bytes) to 128"))
      << bytes.err;
  EXPECT_TRUE(contains(bytes.err, "  compiles with --max-transfer-bytes 128: 1 transfer"))
      << bytes.err;
  // Strict placement needs --placement auto first, and that plan then needs the budget too.
  Result both = run("--devices cpu,cpu:1 --transfers h2h=error --explain " + two);
  EXPECT_EQ(both.exit, 1);
  EXPECT_TRUE(contains(both.err, "  compiles with --placement auto and --transfers h2h=warn: 1 "
                                 "transfer (128 bytes per run), 0 casts\n"))
      << both.err;
}

// Under --diagnostics json stderr is one JSON array, whatever else was asked for.
TEST_F(FerryCompileExplain, UnderDiagnosticsJsonStderrIsOneJsonDocument) {
  const std::string two = shellQuote(write("two.fy", kTwoDevices));
  auto stderrJson = [&](const std::string &args, int exit) {
    SCOPED_TRACE(args);
    Result r = run("--diagnostics json " + args);
    EXPECT_EQ(r.exit, exit) << r.err;
    return parseJson(r.err);
  };
  auto codes = [](const Json &all) {
    std::string s;
    for (const Json &d : all.items) s += (s.empty() ? "" : ",") + d["code"].text;
    return s;
  };
  // A compile with --explain, --stats and files written: every part an entry of its own.
  const Json ok = stderrJson("--devices cpu,cpu:1 --placement auto --stats --explain %h,%x "
                             "--emit text,dot --emit-dir " +
                                 shellQuote(path("out")) + " " + two,
                             0);
  EXPECT_EQ(codes(ok), "stats,explain,explain,explain,output,output");  // the last: the cost model
  EXPECT_TRUE(ok.items[1]["message"].text.starts_with("%h : f32[4,16] @cpu:1\n  device: "))
      << ok.items[1]["message"].text;
  EXPECT_EQ(ok.items[1]["severity"].text, "note");
  EXPECT_TRUE(ok.items[3]["message"].text.starts_with("explain: auto placement priced with this "
                                                       "cost model (--cost, --cost-file):\n  cpu.flops="))
      << ok.items[3]["message"].text;
  EXPECT_EQ(ok.items[4]["message"].text, "wrote text to " + path("out") + "/two.fy");
  // A rejection and its explanation; a usage error; a parse error of the command line; nothing to
  // say.
  EXPECT_EQ(codes(stderrJson("--devices cpu,cpu:1 --explain " + two, 1)), "device,explain");
  EXPECT_EQ(codes(stderrJson("--explain %nope " + two, 2)), "usage");
  EXPECT_EQ(codes(stderrJson("--emit png " + two, 2)), "usage");
  EXPECT_EQ(stderrJson("--devices cpu,cpu:1 --placement auto --emit none " + two, 0).items.size(),
            0u);
  // Bytes that are not UTF-8 in a name from the command line: the message names the value as
  // `.fy` writes it, quoted with \xHH escapes, and stays valid JSON.
  const Json bad = stderrJson("--explain " + shellQuote("%h\xff\xc0\x80") + " " + two, 2);
  ASSERT_EQ(bad.items.size(), 1u);
  EXPECT_TRUE(contains(bad.items[0]["message"].text, "%\"h\\xff\\xc0\\x80\" in 'two'"))
      << bad.items[0]["message"].text;
}

}  // namespace
}  // namespace ferry
