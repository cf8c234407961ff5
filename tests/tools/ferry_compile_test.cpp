// tests/tools/ferry_compile_test.cpp — runs the ferry-compile binary on good and bad models, with
// every option: placement and dtype policies, budgets, --stop-after, --stats, bad values.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "tool_test_util.h"

namespace ferry {
namespace {

using namespace tooltest;

constexpr const char *kMlp = R"(# a small perceptron
graph mlp {
  input %x : f32[4,8] @cpu
  param %w1 : f32[16,8] = randn(seed=1)
  param %b1 : f32[16] = zeros
  param %w2 : f32[3,16] = randn(seed=2)
  %h = linear(%x, %w1, %b1)
  %a = relu(%h)
  %y = linear(%a, %w2)
  output %y
}
)";

// Line 5 adds f32[2,3] and f32[4]: no broadcast exists.
constexpr const char *kShapeError = R"(graph bad {
  input %a : f32[2,3]
  input %b : f32[4]
  %ok = relu(%a)
  %c = add(%a, %b)
  output %c
}
)";

// An input on cpu and a weight pinned to cpu:1: strict rejects the linear, auto inserts one
// transfer (cpu -> cpu:1 is host to host: h2h).
constexpr const char *kTwoDevices = R"(graph two {
  input %x : f32[4,8] @cpu
  param %w : f32[16,8] @cpu:1 = randn(seed=1)
  %h = linear(%x, %w)
  %y = relu(%h)
  output %y
}
)";

// f16 and f32 operands: linear rejects them under dtype=strict, promote inserts one cast.
constexpr const char *kMixedDTypes = R"(graph mixed {
  input %x : f16[4,8] @cpu
  param %w : f32[3,8] = randn(seed=3)
  %y = linear(%x, %w)
  output %y
}
)";

// Nothing but a param: where it goes is up to --target.
constexpr const char *kUnconstrained = R"(graph free {
  param %p : f32[2] = ones
  %y = relu(%p)
  output %y
}
)";

// The lines of `s` that contain `part`.
std::vector<std::string> linesWith(const std::string &s, std::string_view part) {
  std::vector<std::string> out;
  std::istringstream in(s);
  for (std::string line; std::getline(in, line);)
    if (contains(line, part)) out.push_back(line);
  return out;
}

// Statements of a printed graph (not the `graph` header or closing brace).
std::vector<std::string> statements(const std::string &text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    if (line.starts_with("  ")) out.push_back(line);
  return out;
}

// The statistics block without its one run-dependent line (pass times).
std::string withoutTimings(const std::string &stats) {
  std::string out;
  std::istringstream in(stats);
  for (std::string line; std::getline(in, line);)
    if (!contains(line, "pass times:")) out += line + "\n";
  return out;
}

class FerryCompile : public tooltest::ToolTest {
 protected:
  Result run(const std::string &args) { return runTool(FERRY_COMPILE, args); }
};

TEST_F(FerryCompile, EmitsTextByDefault) {
  std::string model = write("mlp.fy", kMlp);
  Result r = run(shellQuote(model));
  ASSERT_EQ(r.exit, 0) << r.err;
  EXPECT_EQ(r.err, "");
  EXPECT_TRUE(r.out.starts_with("graph mlp {\n")) << r.out;
  // Inferred types and placed devices are written out, with each statement's location.
  EXPECT_TRUE(contains(r.out, "%h : f32[4,16] @cpu = linear(%x, %w1, %b1)")) << r.out;
  EXPECT_TRUE(contains(r.out, "%y : f32[4,3] @cpu = linear(%a, %w2)")) << r.out;
  EXPECT_TRUE(contains(r.out, "mlp.fy:7:")) << r.out;
  EXPECT_TRUE(contains(r.out, "output %y")) << r.out;

  Result same = run("--emit text " + shellQuote(model));
  EXPECT_EQ(same.exit, 0);
  EXPECT_EQ(same.out, r.out);
  Result bare = run("--no-locations " + shellQuote(model));
  ASSERT_EQ(bare.exit, 0) << bare.err;
  EXPECT_TRUE(contains(bare.out, "%h : f32[4,16] @cpu = linear(%x, %w1, %b1)\n")) << bare.out;
  EXPECT_FALSE(contains(bare.out, "mlp.fy")) << bare.out;
}

TEST_F(FerryCompile, EmitsDot) {
  std::string model = write("mlp.fy", kMlp);
  Result r = run("--emit dot " + shellQuote(model));
  ASSERT_EQ(r.exit, 0) << r.err;
  EXPECT_TRUE(r.out.starts_with("digraph \"mlp\" {\n")) << r.out;
  EXPECT_TRUE(r.out.ends_with("}\n"));
  EXPECT_TRUE(contains(r.out, "label=\"%h = linear\\nf32[4,16] @cpu\"")) << r.out;
  EXPECT_TRUE(contains(r.out, "shape=invhouse, label=\"input %x\\nf32[4,8] @cpu\"")) << r.out;
  EXPECT_TRUE(contains(r.out, "shape=cylinder, label=\"param %w1\\nf32[16,8] @cpu\"")) << r.out;
  EXPECT_TRUE(contains(r.out, "shape=house, label=\"output %y\"")) << r.out;
  // Edges: 3 + 1 + 2 operands and one to the output, each labelled with its type.
  EXPECT_EQ(count(r.out, " -> "), 7u) << r.out;
  EXPECT_EQ(count(r.out, "-> n0 [label=\"f32[4,8]\"]"), 1u) << r.out;
  EXPECT_EQ(count(r.out, " [label=\"f32[4,16]\"]"), 2u) << r.out;  // %h and %a
  EXPECT_EQ(count(r.out, "-> out0 [label=\"f32[4,3]\"]"), 1u) << r.out;
  EXPECT_TRUE(contains(r.out, "tooltip=\"")) << r.out;
  // The same input gives the same bytes.
  EXPECT_EQ(run("--emit dot " + shellQuote(model)).out, r.out);
  EXPECT_FALSE(contains(run("--emit dot --no-locations " + shellQuote(model)).out, "tooltip"));
}

TEST_F(FerryCompile, EmitsJson) {
  std::string model = write("mlp.fy", kMlp);
  Result r = run("--emit json " + shellQuote(model));
  ASSERT_EQ(r.exit, 0) << r.err;
  EXPECT_TRUE(r.out.starts_with("{\n  \"format\": \"ferry.graph\",\n  \"version\": 1,\n")) << r.out;
  EXPECT_TRUE(contains(r.out, "\"graph\": \"mlp\"")) << r.out;
  EXPECT_EQ(count(r.out, "\"op\": "), 3u) << r.out;
  EXPECT_TRUE(contains(r.out, "\"op\": \"relu\", \"result\": \"a\", \"type\": {\"dtype\": \"f32\", "
                              "\"shape\": [4, 16]}, \"operands\": [\"h\"], \"attrs\": {}, "
                              "\"device\": \"cpu\""))
      << r.out;
  EXPECT_TRUE(
      contains(r.out, "\"name\": \"w1\", \"type\": {\"dtype\": \"f32\", \"shape\": [16, 8]}"))
      << r.out;
  EXPECT_TRUE(contains(r.out, "\"init\": \"randn\", \"seed\": 1")) << r.out;
  EXPECT_TRUE(contains(r.out, "mlp.fy:8:")) << r.out;
  EXPECT_EQ(count(r.out, "{"), count(r.out, "}"));
  EXPECT_EQ(count(r.out, "["), count(r.out, "]"));

  Result bare = run("--emit json --no-locations " + shellQuote(model));
  ASSERT_EQ(bare.exit, 0) << bare.err;
  EXPECT_FALSE(contains(bare.out, "mlp.fy")) << bare.out;
  EXPECT_EQ(count(bare.out, "\"location\": null"), 1u + 3u + 3u + 1u) << bare.out;
  EXPECT_EQ(count(r.out, "\"inserted\": false"), 3u) << r.out;
}

TEST_F(FerryCompile, WritesToTheOutputFile) {
  std::string model = write("mlp.fy", kMlp);
  std::string target = (dir_ / "out.dot").string();
  Result r = run("--emit dot -o " + shellQuote(target) + " " + shellQuote(model));
  ASSERT_EQ(r.exit, 0) << r.err;
  EXPECT_EQ(r.out, "");
  EXPECT_TRUE(readFile(target).starts_with("digraph \"mlp\" {"));

  Result bad = run("-o " + shellQuote((dir_ / "no" / "such" / "dir.txt").string()) + " " +
                   shellQuote(model));
  EXPECT_EQ(bad.exit, 2);
  EXPECT_TRUE(contains(bad.err, "dir.txt") && contains(bad.err, "No such file or directory"))
      << bad.err;
}

// A weight cast to f16 at compile time is data, too large to print inline: written to a file, the
// dump comes with its .npy and reads back (and recompiles to itself).
TEST_F(FerryCompile, TextOutputFileCarriesLargeParams) {
  std::string values;
  for (int i = 0; i < 3 * 80; ++i) values += (i ? ", " : "") + std::to_string(i % 7) + ".5";
  std::string model = write("big.fy", "graph big {\n  input %x : f32[2,80] @cpu\n"
                                      "  param %w : f32[3,80] = [" +
                                          values + "]\n  %y = linear(%x, %w)\n  output %y\n}\n");
  std::string target = (dir_ / "out.fy").string();
  Result r = run("--dtype autocast=f16 -o " + shellQuote(target) + " " + shellQuote(model));
  ASSERT_EQ(r.exit, 0) << r.err;
  std::string text = readFile(target);
  EXPECT_TRUE(contains(text, "= npy(\"")) << text;
  Result again = run("--dtype autocast=f16 --no-locations " + shellQuote(target));
  ASSERT_EQ(again.exit, 0) << again.err;
  EXPECT_EQ(again.out, run("--dtype autocast=f16 --no-locations " + shellQuote(model)).out);
}

TEST_F(FerryCompile, ExampleModelCompilesInEveryFormat) {
  fs::path example = fs::path(FERRY_SOURCE_DIR) / "examples" / "mlp.fy";
  if (!fs::exists(example)) GTEST_SKIP() << example << " is not there";
  for (const char *mode : {"text", "dot", "json"}) {
    Result r = run(std::string("--emit ") + mode + " " + shellQuote(example.string()));
    EXPECT_EQ(r.exit, 0) << mode << ": " << r.err;
    EXPECT_EQ(r.err, "") << mode;
    EXPECT_FALSE(r.out.empty()) << mode;
  }
}

TEST_F(FerryCompile, MissingFileIsAUsageError) {
  std::string missing = (dir_ / "x.fy").string();
  Result r = run(shellQuote(missing));
  EXPECT_EQ(r.exit, 2);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err,
            "ferry-compile: error: cannot read '" + missing + "': No such file or directory\n");
  Result dir = run(shellQuote(dir_.string()));
  EXPECT_EQ(dir.exit, 2);
  EXPECT_TRUE(contains(dir.err, "Is a directory")) << dir.err;
}

TEST_F(FerryCompile, BadOptionsAreUsageErrors) {
  std::string model = write("mlp.fy", kMlp);
  Result png = run("--emit png " + shellQuote(model));
  EXPECT_EQ(png.exit, 2);
  EXPECT_EQ(png.out, "");
  EXPECT_EQ(count(png.err, "\n"), 1u) << png.err;
  EXPECT_TRUE(contains(png.err, "png")) << png.err;
  EXPECT_TRUE(contains(png.err, "--emit")) << png.err;

  Result none = run("");
  EXPECT_EQ(none.exit, 2);
  EXPECT_TRUE(contains(none.err, "required")) << none.err;
  Result unknown = run("--bogus " + shellQuote(model));
  EXPECT_EQ(unknown.exit, 2);
  EXPECT_TRUE(contains(unknown.err, "--bogus")) << unknown.err;
  Result diag = run("--diagnostics xml " + shellQuote(model));
  EXPECT_EQ(diag.exit, 2);
}

TEST_F(FerryCompile, HelpListsEveryOption) {
  Result r = run("--help");
  EXPECT_EQ(r.exit, 0);
  for (const char *s :
       {"MODEL.fy",      "--emit",          "text,dot,json",
        "-o,--output",   "--diagnostics",   "--no-locations",
        "--devices",     "--target",        "--placement",
        "strict|auto",   "--dtype",         "autocast=bf16",
        "--no-fallback", "--stop-after",    "verify, placement, dtype, simplify, budget",
        "--transfers",   "h2d|d2h|d2d|h2h", "--max-transfer-bytes",
        "--max-casts",   "--stats",         "Exit status"})
    EXPECT_TRUE(contains(r.out, s)) << s << " missing from:\n" << r.out;
  // Short: one screen, no line wider than a terminal.
  EXPECT_LT(count(r.out, "\n"), 40u) << r.out;
  for (const std::string &line : linesWith(r.out, "")) EXPECT_LE(line.size(), 100u) << line;
}

TEST_F(FerryCompile, ShapeErrorIsRejectedWithItsLocation) {
  std::string model = write("bad.fy", kShapeError);
  Result r = run("--emit json " + shellQuote(model));
  EXPECT_EQ(r.exit, 1);
  EXPECT_EQ(r.out, "");
  EXPECT_TRUE(contains(r.err, model + ":5:")) << r.err;
  EXPECT_TRUE(contains(r.err, ": error: ")) << r.err;
  EXPECT_TRUE(contains(r.err, "[shape]")) << r.err;
  EXPECT_TRUE(contains(r.err, "[2,3]") && contains(r.err, "[4]")) << r.err;
  // The snippet shows the offending line.
  EXPECT_TRUE(contains(r.err, "  %c = add(%a, %b)\n")) << r.err;
  EXPECT_EQ(count(r.err, ": error: "), 1u) << r.err;
}

TEST_F(FerryCompile, ParseErrorsAreAllReported) {
  std::string model = write("typo.fy", "graph g {\n  input %x : f32[2]\n  %y = rleu(%x)\n"
                                       "  %z = relu(%nope)\n  output %x\n}\n");
  Result r = run(shellQuote(model));
  EXPECT_EQ(r.exit, 1);
  EXPECT_TRUE(contains(r.err, model + ":3:")) << r.err;
  EXPECT_TRUE(contains(r.err, model + ":4:")) << r.err;
}

TEST_F(FerryCompile, DiagnosticsAsJson) {
  std::string model = write("bad.fy", kShapeError);
  Result r = run("--diagnostics json " + shellQuote(model));
  EXPECT_EQ(r.exit, 1);
  EXPECT_EQ(r.out, "");
  EXPECT_TRUE(r.err.starts_with("[")) << r.err;
  EXPECT_TRUE(r.err.ends_with("]\n")) << r.err;
  EXPECT_EQ(count(r.err, "\"severity\": \"error\""), 1u) << r.err;
  EXPECT_TRUE(contains(r.err, "\"code\": \"shape\"")) << r.err;
  EXPECT_TRUE(contains(r.err, "\"line\": 5")) << r.err;
  EXPECT_TRUE(contains(r.err, "\"file\": \"" + model + "\"")) << r.err;

  Result missing = run("--diagnostics json " + shellQuote((dir_ / "x.fy").string()));
  EXPECT_EQ(missing.exit, 2);
  EXPECT_TRUE(contains(missing.err, "\"code\": \"io\"")) << missing.err;
  EXPECT_TRUE(contains(missing.err, "No such file or directory")) << missing.err;
}

// `make demo`: the example with default options prints a placed graph, every value on cpu.
TEST_F(FerryCompile, DemoPrintsAPlacedGraph) {
  fs::path example = fs::path(FERRY_SOURCE_DIR) / "examples" / "mlp.fy";
  Result r = run(shellQuote(example.string()));
  ASSERT_EQ(r.exit, 0) << r.err;
  EXPECT_EQ(r.err, "");
  for (const std::string &line : statements(r.out))
    EXPECT_TRUE(contains(line, " @cpu")) << "unplaced: " << line;
  EXPECT_FALSE(contains(r.out, "# inserted")) << r.out;
}

TEST_F(FerryCompile, BadOptionValuesAreOneLineUsageErrors) {
  std::string model = write("two.fy", kTwoDevices);
  struct Case {
    std::string args, option, expected;
  };
  const Case cases[] = {
      {"--placement sideways", "--placement", "expected strict or auto"},
      {"--devices cuda:x", "--devices", "cuda:x"},
      {"--devices cpu,cpu", "--devices", "listed twice"},
      {"--target cpu:7", "--target", "not among the available devices"},
      {"--target gpu", "--target", "gpu"},
      {"--dtype autocast=f32", "--dtype",
       "expected strict, promote, autocast=f16 or autocast=bf16"},
      {"--stop-after nonsense", "--stop-after", "verify, placement, dtype, simplify, budget"},
      {"--transfers d2h=maybe", "--transfers d2h", "expected allow, warn or error"},
      {"--transfers sideways=warn", "--transfers", "h2d, d2h, d2d, h2h"},
      {"--transfers d2h", "--transfers", "DIR=ACTION"},
      {"--transfers d2h=warn,d2h=error", "--transfers", "given twice"},
      {"--max-transfer-bytes lots", "--max-transfer-bytes", "non-negative integer"},
      {"--max-casts -3", "--max-casts", "non-negative integer"},
  };
  for (const Case &c : cases) {
    Result r = run(c.args + " " + shellQuote(model));
    EXPECT_EQ(r.exit, 2) << c.args;
    EXPECT_EQ(r.out, "") << c.args;
    EXPECT_EQ(count(r.err, "\n"), 1u) << c.args << ": " << r.err;
    EXPECT_TRUE(r.err.starts_with("ferry-compile: error: " + c.option + ": ")) << r.err;
    EXPECT_TRUE(contains(r.err, c.expected)) << c.args << ": " << r.err;
  }
  // As JSON, too, when asked.
  Result json = run("--diagnostics json --placement sideways " + shellQuote(model));
  EXPECT_EQ(json.exit, 2);
  EXPECT_TRUE(contains(json.err, "\"code\": \"usage\"")) << json.err;
  EXPECT_TRUE(contains(json.err, "--placement: ")) << json.err;
}

TEST_F(FerryCompile, StrictPlacementRejectsADeviceConflict) {
  std::string model = write("two.fy", kTwoDevices);
  Result r = run("--devices cpu,cpu:1 " + shellQuote(model));
  EXPECT_EQ(r.exit, 1) << r.out;
  EXPECT_EQ(r.out, "");
  EXPECT_TRUE(contains(r.err, model + ":4:")) << r.err;  // the linear
  EXPECT_TRUE(contains(r.err, ": error: ")) << r.err;
  EXPECT_TRUE(contains(r.err, "cpu:1")) << r.err;
  // A device that is not available is an error in every policy.
  Result missing = run("--placement auto " + shellQuote(model));
  EXPECT_EQ(missing.exit, 1) << missing.out;
  EXPECT_TRUE(contains(missing.err, "cpu:1")) << missing.err;
}

TEST_F(FerryCompile, AutoPlacementInsertsAMarkedTransfer) {
  std::string model = write("two.fy", kTwoDevices);
  const std::string args = "--devices cpu,cpu:1 --placement auto ";
  Result r = run(args + shellQuote(model));
  ASSERT_EQ(r.exit, 0) << r.err;
  std::vector<std::string> transfers = linesWith(r.out, "= transfer(");
  ASSERT_EQ(transfers.size(), 1u) << r.out;
  EXPECT_TRUE(contains(transfers[0], "# inserted")) << transfers[0];
  for (const std::string &line : statements(r.out))
    EXPECT_TRUE(contains(line, " @cpu")) << "unplaced: " << line;
  // The dump reads back in and recompiles to itself.
  std::string again = write("again.fy", r.out);
  Result r2 = run(args + "--no-locations " + shellQuote(again));
  ASSERT_EQ(r2.exit, 0) << r2.err << "\n" << r.out;
  EXPECT_EQ(r2.out, run(args + "--no-locations " + shellQuote(model)).out);
  // The other renderings mark it too.
  Result json = run(args + "--emit json " + shellQuote(model));
  ASSERT_EQ(json.exit, 0) << json.err;
  EXPECT_EQ(count(json.out, "\"inserted\": true"), 1u) << json.out;
  EXPECT_TRUE(contains(json.out, "\"op\": \"transfer\"")) << json.out;
  Result dot = run(args + "--emit dot " + shellQuote(model));
  ASSERT_EQ(dot.exit, 0) << dot.err;
  EXPECT_EQ(count(dot.out, "style=dashed"), 1u) << dot.out;
}

TEST_F(FerryCompile, StatsCountTransfersAndAreDeterministic) {
  std::string model = write("two.fy", kTwoDevices);
  const std::string args = "--devices cpu,cpu:1 --placement auto --stats ";
  Result r = run(args + shellQuote(model));
  ASSERT_EQ(r.exit, 0) << r.err;
  EXPECT_TRUE(r.err.starts_with("statistics for 'two' (placement auto, dtype strict, devices "
                                "cpu,cpu:1, target cpu):\n"))
      << r.err;
  EXPECT_TRUE(contains(r.err, "  transfers: 1 per run, ")) << r.err;
  EXPECT_TRUE(contains(r.err, "    h2h: 1, ")) << r.err;
  EXPECT_TRUE(contains(r.err, "    d2h: 0, 0 bytes\n")) << r.err;
  EXPECT_TRUE(contains(r.err, "  casts: 0 in the graph; 0 inserted")) << r.err;
  // The transfer, the linear and the relu all run on cpu:1, where the weight is.
  EXPECT_TRUE(contains(r.err, "  nodes per device: cpu:1 3\n")) << r.err;
  EXPECT_TRUE(contains(r.err, "  estimated time: ")) << r.err;
  EXPECT_TRUE(contains(r.err, "  pass times: verify ")) << r.err;
  // The graph on stdout is the same with and without --stats.
  EXPECT_EQ(r.out, run("--devices cpu,cpu:1 --placement auto " + shellQuote(model)).out);
  EXPECT_EQ(withoutTimings(run(args + shellQuote(model)).err), withoutTimings(r.err));
}

TEST_F(FerryCompile, DTypePoliciesAndCastBudget) {
  std::string model = write("mixed.fy", kMixedDTypes);
  Result strict = run(shellQuote(model));
  EXPECT_EQ(strict.exit, 1) << strict.out;
  EXPECT_TRUE(contains(strict.err, model + ":4:")) << strict.err;
  EXPECT_TRUE(contains(strict.err, "f16") && contains(strict.err, "f32")) << strict.err;
  // The dtype pass never ran: placement alone accepts the model.
  Result placed = run("--stop-after placement " + shellQuote(model));
  EXPECT_EQ(placed.exit, 0) << placed.err;
  EXPECT_TRUE(contains(placed.out, "%y : f32[4,3] @cpu = linear(%x, %w)")) << placed.out;

  Result promote = run("--dtype promote --stats " + shellQuote(model));
  ASSERT_EQ(promote.exit, 0) << promote.err;
  std::vector<std::string> casts = linesWith(promote.out, "= cast(");
  ASSERT_EQ(casts.size(), 1u) << promote.out;
  EXPECT_TRUE(contains(casts[0], "# inserted")) << casts[0];
  EXPECT_TRUE(contains(promote.err, "  casts: 1 in the graph; 1 inserted")) << promote.err;
  Result budget = run("--dtype promote --max-casts 0 " + shellQuote(model));
  EXPECT_EQ(budget.exit, 1) << budget.out;
  EXPECT_TRUE(contains(budget.err, "cast")) << budget.err;
  EXPECT_EQ(run("--dtype promote --max-casts 1 " + shellQuote(model)).exit, 0);

  for (const char *policy : {"autocast=f16", "autocast=bf16"}) {
    Result r = run(std::string("--dtype ") + policy + " " + shellQuote(model));
    EXPECT_EQ(r.exit, 0) << policy << ": " << r.err;
    EXPECT_TRUE(contains(r.out, "graph mixed {")) << policy;
  }
}

TEST_F(FerryCompile, TransferBudgets) {
  std::string model = write("two.fy", kTwoDevices);
  const std::string args = "--devices cpu,cpu:1 --placement auto ";
  Result error = run(args + "--transfers h2h=error " + shellQuote(model));
  EXPECT_EQ(error.exit, 1) << error.out;
  EXPECT_EQ(error.out, "");
  EXPECT_TRUE(contains(error.err, "bytes")) << error.err;
  Result warn = run(args + "--transfers h2d=error,h2h=warn,d2h=error " + shellQuote(model));
  EXPECT_EQ(warn.exit, 0) << warn.err;
  EXPECT_TRUE(contains(warn.err, ": warning: ")) << warn.err;
  EXPECT_EQ(linesWith(warn.out, "= transfer(").size(), 1u) << warn.out;
  EXPECT_EQ(run(args + "--transfers d2h=error,d2d=error " + shellQuote(model)).exit, 0);
  EXPECT_EQ(run(args + "--max-transfer-bytes 0 " + shellQuote(model)).exit, 1);
  EXPECT_EQ(run(args + "--max-transfer-bytes 1000000 " + shellQuote(model)).exit, 0);
}

TEST_F(FerryCompile, TargetFallbackAndStopAfter) {
  std::string model = write("free.fy", kUnconstrained);
  Result one = run("--devices cpu,cpu:1 --target cpu:1 --no-locations " + shellQuote(model));
  ASSERT_EQ(one.exit, 0) << one.err;
  EXPECT_TRUE(contains(one.out, "%y : f32[2] @cpu:1 = relu(%p)")) << one.out;
  // The default target is the first device listed.
  Result first = run("--devices cpu:1,cpu --no-locations " + shellQuote(model));
  ASSERT_EQ(first.exit, 0) << first.err;
  EXPECT_TRUE(contains(first.out, "%y : f32[2] @cpu:1 = relu(%p)")) << first.out;
  EXPECT_EQ(run("--no-fallback " + shellQuote(model)).exit, 0);
  // Before placement nothing is placed.
  Result verified = run("--stop-after verify --no-locations " + shellQuote(model));
  ASSERT_EQ(verified.exit, 0) << verified.err;
  EXPECT_TRUE(contains(verified.out, "%y : f32[2] = relu(%p)")) << verified.out;
}

}  // namespace
}  // namespace ferry
