// tests/tools/onnx_tools_test.cpp — ferry-compile and ferry-run on ONNX models, end to end: the
// fixtures of tests/tools/onnx (written once by make_fixtures.py, committed) imported, compiled
// under the tools' options, run on their test data (--check-dir, .pb inputs) and compared; --shape
// for symbolic dims; a malformed model is diagnostics, not a crash.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "frontend/onnx/onnx_import.h"
#include "ir/npy.h"
#include "tool_test_util.h"

namespace ferry {
namespace {

using namespace tooltest;

fs::path fixtures() { return fs::path(FERRY_SOURCE_DIR) / "tests" / "tools" / "onnx"; }

std::string fixture(const std::string &name) { return shellQuote((fixtures() / name).string()); }

class OnnxTools : public ToolTest {
 protected:
  Result compile(const std::string &args) { return runTool(FERRY_COMPILE, args); }
  Result run(const std::string &args) { return runTool(FERRY_RUN, args + " --iterations 1"); }

  // ferry-run MODEL --check-dir MODEL/SET with `extra` options.
  Result check(const std::string &model, const std::string &set, const std::string &extra = "") {
    return run(fixture(model + ".onnx") + " --check-dir " + fixture(model + "/" + set) + " " +
               extra);
  }
};

TEST_F(OnnxTools, CompileKeepsTheModelsNamesAndNodeLocations) {
  const Result r = compile(fixture("add_relu.onnx"));
  ASSERT_EQ(r.exit, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "graph add_relu {")) << r.out;
  EXPECT_TRUE(contains(r.out, "input %x : f32[2,3] @cpu")) << r.out;
  EXPECT_EQ(linesWith(r.out, "= relu(").size(), 1u) << r.out;
  EXPECT_TRUE(contains(r.out, "Add_output_0")) << r.out;
  EXPECT_TRUE(contains(r.out, "add_relu.onnx: node '/block/Relu' (#1, Relu)")) << r.out;
  EXPECT_EQ(r.err, "");
}

TEST_F(OnnxTools, EveryEmitWorksOnAnImportedGraph) {
  const Result json = compile(fixture("add_relu.onnx") + " --emit json");
  ASSERT_EQ(json.exit, 0) << json.err;
  EXPECT_TRUE(contains(json.out, "/block/Relu")) << json.out.substr(0, 2000);
  const Result dot = compile(fixture("add_relu.onnx") + " --emit dot");
  ASSERT_EQ(dot.exit, 0) << dot.err;
  EXPECT_TRUE(dot.out.starts_with("digraph")) << dot.out.substr(0, 200);
  EXPECT_FALSE(drawn(dot.out, "relu").empty()) << dot.out;
  const Result stats = compile(fixture("add_relu.onnx") + " --emit none --stats");
  ASSERT_EQ(stats.exit, 0) << stats.err;
  EXPECT_TRUE(contains(stats.err, "transfers")) << stats.err;
  const Result explain = compile(fixture("add_relu.onnx") + " --emit none --explain %y");
  ASSERT_EQ(explain.exit, 0) << explain.err;
  EXPECT_TRUE(contains(explain.err, "%y")) << explain.err;
}

TEST_F(OnnxTools, SavedExecutableRunsOnTheTestData) {
  const Result c =
      compile(fixture("add_relu.onnx") + " --emit none -o " + shellQuote(path("m.ferry")));
  ASSERT_EQ(c.exit, 0) << c.err;
  const Result r =
      run(shellQuote(path("m.ferry")) + " --check-dir " + fixture("add_relu/test_data_set_0"));
  EXPECT_EQ(r.exit, 0) << r.out << r.err;
  EXPECT_TRUE(contains(r.out, "check  y vs output_0.pb: max abs error 0, max rel error 0: pass"))
      << r.out;
  // The executable is compiled: --shape is refused as the compile flags are.
  expectUsageError(FERRY_RUN, shellQuote(path("m.ferry")) + " --shape x=2,3",
                   "--shape: applies to ONNX models");
}

TEST_F(OnnxTools, TextDumpOfAnImportedModelRunsAsFy) {
  const Result c = compile(fixture("int_outputs.onnx") + " -o " + shellQuote(path("io.fy")));
  ASSERT_EQ(c.exit, 0) << c.err;
  ASSERT_TRUE(fs::exists(path("io.fy")));
  // The .fy written from the ONNX model checks against the ONNX test data (.pb files).
  const Result r =
      run(shellQuote(path("io.fy")) + " --check-dir " + fixture("int_outputs/test_data_set_0"));
  EXPECT_EQ(r.exit, 0) << r.out << r.err;
  EXPECT_EQ(linesWith(r.out, ": pass").size(), 2u) << r.out;
}

TEST_F(OnnxTools, CheckDirPassesAndMatchesFilesByNameElsePosition) {
  for (const char *set : {"test_data_set_0", "swapped", "unnamed"}) {
    SCOPED_TRACE(set);
    const Result r = check("add_relu", set);
    EXPECT_EQ(r.exit, 0) << r.out << r.err;
    EXPECT_TRUE(contains(r.out, "check  pass: every output (1) matches")) << r.out;
    EXPECT_EQ(r.err, "");
  }
  // Named files in the other order go by their names.
  const Result swapped = check("add_relu", "swapped");
  EXPECT_TRUE(contains(swapped.out, "input  x: f32[2,3]")) << swapped.out;
  EXPECT_TRUE(contains(swapped.out, "swapped/input_1.pb)")) << swapped.out;
  const Result ints = check("int_outputs", "test_data_set_0");
  EXPECT_EQ(ints.exit, 0) << ints.out << ints.err;
  EXPECT_EQ(linesWith(ints.out, ": pass").size(), 2u) << ints.out;
}

TEST_F(OnnxTools, CheckDirMismatchesExitOneAndSayWhat) {
  const Result value = check("add_relu", "bad_value");
  EXPECT_EQ(value.exit, 1);
  EXPECT_TRUE(contains(value.out, "check  y vs output_0.pb: max abs error 0.01")) << value.out;
  EXPECT_TRUE(contains(value.out, "FAIL, 1 of 6 elements beyond atol + rtol*|expected| (first at "
                                  "[0,0]: got 1.5, expected 1.50999999)"))
      << value.out;
  EXPECT_TRUE(contains(value.err, "error: 1 of 1 outputs differ from the expected ones"))
      << value.err;
  // A looser tolerance takes it: 0.01 <= 0.01 * 1.51.
  EXPECT_EQ(check("add_relu", "bad_value", "--rtol 0.01").exit, 0);
  EXPECT_EQ(check("add_relu", "bad_value", "--atol 0.02").exit, 0);

  const Result shape = check("add_relu", "bad_shape");
  EXPECT_EQ(shape.exit, 1);
  EXPECT_TRUE(contains(shape.out, "check  y vs output_0.pb: FAIL: expected f32[3,2], got f32[2,3]"))
      << shape.out;
  const Result dtype = check("add_relu", "bad_dtype");
  EXPECT_EQ(dtype.exit, 1);
  EXPECT_TRUE(contains(dtype.out, "FAIL: expected f64[2,3], got f32[2,3]")) << dtype.out;
  const Result ints = check("int_outputs", "off_by_one");
  EXPECT_EQ(ints.exit, 1);
  EXPECT_TRUE(contains(ints.out, "check  sum vs output_0.pb: max abs error 1, max rel error 0.143: "
                                 "FAIL, 1 of 4 elements differ (i64: compared exactly) (first at "
                                 "[2]: got 6, expected 7)"))
      << ints.out;
  EXPECT_TRUE(
      contains(ints.out, "check  same vs output_1.pb: max abs error 0, max rel error 0: pass"))
      << ints.out;
}

TEST_F(OnnxTools, CheckDirFolderProblemsAreUsageErrors) {
  const Result count = check("add_relu", "one_input");
  EXPECT_EQ(count.exit, 2);
  EXPECT_TRUE(contains(count.err, "has 1 input file (input_K.pb), the model has 2 inputs: x: "
                                  "f32[2,3], bias: f32[3]"))
      << count.err;
  const Result shape = check("add_relu", "wrong_input_shape");
  EXPECT_EQ(shape.exit, 2);
  EXPECT_TRUE(contains(shape.err, "input 'x' has the wrong shape: expected [2,3], got [3,2]"))
      << shape.err;
  expectUsageError(FERRY_RUN, fixture("add_relu.onnx") + " --check-dir " + fixture("nope"),
                   "--check-dir: no folder '");
  expectUsageError(FERRY_RUN, fixture("add_relu.onnx") + " --check-dir " + fixture("add_relu"),
                   "holds no input_K.pb or output_K.pb files");
}

TEST_F(OnnxTools, EveryPolicyOnCpuAndCpu1MatchesTheTestData) {
  for (const char *options :
       {"--devices cpu:1", "--devices cpu,cpu:1 --target cpu:1 --placement auto",
        "--devices cpu,cpu:1 --placement auto --dtype promote", "--dtype autocast=f16",
        "--devices cpu:1 --dtype autocast=bf16"}) {
    SCOPED_TRACE(options);
    for (const char *model : {"add_relu", "int_outputs"}) {
      const Result r = check(model, "test_data_set_0", options);
      EXPECT_EQ(r.exit, 0) << r.out << r.err;
    }
    const Result r =
        check("scale_shift", "test_data_set_0", std::string(options) + " --shape input=2,4");
    EXPECT_EQ(r.exit, 0) << r.out << r.err;
  }
}

TEST_F(OnnxTools, ShapeFixesSymbolicDims) {
  const Result without = compile(fixture("scale_shift.onnx"));
  EXPECT_EQ(without.exit, 1);
  EXPECT_TRUE(contains(without.err, "input 'input' has a symbolic dim 'batch'")) << without.err;
  EXPECT_TRUE(contains(without.err, "--shape input=")) << without.err;
  const Result with = compile(fixture("scale_shift.onnx") + " --shape input=2,4");
  EXPECT_EQ(with.exit, 0) << with.err;
  EXPECT_TRUE(contains(with.out, "input %input : f32[2,4] @cpu")) << with.out;
  // Any batch: the model is compiled for the shape given.
  const Result other = compile(fixture("scale_shift.onnx") + " --shape input=7,4");
  EXPECT_TRUE(contains(other.out, "f32[7,4]")) << other.out;
  const Result disagree = compile(fixture("scale_shift.onnx") + " --shape input=2,5");
  EXPECT_EQ(disagree.exit, 1);
  EXPECT_TRUE(contains(disagree.err, "[2,5]")) << disagree.err;
  expectUsageError(FERRY_COMPILE, fixture("scale_shift.onnx") + " --shape input=2,4 --shape nope=1",
                   "'nope'");
  expectUsageError(
      FERRY_RUN, fixture("scale_shift.onnx") + " --random-inputs --shape input=2,4 --shape nope=1",
      "'nope'");
  // A bare --explain says what could change a failed import; JSON carries the node.
  const Result explain = compile(fixture("scale_shift.onnx") + " --explain");
  EXPECT_EQ(explain.exit, 1);
  EXPECT_TRUE(contains(explain.err, "explain: the model does not import, which no option but "
                                    "--shape changes"))
      << explain.err;
  const Result json = compile(fixture("scale_shift.onnx") + " --diagnostics json");
  EXPECT_EQ(json.exit, 1);
  EXPECT_TRUE(json.err.starts_with("[")) << json.err;
  EXPECT_TRUE(contains(json.err, "\"node\": \"input 'input'\"")) << json.err;
  const Result ran = run(fixture("scale_shift.onnx") + " --shape input=3,4 --random-inputs");
  EXPECT_EQ(ran.exit, 0) << ran.err;
  EXPECT_TRUE(contains(ran.out, "output out: f32[3,4]")) << ran.out;
}

TEST_F(OnnxTools, ShapeSyntaxErrorsNameTheFlag) {
  const std::string m = fixture("scale_shift.onnx");
  expectUsageError(FERRY_COMPILE, m + " --shape input",
                   "--shape: expected NAME=D0,D1,... (e.g. --shape x=1,784), got 'input'",
                   Match::Whole);
  expectUsageError(FERRY_RUN, m + " --shape input",
                   "--shape: expected NAME=D0,D1,... (e.g. --shape x=1,784), got 'input'",
                   Match::Whole);
  expectUsageError(FERRY_COMPILE, m + " --shape input=", "--shape input: no dims after '='");
  expectUsageError(FERRY_COMPILE, m + " --shape =1,2", "--shape: no input name before '='");
  expectUsageError(FERRY_COMPILE, m + " --shape input=2,,4", "--shape input: empty dim in '2,,4'");
  expectUsageError(FERRY_COMPILE, m + " --shape input=2,x",
                   "--shape input: expected a non-negative integer, got 'x'", Match::Whole);
  expectUsageError(FERRY_COMPILE, m + " --shape input=2,99999999999999999999",
                   "--shape input: '99999999999999999999' is out of range");
  expectUsageError(FERRY_COMPILE, m + " --shape input=2,4 --shape input=3,4",
                   "--shape: input 'input' is given twice", Match::Whole);
  const std::string fy = write("m.fy", "graph g {\n  input %x : f32[2] @cpu\n  output %x\n}\n");
  expectUsageError(FERRY_COMPILE, shellQuote(fy) + " --shape x=2",
                   "--shape: applies to ONNX models (.onnx), whose inputs may have symbolic "
                   "dims; '" +
                       fy + "' is not one: it declares the shapes of its inputs",
                   Match::Whole);
  expectUsageError(FERRY_RUN, shellQuote(fy) + " --shape x=2", "--shape: applies to ONNX models");
}

TEST_F(OnnxTools, PbInputsAndNpyOutputs) {
  const std::string set = (fixtures() / "add_relu" / "test_data_set_0").string();
  const Result r = run(fixture("add_relu.onnx") + " --input x=" + shellQuote(set + "/input_0.pb") +
                       " --input bias=" + shellQuote(set + "/input_1.pb") + " --output-dir " +
                       shellQuote(path("out")));
  ASSERT_EQ(r.exit, 0) << r.err;
  Expected<TensorData> got = readNpy(path("out/y.npy"));
  Expected<TensorData> want = readTensorProtoFile(set + "/output_0.pb");
  ASSERT_TRUE(got.ok() && want.ok());
  EXPECT_EQ(*got, *want);
  // A .pb that does not read is a usage error naming the input, before the model is built.
  const std::string bad = write("bad.pb", "\xff\xff\xff not a tensor");
  expectUsageError(FERRY_RUN, fixture("add_relu.onnx") + " --input x=" + shellQuote(bad),
                   "--input x: ");
}

// A Reshape whose shape is a graph input (as ONNX's node tests write it): ferry-compile needs its
// value (--input-value), ferry-run takes it from --input; either way the input is fixed at
// import and the compiled model has only the data input.
TEST_F(OnnxTools, InputsANodeNeedsAtImportAreFixedFromTheirFiles) {
  const fs::path dir = fs::path(FERRY_SOURCE_DIR) / "tests/onnx_node/onnx-1.12" /
                       "test_reshape_reordered_all_dims";
  const std::string model = shellQuote((dir / "model.onnx").string());
  const std::string data = shellQuote((dir / "test_data_set_0/input_0.pb").string());
  const std::string shape = shellQuote((dir / "test_data_set_0/input_1.pb").string());
  const Result rejected = compile(model);
  EXPECT_EQ(rejected.exit, 1);
  EXPECT_NE(rejected.err.find("it is the graph input 'shape'"), std::string::npos) << rejected.err;
  const Result compiled = compile(model + " --input-value shape=" + shape);
  ASSERT_EQ(compiled.exit, 0) << compiled.err;
  EXPECT_NE(compiled.out.find("reshape(%data, shape=[4, 2, 3])"), std::string::npos)
      << compiled.out;
  EXPECT_EQ(compiled.out.find("input %shape"), std::string::npos) << compiled.out;
  const Result ran = run(model + " --input data=" + data + " --input shape=" + shape);
  ASSERT_EQ(ran.exit, 0) << ran.err;
  EXPECT_NE(ran.out.find("input  shape fixed at import"), std::string::npos) << ran.out;
  EXPECT_NE(ran.out.find("output reshaped: f32[4,2,3]"), std::string::npos) << ran.out;
  // Usage errors name the flag: the syntax, a model that is not ONNX, a file that does not read.
  expectUsageError(FERRY_COMPILE, model + " --input-value shape",
                   "--input-value: expected NAME=FILE.pb or NAME=FILE.npy, got 'shape'",
                   Match::Whole);
  expectUsageError(FERRY_COMPILE, model + " --input-value shape=" + shape + " --input-value shape=" +
                       shape,
                   "--input-value: input 'shape' is given twice", Match::Whole);
  expectUsageError(FERRY_COMPILE, model + " --input-value shape=" + shellQuote(path("none.pb")),
                   "--input-value shape: ");
  const std::string fy = write("m.fy", "graph g {\n  input %x : f32[2] @cpu\n  output %x\n}\n");
  expectUsageError(FERRY_COMPILE, shellQuote(fy) + " --input-value x=" + shape,
                   "--input-value: applies to ONNX models (.onnx)");
}

TEST_F(OnnxTools, MalformedModelsAreDiagnosticsNotCrashes) {
  const std::string model = readFile(fixtures() / "add_relu.onnx");
  const std::string truncated = write("truncated.onnx", model.substr(0, model.size() / 2));
  for (const std::string &tool : {std::string(FERRY_COMPILE), std::string(FERRY_RUN)}) {
    SCOPED_TRACE(tool);
    const Result r = runTool(tool, shellQuote(truncated));
    EXPECT_EQ(r.exit, 1) << r.err;
    EXPECT_TRUE(r.err.starts_with(truncated + ": error: ")) << r.err;
    EXPECT_EQ(r.out, "");
  }
  const std::string blob = write("blob.onnx", binaryBlob());
  const Result b = compile(shellQuote(blob));
  EXPECT_EQ(b.exit, 1);
  EXPECT_EQ(testutil::unprintable(b.err), "") << b.err.substr(0, 2000);
  EXPECT_LT(count(b.err, "\n"), 30u) << b.err.substr(0, 2000);
}

}  // namespace
}  // namespace ferry
