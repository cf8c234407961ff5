// tests/tools/check_dir_test.cpp — ferry-run --check-dir without the importer: the comparison
// (numpy's assert_allclose as ONNX's backend tests use it), reading a folder of test data (.npy
// files here; the .pb ones in onnx_tools_test.cpp), matching its files to a model's inputs and
// outputs, and ferry-run's exit statuses on a .fy model.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "ir/npy.h"
#include "ir/parser.h"
#include "passes/lower.h"
#include "tool_test_util.h"
#include "tools/ferry-run/check_dir.h"
#include "tools/ferry-run/compare.h"

namespace ferry {
namespace {

using namespace tooltest;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

TensorData floats(std::vector<double> v, DType t = DType::F32) {
  const int64_t n = static_cast<int64_t>(v.size());
  return TensorData::fromDoubles(t, {n}, v);
}

Comparison compare(std::vector<double> got, std::vector<double> expected, Tolerance tol = {}) {
  return compareTensors(floats(std::move(got)), floats(std::move(expected)), tol);
}

TEST(Compare, DefaultsAreTheOnnxBackendRunners) {
  EXPECT_EQ(Tolerance{}.rtol, 1e-3);
  EXPECT_EQ(Tolerance{}.atol, 1e-7);
}

TEST(Compare, EqualTensorsPassWithNoError) {
  const Comparison c = compare({1, -2, 3.5}, {1, -2, 3.5});
  EXPECT_TRUE(c.pass());
  EXPECT_EQ(c.maxAbs, 0);
  EXPECT_EQ(c.maxRel, 0);
  EXPECT_EQ(c.firstBeyond, -1);
}

TEST(Compare, RelativeToleranceScalesWithTheExpectedValue) {
  // 1000 allows 1e-7 + 1e-3 * 1000 = 1.0000001.
  EXPECT_TRUE(compare({1000.5}, {1000}).pass());
  const Comparison c = compare({7, 1001.5}, {7, 1000});
  EXPECT_FALSE(c.pass());
  EXPECT_EQ(c.beyond, 1);
  EXPECT_EQ(c.firstBeyond, 1);
  EXPECT_DOUBLE_EQ(c.maxAbs, 1.5);
  EXPECT_DOUBLE_EQ(c.maxRel, 1.5 / 1000);
}

TEST(Compare, TheBoundIsOnTheExpectedValueNotSymmetric) {
  // |1 - 0.999| = 0.001: within 1e-3 of 1, not of 0.999 (assert_allclose(actual, desired)).
  EXPECT_TRUE(compare({0.999}, {1.0}).pass());
  EXPECT_FALSE(compare({1.0}, {0.999}).pass());
}

TEST(Compare, AbsoluteToleranceDecidesNearZero) {
  const Comparison small = compare({1e-8}, {0});
  EXPECT_TRUE(small.pass());
  EXPECT_EQ(small.maxRel, kInf) << "a difference from an expected 0 is infinitely relative";
  EXPECT_FALSE(compare({1e-6}, {0}).pass());
  EXPECT_TRUE(compare({1e-6}, {0}, Tolerance{.rtol = 0, .atol = 1e-5}).pass());
  EXPECT_FALSE(compare({1.01}, {1}, Tolerance{.rtol = 0, .atol = 0}).pass());
}

TEST(Compare, NaNPositionsMustAgree) {
  EXPECT_TRUE(compare({kNaN, 1}, {kNaN, 1}).pass());
  const Comparison missing = compare({1, 2}, {1, kNaN});
  EXPECT_FALSE(missing.pass());
  EXPECT_EQ(missing.firstBeyond, 1);
  EXPECT_FALSE(std::isnan(missing.maxAbs)) << "a NaN pair counts, its error is left out";
  EXPECT_FALSE(compare({kNaN, 2}, {1, 2}).pass());
}

TEST(Compare, InfinitiesMatchOnlyThemselves) {
  EXPECT_TRUE(compare({kInf, -kInf}, {kInf, -kInf}).pass());
  EXPECT_FALSE(compare({-kInf}, {kInf}).pass());
  EXPECT_FALSE(compare({1e30}, {kInf}).pass());
}

TEST(Compare, IntegersAndBoolsAreComparedExactly) {
  const Shape s{3};
  const std::vector<double> a{1, 2, 1000000}, b{1, 2, 1000001};
  EXPECT_TRUE(compareTensors(TensorData::fromDoubles(DType::I64, s, a),
                             TensorData::fromDoubles(DType::I64, s, a), {})
                  .pass());
  // Off by one in a million: within rtol 1e-3 as floats, a mismatch as integers.
  const TensorData got = TensorData::fromDoubles(DType::I64, s, a),
                   want = TensorData::fromDoubles(DType::I64, s, b);
  const Comparison c = compareTensors(got, want, {});
  EXPECT_FALSE(c.pass());
  EXPECT_EQ(c.beyond, 1);
  EXPECT_EQ(describeComparison(c, got, want),
            "max abs error 1, max rel error 1e-06: FAIL, 1 of 3 elements differ (i64: compared "
            "exactly) (first at [2]: got 1000000, expected 1000001)");
  EXPECT_FALSE(compareTensors(TensorData::fromDoubles(DType::Bool, {2}, {{1, 0}}),
                              TensorData::fromDoubles(DType::Bool, {2}, {{1, 1}}), {})
                   .pass());
}

TEST(Compare, DTypeAndShapeMustBeEqual) {
  const TensorData f32 = floats({1, 2}), f64 = floats({1, 2}, DType::F64);
  const Comparison dtype = compareTensors(f32, f64, {});
  EXPECT_FALSE(dtype.pass());
  EXPECT_EQ(describeComparison(dtype, f32, f64), "FAIL: expected f64[2], got f32[2]");
  const TensorData rows = TensorData::fromDoubles(DType::F32, {2, 3}, {{1, 2, 3, 4, 5, 6}});
  const TensorData cols = TensorData::fromDoubles(DType::F32, {3, 2}, {{1, 2, 3, 4, 5, 6}});
  EXPECT_EQ(describeComparison(compareTensors(rows, cols, {}), rows, cols),
            "FAIL: expected f32[3,2], got f32[2,3]");
}

TEST(Compare, AFailureNamesItsFirstElementByIndex) {
  const TensorData got = TensorData::fromDoubles(DType::F32, {2, 3}, {{0, 1, 2, 3, 4.5, 5}});
  const TensorData want = TensorData::fromDoubles(DType::F32, {2, 3}, {{0, 1, 2, 3, 4, kNaN}});
  const Comparison c = compareTensors(got, want, {});
  EXPECT_EQ(describeComparison(c, got, want),
            "max abs error 0.5, max rel error 0.125: FAIL, 2 of 6 elements beyond atol + "
            "rtol*|expected| (first at [1,1]: got 4.5, expected 4)");
}

// Two inputs, two outputs.
constexpr const char *kTwoByTwo = R"(graph two {
  input %x : f32[3] @cpu
  input %y : f32[3] @cpu
  %s = add(%x, %y)
  %p = mul(%x, %y)
  output %s
  output %p
}
)";

class CheckDir : public ToolTest {
 protected:
  void SetUp() override {
    ToolTest::SetUp();
    fs::create_directories(dir_ / "data");
    model_ = write("two.fy", kTwoByTwo);
  }

  void save(const std::string &file, std::vector<double> v) {
    ASSERT_TRUE(writeNpy(floats(std::move(v)), (dir_ / "data" / file).string()).ok());
  }

  // A folder that passes: s = x + y, p = x * y.
  void saveGood() {
    save("input_0.npy", {1, 2, 3});
    save("input_1.npy", {4, 5, -6});
    save("output_0.npy", {5, 7, -3});
    save("output_1.npy", {4, 10, -18});
  }

  std::string dataDir() const { return (dir_ / "data").string(); }

  Executable executable() {
    Expected<Graph> g = parseFile(model_);
    EXPECT_TRUE(g.ok());
    Expected<Executable> exe = build(std::move(*g), CompileOptions{});
    EXPECT_TRUE(exe.ok());
    return std::move(exe).value();
  }

  std::string error(const std::string &dir) {
    Expected<TestData> d = readTestData(dir);
    EXPECT_FALSE(d.ok());
    return d.ok() ? "" : d.status().diagnostics().front().message;
  }

  std::string model_;
};

TEST_F(CheckDir, ReadsInputsAndOutputsInIndexOrder) {
  for (int k = 0; k <= 10; ++k) save("input_" + std::to_string(k) + ".npy", {double(k)});
  save("output_0.npy", {0});
  write("data/notes.txt", "other files are left alone");
  Expected<TestData> d = readTestData(dataDir());
  ASSERT_TRUE(d.ok()) << d.status().message();
  ASSERT_EQ(d->inputs.size(), 11u);
  for (int k = 0; k <= 10; ++k) {
    EXPECT_EQ(d->inputs[k].file, "input_" + std::to_string(k) + ".npy");
    EXPECT_EQ(d->inputs[k].tensor.data().at(0), k) << "input_10 comes after input_9";
    EXPECT_EQ(d->inputs[k].name, "");
  }
  EXPECT_EQ(d->outputs.size(), 1u);
}

TEST_F(CheckDir, FolderErrorsSayWhatIsWrong) {
  EXPECT_EQ(error(path("nope")), "--check-dir: no folder '" + path("nope") + "'");
  EXPECT_TRUE(contains(error(model_), "is not a folder; expected a folder of ONNX test data"));
  EXPECT_TRUE(contains(error(dataDir()), "holds no input_K.pb or output_K.pb files"));
  save("input_0.npy", {1});
  EXPECT_TRUE(contains(error(dataDir()), "holds no output_K.pb files: nothing to compare"));
  save("output_0.npy", {1});
  save("input_2.npy", {1});
  EXPECT_EQ(error(dataDir()), "--check-dir: '" + dataDir() +
                                  "' has input_2.npy but no input_1.pb: expected input_K files "
                                  "numbered from 0 with no gap");
  save("input_1.npy", {1});
  write("data/input_1.pb", "");
  EXPECT_TRUE(contains(error(dataDir()), "has both input_1.npy and input_1.pb"));
  fs::remove(dir_ / "data" / "input_1.pb");
  write("data/output_0.npy", "not an npy file");
  const std::string bad = error(dataDir());
  EXPECT_TRUE(bad.starts_with("--check-dir: " + (dir_ / "data" / "output_0.npy").string() + ": "))
      << bad;
}

TEST_F(CheckDir, FilesWithoutNamesGoByPosition) {
  saveGood();
  Expected<TestData> d = readTestData(dataDir());
  ASSERT_TRUE(d.ok());
  const Executable exe = executable();
  std::vector<std::string> files;
  Expected<std::vector<NamedTensor>> in = matchTestData(*d, exe, &files);
  ASSERT_TRUE(in.ok()) << in.status().message();
  ASSERT_EQ(in->size(), 2u);
  EXPECT_EQ((*in)[0].name, "x");
  EXPECT_EQ((*in)[1].tensor.data().at(2), -6);
  EXPECT_EQ(files, (std::vector<std::string>{"input_0.npy", "input_1.npy"}));
}

TEST_F(CheckDir, NamedFilesGoByName) {
  saveGood();
  Expected<TestData> d = readTestData(dataDir());
  ASSERT_TRUE(d.ok());
  std::swap(d->inputs[0].tensor, d->inputs[1].tensor);
  d->inputs[0].name = "y";
  d->inputs[1].name = "x";
  std::vector<std::string> files;
  Expected<std::vector<NamedTensor>> in = matchTestData(*d, executable(), &files);
  ASSERT_TRUE(in.ok()) << in.status().message();
  EXPECT_EQ((*in)[0].name, "x");
  EXPECT_EQ((*in)[0].tensor.data().at(0), 1);
  EXPECT_EQ(files, (std::vector<std::string>{"input_1.npy", "input_0.npy"}));
  // A name the model does not have falls back to the position.
  d->inputs[1].name = "nosuch";
  EXPECT_FALSE(matchTestData(*d, executable()).ok()) << "input_1 would give y, as input_0 does";
}

TEST_F(CheckDir, CountsMustBeTheModels) {
  saveGood();
  fs::remove(dir_ / "data" / "input_1.npy");
  Expected<TestData> d = readTestData(dataDir());
  ASSERT_TRUE(d.ok());
  Expected<std::vector<NamedTensor>> in = matchTestData(*d, executable());
  ASSERT_FALSE(in.ok());
  EXPECT_EQ(in.status().diagnostics().front().message,
            "--check-dir: '" + dataDir() +
                "' has 1 input file (input_K.pb), the model has 2 inputs: x: f32[3], y: f32[3]");
  saveGood();
  fs::remove(dir_ / "data" / "output_1.npy");
  d = readTestData(dataDir());
  ASSERT_TRUE(d.ok());
  in = matchTestData(*d, executable());
  ASSERT_FALSE(in.ok());
  EXPECT_TRUE(contains(in.status().diagnostics().front().message,
                       "has 1 output file (output_K.pb), the model has 2 outputs: s: f32[3], "
                       "p: f32[3]"));
}

TEST_F(CheckDir, OutputsAreComparedByNameElsePosition) {
  saveGood();
  Expected<TestData> d = readTestData(dataDir());
  ASSERT_TRUE(d.ok());
  const std::vector<NamedTensor> outputs = {{"s", Tensor(floats({5, 7, -3}))},
                                            {"p", Tensor(floats({4, 10, -18}))}};
  std::ostringstream out;
  EXPECT_EQ(checkOutputs(*d, outputs, {}, out), 0) << out.str();
  // Swapped files that carry their names still match.
  std::swap(d->outputs[0], d->outputs[1]);
  d->outputs[0].name = "p";
  d->outputs[1].name = "s";
  out.str("");
  EXPECT_EQ(checkOutputs(*d, outputs, {}, out), 0) << out.str();
  EXPECT_TRUE(contains(out.str(), "check  s vs output_0.npy: max abs error 0, max rel error 0: "
                                  "pass\n"))
      << out.str();
  // Without names they are compared by position, and neither matches.
  d->outputs[0].name = d->outputs[1].name = "";
  out.str("");
  EXPECT_EQ(checkOutputs(*d, outputs, {}, out), 2);
  EXPECT_EQ(count(out.str(), ": FAIL, "), 2u) << out.str();
  EXPECT_TRUE(contains(out.str(), "check  FAIL: 2 of 2 outputs differ from '" + dataDir() +
                                      "' (rtol 0.001, atol 1e-07)\n"))
      << out.str();
}

// ferry-run on a .fy model: exit 0 when every output matches, 1 when one does not, 2 for the
// folder's own problems.
TEST_F(CheckDir, FerryRunExitStatuses) {
  saveGood();
  const std::string args =
      shellQuote(model_) + " --iterations 1 --check-dir " + shellQuote(dataDir());
  Result r = runTool(FERRY_RUN, args);
  EXPECT_EQ(r.exit, 0) << r.out << r.err;
  EXPECT_EQ(linesWith(r.out, ": pass").size(), 2u) << r.out;
  EXPECT_TRUE(contains(r.out, "input  x: f32[3] @cpu")) << r.out;
  EXPECT_TRUE(contains(r.out, "(from " + (dir_ / "data" / "input_0.npy").string() + ")")) << r.out;
  EXPECT_TRUE(contains(r.out, "check  pass: every output (2) matches")) << r.out;

  save("output_1.npy", {4, 10, -18.1});
  r = runTool(FERRY_RUN, args);
  EXPECT_EQ(r.exit, 1) << r.out << r.err;
  EXPECT_EQ(linesWith(r.out, ": pass").size(), 1u) << r.out;
  EXPECT_TRUE(contains(r.out, "check  p vs output_1.npy: max abs error 0.1")) << r.out;
  EXPECT_TRUE(contains(r.err, "error: 1 of 2 outputs differ from the expected ones")) << r.err;
  // A looser tolerance lets it pass: 0.1 <= 0.01 * 18.1.
  r = runTool(FERRY_RUN, args + " --rtol 0.01");
  EXPECT_EQ(r.exit, 0) << r.out << r.err;

  // The folder's problems found once the model is built: usage errors (its line printed).
  save("input_1.npy", {4, 5});
  r = runTool(FERRY_RUN, args);
  EXPECT_EQ(r.exit, 2);
  EXPECT_EQ(r.err, "ferry-run: error: --check-dir " + dataDir() +
                       ": input 'y' has the wrong shape: expected [3], got [2]\n");
  fs::remove(dir_ / "data" / "input_1.npy");
  r = runTool(FERRY_RUN, args);
  EXPECT_EQ(r.exit, 2);
  EXPECT_TRUE(contains(r.err, "has 1 input file (input_K.pb), the model has 2 inputs")) << r.err;
  EXPECT_EQ(count(r.err, "\n"), 1u) << r.err;
}

TEST_F(CheckDir, FerryRunUsageErrors) {
  saveGood();
  const std::string m = shellQuote(model_);
  expectUsageError(FERRY_RUN, m + " --check-dir " + shellQuote(path("nope")),
                   "--check-dir: no folder '" + path("nope") + "'", Match::Whole);
  expectUsageError(FERRY_RUN, m + " --rtol 0.1",
                   "--rtol: applies to --check-dir DIR (the outputs compared with DIR's), which "
                   "is not given",
                   Match::Whole);
  expectUsageError(FERRY_RUN, m + " --check-dir " + shellQuote(dataDir()) + " --atol x",
                   "--atol: expected a non-negative number (e.g. 1e-5), got 'x'", Match::Whole);
  expectUsageError(FERRY_RUN, m + " --check-dir " + shellQuote(dataDir()) + " --rtol -1",
                   "--rtol: expected a non-negative number");
  expectUsageError(FERRY_RUN, m + " --check-dir " + shellQuote(dataDir()) + " --rtol nan",
                   "--rtol: expected a non-negative number");
  expectUsageError(FERRY_RUN, m + " --check-dir " + shellQuote(dataDir()) + " --random-inputs",
                   "--check-dir: the folder gives every input; leave out --random-inputs",
                   Match::Whole);
  expectUsageError(FERRY_RUN, m + " --check-dir " + shellQuote(dataDir()) + " --shape x=3",
                   "--shape: applies to ONNX models (.onnx)");
  const Result help = runTool(FERRY_RUN, "--help");
  EXPECT_EQ(help.exit, 0);
  for (const char *part : {"--check-dir DIR", "--rtol X", "--atol X", "--shape NAME=D0,D1,...",
                           "|got - expected| <= atol +", "counts differ from the model's"})
    EXPECT_TRUE(contains(help.out, part)) << part;
}

}  // namespace
}  // namespace ferry
