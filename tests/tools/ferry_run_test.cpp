// tests/tools/ferry_run_test.cpp — runs the ferry-run binary on .fy models and saved executables,
// with .npy and random inputs, checks its outputs against the reference interpreter, and every
// bad option, input and model against its exit status and one-line reason.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "backends/registry.h"
#include "backends/reference/interpreter.h"
#include "common/utf8_check.h"
#include "ir/npy.h"
#include "ir/parser.h"
#include "json_test_util.h"
#include "passes/lower.h"
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

// The input is declared on cpu:1: ferry-run reads it onto the host and the Session moves it.
constexpr const char *kInputOnCpu1 = R"(graph moved {
  input %x : f32[4] @cpu:1
  %y = relu(%x)
  output %y
}
)";

// One relu of one float: a million runs take about a second.
constexpr const char *kTiny = R"(graph tiny {
  input %x : f32[1] @cpu
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
  Result run(const std::string &args, const std::string &env = "") {
    return runTool(FERRY_RUN, args, {.env = env});
  }

  using ToolTest::expectUsageError;
  Result expectUsageError(const std::string &args, const std::string &message,
                          Match match = Match::Contains, const RunOptions &options = {}) {
    return expectUsageError(FERRY_RUN, args, message, match, options);
  }

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

// A model for a device this build has no backend for: said before anything is compiled (.fy)
// or before the session is made (a saved executable), with the device named.
TEST_F(FerryRun, AModelForADeviceWithoutABackendIsRefusedUpFront) {
  const std::string model = write("c.fy", R"(graph g {
  input %x : f32[4] @cuda:0
  %y = relu(%x)
  output %y @cpu
})");
  if (builtWithCuda() && machineDevices().size() > 1) GTEST_SKIP() << "this machine has a GPU";
  // A build with CUDA on a machine without a GPU says that; a build without, that it has none.
  const std::string fyError =
      builtWithCuda() ? "error: --devices names cuda:0, which is not on this machine: the CUDA runtime finds no GPU"
                      : "error: --devices names cuda:0, and this build of ferry has no backend for it "
                        "(backends: cpu, with virtual devices cpu:N) [device]";
  const std::string savedError = builtWithCuda() ? "cuda:0 is not on this machine"
                                                 : "runs on cuda:0, and this build of ferry has no backend for it";
  Result fy = run(model + " --devices cpu,cuda:0 --random-inputs");
  EXPECT_EQ(fy.exit, 1) << fy.err;
  EXPECT_EQ(fy.out, "");  // nothing compiled, nothing run
  EXPECT_TRUE(contains(fy.err, fyError)) << fy.err;
  ASSERT_EQ(runTool(FERRY_COMPILE, model + " --devices cpu,cuda:0 -o " + path("c.ferry")).exit, 0);
  Result saved = run(path("c.ferry") + " --random-inputs");
  EXPECT_EQ(saved.exit, 1) << saved.err;
  EXPECT_FALSE(contains(saved.out, "time per run")) << saved.out;
  EXPECT_TRUE(contains(saved.err, savedError)) << saved.err;
}

// --list-devices: what --devices may name here, one per line, and why there is no GPU when
// there is none; no model needed.
TEST_F(FerryRun, ListDevicesNamesTheHostAndEveryGpuAndSaysWhyThereIsNone) {
  Result r = run("--list-devices");
  EXPECT_EQ(r.exit, 0) << r.err;
  std::string expected;
  for (Device d : machineDevices()) expected += d.str() + "\n";
  EXPECT_EQ(r.out, expected);
  EXPECT_EQ(r.out.substr(0, 4), "cpu\n");
  if (machineDevices().size() == 1) {
    EXPECT_TRUE(contains(r.err, builtWithCuda() ? "ferry-run: no GPU: the CUDA runtime finds no GPU"
                                                : "ferry-run: no GPU: this build of ferry has no CUDA backend"))
        << r.err;
  }
  Result none = run("");
  EXPECT_EQ(none.exit, 2);
  EXPECT_TRUE(contains(none.err, "error: model is required (see --help)")) << none.err;
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
  EXPECT_TRUE(contains(r.out, "slowest steps (mean of 3 runs):\n")) << r.out;
  EXPECT_TRUE(contains(r.out, "mlp.fy:9\n")) << r.out;  // the first linear
  // 3 steps (linear+relu fused, linear, softmax), all listed (at most 5).
  EXPECT_EQ(count(r.out, " ms  "), 3u) << r.out;
  EXPECT_TRUE(contains(r.out, "linear+relu  %a")) << r.out;
}

// --target names a device no step runs on: a warning that says why, for each placement policy,
// and what would change it; none when --target is the default, or a step runs there.
TEST_F(FerryRun, ATargetWhereNothingRunsIsAWarningThatSaysWhy) {
  const std::string model = shellQuote(example("mlp.fy").string()) + " --random-inputs --iterations 1";
  Result strict = run(model + " --devices cpu,cpu:1 --target cpu:1");
  ASSERT_EQ(strict.exit, 0) << strict.err;
  EXPECT_EQ(strict.err,
            "warning: --target cpu:1, but no node runs there: under strict placement every node "
            "stays on its operands' device, and this model's inputs and params are on cpu "
            "[placement]\n  fix: --placement auto, to let ferry move the work to cpu:1 where it "
            "pays\n");
  Result automatic = run(model + " --devices cpu,cpu:1 --target cpu:1 --placement auto");
  ASSERT_EQ(automatic.exit, 0) << automatic.err;
  EXPECT_TRUE(contains(automatic.err, "warning: --target cpu:1, but no node runs there: auto "
                                      "placement kept every node on cpu, where moving it to "
                                      "cpu:1 would cost more than it saves [placement]"))
      << automatic.err;
  EXPECT_TRUE(contains(automatic.err, "ferry-compile --explain %NAME")) << automatic.err;
  // No --target, or one where steps run: nothing said.
  Result plain = run(model + " --devices cpu,cpu:1");
  ASSERT_EQ(plain.exit, 0) << plain.err;
  EXPECT_EQ(plain.err, "");
  Result onTarget = run(model + " --devices cpu,cpu:1 --target cpu");
  ASSERT_EQ(onTarget.exit, 0) << onTarget.err;
  EXPECT_EQ(onTarget.err, "");
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

// A bias left on cpu for a layer on cpu:1: copied once, when the session is made, and said so on a
// line of its own; a run moves only the input (read onto the host, declared on cpu:1). Saved and
// loaded, the executable does the same.
TEST_F(FerryRun, WeightsMovedAtLoadAreCountedOnceApartFromRuns) {
  const std::string model = example("bias_elsewhere.fy").string();
  const std::string flags = " --devices cpu,cpu:1 --placement auto --random-inputs --check";
  Result r = run(shellQuote(model) + flags);
  ASSERT_EQ(r.exit, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "at load, once: 1 transfers, 1024 bytes (1.0 KiB); 0 casts\n"))
      << r.out;
  EXPECT_TRUE(contains(r.out, "last run: 1 transfers, 100352 bytes (98.0 KiB); 1 input moves, "
                              "100352 bytes"))
      << r.out;
  EXPECT_TRUE(contains(r.out, "memory: weights " + std::to_string((256 * 784 + 256) * 4)))
      << "the bias's copy on cpu:1, not the original on cpu: " << r.out;
  CompileOptions options;
  options.devices = {Device::cpu(), Device::cpu(1)};
  options.placement = PlacementPolicy::Auto;
  Expected<Executable> exe = build(parseFile(model).value(), options);
  ASSERT_TRUE(exe.ok()) << exe.status().message();
  const std::string artifact = path("bias_elsewhere.ferry");
  ASSERT_TRUE(exe->save(artifact).ok());
  Result loaded = run(shellQuote(artifact) + " --random-inputs --check");
  ASSERT_EQ(loaded.exit, 0) << loaded.err;
  EXPECT_TRUE(contains(loaded.out, "at load, once: 1 transfers, 1024 bytes")) << loaded.out;
  // Nothing at load, nothing said.
  Result none = run(shellQuote(example("mlp.fy").string()) + " --random-inputs");
  ASSERT_EQ(none.exit, 0) << none.err;
  EXPECT_FALSE(contains(none.out, "at load")) << none.out;
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
  expectUsageError(shellQuote(artifact) + " --random-inputs --devices cpu",
                   "--devices: applies to .fy and ONNX models; '" + artifact +
                       "' is already compiled",
                   Match::Whole);
  expectUsageError("--random-inputs --no-fallback " + shellQuote(artifact),
                   "--no-fallback: ", Match::Start);

  // A truncated artifact (it has the magic): the loader's one-line reason.
  std::string bytes = readFile(artifact);
  const std::string truncated = write("cut.ferry", bytes.substr(0, bytes.size() / 2));
  Result cut = run(shellQuote(truncated) + " --random-inputs");
  EXPECT_EQ(cut.exit, 2);
  EXPECT_EQ(count(cut.err, "\n"), 1u) << cut.err;
  EXPECT_TRUE(contains(cut.err, truncated)) << cut.err;
}

// What ferry-compile writes, ferry-run loads: an empty tensor with a huge dim beside its zero
// compiles and runs; one whose dims (zero counted as 1) come to 2^63 bytes or more, or that has
// more than 64 dims, is refused by ferry-compile at the node that makes it, where the loader
// would have refused the file.
TEST_F(FerryRun, WhatFerryCompileWritesLoads) {
  std::string ones64 = "1";
  for (int i = 1; i < 64; ++i) ones64 += ",1";
  struct Case {
    std::string input, node;
    bool compiles;
  };
  const Case cases[] = {
      {"f32[0,10000000000000]", "relu(%x)", true},
      {"f32[0,1]", "expand(%x, shape=[0,1099511627776])", true},
      {"f32[" + ones64 + "]", "relu(%x)", true},
      {"f32[0]", "reshape(%x, shape=[0,4611686018427387904,4])", false},
      {"f32[0,1]", "expand(%x, shape=[0,4611686018427387904])", false},
      {"f64[1]", "expand(%x, shape=[1152921504606846976])", false},
      {"f32[" + ones64 + "]", "unsqueeze(%x, axes=[0])", false},
  };
  for (const Case &c : cases) {
    const std::string model = write("g.fy", "graph g {\n  input %x : " + c.input +
                                                " @cpu\n  %y = " + c.node + "\n  output %y\n}\n");
    fs::remove(path("g.ferry"));
    Result compiled = runTool(FERRY_COMPILE,
                              shellQuote(model) + " --emit none -o " + shellQuote(path("g.ferry")));
    if (!c.compiles) {
      EXPECT_EQ(compiled.exit, 1) << c.node << ": " << compiled.err;
      EXPECT_TRUE(contains(compiled.err, model + ":3:8: error: '")) << compiled.err;
      EXPECT_FALSE(fs::exists(path("g.ferry"))) << c.node;
      continue;
    }
    ASSERT_EQ(compiled.exit, 0) << c.node << ": " << compiled.err;
    Result ran = run(shellQuote(path("g.ferry")) + " --random-inputs");
    EXPECT_EQ(ran.exit, 0) << c.node << ": " << ran.err;
    EXPECT_TRUE(contains(ran.out, "output y: " + c.input.substr(0, 3))) << ran.out;
  }
}

// The magic alone says "artifact": any file that starts with it goes to the loader, anything
// else to the .fy parser, which points at the bytes it cannot read.
TEST_F(FerryRun, AnArtifactIsToldByItsMagicAlone) {
  // A valid .fy with control bytes in a comment (an escape sequence, a form feed) is a model.
  const std::string esc = write("esc.fy", "graph g {  # \x1b[1mbold\x1b[0m\n"
                                          "  input %x : f32[3] @cpu  # \x01\x7f\n"
                                          "  %y = relu(%x)\n  output %y\n}\n");
  Result r = run(shellQuote(esc) + " --random-inputs --iterations 1");
  EXPECT_EQ(r.exit, 0) << r.err;
  EXPECT_TRUE(r.out.starts_with("model g (" + esc + "): devices cpu")) << r.out;
  EXPECT_TRUE(contains(r.out, "output y: f32[3] @cpu")) << r.out;

  // A file with the magic and nothing valid after it: the loader's reason, a usage error.
  const std::string fake = write("fake.fy", "FERRYEXE and then text");
  expectUsageError(shellQuote(fake) + " --random-inputs", fake);

  // Not text, and no magic (a .npy file; the magic cut short): the parser's errors, located.
  const std::string npy = writeTensor("x.npy", TensorData::randn(DType::F32, {2}, 1));
  Result bin = run(shellQuote(npy) + " --random-inputs");
  EXPECT_EQ(bin.exit, 1);
  EXPECT_EQ(bin.out, "");
  EXPECT_TRUE(contains(bin.err, npy + ":1:1: error: unexpected byte 0x93 (not valid UTF-8)"))
      << bin.err;
  const std::string stub = write("stub.ferry", "FERRY");
  Result cut = run(shellQuote(stub) + " --random-inputs");
  EXPECT_EQ(cut.exit, 1);
  EXPECT_TRUE(contains(cut.err, stub + ":1:1: error: ")) << cut.err;
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
      {"--random-inputs 5", "--random-inputs: ",
       "the seed is attached with '=': expected --random-inputs=SEED, got '--random-inputs 5'"},
      {"--iterations x", "--iterations: ", "got 'x'"},
      {"--warmup -1", "--warmup: ", "non-negative integer"},
      {"--random-inputs=abc", "--random-inputs: ", "got 'abc'"},
      {"--input x", "--input: ", "expected NAME=FILE.npy or NAME=FILE.pb, got 'x'"},
      {"--input =" + shellQuote(xFile), "--input: ", "no input name"},
      {"--input x=" + shellQuote(xFile) + " --input x=" + shellQuote(xFile),
       "--input: ", "given twice"},
      {"--input x=" + shellQuote(path("missing.npy")),
       "--input x: ", "missing.npy': No such file or directory"},
      {"--input x=" + shellQuote(badNpy), "--input x: ", "bad.npy"},
      {"--placement sideways", "--placement: ", "expected strict or auto"},
      {"--max-casts -3", "--max-casts: ", "non-negative integer"},
      {"--output-dir " + shellQuote(aFile), "--output-dir: ", "exists and is not a folder"},
  };
  for (const Case &c : cases) {
    Result r = expectUsageError(shellQuote(model) + " " + c.args, c.start, Match::Start);
    EXPECT_TRUE(contains(r.err, c.expected)) << c.args << ": " << r.err;
  }
  // A wrong input name and an input not given are found once the model is built, after the
  // first line of its report.
  const Case built[] = {
      {"--input y=" + shellQuote(xFile),
       "--input y: ", "no input 'y'; its inputs: x: f32[32,784] @cpu"},
      {"", "input 'x' not given", "the model's inputs: x: f32[32,784] @cpu"},
  };
  for (const Case &c : built) {
    Result r = run(shellQuote(model) + " " + c.args);
    EXPECT_EQ(r.exit, 2) << c.args << ": " << r.err;
    EXPECT_TRUE(r.out.starts_with("model mlp (")) << c.args << ": " << r.out;
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

// FERRY_NUM_THREADS is user input: a bad value is refused before anything is built, in one line
// that names the variable, what it takes and what came; a good one is used.
TEST_F(FerryRun, ABadNumThreadsIsAUsageError) {
  const std::string model = shellQuote(example("mlp.fy").string()) + " --random-inputs";
  for (const std::string bad : {"abc", "0", "-1", "2000", "' 4'"}) {
    SCOPED_TRACE(bad);
    const std::string value = bad.starts_with('\'') ? bad.substr(1, bad.size() - 2) : bad;
    expectUsageError(model,
                     "FERRY_NUM_THREADS: expected a whole number of threads from 1 to 1024, got '" +
                         value + "'",
                     Match::Whole, {.env = "FERRY_NUM_THREADS=" + bad});
  }
  for (const std::string good : {"1", "2", "''"}) {  // empty: unset
    Result r = run(model + " --iterations 1", "FERRY_NUM_THREADS=" + good);
    EXPECT_EQ(r.exit, 0) << good << ": " << r.err;
    EXPECT_EQ(r.err, "") << good;
  }
}

// --input files are read before the model is built: a bad one is found first, even when the
// model would be rejected, and nothing is printed about the model.
TEST_F(FerryRun, InputFilesAreCheckedBeforeTheModelIsBuilt) {
  const std::string two = write("two.fy", kTwoDevices);  // rejected under strict placement
  const std::string missing = path("missing.npy");
  expectUsageError(shellQuote(two) + " --devices cpu,cpu:1 --input x=" + shellQuote(missing),
                   "--input x: cannot read '" + missing + "': No such file or directory",
                   Match::Whole);
  const std::string header = write("header.npy", "\x93NUMPY, then no header");
  Result bad =
      expectUsageError(shellQuote(two) + " --devices cpu,cpu:1 --input x=" + shellQuote(header),
                       "--input x: ", Match::Start);
  EXPECT_TRUE(contains(bad.err, "header.npy")) << bad.err;
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
  expectUsageError(shellQuote(missing) + " --random-inputs",
                   "cannot read '" + missing + "': No such file or directory", Match::Whole);
  expectUsageError(shellQuote(dir_.string()) + " --random-inputs", "Is a directory");
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
                        "--max-total-param-bytes",
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
  EXPECT_LT(count(r.out, "\n"), 48u) << r.out;
  std::istringstream lines(r.out);
  for (std::string line; std::getline(lines, line);) EXPECT_LE(line.size(), 100u) << line;
}

// The "N steps" of ferry-run's first line ("model mlp (...): devices cpu, ..., 4 steps").
size_t stepCount(const std::string &out) {
  const std::string first = out.substr(0, out.find('\n'));
  const size_t comma = first.rfind(", ");
  return comma == std::string::npos ? 0 : std::stoul(first.substr(comma + 2));
}

// What a trace holds, once its structure is checked: lane names by tid, and the complete events.
struct Trace {
  std::map<int, std::string> lanes;
  std::vector<const Json *> events;  // the "X" ones, in file order
  Json root;
  std::string lane(const Json &event) const {
    auto it = lanes.find(static_cast<int>(event.find("tid")->number));
    return it == lanes.end() ? "" : it->second;
  }
};

// Reads the trace at `file` and checks what every trace must be: a Trace Event Format object with
// the process named `model`, every lane named, and complete events with their args that do not
// overlap on a lane and end within the run.
void readTrace(const std::string &file, const std::string &model, Trace &t) {
  const std::string text = readFile(file);
  std::string error;
  t.root = JsonReader(text).read(error);
  ASSERT_EQ(error, "") << "in " << file;
  ASSERT_EQ(t.root.kind, Json::Kind::Object);
  EXPECT_EQ(t.root["displayTimeUnit"].text, "ms");
  const Json *events = t.root.find("traceEvents");
  ASSERT_TRUE(events && events->kind == Json::Kind::Array);
  std::string process;
  for (const Json &e : events->items) {
    ASSERT_EQ(e.kind, Json::Kind::Object);
    for (const char *key : {"ph", "pid", "tid", "name"}) ASSERT_NE(e.find(key), nullptr) << key;
    const Json *args = e.find("args");
    ASSERT_TRUE(args && args->kind == Json::Kind::Object) << e["name"].text;
    if (e["ph"].text == "M" && e["name"].text == "process_name") process = (*args)["name"].text;
    if (e["ph"].text == "M" && e["name"].text == "thread_name")
      t.lanes[static_cast<int>(e.find("tid")->number)] = (*args)["name"].text;
    if (e["ph"].text == "X") t.events.push_back(&e);
  }
  EXPECT_EQ(process, model);
  std::map<std::string, std::vector<std::pair<double, double>>> spans;  // lane: (ts, end)
  for (const Json *e : t.events) {
    const Json *ts = e->find("ts"), *dur = e->find("dur");
    ASSERT_TRUE(ts && dur) << (*e)["name"].text;
    EXPECT_GE(ts->number, 0) << (*e)["name"].text;
    EXPECT_GE(dur->number, 0) << (*e)["name"].text;
    ASSERT_NE(t.lane(*e), "") << (*e)["name"].text << " is on an unnamed lane";
    spans[t.lane(*e)].emplace_back(ts->number, ts->number + dur->number);
  }
  // Times are printed to a thousandth of a microsecond: two roundings may meet.
  constexpr double kRounding = 0.002;
  const Json *other = t.root.find("otherData");
  ASSERT_TRUE(other && other->find("run us"));
  for (auto &[lane, s] : spans) {
    std::sort(s.begin(), s.end());
    for (size_t i = 0; i + 1 < s.size(); ++i)
      EXPECT_LE(s[i].second, s[i + 1].first + kRounding) << "events overlap on lane " << lane;
    EXPECT_LE(s.back().second, other->find("run us")->number + kRounding) << lane;
  }
}

// The lane names of `t`, in tid order.
std::vector<std::string> laneNames(const Trace &t) {
  std::vector<std::string> names;
  for (const auto &[tid, name] : t.lanes) names.push_back(name);
  return names;
}

// A trace of the example MLP: every step an event on its device's lane, named by op and result,
// with its args. Nothing is pinned away from cpu, so cpu:1 holds nothing and gets no lane.
TEST_F(FerryRun, TraceHasAnEventPerStepOnItsDevicesLane) {
  const std::string model = example("mlp.fy").string();
  const std::string file = path("mlp.json");
  Result r = run(shellQuote(model) + " --devices cpu,cpu:1 --random-inputs --iterations 2" +
                 " --trace " + shellQuote(file));
  ASSERT_EQ(r.exit, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "wrote " + file + " (trace of the last timed run)\n")) << r.out;
  Trace t;
  ASSERT_NO_FATAL_FAILURE(readTrace(file, "mlp", t));
  EXPECT_EQ(laneNames(t), (std::vector<std::string>{"cpu", "transfers"}));
  ASSERT_EQ(t.events.size(), stepCount(r.out));
  ASSERT_EQ(t.events.size(), 3u);  // linear+relu (fused), linear, softmax
  const Json &first = *t.events[0];
  EXPECT_EQ(first["name"].text, "linear+relu %a");
  const Json &args = *first.find("args");
  EXPECT_EQ(args["op"].text, "linear+relu");
  EXPECT_EQ(args["result"].text, "%a");
  EXPECT_EQ(args["type"].text, "f32[32,256]");
  EXPECT_EQ(args["device"].text, "cpu");
  ASSERT_NE(args.find("bytes"), nullptr);
  EXPECT_EQ(args.find("bytes")->number, 32 * 256 * 4);
  EXPECT_EQ(args["location"].text, model + ":9:3");
  for (const Json *e : t.events) {
    const Json &a = *e->find("args");
    EXPECT_EQ((*e)["name"].text, a["op"].text + " " + a["result"].text);
    EXPECT_EQ(t.lane(*e), a["device"].text) << (*e)["name"].text;
    EXPECT_TRUE(contains(a["location"].text, "mlp.fy:")) << (*e)["name"].text;
  }
}

// A linear pinned to cpu:1: the input crosses over on the transfers lane, the rest runs on the
// lanes of its devices; an input the session moves shows as a copy on the transfers lane too.
TEST_F(FerryRun, TraceShowsTransfersOnTheirOwnLane) {
  std::string text = readFile(example("mlp.fy"));
  const std::string from = "  %h = linear(", to = "  %h @cpu:1 = linear(";
  ASSERT_TRUE(contains(text, from));
  text.replace(text.find(from), from.size(), to);
  const std::string model = write("pinned.fy", text), file = path("pinned.json");
  Result r = run(shellQuote(model) + " --devices cpu,cpu:1 --placement auto --random-inputs" +
                 " --trace " + shellQuote(file));
  ASSERT_EQ(r.exit, 0) << r.err;
  Trace t;
  ASSERT_NO_FATAL_FAILURE(readTrace(file, "mlp", t));
  EXPECT_EQ(laneNames(t), (std::vector<std::string>{"cpu", "cpu:1", "transfers"}));
  ASSERT_EQ(t.events.size(), stepCount(r.out));
  size_t transfers = 0;
  for (const Json *e : t.events) {
    const Json &a = *e->find("args");
    if (a["op"].text == "transfer") {
      ++transfers;
      EXPECT_EQ(t.lane(*e), "transfers") << (*e)["name"].text;
      EXPECT_NE(a["from"].text, a["device"].text) << (*e)["name"].text;
    } else {
      EXPECT_EQ(t.lane(*e), a["device"].text) << (*e)["name"].text;
    }
    if (a["result"].text == "%h") {
      EXPECT_EQ(t.lane(*e), "cpu:1");
    }
  }
  EXPECT_GE(transfers, 1u);
  EXPECT_TRUE(contains(r.out, "last run: " + std::to_string(transfers) + " transfers")) << r.out;

  const std::string moved = write("moved.fy", kInputOnCpu1), movedFile = path("moved.json");
  Result m = run(shellQuote(moved) + " --devices cpu,cpu:1 --random-inputs --trace " +
                 shellQuote(movedFile));
  ASSERT_EQ(m.exit, 0) << m.err;
  Trace mt;
  ASSERT_NO_FATAL_FAILURE(readTrace(movedFile, "moved", mt));
  ASSERT_EQ(mt.events.size(), stepCount(m.out) + 1);  // the input copy, then the steps
  EXPECT_EQ((*mt.events[0])["name"].text, "copy inputs (1 moved)");
  EXPECT_EQ(mt.lane(*mt.events[0]), "transfers");
  EXPECT_LE(mt.events[0]->find("ts")->number + mt.events[0]->find("dur")->number,
            mt.events[1]->find("ts")->number + 0.002);
}

TEST_F(FerryRun, HelpListsTrace) {
  Result r = run("--help");
  EXPECT_EQ(r.exit, 0);
  EXPECT_TRUE(contains(r.out, "--trace FILE.json")) << r.out;
  EXPECT_TRUE(contains(r.out, "Chrome trace")) << r.out;
}

TEST_F(FerryRun, TraceToAPathThatCannotBeWrittenIsAUsageError) {
  const std::string model = example("mlp.fy").string();
  const std::string missing = path("no/such/folder/t.json");
  // Found before the model is built and run: nothing on stdout.
  expectUsageError(shellQuote(model) + " --random-inputs --trace " + shellQuote(missing),
                   "--trace: cannot write '" + missing + "'", Match::Start);
  expectUsageError(shellQuote(model) + " --random-inputs --trace " + shellQuote(dir_.string()),
                   "--trace: '" + dir_.string() + "' is a folder");
  // A write that fails only when it happens, after the runs: the stream's error, still one line.
  if (!fs::exists("/dev/full")) GTEST_SKIP() << "no /dev/full to fail a write";
  Result full = run(shellQuote(model) + " --random-inputs --iterations 1 --trace /dev/full");
  EXPECT_EQ(full.exit, 2);
  EXPECT_EQ(full.err, "ferry-run: error: --trace: cannot write '/dev/full': No space left on "
                      "device\n");
  EXPECT_TRUE(fs::exists("/dev/full"));
}

// --iterations and --warmup are at most 1,000,000 each (--help says so): a larger count, up to
// INT64_MAX and past it, is a one-line usage error that names the option, the bound and what
// came. (INT64_MAX timed runs after 1 warmup overflowed their sum: no run was timed, and the
// report read a run that was not there.)
TEST_F(FerryRun, RunCountsPastTheBoundAreUsageErrors) {
  const std::string model = shellQuote(example("mlp.fy").string()) + " --random-inputs ";
  const std::string positive = "is out of range: expected a positive integer up to 1000000";
  const std::string nonNegative = "is out of range: expected a non-negative integer up to 1000000";
  const std::pair<std::string, std::string> cases[] = {
      {"--iterations 9223372036854775807 --warmup 1",
       "--iterations: '9223372036854775807' " + positive},
      {"--iterations 1 --warmup 9223372036854775807",
       "--warmup: '9223372036854775807' " + nonNegative},
      {"--iterations 9223372036854775808", "--iterations: '9223372036854775808' " + positive},
      {"--iterations 99999999999999999999", "--iterations: '99999999999999999999' " + positive},
      {"--warmup 99999999999999999999", "--warmup: '99999999999999999999' " + nonNegative},
      {"--iterations 1000001", "--iterations: '1000001' " + positive},
      {"--warmup 1000001", "--warmup: '1000001' " + nonNegative},
      {"--warmup -9223372036854775809",
       "--warmup: expected a non-negative integer, got '-9223372036854775809'"},
  };
  for (const auto &[args, message] : cases) expectUsageError(model + args, message, Match::Whole);
  Result help = run("--help");
  EXPECT_TRUE(contains(help.out, "Timed runs (1 to 1000000)")) << help.out;
  EXPECT_TRUE(contains(help.out, "Untimed runs first (0 to 1000000)")) << help.out;
}

// At the bound, a million timed runs (or warmup runs) run and are reported, and memory does not
// grow with them: of a timed run only its wall time and step times are added up, where keeping
// every run's statistics took about 200 MB for a million runs of one step. Each run's peak memory
// is its own process's (runCommand). Under AddressSanitizer freed blocks wait in its quarantine
// (256 MB by default), which would count as growth: the quarantine is turned off for these runs.
TEST_F(FerryRun, RunCountsAtTheBoundRunInBoundedMemory) {
  const std::string tiny = shellQuote(write("tiny.fy", kTiny)) + " --random-inputs ";
  const std::string noQuarantine =
      "ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}quarantine_size_mb=0";
  constexpr long kGrowthKiB = 40 * 1024;
  Result one = run(tiny + "--iterations 1 --warmup 0", noQuarantine);
  ASSERT_EQ(one.exit, 0) << one.err;
  ASSERT_GT(one.maxRssKiB, 0);
  Result many = run(tiny + "--iterations 1000000 --warmup 0", noQuarantine);
  ASSERT_EQ(many.exit, 0) << many.err;
  EXPECT_TRUE(contains(many.out, " (1000000 runs after 0 warmup)\n")) << many.out;
  EXPECT_TRUE(contains(many.out, "slowest steps (mean of 1000000 runs):\n")) << many.out;
  EXPECT_LT(many.maxRssKiB - one.maxRssKiB, kGrowthKiB)
      << "a million runs used " << many.maxRssKiB << " KiB, one run " << one.maxRssKiB;
  Result warm = run(tiny + "--iterations 1 --warmup 1000000", noQuarantine);
  ASSERT_EQ(warm.exit, 0) << warm.err;
  EXPECT_TRUE(contains(warm.out, " (1 run after 1000000 warmup)\n")) << warm.out;
  EXPECT_TRUE(contains(warm.out, "slowest steps (mean of 1 run):\n")) << warm.out;
  EXPECT_LT(warm.maxRssKiB - one.maxRssKiB, kGrowthKiB)
      << "a million warmup runs used " << warm.maxRssKiB << " KiB, one run " << one.maxRssKiB;
}

// ferry-run reads its command line as ferry-compile does (tools/common/cli_errors.h): an option
// that takes a value is given one, not the next option (`--trace --check` wrote a trace named
// "--check" and dropped --check); a flag takes none; an argument nothing takes is named. The same
// mistake with a shared flag gets the same words from both tools.
TEST_F(FerryRun, CommandLineErrorsAreWordedAsFerryCompilesAre) {
  const std::string model = shellQuote(example("mlp.fy").string());
  expectUsageError(model + " --random-inputs --trace --check",
                   "--trace: expected FILE.json (write the last timed run as a Chrome trace, for "
                   "ui.perfetto.dev), got the option '--check' (see --help)",
                   Match::Whole, {.workDir = dir_});
  EXPECT_FALSE(fs::exists(dir_ / "--check"));

  for (const std::string args : {"--devices --check", "--devices", "--placement --random-inputs",
                                 "--no-fallback=yes", "--max-casts", "--transfers=", "other.fy",
                                 "--dtype promote strict", "--no-fallback x.fy"}) {
    Result ran = run("--random-inputs " + model + " " + args);
    Result compiled = runTool(FERRY_COMPILE, model + " " + args);
    EXPECT_EQ(ran.exit, 2) << args << ": " << ran.err;
    EXPECT_EQ(compiled.exit, 2) << args << ": " << compiled.err;
    EXPECT_EQ(ran.out, "") << args;
    ASSERT_TRUE(ran.err.starts_with("ferry-run: error: ")) << ran.err;
    ASSERT_TRUE(compiled.err.starts_with("ferry-compile: error: ")) << compiled.err;
    EXPECT_EQ(ran.err.substr(std::string("ferry-run: ").size()),
              compiled.err.substr(std::string("ferry-compile: ").size()))
        << args;
  }

  const std::pair<std::string, std::string> own[] = {
      {"--iterations", "--iterations: expected N (timed runs (1 to 1000000)), got nothing"},
      {"--output-dir --check", "--output-dir: expected DIR ("},
      {"--input --random-inputs",
       "--input: expected NAME=FILE.npy|FILE.pb (input NAME from a .npy or ONNX TensorProto .pb "
       "file), got the option '--random-inputs'"},
      {"--random-inputs --check=1", "--check takes no value, got '1'"},
      {"--random-inputs=", "--random-inputs: expected --random-inputs=SEED, got nothing after '='"},
      {"--random-inputs --outputs-on-device x",
       "--outputs-on-device takes no value; unexpected argument 'x'"},
      {"--random-inputs --iterations 3 4",
       "--iterations takes one value, got a second one: '4' after '3'"},
  };
  for (const auto &[args, message] : own)
    expectUsageError(model + " " + args, message, Match::Start);
  // What is right still runs: the seed attached, a value given with '='.
  Result seeded = run(model + " --random-inputs=7 --iterations=1 --check");
  EXPECT_EQ(seeded.exit, 0) << seeded.err;
  EXPECT_TRUE(contains(seeded.out, "(random, randn(seed=7))")) << seeded.out;
}

// A binary file given as the model (no executable magic) goes to the .fy parser: as with
// ferry-compile, at most 20 errors are shown, then how many more there were, and every byte of
// stderr is one a terminal shows as text (control bytes and invalid UTF-8 written as \xNN).
TEST_F(FerryRun, ABinaryFileGivesFewPrintableErrors) {
  expectFewPrintableErrors(run(shellQuote(write("blob.bin", binaryBlob())) + " --random-inputs"),
                           FERRY_RUN);
}

// A graph name that is not UTF-8 (a \xff escape in the model's text) still gives a trace that a
// strict JSON parser reads: the byte becomes U+FFFD, the replacement character.
TEST_F(FerryRun, ATraceOfANameThatIsNotUtf8IsValidJson) {
  const std::string model = write("bad.fy", "graph \"bad\\xff\" {\n  input %x : f32[3] @cpu\n"
                                            "  %y = relu(%x)\n  output %y\n}\n");
  const std::string file = path("bad.json");
  Result r = run(shellQuote(model) + " --random-inputs --iterations 1 --trace " + shellQuote(file));
  ASSERT_EQ(r.exit, 0) << r.err;
  EXPECT_EQ(testutil::invalidUtf8(readFile(file)), "");
  Trace t;
  ASSERT_NO_FATAL_FAILURE(readTrace(file, "bad\xEF\xBF\xBD", t));
  EXPECT_EQ(t.events.size(), 1u);
}

}  // namespace
}  // namespace ferry

namespace ferry {
namespace {

// An input the model declares larger than the host can hold (4 PB, past x86-64's address space,
// so no machine allocates it): --random-inputs reports it, naming the input, its type and the
// bytes, and exits 1. It ended the process with std::bad_alloc (exit 134) before.
TEST_F(FerryRun, RandomInputsTheHostCannotHoldAreAnError) {
  const std::string model = write("big.fy", R"(graph big {
  input %x : f32[1000000,1000000,1000]
  %y = relu(%x)
  output %y
}
)");
  // Not under ASan: its operator new aborts on a 4 PB request whatever its options (make
  // test-asan leaves the TheHostCannotHold tests out; RELIABILITY.md §6).
  const Result r = run(shellQuote(model) + " --random-inputs");
  EXPECT_EQ(r.exit, 1) << r.err;
  EXPECT_NE(r.err.find("out of memory: random input 'x' (f32[1000000,1000000,1000]) needs "
                       "4000000000000000 bytes, which the host could not allocate [memory]"),
            std::string::npos)
      << r.err;
}

}  // namespace
}  // namespace ferry
