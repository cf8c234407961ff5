// tests/onnx/import_test.cpp — the importer's driver on well-formed models: names, params,
// inputs, outputs, locations, folding; run with the reference interpreter.
#include <gtest/gtest.h>

#include "backends/reference/interpreter.h"
#include "ir/verifier.h"
#include "onnx/onnx_model_util.h"

namespace ferry::onnx_test {
namespace {

Graph importOk(const Model &m, const OnnxImportOptions &o = {}) {
  Expected<Graph> g = m.import(o);
  EXPECT_TRUE(g.ok()) << g.status().message();
  if (!g.ok()) return Graph();
  EXPECT_TRUE(verify(*g).ok());
  return std::move(g).value();
}

std::vector<TensorData> runOk(const Graph &g, const std::map<std::string, TensorData> &in) {
  auto out = reference::run(g, in);
  EXPECT_TRUE(out.ok()) << out.status().message();
  return out.ok() ? std::move(out).value() : std::vector<TensorData>{};
}

TEST(OnnxImport, AddReluWithAnInitializerKeepsNamesAndRuns) {
  Model m;
  m.input("x", DType::F32, {2, 3});
  m.initializer("onnx::Add_1", tensor(DType::F32, {3}, {1, -2, 3}));
  m.node("Add", {"x", "onnx::Add_1"}, {"/l1/Add_output_0"}, "/l1/Add");
  m.node("Relu", {"/l1/Add_output_0"}, {"y"}, "");
  m.output("y", DType::F32, {2, 3});
  Graph g = importOk(m);
  EXPECT_EQ(g.name(), "test");
  ASSERT_EQ(g.inputs().size(), 1u);
  EXPECT_EQ(g.value(g.inputs()[0].value).name, "x");
  EXPECT_EQ(g.inputs()[0].device, Device::cpu());
  ASSERT_EQ(g.params().size(), 1u);
  EXPECT_EQ(g.value(g.params()[0].value).name, "onnx::Add_1");
  EXPECT_TRUE(g.hasValue("/l1/Add_output_0"));
  ASSERT_EQ(g.outputs().size(), 1u);
  EXPECT_EQ(g.value(g.outputs()[0].value).name, "y");
  // Locations: the node's name, index and op; an unnamed node by its index.
  const Node *add = g.producer(*g.findValue("/l1/Add_output_0"));
  ASSERT_NE(add, nullptr);
  EXPECT_EQ(add->loc.str(), "model.onnx: node '/l1/Add' (#0, Add)");
  EXPECT_EQ(add->loc.line, 1);
  EXPECT_EQ(g.producer(*g.findValue("y"))->loc.str(), "model.onnx: node #1 (Relu)");
  EXPECT_EQ(g.inputs()[0].loc.str(), "model.onnx: input 'x'");
  EXPECT_EQ(g.params()[0].loc.str(), "model.onnx: initializer 'onnx::Add_1'");

  auto out = runOk(g, {{"x", tensor(DType::F32, {2, 3}, {0, 1, -5, -1, 3, 2})}});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].toDoubles(), (std::vector<double>{1, 0, 0, 0, 1, 5}));
}

TEST(OnnxImport, InitializerListedAsInputIsAParam) {
  Model m;
  m.input("x", DType::F32, {2});
  m.input("w", DType::F32, {2});
  m.initializer("w", tensor(DType::F32, {2}, {10, 20}));
  m.node("Mul", {"x", "w"}, {"y"});
  m.output("y");
  Graph g = importOk(m);
  EXPECT_EQ(g.inputs().size(), 1u);
  EXPECT_EQ(g.params().size(), 1u);
  auto out = runOk(g, {{"x", tensor(DType::F32, {2}, {2, 3})}});
  EXPECT_EQ(out[0].toDoubles(), (std::vector<double>{20, 60}));
}

TEST(OnnxImport, ConstantsFoldAndUnreadInitializersMakeNoParams) {
  Model m;
  m.input("x", DType::F32, {3});
  m.initializer("unused", tensor(DType::F32, {2}, {1, 2}));
  m.initializer("two", tensor(DType::F32, {}, {2}));
  attr(m.node("Constant", {}, {"c"}), "value", tensor(DType::F32, {3}, {1, 2, 3}));
  m.node("Mul", {"c", "two"}, {"c2"});  // folds: both known
  m.node("Add", {"x", "c2"}, {"y"});
  m.output("y");
  Graph g = importOk(m);
  EXPECT_EQ(g.params().size(), 0u);
  EXPECT_FALSE(g.hasValue("c"));
  ASSERT_TRUE(g.hasValue("c2"));  // the folded value materialised under its ONNX name
  EXPECT_EQ(g.producer(*g.findValue("c2"))->op, OpKind::Constant);
  auto out = runOk(g, {{"x", tensor(DType::F32, {3}, {1, 1, 1})}});
  EXPECT_EQ(out[0].toDoubles(), (std::vector<double>{3, 5, 7}));
}

TEST(OnnxImport, OutputsThatAreInputsOrInitializersOrAliases) {
  Model m;
  m.input("x", DType::F32, {2});
  m.initializer("w", tensor(DType::F32, {2}, {4, 5}));
  m.node("Identity", {"x"}, {"x_copy"});
  m.node("Identity", {"w"}, {"w_copy"});
  m.output("x");
  m.output("x_copy");
  m.output("w_copy");
  Graph g = importOk(m);
  ASSERT_EQ(g.outputs().size(), 3u);
  EXPECT_EQ(g.value(g.outputs()[0].value).name, "x");
  EXPECT_EQ(g.value(g.outputs()[1].value).name, "x_copy");
  EXPECT_EQ(g.value(g.outputs()[2].value).name, "w_copy");
  auto out = runOk(g, {{"x", tensor(DType::F32, {2}, {7, 8})}});
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[0].toDoubles(), (std::vector<double>{7, 8}));
  EXPECT_EQ(out[1].toDoubles(), (std::vector<double>{7, 8}));
  EXPECT_EQ(out[2].toDoubles(), (std::vector<double>{4, 5}));
}

TEST(OnnxImport, SymbolicDimsTakeTheGivenShape) {
  Model m;
  m.input("x", DType::F32, {"batch_size", 3});
  m.node("Neg", {"x"}, {"y"});
  m.output("y", DType::F32, {"batch_size", 3});
  OnnxImportOptions o;
  o.inputShapes["x"] = {2, 3};
  o.inputDevice = Device::cpu(1);
  Graph g = importOk(m, o);
  EXPECT_EQ(g.value(g.inputs()[0].value).type.shape, (Shape{2, 3}));
  EXPECT_EQ(g.inputs()[0].device, Device::cpu(1));
  EXPECT_EQ(g.value(g.outputs()[0].value).type.shape, (Shape{2, 3}));
}

TEST(OnnxImport, ConverterIntermediatesGetFreshNamesThatAvoidModelNames) {
  // Integer Div adds casts; their names must not take a name the model uses later.
  Model m;
  m.input("a", DType::I32, {2});
  m.input("b", DType::I32, {2});
  m.node("Div", {"a", "b"}, {"q"});
  m.node("Identity", {"q"}, {"q/cast"});
  m.output("q/cast");
  Graph g = importOk(m);
  auto out = runOk(g, {{"a", tensor(DType::I32, {2}, {7, -7})}, {"b", tensor(DType::I32, {2}, {2, 2})}});
  EXPECT_EQ(out[0].dtype(), DType::I32);
  EXPECT_EQ(out[0].toDoubles(), (std::vector<double>{3, -3}));
}

}  // namespace
}  // namespace ferry::onnx_test
