// tests/tools/ferry_run_test.cpp — runs the ferry-run binary on .fy models and saved executables,
// with .npy and random inputs, checks its outputs against the reference interpreter, and every
// bad option, input and model against its exit status and one-line reason.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include "backends/reference/interpreter.h"
#include "ir/npy.h"
#include "ir/parser.h"
#include "runtime/executable.h"
#include "tool_test_util.h"

namespace ferry {
namespace {

using namespace tooltest;

// Elementwise ops only, two inputs (one an integer), two outputs.
constexpr const char *kElementwise = R"(graph ew {
  input %x : f32[2,3] @cpu
  input %n : i32[3] @cpu
  param %b : f32[3] = [0.5, -1, 2]
  %s = add(%x, %b)
  %y = relu(%s)
  %m = mul(%y, %x)
  output %y
  output %m
}
)";

// An input on cpu and a weight pinned to cpu:1: strict rejects the linear, auto inserts one
// transfer.
constexpr const char *kTwoDevices = R"(graph two {
  input %x : f32[4,8] @cpu
  param %w : f32[16,8] @cpu:1 = randn(seed=1)
  %h = linear(%x, %w)
  %y = relu(%h)
  output %y
}
)";

// The input is declared on cpu:1: ferry-run reads it onto the host and the Session moves it.
constexpr const char *kInputOnCpu1 = R"(graph moved {
  input %x : f32[4] @cpu:1
  %y = relu(%x)
  output %y
}
)";

// The lines of `s` that start with `prefix`.
std::vector<std::string> linesStarting(const std::string &s, std::string_view prefix) {
  std::vector<std::string> out;
  std::istringstream in(s);
  for (std::string line; std::getline(in, line);)
    if (line.starts_with(prefix)) out.push_back(line);
  return out;
}

fs::path example(const char *name) { return fs::path(FERRY_SOURCE_DIR) / "examples" / name; }

class FerryRun : public tooltest::ToolTest {
 protected:
  Result run(const std::string &args) { return runTool(FERRY_RUN, args); }

  std::string writeTensor(const std::string &name, const TensorData &t) {
    EXPECT_TRUE(writeNpy(t, path(name)).ok());
    return path(name);
  }

  // The reference interpreter's outputs of the model in `file` on `inputs`.
  std::vector<TensorData> reference(const std::string &file,
                                    const std::map<std::string, TensorData> &inputs) {
    Expected<Graph> g = parseFile(file);
    EXPECT_TRUE(g.ok()) << g.status().message();
    Expected<std::vector<TensorData>> out = reference::run(*g, inputs);
    EXPECT_TRUE(out.ok()) << out.status().message();
    return out.ok() ? *out : std::vector<TensorData>{};
  }

  // Builds the model in `file` with default options and saves it as `name`.
  std::string saveArtifact(const std::string &file, const std::string &name) {
    Expected<Graph> g = parseFile(file);
    EXPECT_TRUE(g.ok()) << g.status().message();
    Expected<Executable> exe = build(std::move(*g), CompileOptions{});
    EXPECT_TRUE(exe.ok()) << exe.status().message();
    EXPECT_TRUE(exe->save(path(name)).ok());
    return path(name);
  }
};

void expectClose(const TensorData &got, const TensorData &want, double tolerance) {
  ASSERT_EQ(got.type(), want.type()) << got.type().str() << " vs " << want.type().str();
  for (int64_t i = 0; i < got.numel(); ++i)
    ASSERT_NEAR(got.at(i), want.at(i), tolerance) << "element " << i;
}

TEST_F(FerryRun, ExampleMlpWithRandomInputs) {
  Result r = run(shellQuote(example("mlp.fy").string()) + " --random-inputs --iterations 3");
  ASSERT_EQ(r.exit, 0) << r.err;
  EXPECT_EQ(r.err, "");
  EXPECT_TRUE(r.out.starts_with("model mlp (")) << r.out;
  EXPECT_TRUE(contains(r.out, "devices cpu, placement strict")) << r.out;
  // The generated input is said to be generated, with its seed.
  std::vector<std::string> inputs = linesStarting(r.out, "input  x: f32[32,784] @cpu  min ");
  ASSERT_EQ(inputs.size(), 1u) << r.out;
  EXPECT_TRUE(contains(inputs[0], "(random, randn(seed=0))")) << inputs[0];
  std::vector<std::string> outputs = linesStarting(r.out, "output probs: f32[32,10] @cpu  min ");
  ASSERT_EQ(outputs.size(), 1u) << r.out;
  // Softmax rows sum to 1: the mean of 10 columns is 0.1.
  EXPECT_TRUE(contains(outputs[0], "  mean 0.1  [")) << outputs[0];
  EXPECT_TRUE(contains(outputs[0], ", ...]")) << outputs[0];
  EXPECT_EQ(linesStarting(r.out, "time per run: median ").size(), 1u) << r.out;
  EXPECT_TRUE(contains(r.out, " ms, min ") && contains(r.out, " ms (3 runs after 1 warmup)"))
      << r.out;
  EXPECT_EQ(linesStarting(r.out, "last run: 0 transfers, 0 bytes; 0 input moves, 0 bytes").size(),
            1u)
      << r.out;
  // 256*784 + 256 + 10*256 + 10 f32 weights.
  EXPECT_TRUE(contains(r.out, "memory: weights " + std::to_string(4 * (256 * 784 + 256 + 2570)) +
                                  " bytes ("))
      << r.out;
  EXPECT_TRUE(contains(r.out, "slowest steps (median of 3 runs):\n")) << r.out;
  EXPECT_TRUE(contains(r.out, "mlp.fy:9\n")) << r.out;  // the first linear
  // 4 steps, all listed (at most 5).
  EXPECT_EQ(count(r.out, " ms  "), 4u) << r.out;
}

TEST_F(FerryRun, NpyInputAndOutputDirMatchTheReference) {
  const std::string model = example("mlp.fy").string();
  TensorData x = TensorData::randn(DType::F32, {32, 784}, 7);
  const std::string xFile = writeTensor("x.npy", x);
  const std::string out = path("out");
  Result r = run(shellQuote(model) + " --input x=" + shellQuote(xFile) + " --output-dir " +
                 shellQuote(out) + " --iterations 1 --warmup 0");
  ASSERT_EQ(r.exit, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "(from " + xFile + ")")) << r.out;
  EXPECT_TRUE(contains(r.out, "wrote " + out + "/probs.npy\n")) << r.out;
  Expected<TensorData> probs = readNpy(out + "/probs.npy");
  ASSERT_TRUE(probs.ok()) << probs.status().message();
  std::vector<TensorData> want = reference(model, {{"x", x}});
  ASSERT_EQ(want.size(), 1u);
  expectClose(*probs, want[0], 1e-5);
}

TEST_F(FerryRun, ElementwiseModelWithSeveralInputsAndOutputs) {
  const std::string model = write("ew.fy", kElementwise);
  TensorData x = TensorData::randn(DType::F32, {2, 3}, 3);
  const std::string out = path("deep/out");  // created with its parent
  Result r = run(shellQuote(model) + " --input x=" + shellQuote(writeTensor("x.npy", x)) +
                 " --random-inputs=5 --output-dir " + shellQuote(out));
  ASSERT_EQ(r.exit, 0) << r.err;
  // Only the input not given is generated; an integer one is zeros.
  EXPECT_TRUE(contains(r.out, "input  n: i32[3] @cpu  min 0  max 0  mean 0  [0, 0, 0]  (random, "
                              "zeros (not a floating-point input))\n"))
      << r.out;
  EXPECT_FALSE(contains(r.out, "randn(")) << r.out;
  EXPECT_EQ(linesStarting(r.out, "output ").size(), 2u) << r.out;
  std::vector<TensorData> want =
      reference(model, {{"x", x}, {"n", TensorData::zeros(DType::I32, {3})}});
  ASSERT_EQ(want.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    Expected<TensorData> got = readNpy(out + (i == 0 ? "/y.npy" : "/m.npy"));
    ASSERT_TRUE(got.ok()) << got.status().message();
    expectClose(*got, want[i], 1e-5);
  }
}

TEST_F(FerryRun, RandomInputsAreSeeded) {
  const std::string model = write("ew.fy", kElementwise);
  auto output = [&](const std::string &seed) {
    Result r = run(shellQuote(model) + " --random-inputs" + seed + " --iterations 1");
    EXPECT_EQ(r.exit, 0) << r.err;
    return linesStarting(r.out, "output ");
  };
  EXPECT_EQ(output(""), output("=0"));
  EXPECT_NE(output(""), output("=1"));
  Result r = run(shellQuote(model) + " --random-inputs=4");
  EXPECT_TRUE(contains(r.out, "(random, randn(seed=4))")) << r.out;
}

TEST_F(FerryRun, TransfersAndInputMovesAreCounted) {
  const std::string two = write("two.fy", kTwoDevices);
  Result r = run(shellQuote(two) + " --devices cpu,cpu:1 --placement auto --random-inputs");
  ASSERT_EQ(r.exit, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "devices cpu,cpu:1, placement auto")) << r.out;
  EXPECT_TRUE(contains(r.out, "last run: 1 transfers, 128 bytes; 0 input moves")) << r.out;
  EXPECT_TRUE(contains(r.out, " (inserted)\n")) << r.out;
  Result onDevice =
      run(shellQuote(two) +
          " --devices cpu,cpu:1 --placement auto --random-inputs --outputs-on-device");
  ASSERT_EQ(onDevice.exit, 0) << onDevice.err;
  EXPECT_TRUE(contains(onDevice.out, "output y: f32[4,16] @cpu:1  min ")) << onDevice.out;

  const std::string moved = write("moved.fy", kInputOnCpu1);
  Result m = run(shellQuote(moved) + " --devices cpu,cpu:1 --random-inputs --check");
  ASSERT_EQ(m.exit, 0) << m.err;
  EXPECT_TRUE(contains(m.out, "last run: 1 transfers, 16 bytes; 1 input moves, 16 bytes")) << m.out;
}

TEST_F(FerryRun, ArtifactRunsLikeItsModel) {
  const std::string model = example("mlp.fy").string();
  const std::string artifact = saveArtifact(model, "mlp.ferry");
  const std::string xFile = writeTensor("x.npy", TensorData::randn(DType::F32, {32, 784}, 9));
  const std::string args = " --input x=" + shellQuote(xFile) + " --iterations 2 --output-dir ";
  Result fy = run(shellQuote(model) + args + shellQuote(path("fy")));
  ASSERT_EQ(fy.exit, 0) << fy.err;
  Result exe = run(shellQuote(artifact) + args + shellQuote(path("exe")));
  ASSERT_EQ(exe.exit, 0) << exe.err;
  EXPECT_TRUE(exe.out.starts_with("model mlp (" + artifact + "): devices cpu")) << exe.out;
  EXPECT_EQ(linesStarting(exe.out, "output "), linesStarting(fy.out, "output "));
  EXPECT_EQ(readFile(path("exe/probs.npy")), readFile(path("fy/probs.npy")));
  // The format is told by the content, not the name.
  fs::copy_file(artifact, path("model.fy"));
  EXPECT_EQ(run(shellQuote(path("model.fy")) + " --random-inputs").exit, 0);

  // Compile flags do not apply to a compiled model.
  Result flags = run(shellQuote(artifact) + " --random-inputs --devices cpu");
  EXPECT_EQ(flags.exit, 2);
  EXPECT_EQ(flags.out, "");
  EXPECT_EQ(flags.err, "ferry-run: error: --devices: applies to .fy models; '" + artifact +
                           "' is already compiled\n");
  Result policy = run("--random-inputs --no-fallback " + shellQuote(artifact));
  EXPECT_EQ(policy.exit, 2);
  EXPECT_TRUE(policy.err.starts_with("ferry-run: error: --no-fallback: ")) << policy.err;

  // A truncated artifact and a file that is neither format: the loader's one-line reason.
  std::string bytes = readFile(artifact);
  const std::string truncated = write("cut.ferry", bytes.substr(0, bytes.size() / 2));
  Result cut = run(shellQuote(truncated) + " --random-inputs");
  EXPECT_EQ(cut.exit, 2);
  EXPECT_EQ(count(cut.err, "\n"), 1u) << cut.err;
  EXPECT_TRUE(contains(cut.err, truncated)) << cut.err;
  Result npy = run(shellQuote(xFile) + " --random-inputs");
  EXPECT_EQ(npy.exit, 2);
  EXPECT_TRUE(contains(npy.err, "bad magic")) << npy.err;
}

// Output names become file names: a '/' (possible in imported names) must not leave the folder.
TEST_F(FerryRun, OutputNamesAreSanitised) {
  const std::string model = write("ew.fy", kElementwise);
  Expected<Graph> g = parseFile(model);
  ASSERT_TRUE(g.ok());
  Expected<Executable> exe = build(std::move(*g), CompileOptions{});
  ASSERT_TRUE(exe.ok()) << exe.status().message();
  exe->slots[static_cast<size_t>(exe->outputs[0])].name = "../a/b";
  exe->slots[static_cast<size_t>(exe->outputs[1])].name = "_._a_b";
  ASSERT_TRUE(exe->save(path("ew.ferry")).ok());
  Result r = run(shellQuote(path("ew.ferry")) + " --random-inputs --output-dir " +
                 shellQuote(path("out")));
  ASSERT_EQ(r.exit, 0) << r.err;
  EXPECT_TRUE(fs::exists(path("out/_._a_b.npy"))) << r.out;
  EXPECT_TRUE(fs::exists(path("out/_._a_b_2.npy"))) << r.out;
  EXPECT_FALSE(fs::exists(path("a"))) << r.out;
  EXPECT_TRUE(contains(r.out, "output ../a/b: f32[2,3] @cpu")) << r.out;
}

TEST_F(FerryRun, BadOptionsAreOneLineUsageErrors) {
  const std::string model = example("mlp.fy").string();
  const std::string xFile = writeTensor("x.npy", TensorData::randn(DType::F32, {32, 784}, 1));
  const std::string badNpy = write("bad.npy", "not numpy at all");
  const std::string aFile = write("a.txt", "");
  struct Case {
    std::string args, start, expected;
  };
  const Case cases[] = {
      {"--iterations 0", "--iterations: ", "expected a positive integer, got '0'"},
      {"--iterations x", "--iterations: ", "got 'x'"},
      {"--warmup -1", "--warmup: ", "non-negative integer"},
      {"--random-inputs=abc", "--random-inputs: ", "got 'abc'"},
      {"--input x", "--input: ", "expected NAME=FILE.npy, got 'x'"},
      {"--input =" + shellQuote(xFile), "--input: ", "no input name"},
      {"--input x=" + shellQuote(xFile) + " --input x=" + shellQuote(xFile),
       "--input: ", "given twice"},
      {"--input y=" + shellQuote(xFile),
       "--input y: ", "no input 'y'; its inputs: x: f32[32,784] @cpu"},
      {"--input x=" + shellQuote(path("missing.npy")),
       "--input x: ", "missing.npy': No such file or directory"},
      {"--input x=" + shellQuote(badNpy), "--input x: ", "bad.npy"},
      {"--placement sideways", "--placement: ", "expected strict or auto"},
      {"--max-casts -3", "--max-casts: ", "non-negative integer"},
      {"--output-dir " + shellQuote(aFile), "--output-dir: ", "exists and is not a folder"},
      {"", "input 'x' not given", "the model's inputs: x: f32[32,784] @cpu"},
  };
  for (const Case &c : cases) {
    Result r = run(shellQuote(model) + " " + c.args);
    EXPECT_EQ(r.exit, 2) << c.args << ": " << r.err;
    EXPECT_EQ(count(r.err, "\n"), 1u) << c.args << ": " << r.err;
    EXPECT_TRUE(r.err.starts_with("ferry-run: error: " + c.start)) << c.args << ": " << r.err;
    EXPECT_TRUE(contains(r.err, c.expected)) << c.args << ": " << r.err;
  }
  // CLI11's own errors are one line too.
  for (const std::string &args : {"--bogus " + shellQuote(model), std::string("")}) {
    Result r = run(args);
    EXPECT_EQ(r.exit, 2) << args;
    EXPECT_EQ(count(r.err, "\n"), 1u) << r.err;
  }
}

// The Session's input check is a usage error too (--help says so).
TEST_F(FerryRun, WrongShapeOrDTypeOfAnInputIsAUsageError) {
  const std::string model = example("mlp.fy").string();
  Result shape = run(shellQuote(model) + " --input x=" +
                     shellQuote(writeTensor("x.npy", TensorData::zeros(DType::F32, {2, 3}))));
  EXPECT_EQ(shape.exit, 2) << shape.err;
  EXPECT_EQ(shape.err, "ferry-run: error: --input: input 'x' has the wrong shape: expected "
                       "[32,784], got [2,3]\n");
  Result dtype = run(shellQuote(model) + " --input x=" +
                     shellQuote(writeTensor("i.npy", TensorData::zeros(DType::I64, {32, 784}))));
  EXPECT_EQ(dtype.exit, 2) << dtype.err;
  EXPECT_TRUE(contains(dtype.err, "wrong dtype: expected f32, got i64")) << dtype.err;
  EXPECT_EQ(count(dtype.err, "\n"), 1u) << dtype.err;
}

TEST_F(FerryRun, MissingModelIsAUsageError) {
  const std::string missing = path("nope.fy");
  Result r = run(shellQuote(missing) + " --random-inputs");
  EXPECT_EQ(r.exit, 2);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, "ferry-run: error: cannot read '" + missing + "': No such file or directory\n");
  Result dir = run(shellQuote(dir_.string()) + " --random-inputs");
  EXPECT_EQ(dir.exit, 2);
  EXPECT_TRUE(contains(dir.err, "Is a directory")) << dir.err;
}

TEST_F(FerryRun, RejectedModelExitsOne) {
  const std::string two = write("two.fy", kTwoDevices);
  Result r = run(shellQuote(two) + " --devices cpu,cpu:1 --random-inputs");
  EXPECT_EQ(r.exit, 1);
  EXPECT_EQ(r.out, "");
  EXPECT_TRUE(contains(r.err, two + ":4:")) << r.err;  // the linear
  EXPECT_TRUE(contains(r.err, ": error: ")) << r.err;
  EXPECT_TRUE(contains(r.err, "cpu:1")) << r.err;
  EXPECT_TRUE(contains(r.err, "  %h = linear(%x, %w)\n")) << r.err;  // the snippet
  // A parse error, too.
  const std::string typo = write("typo.fy", "graph g {\n  input %x : f32[2]\n  %y = rleu(%x)\n"
                                            "  output %y\n}\n");
  Result parse = run(shellQuote(typo) + " --random-inputs");
  EXPECT_EQ(parse.exit, 1);
  EXPECT_TRUE(contains(parse.err, typo + ":3:")) << parse.err;
}

// Only the data shows the error: a run that fails is the model's failure, with its location.
TEST_F(FerryRun, FailedRunExitsOne) {
  const std::string model = write("gather.fy", "graph g {\n  input %t : f32[4] @cpu\n"
                                               "  input %i : i64[2] @cpu\n"
                                               "  %y = gather(%t, %i, axis=0)\n  output %y\n}\n");
  TensorData index = TensorData::zeros(DType::I64, {2});
  index.setInt(1, 9);
  Result r = run(shellQuote(model) +
                 " --random-inputs --input i=" + shellQuote(writeTensor("i.npy", index)));
  EXPECT_EQ(r.exit, 1) << r.out;
  EXPECT_TRUE(contains(r.err, model + ":4:")) << r.err;
  EXPECT_TRUE(contains(r.err, "'gather' index 9 at [1] is out of range")) << r.err;
  EXPECT_FALSE(contains(r.out, "output ")) << r.out;
  // In range, it runs.
  index.setInt(1, 3);
  EXPECT_EQ(run(shellQuote(model) +
                " --random-inputs --input i=" + shellQuote(writeTensor("i.npy", index)))
                .exit,
            0);
}

TEST_F(FerryRun, HelpListsEveryOption) {
  Result r = run("--help");
  EXPECT_EQ(r.exit, 0);
  for (const char *s : {"MODEL",
                        ".ferry",
                        "--input",
                        "NAME=FILE.npy",
                        "--random-inputs",
                        "[=SEED]",
                        "--output-dir",
                        "'/'",
                        "--iterations",
                        "--warmup",
                        "--outputs-on-device",
                        "--check",
                        "--devices",
                        "--target",
                        "--placement",
                        "strict|auto",
                        "--dtype",
                        "--no-fallback",
                        "--transfers",
                        "--max-transfer-bytes",
                        "--max-casts",
                        "wrong name",
                        "Exit status"})
    EXPECT_TRUE(contains(r.out, s)) << s << " missing from:\n" << r.out;
  EXPECT_FALSE(contains(r.out, "--stop-after")) << r.out;
  EXPECT_LT(count(r.out, "\n"), 40u) << r.out;
  std::istringstream lines(r.out);
  for (std::string line; std::getline(lines, line);) EXPECT_LE(line.size(), 100u) << line;
}

}  // namespace
}  // namespace ferry
