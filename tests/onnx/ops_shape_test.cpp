// tests/onnx/ops_shape_test.cpp — the converters of ops_shape.cpp: each ONNX op imported, run on
// the reference interpreter and compared with values worked out by hand from the ONNX spec; shape
// subgraphs fold at import; unsupported and malformed uses are errors naming the node.
#include <limits>

#include "onnx/ops_test_util.h"

namespace ferry::onnx_test {
namespace {

using Ints = std::vector<int64_t>;

TensorData i64s(Ints v) {
  std::vector<double> d(v.begin(), v.end());
  return tensor(DType::I64, {static_cast<int64_t>(v.size())}, d);
}

TEST(OnnxShapeOps, TransposeDefaultReversesAndPermPermutes) {
  Model m;
  m.input("x", DType::F32, {2, 3});
  m.input("z", DType::F32, {1, 2, 3});
  m.node("Transpose", {"x"}, {"y"});
  attr(m.node("Transpose", {"z"}, {"w"}), "perm", Ints{2, 0, 1});
  m.output("y");
  m.output("w");
  Graph g = importOk(m);
  auto out = runOk(g, {{"x", iota({2, 3})}, {"z", iota({1, 2, 3})}});
  ASSERT_EQ(out.size(), 2u);
  expectNear(out[0], DType::F32, {3, 2}, {0, 3, 1, 4, 2, 5});
  expectNear(out[1], DType::F32, {3, 1, 2}, {0, 3, 1, 4, 2, 5});
}

TEST(OnnxShapeOps, ReshapeZeroCopiesTheInputDimAndMinusOneInfers) {
  Model m;
  m.input("x", DType::F32, {2, 3, 4});
  m.initializer("shape", i64s({0, -1}));
  m.node("Reshape", {"x", "shape"}, {"y"});
  m.output("y");
  Graph g = importOk(m);
  // The shape operand is read at import: it is no param of the graph.
  EXPECT_TRUE(g.params().empty());
  EXPECT_EQ(opsOf(g), "reshape");
  auto out = runOk(g, {{"x", iota({2, 3, 4})}});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].type().str(), "f32[2,12]");
  EXPECT_EQ(out[0].at(13), 13);
}

TEST(OnnxShapeOps, ReshapeAllowZeroKeepsZeroAsASize) {
  // x is [0, 4]: with allowzero=1, [4, 0] is a literal shape of 0 elements; with allowzero=0 the 0
  // copies x's dim 1 (4), and 0 elements cannot become 16.
  for (int64_t allowZero : {0, 1}) {
    Model m(17);
    m.input("x", DType::F32, {0, 4});
    m.initializer("shape", i64s({4, 0}));
    attr(m.node("Reshape", {"x", "shape"}, {"y"}, "r"), "allowzero", allowZero);
    m.output("y");
    if (allowZero) {
      Graph g = importOk(m);
      EXPECT_EQ(g.value(g.outputs()[0].value).type.str(), "f32[4,0]");
    } else {
      EXPECT_NE(importErrors(m).find("node 'r'"), std::string::npos) << importErrors(m);
    }
  }
}

TEST(OnnxShapeOps, ReshapeNeedsItsShapeAtImport) {
  Model m;
  m.input("x", DType::F32, {2, 3});
  m.input("s", DType::I64, {2});
  m.node("Reshape", {"x", "s"}, {"y"}, "r");
  m.output("y");
  std::string e = importErrors(m);
  EXPECT_NE(e.find("node 'r' (#0, Reshape)"), std::string::npos) << e;
  EXPECT_NE(e.find("shape"), std::string::npos) << e;
}

TEST(OnnxShapeOps, FlattenMakesTwoDims) {
  struct Case {
    int64_t axis;
    Shape want;
  };
  for (Case c : {Case{0, {1, 24}}, Case{1, {2, 12}}, Case{-1, {6, 4}}, Case{3, {24, 1}}}) {
    Model m;
    m.input("x", DType::F32, {2, 3, 4});
    attr(m.node("Flatten", {"x"}, {"y"}), "axis", c.axis);
    m.output("y");
    Graph g = importOk(m);
    auto out = runOk(g, {{"x", iota({2, 3, 4})}});
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(out[0].shape(), c.want) << "axis " << c.axis;
    EXPECT_EQ(out[0].at(23), 23);
  }
  Model bad;
  bad.input("x", DType::F32, {2, 3});
  attr(bad.node("Flatten", {"x"}, {"y"}, "f"), "axis", int64_t{3});
  bad.output("y");
  EXPECT_NE(importErrors(bad).find("Flatten: attribute 'axis' is 3, expected a value in [-2, 2]"),
            std::string::npos)
      << importErrors(bad);
}

TEST(OnnxShapeOps, ConcatAlongANegativeAxisAndAxisIsRequired) {
  Model m;
  m.input("a", DType::F32, {2, 1});
  m.initializer("b", tensor(DType::F32, {2, 2}, {10, 11, 12, 13}));
  attr(m.node("Concat", {"a", "b"}, {"y"}), "axis", int64_t{-1});
  m.output("y");
  auto out = runOk(importOk(m), {{"a", tensor(DType::F32, {2, 1}, {1, 2})}});
  ASSERT_EQ(out.size(), 1u);
  expectNear(out[0], DType::F32, {2, 3}, {1, 10, 11, 2, 12, 13});

  Model bad;
  bad.input("a", DType::F32, {2});
  bad.node("Concat", {"a", "a"}, {"y"}, "cat");
  bad.output("y");
  EXPECT_NE(importErrors(bad).find("Concat: attribute 'axis' is required"), std::string::npos);
}

TEST(OnnxShapeOps, SliceClampsBoundsAndStepsBackwards) {
  // ONNX's Slice: ends beyond the dim clamp (INT64_MAX is "to the end"), negative axes and steps.
  Model m;
  m.input("x", DType::F32, {3, 4});
  m.initializer("starts", i64s({-1, 1}));
  m.initializer("ends", i64s({std::numeric_limits<int64_t>::min(), 1000}));
  m.initializer("axes", i64s({-1, 0}));
  m.initializer("steps", i64s({-2, 1}));
  m.node("Slice", {"x", "starts", "ends", "axes", "steps"}, {"y"});
  m.output("y");
  Graph g = importOk(m);
  EXPECT_TRUE(g.params().empty());
  auto out = runOk(g, {{"x", iota({3, 4})}});
  ASSERT_EQ(out.size(), 1u);
  // rows 1..2, columns 3 and 1
  expectNear(out[0], DType::F32, {2, 2}, {7, 5, 11, 9});
}

TEST(OnnxShapeOps, SliceWithoutAxesAndStepsTakesTheLeadingDims) {
  Model m;
  m.input("x", DType::F32, {3, 4});
  m.initializer("starts", i64s({1}));
  m.initializer("ends", i64s({-1}));
  m.node("Slice", {"x", "starts", "ends"}, {"y"});
  m.output("y");
  auto out = runOk(importOk(m), {{"x", iota({3, 4})}});
  ASSERT_EQ(out.size(), 1u);
  expectNear(out[0], DType::F32, {1, 4}, {4, 5, 6, 7});
}

TEST(OnnxShapeOps, GatherTakesNegativeIndicesFromValuesAndScalarsFromConstants) {
  Model m;
  m.input("x", DType::F32, {3, 2});
  m.input("idx", DType::I64, {2, 2});
  m.initializer("last", tensor(DType::I32, {}, {-1}));
  m.node("Gather", {"x", "idx"}, {"y"});
  attr(m.node("Gather", {"x", "last"}, {"z"}), "axis", int64_t{1});
  m.output("y");
  m.output("z");
  auto out = runOk(importOk(m),
                   {{"x", iota({3, 2})}, {"idx", tensor(DType::I64, {2, 2}, {-1, 0, 1, -3})}});
  ASSERT_EQ(out.size(), 2u);
  expectNear(out[0], DType::F32, {2, 2, 2}, {4, 5, 0, 1, 2, 3, 0, 1});
  expectNear(out[1], DType::F32, {3}, {1, 3, 5});
}

TEST(OnnxShapeOps, UnsqueezeAndSqueezeTakeAxesInputs) {
  Model m;
  m.input("x", DType::F32, {3});
  m.initializer("ax", i64s({0, -1}));
  m.node("Unsqueeze", {"x", "ax"}, {"u"});  // [1, 3, 1]
  m.node("Squeeze", {"u", "ax"}, {"s"});    // [3]
  m.node("Squeeze", {"u"}, {"all"});        // every unit dim: [3]
  m.initializer("one", i64s({1}));
  m.node("Unsqueeze", {"s", "one"}, {"col"});  // [3, 1]
  m.output("u");
  m.output("s");
  m.output("all");
  m.output("col");
  Graph g = importOk(m);
  auto out = runOk(g, {{"x", iota({3})}});
  ASSERT_EQ(out.size(), 4u);
  EXPECT_EQ(out[0].type().str(), "f32[1,3,1]");
  EXPECT_EQ(out[1].type().str(), "f32[3]");
  EXPECT_EQ(out[2].type().str(), "f32[3]");
  EXPECT_EQ(out[3].type().str(), "f32[3,1]");
  EXPECT_EQ(out[3].at(2), 2);

  Model bad;
  bad.input("x", DType::F32, {3, 2});
  bad.initializer("ax", i64s({0}));
  bad.node("Squeeze", {"x", "ax"}, {"y"}, "sq");
  bad.output("y");
  std::string e = importErrors(bad);
  EXPECT_NE(e.find("node 'sq'"), std::string::npos) << e;
  EXPECT_NE(e.find("its size is 3, not 1"), std::string::npos) << e;
}

TEST(OnnxShapeOps, ExpandBroadcastsBothWays) {
  // ONNX Expand's result is broadcast(input, shape): a shape dim of 1 keeps the input's dim.
  Model m;
  m.input("x", DType::F32, {3, 1});
  m.initializer("shape", i64s({2, 1, 4}));
  m.node("Expand", {"x", "shape"}, {"y"});
  m.output("y");
  auto out = runOk(importOk(m), {{"x", tensor(DType::F32, {3, 1}, {1, 2, 3})}});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].type().str(), "f32[2,3,4]");
  EXPECT_EQ(out[0].at(4), 2);
  EXPECT_EQ(out[0].at(23), 3);
}

TEST(OnnxShapeOps, ShapeWithStartAndEndFoldsIntoReshape) {
  // Shape -> Concat -> Reshape folds away: the graph keeps only the reshape.
  Model m(15);
  m.input("x", DType::F32, {2, 3, 4});
  m.input("t", DType::F32, {24});
  auto &shape = m.node("Shape", {"x"}, {"dims"});
  attr(shape, "start", int64_t{-2});  // [3, 4]
  m.initializer("lead", i64s({2}));
  attr(m.node("Concat", {"lead", "dims"}, {"target"}), "axis", int64_t{0});
  m.node("Reshape", {"t", "target"}, {"y"});
  m.output("y");
  Graph g = importOk(m);
  EXPECT_EQ(opsOf(g), "reshape");
  EXPECT_EQ(g.value(g.outputs()[0].value).type.str(), "f32[2,3,4]");
}

TEST(OnnxShapeOps, ShapeClampsStartAndEnd) {
  Model m(15);
  m.input("x", DType::F32, {2, 3, 4});
  auto &n = m.node("Shape", {"x"}, {"s"});
  attr(n, "start", int64_t{-10});
  attr(n, "end", int64_t{10});
  auto &e = m.node("Shape", {"x"}, {"e"});
  attr(e, "start", int64_t{2});
  attr(e, "end", int64_t{1});
  attr(m.node("Shape", {"x"}, {"mid"}), "end", int64_t{-1});
  m.output("s");
  m.output("e");
  m.output("mid");
  auto out = runOk(importOk(m), {{"x", iota({2, 3, 4})}});
  ASSERT_EQ(out.size(), 3u);
  expectNear(out[0], DType::I64, {3}, {2, 3, 4});
  EXPECT_EQ(out[1].type().str(), "i64[0]");
  expectNear(out[2], DType::I64, {2}, {2, 3});
}

TEST(OnnxShapeOps, ConstantOfShapeFillsTheValueAndFolds) {
  Model m;
  m.input("x", DType::I64, {2, 3});
  m.initializer("shape", i64s({2, 3}));
  attr(m.node("ConstantOfShape", {"shape"}, {"c"}), "value", tensor(DType::I64, {1}, {7}));
  m.node("Add", {"x", "c"}, {"y"});
  m.initializer("none", tensor(DType::I64, {0}, {}));
  m.node("ConstantOfShape", {"none"}, {"zero"});  // a scalar f32 0
  m.output("y");
  m.output("zero");
  Graph g = importOk(m);
  // Both fold: no expand is left to run.
  EXPECT_EQ(opsOf(g).find("expand"), std::string::npos) << opsOf(g);
  auto out = runOk(g, {{"x", tensor(DType::I64, {2, 3}, {0, 1, 2, 3, 4, 5})}});
  ASSERT_EQ(out.size(), 2u);
  expectNear(out[0], DType::I64, {2, 3}, {7, 8, 9, 10, 11, 12});
  expectNear(out[1], DType::F32, {}, {0});
}

TEST(OnnxShapeOps, RangeFoldsConstantsExactly) {
  Model m;
  m.initializer("s", tensor(DType::I32, {}, {10}));
  m.initializer("l", tensor(DType::I32, {}, {3}));
  m.initializer("d", tensor(DType::I32, {}, {-3}));
  m.node("Range", {"s", "l", "d"}, {"r"});
  m.initializer("fs", tensor(DType::F32, {}, {1}));
  m.initializer("fl", tensor(DType::F32, {}, {2}));
  m.initializer("fd", tensor(DType::F32, {}, {0.25}));
  m.node("Range", {"fs", "fl", "fd"}, {"f"});
  m.node("Range", {"l", "s", "d"}, {"empty"});
  m.output("r");
  m.output("f");
  m.output("empty");
  auto out = runOk(importOk(m));
  ASSERT_EQ(out.size(), 3u);
  expectNear(out[0], DType::I32, {3}, {10, 7, 4});  // ceil((3 - 10) / -3) = 3 elements
  expectNear(out[1], DType::F32, {4}, {1, 1.25, 1.5, 1.75});
  EXPECT_EQ(out[2].type().str(), "i32[0]");
}

TEST(OnnxShapeOps, RangeOfValuesIsUnsupportedAndZeroDeltaAnError) {
  Model m;
  m.input("n", DType::I64, {});
  m.initializer("zero", tensor(DType::I64, {}, {0}));
  m.initializer("one", tensor(DType::I64, {}, {1}));
  m.node("Range", {"zero", "n", "one"}, {"r"}, "range_n");
  m.node("Range", {"zero", "one", "zero"}, {"q"}, "range_0");
  m.output("r");
  m.output("q");
  std::string e = importErrors(m);
  EXPECT_NE(e.find("Range: limit (input 1 ('n')) must be known at import time, but it is the "
                   "graph input 'n'"),
            std::string::npos)
      << e;
  EXPECT_NE(e.find("node 'range_0' (#1, Range): Range: 'delta' is 0"), std::string::npos) << e;
}

// A graph input whose value a node needs at import (Range's bound, Reshape's shape), given in
// inputValues, is frozen: it folds away and is no longer an input; an input given there that no
// node needs that way stays an input.
TEST(OnnxShapeOps, InputsANodeNeedsAtImportAreFrozenToTheirGivenValue) {
  Model m;
  m.input("n", DType::I64, {});
  m.input("shape", DType::I64, {2});
  m.input("x", DType::F32, {2, 3});
  m.initializer("zero", tensor(DType::I64, {}, {0}));
  m.initializer("one", tensor(DType::I64, {}, {1}));
  m.node("Range", {"zero", "n", "one"}, {"r"}, "range_n");
  m.node("Reshape", {"x", "shape"}, {"y"}, "reshape");
  m.output("r");
  m.output("y");
  std::vector<std::string> frozen;
  OnnxImportOptions o;
  o.inputValues.emplace("n", tensor(DType::I64, {}, {3}));
  o.inputValues.emplace("shape", tensor(DType::I64, {2}, {3, 2}));
  o.inputValues.emplace("x", tensor(DType::F32, {2, 3}, {1, 2, 3, 4, 5, 6}));
  o.frozenInputs = &frozen;
  Graph g = importOk(m, o);
  EXPECT_EQ(frozen, (std::vector<std::string>{"n", "shape"}));
  ASSERT_EQ(g.inputs().size(), 1u);
  EXPECT_EQ(g.value(g.inputs()[0].value).name, "x");
  auto out = runOk(g, {{"x", tensor(DType::F32, {2, 3}, {1, 2, 3, 4, 5, 6})}});
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].toDoubles(), (std::vector<double>{0, 1, 2}));
  EXPECT_EQ(out[1].shape(), (Shape{3, 2}));
  // A given value of another type than the input's is an error naming both.
  OnnxImportOptions wrong;
  wrong.inputValues.emplace("n", tensor(DType::I32, {}, {3}));
  wrong.inputValues.emplace("shape", tensor(DType::I64, {2}, {3, 2}));
  Expected<Graph> bad = m.import(wrong);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("input 'n' is given a value of type i32[] (inputValues), "
                                        "expected i64[]"),
            std::string::npos)
      << bad.status().message();
}

}  // namespace
}  // namespace ferry::onnx_test

namespace ferry::onnx_test {
namespace {

// Before opset 13 (10 for Slice, 11 for Clip) these ops took as attributes what they now take as
// inputs; the importer reads the form of the model's opset. Concat before 4 is refused.
TEST(OnnxShapeOps, OlderOpsetFormsAreRead) {
  Model m(9);
  m.input("x", DType::F32, {2, 3});
  attr(m.node("Unsqueeze", {"x"}, {"u"}, "unsqueeze"), "axes", std::vector<int64_t>{0});
  attr(m.node("Squeeze", {"u"}, {"q"}, "squeeze"), "axes", std::vector<int64_t>{0});
  onnx::NodeProto &slice = m.node("Slice", {"q"}, {"s"}, "slice");
  attr(slice, "starts", std::vector<int64_t>{1});
  attr(slice, "ends", std::vector<int64_t>{3});
  attr(slice, "axes", std::vector<int64_t>{1});
  onnx::NodeProto &clip = m.node("Clip", {"s"}, {"c"}, "clip");
  attr(clip, "min", 2.5);
  attr(clip, "max", 5.0);
  attr(m.node("Dropout", {"c"}, {"d"}, "dropout"), "ratio", 0.3);
  m.output("u");
  m.output("d");
  auto out = runOk(importOk(m), {{"x", tensor(DType::F32, {2, 3}, {1, 2, 3, 4, 5, 6})}});
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].shape(), (Shape{1, 2, 3}));
  expectNear(out[1], DType::F32, {2, 2}, {2.5, 3, 5, 5});

  Model concat(3);
  concat.input("a", DType::F32, {2});
  concat.node("Concat", {"a", "a"}, {"c"}, "concat");
  concat.output("c");
  EXPECT_NE(importErrors(concat).find("Concat before opset 4 (its older form)"), std::string::npos)
      << importErrors(concat);
}

}  // namespace
}  // namespace ferry::onnx_test
