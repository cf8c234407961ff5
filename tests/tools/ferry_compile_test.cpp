// tests/tools/ferry_compile_test.cpp — runs the ferry-compile binary on good and bad models, with
// every option: placement and dtype policies, budgets, --stop-after, --stats, bad values.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "backends/registry.h"
#include "common/utf8_check.h"
#include "json_test_util.h"
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

// Nothing but a param: where it goes is up to --target.
constexpr const char *kUnconstrained = R"(graph free {
  param %p : f32[2] = ones
  %y = relu(%p)
  output %y
}
)";

// A text dump without the summary comments that close it.
std::string graphPart(const std::string &dump) { return dump.substr(0, dump.find("\n# summary")); }

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

class FerryCompile : public FerryCompileTest {};

// Compiling for a device kind this build has no backend for is allowed (ahead of time), and
// said once: the executable will not run on this build. A model for the CPU alone says nothing.
TEST_F(FerryCompile, SaysOnceWhenTheModelWillNotRunOnThisBuild) {
  const std::string model = write("c.fy", R"(graph g {
  input %x : f32[4] @cuda:0
  %y = relu(%x)
  output %y @cpu
})");
  if (builtWithCuda() && machineDevices().size() > 1) GTEST_SKIP() << "this machine has a GPU";
  // A build without CUDA says it will not run on this build; one with CUDA, on a machine without
  // a GPU, that it will run where the GPU is.
  const std::string warning =
      builtWithCuda()
          ? "warning: the model is compiled for cuda:0, which is not on this machine"
          : "warning: the model is compiled for cuda:0, and this build of ferry has no backend for it "
            "(backends: cpu, with virtual devices cpu:N): it will not run on this build [device]";
  Result r = run(model + " --devices cpu,cuda:0 -o " + path("c.ferry"));
  EXPECT_EQ(r.exit, 0) << r.err;
  EXPECT_TRUE(std::filesystem::exists(path("c.ferry")));
  EXPECT_EQ(count(r.err, warning), 1u) << r.err;
  Result cpuOnly = run(write("cpu.fy", "graph g {\n  input %x : f32[4]\n  %y = relu(%x)\n  output %y\n}\n"));
  EXPECT_EQ(cpuOnly.exit, 0) << cpuOnly.err;
  EXPECT_FALSE(contains(cpuOnly.err, "no backend")) << cpuOnly.err;
}

// --target where no node runs (the input and everything after it on cpu, strict placement):
// the same warning as ferry-run's, once; with --placement auto the nodes move and nothing is said.
TEST_F(FerryCompile, SaysWhenNoNodeRunsOnTheTarget) {
  const std::string model =
      write("t.fy", "graph g {\n  input %x : f32[64,64] @cpu\n  %y = exp(%x)\n  %z = tanh(%y)\n  output %z\n}\n");
  Result r = run(model + " --devices cpu,cpu:1 --target cpu:1 --emit none");
  EXPECT_EQ(r.exit, 0) << r.err;
  EXPECT_EQ(count(r.err, "warning: --target cpu:1, but no node runs there: under strict placement"), 1u)
      << r.err;
  Result pinned = run(write("p.fy", "graph g {\n  input %x : f32[64,64] @cpu\n  %y @cpu:1 = exp(%x)\n"
                                    "  output %y @cpu\n}\n") +
                      " --devices cpu,cpu:1 --target cpu:1 --placement auto --emit none");
  EXPECT_EQ(pinned.exit, 0) << pinned.err;
  EXPECT_FALSE(contains(pinned.err, "no node runs there")) << pinned.err;
}

// --emit cuda: the generated CUDA kernels of the steps on a GPU, each under a comment naming the
// step and the model line it comes from, the prelude once; a model on the CPU has none.
TEST_F(FerryCompile, EmitCudaPrintsTheGeneratedKernels) {
  const std::string mlp = shellQuote((std::filesystem::path(FERRY_SOURCE_DIR) / "examples" / "mlp.fy").string());
  Result cpu = run(mlp + " --emit cuda");
  EXPECT_EQ(cpu.exit, 0) << cpu.err;
  EXPECT_TRUE(contains(cpu.out, "// no step runs on a CUDA device")) << cpu.out;
  if (!builtWithCuda()) return;  // no CUDA target: steps on cuda:0 have no kernels to print
  Result gpu = run(mlp + " --devices cpu,cuda:0 --placement auto --emit cuda");
  EXPECT_EQ(gpu.exit, 0) << gpu.err;
  EXPECT_TRUE(contains(gpu.out, "linear+relu -> %a f32[32,256] @cuda:0  (")) << gpu.out;
  EXPECT_TRUE(contains(gpu.out, "mlp.fy:9:3)\n// cuBLASLt matmul, epilogue relu_bias")) << gpu.out;
  EXPECT_TRUE(contains(gpu.out, "softmax -> %probs")) << gpu.out;
  EXPECT_EQ(count(gpu.out, "FERRY_KERNEL ferry_kernel("), 1u) << gpu.out;  // softmax's
  EXPECT_EQ(count(gpu.out, "// ferry generated kernel"), 1u);               // the prelude, once
  // The executable's images are binary: their sizes are printed, not their bytes.
  EXPECT_TRUE(contains(gpu.out, "to PTX and by nvJitLink to cubins for sm_80 and sm_90"))
      << gpu.out;
  EXPECT_TRUE(contains(gpu.out, "threads; PTX ")) << gpu.out;
  EXPECT_TRUE(contains(gpu.out, " bytes, cubins sm_80 ")) << gpu.out;
  EXPECT_FALSE(contains(gpu.out, ".entry ferry_kernel")) << gpu.out;
  Result dir = run(mlp + " --devices cpu,cuda:0 --placement auto --emit cuda --emit-dir " + path("k"));
  EXPECT_EQ(dir.exit, 0) << dir.err;
  EXPECT_TRUE(std::filesystem::exists(path("k") + "/mlp.cu"));
}

// Auto placement's cost model comes from --cost-file and --cost (which wins), steers the plan,
// and --explain prints the one used; bad settings are one-line usage errors naming the flag.
TEST_F(FerryCompile, TheCostModelIsGivenOnTheCommandLineAndExplained) {
  const std::string model = write("g.fy", R"(graph g {
  input %x : f32[256,1024] @cpu
  param %w : f32[1024,1024] = randn(seed=1)
  %y = matmul(%x, %w)
  output %y @cpu
})");
  const std::string flags = model + " --devices cpu,cuda:0 --placement auto";
  Result fast = run(flags);
  ASSERT_EQ(fast.exit, 0) << fast.err;
  EXPECT_TRUE(contains(fast.out, "%y.cuda0 : f32[256,1024] @cuda:0 = matmul(")) << fast.out;
  const std::string cost = write("slow.cost", "# a slow bus\nh2d.bandwidth = 1e6\nd2h.bandwidth = 1e6\n");
  Result slow = run(flags + " --cost-file " + cost + " --explain %y");
  ASSERT_EQ(slow.exit, 0) << slow.err;
  EXPECT_TRUE(contains(slow.out, "%y : f32[256,1024] @cpu = matmul(")) << slow.out;
  EXPECT_TRUE(contains(slow.err, "explain: auto placement priced with this cost model (--cost, "
                                 "--cost-file):\n  cpu.flops=1e+11 cpu.bandwidth=2e+10 "))
      << slow.err;
  EXPECT_TRUE(contains(slow.err, "\n  h2d.bandwidth=1e+06 h2d.latency=1e-05\n  d2h.bandwidth=1e+06"))
      << slow.err;
  Result back = run(flags + " --cost-file " + cost + " --cost h2d.bandwidth=2e10,d2h.bandwidth=2e10");
  EXPECT_TRUE(contains(back.out, "@cuda:0 = matmul(")) << back.out;
  expectUsageError(flags + " --cost-file " + shellQuote(path("")),
                   "--cost-file: cannot read '" + path("") + "': Is a directory");
  expectUsageError(flags + " --cost cuda.flops=0",
                   "--cost: cuda.flops: expected a positive number (e.g. 2e10), got '0'");
  expectUsageError(flags + " --cost-file " + write("bad.cost", "cpu.flops=1e9\nwarp.speed=9\n"),
                   "--cost-file: " + path("bad.cost") + ":2:1: unknown cost setting 'warp.speed'");
}

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
  // Fusion marks are part of what the graph says: printed with or without locations.
  EXPECT_TRUE(contains(bare.out, "%h : f32[4,16] @cpu = linear(%x, %w1, %b1)  # fused 0\n"))
      << bare.out;
  EXPECT_FALSE(contains(bare.out, "mlp.fy")) << bare.out;
}

TEST_F(FerryCompile, EmitsDot) {
  std::string model = write("mlp.fy", kMlp);
  Result r = run("--emit dot " + shellQuote(model));
  ASSERT_EQ(r.exit, 0) << r.err;
  EXPECT_TRUE(r.out.starts_with("digraph \"mlp\" {\n")) << r.out;
  EXPECT_TRUE(r.out.ends_with("}\n"));
  // Every value sits in its device's cluster; labels carry the type.
  EXPECT_EQ(count(r.out, "subgraph \"cluster_cpu\" {"), 1u) << r.out;
  EXPECT_TRUE(contains(r.out, "label=\"%h = linear\\nf32[4,16]\"")) << r.out;
  EXPECT_TRUE(contains(r.out, "shape=invhouse, label=\"input %x\\nf32[4,8] @cpu\"")) << r.out;
  EXPECT_TRUE(contains(r.out, "shape=cylinder, label=\"param %w1\\nf32[16,8] @cpu\"")) << r.out;
  EXPECT_TRUE(contains(r.out, "shape=house, label=\"output %y\"")) << r.out;
  // Edges: 3 + 1 + 2 operands and one to the output, each labelled with its type; one more in
  // the legend.
  EXPECT_EQ(count(r.out, " -> "), 8u) << r.out;
  EXPECT_EQ(count(r.out, "legend_a -> legend_b"), 1u) << r.out;
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
  EXPECT_TRUE(r.out.starts_with("{\n  \"format\": \"ferry.graph\",\n  \"version\": 5,\n")) << r.out;
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
  EXPECT_EQ(count(bare.out, "\"location\": \""), 0u) << bare.out;
  EXPECT_EQ(count(r.out, "\"inserted\": false, \"pinned_device\""), 3u) << r.out;
}

// A graph name that is not UTF-8 (\x escapes in the model's text: a stray byte, an overlong
// NUL) still gives a manifest that a strict JSON parser reads, each such byte as U+FFFD; the text
// dump keeps the \x escapes it reads back.
TEST_F(FerryCompile, AManifestOfANameThatIsNotUtf8IsValidJson) {
  const std::string model = write("bad.fy", "graph \"bad\\xff\\xc0\\x80\" {\n  input %x : f32[3] "
                                            "@cpu\n  %y = relu(%x)\n  output %y\n}\n");
  Result r = run("--emit json " + shellQuote(model));
  ASSERT_EQ(r.exit, 0) << r.err;
  EXPECT_EQ(testutil::invalidUtf8(r.out), "");
  const std::string fffd = "\xEF\xBF\xBD";
  EXPECT_EQ(parseJson(r.out)["graph"].text, "bad" + fffd + fffd + fffd);
  Result text = run(shellQuote(model));
  ASSERT_EQ(text.exit, 0) << text.err;
  EXPECT_TRUE(text.out.starts_with("graph \"bad\\xff\\xc0\\x80\" {")) << text.out;
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
// dump comes with out.params/w.npy and reads back (and recompiles to itself).
TEST_F(FerryCompile, TextOutputFileCarriesLargeParams) {
  std::string values;
  for (int i = 0; i < 3 * 80; ++i) values += (i ? ", " : "") + std::to_string(i % 7) + ".5";
  std::string model = write("big.fy", "graph big {\n  input %x : f32[2,80] @cpu\n"
                                      "  param %w : f32[3,80] = [" +
                                          values + "]\n  %y = linear(%x, %w)\n  output %y\n}\n");
  std::string target = (dir_ / "out.fy").string();
  Result r =
      run("--dtype autocast=f16 --no-locations -o " + shellQuote(target) + " " + shellQuote(model));
  ASSERT_EQ(r.exit, 0) << r.err;
  std::string text = readFile(target);
  EXPECT_TRUE(contains(text, "= npy(\"out.params/w.npy\")")) << text;
  std::string copy = (dir_ / "again.fy").string();
  Result again =
      run("--dtype autocast=f16 --no-locations -o " + shellQuote(copy) + " " + shellQuote(target));
  ASSERT_EQ(again.exit, 0) << again.err;
  // The graphs are the same, their params too; the summaries differ as the compiles did (the
  // first inserted the casts and folded the weight's, the second found them).
  std::string second = readFile(copy);
  EXPECT_EQ(graphPart(second),
            graphPart(std::string(text).replace(text.find("out.params/"), 11, "again.params/")));
  EXPECT_TRUE(readFile(dir_ / "again.params/w.npy") == readFile(dir_ / "out.params/w.npy"));
  EXPECT_TRUE(contains(text, "#   casts: 2 in the graph (3 inserted, 1 folded into params"))
      << text;
  EXPECT_TRUE(contains(second, "#   casts: 2 in the graph (0 inserted, 0 folded into params"))
      << second;
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
  expectUsageError(shellQuote(missing), "cannot read '" + missing + "': No such file or directory",
                   Match::Whole);
  expectUsageError(shellQuote(dir_.string()), "Is a directory");
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
  for (const char *s : {"MODEL",
                        ".onnx",
                        "--emit",
                        "text,dot,svg,json,cuda,none",
                        "--emit-dir",
                        "-o,--output",
                        "--diagnostics",
                        "--no-locations",
                        "--devices",
                        "--target",
                        "--placement",
                        "strict|auto",
                        "--dtype",
                        "autocast=bf16",
                        "--no-fallback",
                        "--stop-after",
                        "verify, placement, dtype, simplify, budget",
                        "--transfers",
                        "h2d|d2h|d2d|h2h",
                        "--max-transfer-bytes",
                        "--max-casts",
                        "--stats",
                        "FILE.params/",
                        "An existing -o FILE is replaced; the model",
                        "Exit status"})
    EXPECT_TRUE(contains(r.out, s)) << s << " missing from:\n" << r.out;
  // Short: one screen (of 48 lines), no line wider than a terminal.
  EXPECT_LT(count(r.out, "\n"), 48u) << r.out;
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
    Result r = expectUsageError(c.args + " " + shellQuote(model), c.option + ": ", Match::Start);
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
  EXPECT_EQ(count(json.out, "\"inserted\": true, \"pinned_device\""), 1u) << json.out;
  EXPECT_TRUE(contains(json.out, "\"op\": \"transfer\"")) << json.out;
  Result dot = run(args + "--emit dot " + shellQuote(model));
  ASSERT_EQ(dot.exit, 0) << dot.err;
  // A transfer is a bold edge from its origin, labelled with where it goes and its bytes.
  EXPECT_EQ(count(dot.out, "label=\"transfer -> cpu:1 128 B\\nf32[4,8]\", style=bold"), 1u)
      << dot.out;
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

// A 64 MiB weight pinned to the host in a model on cuda:0 (compiled for it; this build cannot run
// it): auto runs the GEMM on cuda:0 and the weight is copied there once, at load. The summary,
// --stats and the manifest count that copy apart from the per-run transfers, of which there are
// none; a budget on per-run bytes does not count it either.
TEST_F(FerryCompile, LoadTimeMovesAreCountedApartFromPerRunTransfers) {
  std::string model = write("pinned.fy", R"(graph pinned_weight {
  input %x : f32[4,4096] @cuda:0
  param %w : f32[4096,4096] @cpu = zeros
  param %b : f32[4096] @cuda:0 = zeros
  %h = linear(%x, %w, %b)
  %y = relu(%h)
  output %y @cuda:0
}
)");
  const std::string args = "--devices cpu,cuda:0 --placement auto --no-locations ";
  Result r = run(args + "--stats --max-transfer-bytes 0 " + shellQuote(model));
  ASSERT_EQ(r.exit, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "  %w.cuda0 : f32[4096,4096] @cuda:0 = transfer(%w, to=cuda:0)"))
      << r.out;
  EXPECT_TRUE(contains(r.out, "  %h : f32[4,4096] @cuda:0 = linear(%x, %w.cuda0, %b)")) << r.out;
  EXPECT_TRUE(contains(r.out, "#   @cuda:0: 2 nodes, 134 MFLOP, 64.3 MiB read and written, "
                              "weights 64.0 MiB, "))
      << r.out;
  EXPECT_FALSE(contains(r.out, "#   @cpu:")) << "nothing a run reads is on cpu: " << r.out;
  EXPECT_TRUE(contains(r.out, "#   transfers: 0, 0 B\n")) << r.out;
  EXPECT_TRUE(
      contains(r.out, "#   at load, once per session (weights): 1 transfers, 64.0 MiB; 0 casts\n"))
      << r.out;
  EXPECT_TRUE(contains(r.err, "  transfers: 0 per run, 0 bytes\n")) << r.err;
  EXPECT_TRUE(contains(r.err, "    h2d: 0, 0 bytes\n")) << r.err;
  EXPECT_TRUE(contains(r.err, "  at load, once per session (weights): 1 transfers, 67108864 "
                              "bytes; 0 casts\n"))
      << r.err;

  Result json = run(args + "--emit json " + shellQuote(model));
  ASSERT_EQ(json.exit, 0) << json.err;
  const Json m = parseJson(json.out);
  ASSERT_EQ(m["transfers"].items.size(), 1u);
  EXPECT_TRUE(m["transfers"].items[0]["at_load"].boolean);
  EXPECT_EQ(m["transfers"].items[0]["direction"].text, "h2d");
  EXPECT_EQ(m["transfers"].items[0]["bytes"].integer(), int64_t{64} << 20);
  const Json &st = m["statistics"];
  EXPECT_EQ(st["transfers"].integer(), 0);
  EXPECT_EQ(st["transfer_bytes"].integer(), 0);
  EXPECT_EQ(st["directions"]["h2d"]["bytes"].integer(), 0);
  EXPECT_EQ(st["load_transfers"].integer(), 1);
  EXPECT_EQ(st["load_transfer_bytes"].integer(), int64_t{64} << 20);
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
  // Auto finds no plan without a copy between the hosts: the input's declaration and the output's
  // pin force one (the weight pinned to cpu:1 does not: it is copied at load).
  EXPECT_TRUE(contains(error.err, "host-to-host transfer of %y from cpu to cpu:1 is forced: input "
                                  "%x is declared @cpu at "))
      << error.err;
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

// The shipped example with its first layer pinned to cpu:1: the input must cross.
std::string pinnedMlp() {
  std::string text = readFile(std::string(FERRY_SOURCE_DIR) + "/examples/mlp.fy");
  const std::string from = "%h = linear", to = "%h @cpu:1 = linear";
  text.replace(text.find(from), from.size(), to);
  return text;
}

TEST_F(FerryCompile, DotHasAClusterPerDeviceAndTheTransferEdgeCrossingThem) {
  std::string model = write("mlp.fy", pinnedMlp());
  Result r = run("--devices cpu,cpu:1 --placement auto --emit dot " + shellQuote(model));
  ASSERT_EQ(r.exit, 0) << r.err;
  EXPECT_EQ(count(r.out, "subgraph \"cluster_cpu\" {"), 1u) << r.out;
  EXPECT_EQ(count(r.out, "subgraph \"cluster_cpu:1\" {"), 1u) << r.out;
  // and the legend's, and the fused linear + relu's box inside cpu:1's
  EXPECT_EQ(count(r.out, "subgraph \"cluster_"), 3u) << r.out;
  EXPECT_EQ(count(r.out, "subgraph \"cluster_fused_0\" {"), 1u) << r.out;
  // The input is in cpu's cluster, the layer in cpu:1's; the copy is the edge between them, with
  // its bytes (32 x 784 floats).
  const size_t cpu = r.out.find("subgraph \"cluster_cpu\""),
               cpu1 = r.out.find("subgraph \"cluster_cpu:1\"");
  const size_t input = r.out.find("label=\"input %x"), layer = r.out.find("label=\"%h = linear");
  EXPECT_TRUE(cpu < input && input < r.out.find("  }\n", cpu)) << r.out;
  EXPECT_TRUE(cpu1 < layer && layer < r.out.find("  }\n", cpu1)) << r.out;
  // The transfer (node 4) is a point in cpu:1's cluster, the bold edge into it from the input,
  // and a plain edge from it to the layer.
  std::vector<std::string> transfers = linesWith(r.out, "transfer -> cpu:1");
  ASSERT_EQ(transfers.size(), 1u) << r.out;
  EXPECT_TRUE(transfers[0].starts_with("  v0 -> n4 [label=\"transfer -> cpu:1 98.0 KiB"))
      << transfers[0];
  EXPECT_TRUE(contains(transfers[0], "style=bold")) << transfers[0];
  const size_t point = r.out.find("    n4 [shape=point");
  EXPECT_TRUE(cpu1 < point && point < r.out.find("  }\n", cpu1)) << r.out;
  EXPECT_EQ(count(r.out, "  n4 -> n0;\n"), 1u) << r.out;
  // Tooltips say why a value is where it is.
  EXPECT_TRUE(contains(r.out, "pinned at")) << r.out;
}

TEST_F(FerryCompile, SvgIsRenderedByGraphviz) {
  std::string model = write("mlp.fy", pinnedMlp());
  const std::string svg = path("mlp.svg");
  Result r = run("--devices cpu,cpu:1 --placement auto --emit svg -o " + shellQuote(svg) + " " +
                 shellQuote(model));
  ASSERT_EQ(r.exit, 0) << r.err;
  EXPECT_TRUE(contains(r.err, "wrote svg to " + svg)) << r.err;
  const std::string text = readFile(svg);
  EXPECT_TRUE(text.starts_with("<?xml")) << text.substr(0, 200);
  EXPECT_TRUE(contains(text, "<svg")) << text.substr(0, 200);
  EXPECT_TRUE(contains(text, "<title>cluster_cpu</title>")) << text.substr(0, 2000);
  EXPECT_TRUE(contains(text, "<title>cluster_cpu:1</title>")) << text.substr(0, 2000);
  EXPECT_TRUE(contains(text, "transfer &#45;&gt; cpu:1 98.0 KiB")) << text;
  // To standard output too.
  Result out = run("--emit svg " + shellQuote(model) + " --devices cpu,cpu:1 --placement auto");
  ASSERT_EQ(out.exit, 0) << out.err;
  EXPECT_TRUE(contains(out.out, "<svg")) << out.out.substr(0, 200);
  // Without Graphviz: a one-line reason, exit 2.
  Result none = runTool(FERRY_COMPILE, "--emit svg " + shellQuote(write("small.fy", kMlp)),
                        {.env = "PATH=" + shellQuote(path("empty"))});
  EXPECT_EQ(none.exit, 2);
  const std::string &err = none.err;
  EXPECT_TRUE(contains(err, "svg needs Graphviz's 'dot' program, which is not on PATH")) << err;
  EXPECT_EQ(count(err, "\n"), 1u) << err;
}

TEST_F(FerryCompile, SeveralEmitsGoToTheEmitDirectory) {
  std::string model = write("mlp.fy", kMlp);
  const std::string dir = path("out/nested");
  Result r =
      run("--emit text,dot --emit json --emit-dir " + shellQuote(dir) + " " + shellQuote(model));
  ASSERT_EQ(r.exit, 0) << r.err;
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(readFile(dir + "/mlp.fy"), run(shellQuote(model)).out);
  EXPECT_EQ(readFile(dir + "/mlp.dot"), run("--emit dot " + shellQuote(model)).out);
  EXPECT_EQ(readFile(dir + "/mlp.json"), run("--emit json " + shellQuote(model)).out);
  EXPECT_FALSE(fs::exists(dir + "/mlp.svg"));
  // none writes nothing; several formats without a directory, or -o with one, are usage errors.
  Result none = run("--emit none " + shellQuote(model));
  EXPECT_EQ(none.exit, 0) << none.err;
  EXPECT_EQ(none.out, "");
  Result several = run("--emit text,dot " + shellQuote(model));
  EXPECT_EQ(several.exit, 2);
  EXPECT_TRUE(contains(several.err, "--emit: several formats (2) need --emit-dir DIR"))
      << several.err;
  Result both = run("--emit-dir " + shellQuote(dir) + " -o x.dot " + shellQuote(model));
  EXPECT_EQ(both.exit, 2);
  EXPECT_TRUE(contains(both.err, "give -o FILE or --emit-dir DIR, not both")) << both.err;
  Result bad = run("--emit png " + shellQuote(model));
  EXPECT_EQ(bad.exit, 2);
  EXPECT_TRUE(contains(bad.err, "png")) << bad.err;
  Result blocked =
      run("--emit dot --emit-dir " + shellQuote(model + "/sub") + " " + shellQuote(model));
  EXPECT_EQ(blocked.exit, 2);
  EXPECT_TRUE(contains(blocked.err, "cannot create")) << blocked.err;
  EXPECT_EQ(count(blocked.err, "\n"), 1u) << blocked.err;
}

TEST_F(FerryCompile, WritesTheExecutableThatFerryRunRuns) {
  std::string model = write("mlp.fy", pinnedMlp());
  const std::string exe = path("mlp.ferry");
  Result r =
      run("--devices cpu,cpu:1 --placement auto -o " + shellQuote(exe) + " " + shellQuote(model));
  ASSERT_EQ(r.exit, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "%x.cpu1 : f32[32,784] @cpu:1 = transfer(%x, to=cpu:1)")) << r.out;
  EXPECT_TRUE(contains(r.err, "wrote the executable to " + exe)) << r.err;
  Result ran = runTool(FERRY_RUN, shellQuote(exe) + " --random-inputs");
  ASSERT_EQ(ran.exit, 0) << ran.err;
  // transfer, linear+relu (fused), linear, softmax
  EXPECT_TRUE(contains(ran.out, "devices cpu,cpu:1, placement auto, 4 steps")) << ran.out;
  EXPECT_TRUE(contains(ran.out, "last run: 1 transfers, 100352 bytes")) << ran.out;
  // The executable needs the whole pipeline.
  Result early = run("--stop-after placement -o " + shellQuote(exe) + " " + shellQuote(model) +
                     " --devices cpu,cpu:1 --placement auto");
  EXPECT_EQ(early.exit, 2);
  EXPECT_TRUE(contains(early.err, "--stop-after placement stops before it")) << early.err;
}

TEST_F(FerryCompile, ARejectedGraphIsDrawnWithItsErrorsInRed) {
  std::string model = write("mlp.fy", pinnedMlp());
  const std::string dot = path("rejected.dot");
  Result r = run("--devices cpu,cpu:1 --emit dot -o " + shellQuote(dot) + " " + shellQuote(model));
  EXPECT_EQ(r.exit, 1);
  EXPECT_TRUE(contains(r.err, "are on different devices")) << r.err;
  const std::vector<std::string> red = drawn(readFile(dot), "color=red");
  ASSERT_EQ(red.size(), 1u) << readFile(dot);
  EXPECT_TRUE(contains(red[0], "label=\"%h = linear")) << red[0];
  EXPECT_TRUE(contains(red[0], "tooltip=\"operands of 'linear' (%h) are on different devices: "
                               "cpu and cpu:1 (fix: move %x to cpu:1"))
      << red[0];
  // Text is not written for a rejected graph.
  Result text = run("--devices cpu,cpu:1 " + shellQuote(model));
  EXPECT_EQ(text.exit, 1);
  EXPECT_EQ(text.out, "");
}

// Goldens of the shipped examples: text (with its summary) and DOT, for mlp.fy and cnn.fy with the
// defaults, mlp_split.fy on cpu,cpu:1 with auto placement, and the text of bias_elsewhere.fy,
// whose bias is copied at load, there too (their JSON: manifest_test.cpp). Run
// from the repository root, so locations read examples/...; FERRY_UPDATE_GOLDEN=1 rewrites the
// files instead of comparing.
TEST_F(FerryCompile, ExamplesMatchTheirGoldens) {
  const fs::path root = FERRY_SOURCE_DIR, previous = fs::current_path();
  fs::current_path(root);
  struct Case {
    std::string args, golden;
  };
  const std::string split = "--devices cpu,cpu:1 --placement auto examples/mlp_split.fy";
  const Case cases[] = {
      {"examples/mlp.fy", "mlp.fy.txt"},
      {"--emit dot examples/mlp.fy", "mlp.dot"},
      {split, "mlp_split.fy.txt"},
      {"--emit dot " + split, "mlp_split.dot"},
      {"examples/cnn.fy", "cnn.fy.txt"},
      {"--emit dot examples/cnn.fy", "cnn.dot"},
      {"--devices cpu,cpu:1 --placement auto examples/bias_elsewhere.fy", "bias_elsewhere.fy.txt"}};
  const bool update = std::getenv("FERRY_UPDATE_GOLDEN") != nullptr;
  for (const Case &c : cases) {
    Result r = run(c.args);
    ASSERT_EQ(r.exit, 0) << c.args << "\n" << r.err;
    const fs::path golden = root / "tests/tools/golden" / c.golden;
    if (update) {
      fs::create_directories(golden.parent_path());
      std::ofstream(golden, std::ios::binary) << r.out;
      continue;
    }
    ASSERT_TRUE(fs::exists(golden)) << golden << " is missing: run with FERRY_UPDATE_GOLDEN=1";
    EXPECT_EQ(r.out, readFile(golden))
        << c.args << " differs from " << golden << " (FERRY_UPDATE_GOLDEN=1 rewrites it)";
  }
  fs::current_path(previous);
}

TEST_F(FerryCompile, ExplainSaysWhichOptionsCompileARejectedModel) {
  Result devices = run("--devices cpu,cpu:1 --explain " + shellQuote(write("two.fy", kTwoDevices)));
  EXPECT_EQ(devices.exit, 1);
  EXPECT_TRUE(contains(devices.err, "are on different devices")) << devices.err;
  EXPECT_TRUE(contains(devices.err, "  compiles with --placement auto: 1 transfer (128 bytes per "
                                    "run), 0 casts\n"))
      << devices.err;
  EXPECT_FALSE(contains(devices.err, "--dtype promote:")) << devices.err;
  Result dtypes = run("--explain " + shellQuote(write("mixed.fy", kMixedDTypes)));
  EXPECT_EQ(dtypes.exit, 1);
  EXPECT_TRUE(contains(dtypes.err,
                       "  compiles with --dtype promote: 0 transfers (0 bytes per run), "
                       "1 cast\n"))
      << dtypes.err;
  // A model no policy compiles (a shape error) is said to need a change in the model.
  Result shape = run("--explain " + shellQuote(write("bad.fy", kShapeError)));
  EXPECT_EQ(shape.exit, 1);
  EXPECT_TRUE(contains(shape.err, "explain: the model does not parse or type-check")) << shape.err;
}

TEST_F(FerryCompile, ExplainSaysWhyAValueIsWhereItIs) {
  std::string model = write("mlp.fy", pinnedMlp());
  Result r = run("--devices cpu,cpu:1 --placement auto --emit none --explain %h --explain "
                 "%x.cpu1,%fc1.weight " +
                 shellQuote(model));
  ASSERT_EQ(r.exit, 0) << r.err;
  EXPECT_EQ(r.out, "");
  const std::string at = model + ":9:3";
  EXPECT_TRUE(contains(r.err, "%h : f32[32,256] @cpu:1\n  device: pinned at " + at + "\n"))
      << r.err;
  EXPECT_TRUE(contains(r.err, "%x.cpu1 : f32[32,784] @cpu:1\n  device: transfer of %x inserted "
                              "for its use at " +
                                  at + "\n"))
      << r.err;
  EXPECT_TRUE(contains(
      r.err, "%fc1.weight : f32[256,784] @cpu:1\n  device: cost model: next to its consumer %h"))
      << r.err;
  EXPECT_EQ(count(r.err, "  dtype:  "), 3u) << r.err;
  // The model argument after a bare --explain stays the model.
  Result bare =
      run("--devices cpu,cpu:1 --placement auto --emit none --explain " + shellQuote(model));
  EXPECT_EQ(bare.exit, 0) << bare.err;
  EXPECT_TRUE(contains(bare.err, "explain: compiled; name values")) << bare.err;
  // An unknown value: one line that lists the graph's values, exit 2.
  Result unknown =
      run("--explain %nope " + shellQuote(model) + " --devices cpu,cpu:1 --placement auto");
  EXPECT_EQ(unknown.exit, 2);
  EXPECT_TRUE(contains(unknown.err, "--explain: no value %nope in 'mlp' (its values: %x, "))
      << unknown.err;
  EXPECT_EQ(count(unknown.err, "\n"), 1u) << unknown.err;
}

}  // namespace
}  // namespace ferry
