// tests/ir/verifier_test.cpp — the verifier accepts well-formed graphs and reports every
// violation of a broken one.
#include <gtest/gtest.h>

#include <map>
#include <random>

#include "ir/graph.h"
#include "ir/verifier.h"

namespace ferry {
namespace {

Attrs noAttrs(OpKind k) {
  Expected<Attrs> a = makeAttrs(opInfo(k), {}, {});
  EXPECT_TRUE(a.ok());
  return *a;
}

// x : f32[2,3] -> relu -> output
Graph smallGraph() {
  Graph g("small");
  ValueId x = g.addInput("x", {DType::F32, {2, 3}}, Device::cpu(), {"t.fy", 2, 3});
  NodeId n = g.addNode({OpKind::Relu, {x}, noAttrs(OpKind::Relu), {}, {}, {"t.fy", 3, 3}}, "y",
                       {DType::F32, {2, 3}});
  g.addOutput(g.node(n).result, std::nullopt, {"t.fy", 4, 3});
  return g;
}

std::string messages(const Status &s) { return s.message(); }

TEST(Verifier, AcceptsAWellFormedGraph) {
  Graph g = smallGraph();
  Status s = verify(g);
  EXPECT_TRUE(s.ok()) << s.message();
}

TEST(Verifier, RejectsAResultTypeTheOpDoesNotGive) {
  Graph g = smallGraph();
  g.value(g.node(0).result).type = {DType::F16, {2, 3}};
  Status s = verify(g);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(messages(s).find("%y is typed f16[2,3] but 'relu' gives f32[2,3]"), std::string::npos)
      << messages(s);
  EXPECT_EQ(s.diagnostics()[0].loc, (Location{"t.fy", 3, 3}));
}

// A wrong type is one mistake: a node that reads it is not checked (it would repeat it), and the
// mistake is a type error of that node, not a broken graph.
TEST(Verifier, AWrongTypeIsReportedOnceAndClassifiedAsItsNodes) {
  Graph g = smallGraph();
  const ValueId y = g.node(0).result;
  g.addNode({OpKind::Neg, {y}, noAttrs(OpKind::Neg), {}, {}, {"t.fy", 4, 3}}, "z",
            {DType::F32, {2, 3}});
  g.value(y).type = {DType::F16, {2, 3}};
  const Verification v = verifyGraph(g);
  ASSERT_EQ(v.diagnostics.size(), 1u) << renderText(v.diagnostics);
  EXPECT_EQ(v.diagnostics[0].code, "type");
  EXPECT_FALSE(v.structural);
  ASSERT_EQ(v.typeErrors.size(), 1u);
  EXPECT_EQ(v.typeErrors[0].node, 0);
  EXPECT_FALSE(v.typeErrors[0].typeHolds);
  // A value used before its definition breaks the graph as a whole.
  g.setOperand(0, 0, *g.findValue("z"));
  EXPECT_TRUE(verifyGraph(g).structural);
}

TEST(Verifier, ReportsEveryValueWhoseNameAnEarlierValueHas) {
  Graph g = smallGraph();
  ValueId z = g.addInput("z", {DType::F32, {2, 3}}, Device::cpu(), {});
  ValueId w = g.addInput("w", {DType::F32, {2, 3}}, Device::cpu(), {});
  // Written past the graph's API (rename() refuses taken names): a broken pass could do it.
  g.value(z).name = "x";
  g.value(w).name = "x";
  Status s = verify(g);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.diagnostics().size(), 2u) << messages(s);
  for (const Diagnostic &d : s.diagnostics()) EXPECT_EQ(d.message, "value name %x is used twice");
  g.value(z).name = "z";
  g.value(w).name = "w";
  EXPECT_TRUE(verify(g).ok());
}

TEST(Verifier, ReportsANameWrittenPastRenameEvenWhenItIsUnique) {
  Graph g = smallGraph();
  ValueId z = g.addInput("z", {DType::F32, {2, 3}}, Device::cpu(), {});
  g.value(z).name = "fresh";  // findValue("fresh") cannot find it: the graph's index says "z"
  Status s = verify(g);
  ASSERT_EQ(s.diagnostics().size(), 1u) << messages(s);
  EXPECT_EQ(s.diagnostics()[0].message,
            "value %fresh is not found under its name: it was renamed past Graph::rename");
}

TEST(Verifier, RejectsUseBeforeDefinitionAndReportsAllProblems) {
  Graph g("bad");
  ValueId x = g.addInput("x", {DType::F32, {2}}, Device::cpu(), {});
  NodeId a = g.addNode({OpKind::Relu, {x}, noAttrs(OpKind::Relu), {}, {}, {"t.fy", 3, 1}}, "a",
                       {DType::F32, {2}});
  NodeId b = g.addNode({OpKind::Neg, {x}, noAttrs(OpKind::Neg), {}, {}, {"t.fy", 4, 1}}, "b",
                       {DType::F32, {2}});
  // Make %a read %b, which is defined after it, and break an attribute list: two problems.
  g.node(a).operands[0] = g.node(b).result;
  g.node(b).attrs.push_back(int64_t{1});
  Status s = verify(g);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(messages(s).find("%b is used before it is defined"), std::string::npos) << messages(s);
  EXPECT_NE(messages(s).find("'neg' has 1 attribute values, its schema 0"), std::string::npos);
  EXPECT_NE(messages(s).find("graph 'bad' has no outputs"), std::string::npos);
  EXPECT_EQ(s.diagnostics().size(), 3u);
}

TEST(Verifier, RejectsParamDataOfAnotherTypeAndWrongAttributeKinds) {
  Graph g("p");
  ValueId w = g.addParam("w", TensorData::zeros(DType::F32, {2}), {}, std::nullopt, {"t.fy", 1, 1});
  g.param(0).data = TensorData::zeros(DType::F32, {3});
  Expected<Attrs> attrs = makeAttrs(opInfo(OpKind::Softmax), {}, {});
  ASSERT_TRUE(attrs.ok());
  (*attrs)[0] = 1.5;  // axis must be an int
  NodeId n =
      g.addNode({OpKind::Softmax, {w}, *attrs, {}, {}, {"t.fy", 2, 1}}, "s", {DType::F32, {2}});
  g.addOutput(g.node(n).result, std::nullopt, {});
  Status s = verify(g);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(messages(s).find("param %w is typed f32[2] but its data is f32[3]"), std::string::npos)
      << messages(s);
  EXPECT_NE(messages(s).find("attribute 'axis' of 'softmax' is float, expected int"),
            std::string::npos);
}

TEST(Verifier, ChecksArityAndOperandDTypes) {
  Graph g("arity");
  ValueId x = g.addInput("x", {DType::Bool, {2}}, Device::cpu(), {});
  NodeId n = g.addNode({OpKind::Add, {x}, noAttrs(OpKind::Add), {}, {}, {"t.fy", 5, 1}}, "s",
                       {DType::Bool, {2}});
  NodeId m = g.addNode({OpKind::Neg, {x}, noAttrs(OpKind::Neg), {}, {}, {"t.fy", 6, 1}}, "n",
                       {DType::Bool, {2}});
  g.addOutput(g.node(n).result, std::nullopt, {});
  g.addOutput(g.node(m).result, std::nullopt, {});
  Status s = verify(g);
  ASSERT_EQ(s.diagnostics().size(), 2u) << messages(s);
  EXPECT_EQ(s.diagnostics()[0].code, "arity");
  EXPECT_NE(messages(s).find("'add' takes 2 operands (a, b), got 1"), std::string::npos)
      << messages(s);
  EXPECT_EQ(s.diagnostics()[1].code, "dtype");
  EXPECT_NE(
      messages(s).find("operand 0 (x) of 'neg' must have a numeric (non-bool) dtype, got bool[2]"),
      std::string::npos)
      << messages(s);
}

TEST(Graph, NamesAreUniqueAndFreshNamesSkipTakenOnes) {
  Graph g = smallGraph();
  EXPECT_EQ(g.uniqueName("x"), "x.1");
  EXPECT_EQ(g.uniqueName("z"), "z");
  EXPECT_EQ(g.uniqueName(""), "0");
  EXPECT_EQ(*g.findValue("y"), g.node(0).result);
  g.rename(g.node(0).result, "out");
  EXPECT_FALSE(g.hasValue("y"));
  EXPECT_EQ(g.value(*g.findValue("out")).kind, ValueKind::Result);
  EXPECT_EQ(g.producer(*g.findValue("out"))->op, OpKind::Relu);
  EXPECT_EQ(g.producer(*g.findValue("x")), nullptr);
  EXPECT_EQ(g.inputOf(*g.findValue("x")).device, Device::cpu());
  const ValueId x = *g.findValue("x"), out = *g.findValue("out");
  g.swapNames(x, out);
  EXPECT_EQ(g.value(x).name, "out");
  EXPECT_EQ(*g.findValue("out"), x);
  EXPECT_EQ(*g.findValue("x"), out);
  EXPECT_TRUE(verify(g).ok());
}

TEST(Graph, UniqueNamingTakesTheHintOrTheNextFreeSuffix) {
  Graph g = smallGraph();  // %x, %y
  const ValueId x = *g.findValue("x");
  auto cast = [&](std::string hint) {
    const OpInfo &op = opInfo(OpKind::Cast);
    Attrs attrs(op.attrs.size());
    attrs[op.attrIndex("to")] = DType::F16;
    NodeId n = g.createNode({OpKind::Cast, {x}, std::move(attrs), {}, {}, {}}, std::move(hint),
                            {DType::F16, g.value(x).type.shape}, Graph::Naming::Unique);
    return g.value(g.node(n).result).name;
  };
  EXPECT_EQ(cast("x.f16"), "x.f16");
  EXPECT_EQ(cast("x.f16"), "x.f16.1");
  EXPECT_EQ(cast("x.f16"), "x.f16.2");
  EXPECT_EQ(cast("y"), "y.1");
  const ValueId p = g.addParam("x", TensorData::zeros(DType::F32, {2}), {}, std::nullopt, {},
                               Graph::Naming::Unique);
  EXPECT_EQ(g.value(p).name, "x.1");
  for (const char *name : {"x.f16", "x.f16.1", "x.f16.2", "y.1", "x.1"})
    EXPECT_TRUE(g.hasValue(name)) << name;
}

TEST(GraphDeathTest, ExactNamingOfATakenNameAborts) {
  Graph g = smallGraph();
  EXPECT_DEATH(g.addParam("x", TensorData::zeros(DType::F32, {2}), {}, std::nullopt, {}),
               "value name %x is taken");
}

// The name index against a map, through growth, renames that empty slots inside probe clusters,
// swaps and copies: every name is found at its value and no other name is.
TEST(Graph, NameIndexFindsEveryNameThroughRenamesAndSwaps) {
  Graph g;
  std::map<std::string, ValueId> model;
  std::mt19937 rng(7);
  for (int i = 0; i < 3000; ++i) {
    std::string name = "v" + std::to_string(i);
    model[name] = g.addInput(name, {DType::F32, {1}}, Device::cpu(), {});
  }
  auto pick = [&] { return static_cast<ValueId>(rng() % g.valueCount()); };
  for (int step = 0; step < 20000; ++step) {
    const ValueId a = pick(), b = pick();
    if (step % 3 == 0 && a != b) {
      std::string na = g.value(a).name, nb = g.value(b).name;
      g.swapNames(a, b);
      model[na] = b;
      model[nb] = a;
    } else {
      std::string old = g.value(a).name;
      std::string name = g.uniqueName("r" + std::to_string(rng() % 500));
      g.rename(a, name);
      model.erase(old);
      model[name] = a;
    }
  }
  ASSERT_EQ(model.size(), g.valueCount());
  const Graph copy = g;
  for (const Graph *h : std::initializer_list<const Graph *>{&g, &copy}) {
    for (const auto &[name, v] : model) {
      ASSERT_EQ(h->value(v).name, name);
      ASSERT_EQ(h->findValue(name), v) << name;
      ASSERT_TRUE(h->nameIndexed(v)) << name;
    }
    EXPECT_FALSE(h->hasValue("r500"));
    EXPECT_FALSE(h->hasValue(""));
  }
}

}  // namespace
}  // namespace ferry
