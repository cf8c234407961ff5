// tests/tools/ferry_compile_params_test.cpp — ferry-compile never loses a model's data when it
// writes one: params go to FILE.params/ beside -o FILE.fy, never over a file that is there (the
// model's own weights, another model's params, an earlier run's), and a dump on standard output
// reads back or is refused.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "ir/npy.h"
#include "ir/parser.h"
#include "tool_test_util.h"

namespace ferry {
namespace {

using namespace tooltest;

// A linear layer whose weight comes from `weights` (relative to the model); autocast=f16 folds
// its cast into the weight at compile time, so the compiled weight is data no file holds.
std::string linearModel(const std::string &weights, int64_t in, int64_t outFeatures) {
  const std::string w = std::to_string(outFeatures) + "," + std::to_string(in);
  return "graph m {\n  input %x : f32[2," + std::to_string(in) + "]\n  param %w : f32[" + w +
         "] = npy(\"" + weights + "\")\n  %y = linear(%x, %w)\n  output %y\n}\n";
}

TensorData weights(int64_t rows, int64_t cols, double scale) {
  TensorData t(DType::F32, {rows, cols});
  for (int64_t i = 0; i < t.numel(); ++i) t.set(i, static_cast<double>(i % 97) * scale);
  return t;
}

// The data of param %w of the model `file` as the parser reads it back.
TensorData paramW(const std::string &file) {
  Expected<Graph> g = parseFile(file);
  EXPECT_TRUE(g.ok()) << g.status().message();
  if (!g.ok()) return TensorData();
  for (const ParamDecl &p : g->params())
    if (g->value(p.value).name == "w") return p.data;
  ADD_FAILURE() << "no param %w in " << file;
  return TensorData();
}

class FerryCompileParams : public FerryCompileTest {
 protected:
  // m.fy reading w.npy (f32[64,64]) in the test's folder.
  void writeModel(int64_t rows = 64, int64_t cols = 64, double scale = 0.25) {
    w_ = weights(rows, cols, scale);
    ASSERT_TRUE(writeNpy(w_, path("w.npy")).ok());
    write("m.fy", linearModel("w.npy", cols, rows));
  }
  Result runHere(const std::string &args) {
    return runTool(FERRY_COMPILE, args, {.workDir = dir_});
  }

  TensorData w_;
};

// The story: autocast folds %w to f16; the model's own w.npy keeps its f32 bytes, the
// compiled model's weight goes to out.params/w.npy, and both models compile.
TEST_F(FerryCompileParams, AutocastLeavesTheModelsWeightsAlone) {
  writeModel();
  const std::string original = readFile(path("w.npy"));
  Result r = runHere("m.fy --dtype autocast=f16 -o out.fy");
  ASSERT_EQ(r.exit, 0) << r.err;
  EXPECT_TRUE(readFile(path("w.npy")) == original) << "the model's own weights were overwritten";
  EXPECT_TRUE(contains(readFile(path("out.fy")), "= npy(\"out.params/w.npy\")"))
      << readFile(path("out.fy"));
  Expected<TensorData> folded = readNpy(path("out.params/w.npy"));
  ASSERT_TRUE(folded.ok()) << folded.status().message();
  EXPECT_TRUE(*folded == castTensor(w_, DType::F16));
  EXPECT_TRUE(paramW(path("out.fy")) == castTensor(w_, DType::F16));
  Result again = runHere("m.fy --dtype autocast=f16 --emit none");
  EXPECT_EQ(again.exit, 0) << again.err;
  Result compiled = runHere("out.fy --emit none");
  EXPECT_EQ(compiled.exit, 0) << compiled.err;
}

// Two models written into one folder: each has its params folder, and each reads back its own
// data (params of the same name no longer replace one another's).
TEST_F(FerryCompileParams, TwoModelsInOneFolderKeepTheirOwnParams) {
  fs::create_directories(dir_ / "a");
  fs::create_directories(dir_ / "b");
  const TensorData wa = weights(16, 8, 0.5), wb = weights(16, 8, -2.0);
  ASSERT_TRUE(writeNpy(wa, path("a/w.npy")).ok());
  ASSERT_TRUE(writeNpy(wb, path("b/w.npy")).ok());
  write("a/m.fy", linearModel("w.npy", 8, 16));
  write("b/m.fy", linearModel("w.npy", 8, 16));
  fs::create_directories(dir_ / "out");
  ASSERT_EQ(runHere("a/m.fy --dtype autocast=f16 -o out/a.fy").exit, 0);
  ASSERT_EQ(runHere("b/m.fy -o out/b.fy").exit, 0);
  EXPECT_TRUE(fs::exists(dir_ / "out/a.params/w.npy"));
  EXPECT_TRUE(fs::exists(dir_ / "out/b.params/w.npy"));
  EXPECT_TRUE(paramW(path("out/a.fy")) == castTensor(wa, DType::F16));
  EXPECT_TRUE(paramW(path("out/b.fy")) == wb);
  // Moved elsewhere with its folder, a model still reads back.
  fs::rename(dir_ / "out", dir_ / "moved");
  EXPECT_TRUE(paramW(path("moved/a.fy")) == castTensor(wa, DType::F16));
}

// A second run onto a params folder that is there is refused before anything is written: the
// first run's model and params keep their bytes, and no other output is written either.
TEST_F(FerryCompileParams, ASecondRunOntoTheParamsFolderIsRefused) {
  writeModel();
  ASSERT_EQ(runHere("m.fy --dtype autocast=f16 -o out.fy").exit, 0);
  const std::string text = readFile(path("out.fy")), params = readFile(path("out.params/w.npy"));
  expectUsageError("m.fy -o out.fy",
                   "out.params/w.npy exists; a model's params are written into a folder of its "
                   "own, never over a file that is there: remove out.params or write the model "
                   "elsewhere",
                   Match::Whole, {.workDir = dir_});
  EXPECT_EQ(readFile(path("out.fy")), text);
  EXPECT_TRUE(readFile(path("out.params/w.npy")) == params);
  // With other outputs: refused before any of them is written.
  ASSERT_EQ(runHere("m.fy --emit text --emit-dir d").exit, 0);
  fs::remove(dir_ / "d/m.fy");
  expectUsageError("m.fy --emit json,text --emit-dir d -o m.ferry", "d/m.params/w.npy exists",
                   Match::Contains, {.workDir = dir_});
  EXPECT_FALSE(fs::exists(dir_ / "d/m.json"));
  EXPECT_FALSE(fs::exists(dir_ / "d/m.fy"));
  EXPECT_FALSE(fs::exists(dir_ / "m.ferry"));
  // Writing the model elsewhere works.
  EXPECT_EQ(runHere("m.fy -o other.fy").exit, 0);
  EXPECT_TRUE(fs::exists(dir_ / "other.params/w.npy"));
}

// Neither the model nor a file it reads is ever an output, however it is spelled.
TEST_F(FerryCompileParams, OutputOntoTheModelOrItsWeightsIsRefused) {
  writeModel();
  const std::string model = readFile(path("m.fy")), w = readFile(path("w.npy"));
  expectUsageError("m.fy --dtype autocast=f16 -o m.fy",
                   "-o m.fy: this is the model file itself; refusing to overwrite it",
                   Match::Contains, {.workDir = dir_});
  expectUsageError("m.fy --dtype autocast=f16 -o ../" + shellQuote(dir_.filename().string()) +
                       "/m.fy",
                   "this is the model file itself", Match::Contains, {.workDir = dir_});
  expectUsageError("m.fy --dtype autocast=f16 --emit dot -o ./w.npy",
                   "-o ./w.npy: the model reads this file (param %w's data, 'w.npy'); refusing "
                   "to overwrite it with the DOT graph",
                   Match::Whole, {.workDir = dir_});
  expectUsageError("m.fy -o " + shellQuote(path("w.npy")), "the model reads this file",
                   Match::Contains, {.workDir = dir_});
  EXPECT_EQ(readFile(path("m.fy")), model);
  EXPECT_TRUE(readFile(path("w.npy")) == w);
  EXPECT_FALSE(fs::exists(dir_ / "m.params"));
  EXPECT_FALSE(fs::exists(dir_ / "w.params"));
}

// On standard output a converted param has no file to name: it prints inline and the dump reads
// back from anywhere; an unchanged npy param keeps its path.
TEST_F(FerryCompileParams, StdoutDumpOfAConvertedParamReadsBack) {
  writeModel();
  Result r = runHere("m.fy --dtype autocast=f16");
  ASSERT_EQ(r.exit, 0) << r.err;
  EXPECT_FALSE(contains(r.out, "npy(")) << r.out.substr(0, 400);
  write("dump.fy", r.out);
  EXPECT_TRUE(paramW(path("dump.fy")) == castTensor(w_, DType::F16));
  Result plain = runHere("m.fy");
  ASSERT_EQ(plain.exit, 0) << plain.err;
  EXPECT_TRUE(contains(plain.out, "= npy(\"w.npy\")")) << plain.out;
  write("plain.fy", plain.out);
  EXPECT_TRUE(paramW(path("plain.fy")) == w_);
}

// Above 65536 elements a converted param is not printed inline: a usage error names it and says
// to write the model to a file, and nothing reaches standard output.
TEST_F(FerryCompileParams, StdoutDumpTooLargeAsksForAFile) {
  writeModel(300, 300, 0.5);
  expectUsageError("m.fy --dtype autocast=f16",
                   "param %w : f16[300,300] (90000 elements) is in no file (converted from f32 at "
                   "compile time) and too large to print inline (more than 65536 elements); write "
                   "the model to a file instead: -o FILE.fy (its params go to FILE.params/) or "
                   "--emit-dir DIR",
                   Match::Whole, {.workDir = dir_});
  Result r = runHere("m.fy --dtype autocast=f16 -o out.fy");
  ASSERT_EQ(r.exit, 0) << r.err;
  EXPECT_TRUE(paramW(path("out.fy")) == castTensor(w_, DType::F16));
  // Unconverted, it is the model's own file.
  Result plain = runHere("m.fy");
  EXPECT_EQ(plain.exit, 0) << plain.err;
  EXPECT_TRUE(contains(plain.out, "= npy(\"w.npy\")")) << plain.out.substr(0, 400);
}

}  // namespace
}  // namespace ferry
