// tests/tools/ferry_compile_all_problems_test.cpp — one run of ferry-compile reports every
// independent mistake of a model (device conflicts, dtype conflicts, operand kinds), each once,
// each with the fix that respects what the user wrote, in text and in JSON (every note located).
#include <gtest/gtest.h>

#include <string>

#include "json_test_util.h"
#include "tool_test_util.h"

namespace ferry {
namespace {

using namespace tooltest;

// (a) A cuda:0 model: its weights pinned there, the input left on the cpu, and a matmul of f32
// by f16 (strict dtypes reject it as PyTorch does; an elementwise mul would promote).
constexpr const char *kInputOnCpuAndMixedDTypes = R"(graph a {
  input %x : f32[4,8]
  param %w : f32[16,8] @cuda:0 = randn(seed=1)
  param %b : f32[16] @cuda:0 = zeros
  param %u : f16[16,16] @cuda:0 = ones
  %h = linear(%x, %w, %b)
  %m = matmul(%h, %u)
  %y = relu(%m)
  output %y
}
)";

// (b) Indices in f32, and downstream of the gather a weight pinned to another GPU.
constexpr const char *kFloatIndicesAndAnotherGpu = R"(graph b {
  input %ids : f32[6] @cuda:0
  param %table : f32[100,16] @cuda:0 = randn(seed=1)
  param %w : f32[8,16] @cuda:1 = randn(seed=2)
  %e = gather(%table, %ids)
  %h = linear(%e, %w)
  output %h
}
)";

// (c) A cuda:0 model with two tensors created on the cpu: a positional table (a param) and a mask
// (a constant), both pinned @cpu.
constexpr const char *kTwoTablesOnCpu = R"(graph c {
  input %x : f32[8,16] @cuda:0
  param %w1 : f32[16,16] @cuda:0 = randn(seed=1)
  param %pos : f32[8,16] @cpu = randn(seed=2)
  %mask @cpu = constant(value=f32[]{0.0})
  %h = linear(%x, %w1)
  %p = add(%h, %pos)
  %m = add(%p, %mask)
  output %m
}
)";

// (d) A written type the op does not give (%h1 is f32), read by a chain that, judged by that
// type, would mismatch at every linear; and, apart, a weight pinned to another device.
constexpr const char *kWrongTypeWithAChain = R"(graph d {
  input %x : f32[4,8]
  param %w1 : f32[16,8] = ones
  param %w2 : f32[16,16] = ones
  param %w3 : f32[16,16] = ones
  param %v : f32[3,8] @cpu:1 = ones
  %h1 : f16[4,16] = linear(%x, %w1)
  %h2 = linear(%h1, %w2)
  %h3 = relu(%h2)
  %h4 = linear(%h3, %w3)
  %k = linear(%x, %v)
  output %h4, %k
}
)";

class FerryCompileAllProblems : public FerryCompileTest {};

// The lines of `text` that report an error.
std::vector<std::string> errors(const std::string &text) { return linesWith(text, ": error: "); }

TEST_F(FerryCompileAllProblems, ADeviceConflictDoesNotHideADTypeConflict) {
  const std::string model = write("a.fy", kInputOnCpuAndMixedDTypes);
  Result r = run("--devices cpu,cuda:0 " + shellQuote(model));
  EXPECT_EQ(r.exit, 1);
  EXPECT_EQ(r.out, "");
  const std::vector<std::string> found = errors(r.err);
  ASSERT_EQ(found.size(), 2u) << r.err;
  EXPECT_EQ(found[0], model +
                          ":6:3: error: operands of 'linear' (%h) are on different devices: cpu "
                          "and cuda:0 [device]")
      << r.err;
  EXPECT_EQ(found[1],
            model +
                ":7:3: error: 'matmul' (%m) a type f32 and b type f16 should be the same [dtype]")
      << r.err;
  // The graph lives on cuda:0 (three pins there, the input's one on the cpu): move the input.
  EXPECT_TRUE(contains(r.err, "  fix: move %x to cuda:0 with transfer(%x, to=cuda:0), or compile "
                              "with placement=auto to insert the transfer\n"))
      << r.err;
  // The dtype error says why each operand has its dtype, and how to fix it.
  EXPECT_TRUE(contains(r.err, "  operand 0 (a) %h f32[4,16]  @cuda:0  inherited from %x (" + model +
                                  ":2:9) <- input 'x', declared f32 at " + model + ":2:9\n"))
      << r.err;
  EXPECT_TRUE(contains(r.err, "  operand 1 (b) %u f16[16,16] @cuda:0  param 'u', declared f16 at " +
                                  model + ":5:9\n"))
      << r.err;
  EXPECT_TRUE(contains(r.err, "  fix: cast %u to f32: cast(%u, to=f32)\n  fix: or compile with "
                              "dtype=promote\n"))
      << r.err;

  // --stop-after still stops there: placement's error alone.
  Result placed = run("--devices cpu,cuda:0 --stop-after placement " + shellQuote(model));
  EXPECT_EQ(placed.exit, 1);
  EXPECT_EQ(errors(placed.err).size(), 1u) << placed.err;
  EXPECT_TRUE(contains(placed.err, "[device]")) << placed.err;
}

TEST_F(FerryCompileAllProblems, AWrongIndexDTypeDoesNotHideADeviceConflict) {
  const std::string model = write("b.fy", kFloatIndicesAndAnotherGpu);
  Result r = run("--devices cpu,cuda:0,cuda:1 " + shellQuote(model));
  EXPECT_EQ(r.exit, 1);
  EXPECT_EQ(r.out, "");
  const std::vector<std::string> found = errors(r.err);
  ASSERT_EQ(found.size(), 2u) << r.err;
  EXPECT_EQ(found[0], model +
                          ":5:3: error: operand 1 (indices) of 'gather' must be i32 or i64, got "
                          "f32[6] [dtype]")
      << r.err;
  EXPECT_EQ(found[1], model + ":6:3: error: operands of 'linear' (%h) are on different devices: "
                              "cuda:0 and cuda:1 [device]")
      << r.err;
  // Why the indices are f32, and the cast that fixes them.
  EXPECT_TRUE(contains(r.err, "  operand 1 (indices) %ids f32[6]  input 'ids', declared f32 at " +
                                  model + ":2:9\n  fix: cast %ids to i64: cast(%ids, to=i64)\n"))
      << r.err;
  // The weight pinned to cuda:1 is the odd one out in a cuda:0 graph: its pin is the fix.
  EXPECT_TRUE(contains(r.err, "  fix: drop the @cuda:1 pin on %w, or pin it to cuda:0\n")) << r.err;

  Result verified = run("--devices cpu,cuda:0,cuda:1 --stop-after verify " + shellQuote(model));
  EXPECT_EQ(verified.exit, 1);
  EXPECT_EQ(errors(verified.err).size(), 1u) << verified.err;
}

TEST_F(FerryCompileAllProblems, TwoTensorsCreatedOnTheCpuAreBothReportedEachWithItsPin) {
  const std::string model = write("c.fy", kTwoTablesOnCpu);
  Result r = run("--devices cpu,cuda:0 " + shellQuote(model));
  EXPECT_EQ(r.exit, 1);
  const std::vector<std::string> found = errors(r.err);
  ASSERT_EQ(found.size(), 2u) << r.err;
  EXPECT_TRUE(contains(found[0], ":7:3: error: operands of 'add' (%p)")) << r.err;
  EXPECT_TRUE(contains(found[1], ":8:3: error: operands of 'add' (%m)")) << r.err;
  EXPECT_EQ(linesWith(r.err, "fix:"),
            (std::vector<std::string>{"  fix: drop the @cpu pin on %pos, or pin it to cuda:0",
                                      "  fix: drop the @cpu pin on %mask, or pin it to cuda:0"}))
      << r.err;
  EXPECT_FALSE(contains(r.err, "move %h")) << r.err;
}

TEST_F(FerryCompileAllProblems, AMistakeIsReportedOnceNotAgainDownItsChain) {
  const std::string model = write("d.fy", kWrongTypeWithAChain);
  Result r = run("--devices cpu,cpu:1 " + shellQuote(model));
  EXPECT_EQ(r.exit, 1);
  const std::vector<std::string> found = errors(r.err);
  ASSERT_EQ(found.size(), 2u) << r.err;
  EXPECT_TRUE(contains(found[0], ":7:3: error: %h1 is typed f16[4,16] but 'linear' gives "
                                 "f32[4,16]"))
      << r.err;
  EXPECT_TRUE(contains(found[1], ":11:3: error: operands of 'linear' (%k)")) << r.err;
  EXPECT_FALSE(contains(r.err, "should be the same")) << r.err;  // %h2, %h4: not judged by %h1
}

// --diagnostics json: the same errors, each note with the location it talks about (the operand's
// definition), and exit status 1.
TEST_F(FerryCompileAllProblems, JsonNotesCarryTheirLocations) {
  for (const char *text :
       {kInputOnCpuAndMixedDTypes, kFloatIndicesAndAnotherGpu, kTwoTablesOnCpu}) {
    const std::string model = write("m.fy", text);
    Result r = run("--devices cpu,cuda:0,cuda:1 --diagnostics json " + shellQuote(model));
    EXPECT_EQ(r.exit, 1) << r.err;
    const Json all = parseJson(r.err);
    size_t errorCount = 0;
    for (const Json &d : all.items) {
      if (d["severity"].text != "error") continue;
      ++errorCount;
      EXPECT_FALSE(d["notes"].items.empty()) << r.err;
      for (const Json &n : d["notes"].items) {
        EXPECT_EQ(n["file"].text, model) << n["message"].text;
        EXPECT_NE(n["line"].text, "0") << n["message"].text;
        EXPECT_NE(n["col"].text, "0") << n["message"].text;
      }
    }
    EXPECT_EQ(errorCount, 2u) << r.err;
  }
  // The input's row points at its declaration, the weight's at its param.
  const std::string model = write("a.fy", kInputOnCpuAndMixedDTypes);
  const Json all =
      parseJson(run("--devices cpu,cuda:0 --diagnostics json " + shellQuote(model)).err);
  ASSERT_GE(all.items.size(), 1u);
  const Json &notes = all.items[0]["notes"];
  ASSERT_EQ(notes.items.size(), 3u);
  EXPECT_EQ(notes.items[0]["line"].text, "2");
  EXPECT_EQ(notes.items[1]["line"].text, "3");
  EXPECT_EQ(notes.items[2]["line"].text, "4");
}

// Every problem in one run does not make a rejected model's outputs less useful: --emit json
// describes the graph as dtype left it, and --explain still finds nothing that compiles it.
TEST_F(FerryCompileAllProblems, TheManifestAndExplainOfAModelWithSeveralProblems) {
  const std::string model = write("b.fy", kFloatIndicesAndAnotherGpu);
  Result r = run("--devices cpu,cuda:0,cuda:1 --emit json --explain " + shellQuote(model));
  EXPECT_EQ(r.exit, 1);
  const Json m = parseJson(r.out);
  EXPECT_EQ(m["outcome"].text, "rejected");
  EXPECT_EQ(m["last_pass"].text, "dtype");
  EXPECT_EQ(m["diagnostics"].items.size(), 2u) << r.out;
  EXPECT_TRUE(contains(r.err, "explain: no change of policy")) << r.err;
}

}  // namespace
}  // namespace ferry
