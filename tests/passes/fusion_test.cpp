// tests/passes/fusion_test.cpp — the fusion pass's rules (passes/fusion.cpp): what joins a group
// and what ends one, and batch_norm folded into the conv2d before it (fold_batch_norm.cpp).
// That fused graphs compute what unfused ones do is tests/runtime/fusion_property_test.cpp's.
#include <gtest/gtest.h>

#include <cmath>

#include "common/parse.h"
#include "passes/compile.h"
#include "passes/lower.h"

namespace ferry {
namespace {

// Compiled as build() compiles: with this build's capability tables (the CPU fuses).
CompileResult compiled(std::string_view text, bool fusion = true,
                       std::vector<Device> devices = {Device::cpu()}) {
  CompileOptions o;
  o.devices = std::move(devices);
  o.fusion = fusion;
  if (o.devices.size() > 1) o.placement = PlacementPolicy::Auto;
  o.capabilities = backendCapabilities();
  CompileResult r = compile(parseOk(text), o);
  EXPECT_TRUE(r.ok());
  return r;
}

// Each group as its members' value names, "h a" (in node order).
std::vector<std::string> groups(const Graph &g) {
  std::vector<std::string> out;
  for (const FusionGroup &fg : g.groups()) {
    std::string s;
    for (NodeId m : fg.members) s += (s.empty() ? "" : " ") + g.value(g.node(m).result).name;
    out.push_back(s);
  }
  return out;
}

using Groups = std::vector<std::string>;

TEST(Fusion, AChainWithABroadcastOperandIsOneGroupAndItsAnchorComesFirst) {
  CompileResult r = compiled(R"(graph g {
  input %x : f32[4,8]
  param %w : f32[8,8] = randn(seed=1)
  param %b : f32[8] = zeros
  param %row : f32[8] = ones
  %h = linear(%x, %w, %b)
  %a = gelu(%h)
  %s = mul(%a, %row)
  %y = add(%s, %x)
  output %y
})");
  EXPECT_EQ(groups(r.graph), (Groups{"h a s y"}));
  const FusionGroup &fg = r.graph.groups()[0];
  EXPECT_EQ(r.graph.value(r.graph.node(fg.anchor).result).name, "h");
  EXPECT_EQ(r.graph.value(r.graph.node(fg.root).result).name, "y");
  EXPECT_EQ(r.stats.fusionGroups, 1);
  EXPECT_EQ(r.stats.fusedNodes, 4);
}

TEST(Fusion, AValueReadOutsideTheGroupOrAnOutputEndsIt) {
  // %a is read by %y and by %z: it is no member of %y's group (only a root's value leaves one);
  // %e is an output, so %f's group stops before it.
  CompileResult r = compiled(R"(graph g {
  input %x : f32[16]
  %a = exp(%x)
  %b = neg(%a)
  %y = add(%b, %a)
  %z = relu(%a)
  %e = abs(%x)
  %f = sqrt(%e)
  output %y
  output %z
  output %e
  output %f
})");
  EXPECT_EQ(groups(r.graph), (Groups{"b y"}));
}

TEST(Fusion, AProducerOfAnotherShapeIsAnInputNotAMember) {
  // %s is [8]: computing it inside %y's [4,8] group would compute it 4 times.
  CompileResult r = compiled(R"(graph g {
  input %x : f32[4,8]
  input %v : f32[8]
  %s = sigmoid(%v)
  %m = mul(%x, %s)
  %y = tanh(%m)
  output %y
})");
  EXPECT_EQ(groups(r.graph), (Groups{"m y"}));
}

TEST(Fusion, NoGroupCrossesDevicesAndNoneWithoutFusionOrATargetThatFuses) {
  const char *text = R"(graph g {
  input %x : f32[16]
  %a = exp(%x)
  %b @cpu:1 = neg(%a)
  %c = abs(%b)
  %d = relu(%c)
  output %d
})";
  CompileResult two = compiled(text, true, {Device::cpu(), Device::cpu(1)});
  EXPECT_EQ(groups(two.graph), (Groups{"b c d"}));
  EXPECT_TRUE(compiled(text, false, {Device::cpu(), Device::cpu(1)}).graph.groups().empty());
  // compile() without a backend's capability table knows no target that fuses.
  CompileOptions bare;
  bare.devices = {Device::cpu(), Device::cpu(1)};
  bare.placement = PlacementPolicy::Auto;
  CompileResult r = compile(parseOk(text), bare);
  EXPECT_TRUE(r.ok());
  EXPECT_TRUE(r.graph.groups().empty());
}

TEST(Fusion, AGroupTakesOneAnchorAndNoPrologue) {
  // relu before the second matmul is not pulled into its group (no prologues), and the second
  // matmul's group cannot take the first one as well.
  CompileResult r = compiled(R"(graph g {
  input %x : f32[4,4]
  param %w : f32[4,4] = randn(seed=1)
  %h = matmul(%x, %w)
  %r = relu(%h)
  %k = matmul(%r, %w)
  %y = add(%k, %h)
  output %y
})");
  // %h is read by %r and %y: it leaves every group; %r's group is then %r alone (none).
  EXPECT_EQ(groups(r.graph), (Groups{"k y"}));
}

constexpr std::string_view kConvBn = R"(graph g {
  input %x : f32[2,3,6,6]
  param %w : f32[4,3,3,3] = randn(seed=1)
  param %cb : f32[4] = randn(seed=2)
  param %g : f32[4] = randn(seed=3)
  param %b : f32[4] = randn(seed=4)
  param %m : f32[4] = randn(seed=5)
  param %v : f32[4] = [0.5, 1.0, 2.0, 4.0]
  %c = conv2d(%x, %w, %cb, padding=[1, 1])
  %n = batch_norm(%c, %g, %b, %m, %v, eps=0.001)
  %y = relu(%n)
  output %y
  output %n
})";

TEST(Fusion, ABatchNormWithParamStatisticsIsFoldedIntoItsConv) {
  CompileResult r = compiled(kConvBn);
  EXPECT_EQ(r.stats.batchNormsFolded, 1);
  int bns = 0;
  for (NodeId id : r.graph.order()) bns += r.graph.node(id).op == OpKind::BatchNorm;
  EXPECT_EQ(bns, 0);
  // The conv's value carries the batch_norm's name, an output; the old params are gone.
  const Node *n = r.graph.producer(*r.graph.findValue("n"));
  ASSERT_NE(n, nullptr);
  EXPECT_EQ(n->op, OpKind::Conv2d);
  for (const ParamDecl &p : r.graph.params())
    for (const char *gone : {"w", "cb", "g", "b", "m", "v"})
      EXPECT_NE(r.graph.value(p.value).name, gone) << "an unread param is kept";
  // W'[o] = W[o] * s[o], b'[o] = (cb[o] - m[o]) * s[o] + b[o], s = g / sqrt(v + eps).
  const Graph g0 = parseOk(kConvBn);
  auto param = [](const Graph &g, const std::string &name) -> const TensorData & {
    return g.paramOf(*g.findValue(name)).data;
  };
  const TensorData &w = param(g0, "w"), &cb = param(g0, "cb"), &ga = param(g0, "g"),
                   &be = param(g0, "b"), &m = param(g0, "m"), &v = param(g0, "v");
  const TensorData &w2 = r.graph.paramOf(n->operands[1]).data, &b2 = r.graph.paramOf(n->operands[2]).data;
  for (int64_t o = 0; o < 4; ++o) {
    const double s = ga.at(o) / std::sqrt(v.at(o) + 0.001);
    EXPECT_FLOAT_EQ(static_cast<float>(b2.at(o)), static_cast<float>((cb.at(o) - m.at(o)) * s + be.at(o)));
    for (int64_t i = 0; i < 27; ++i)
      EXPECT_FLOAT_EQ(static_cast<float>(w2.at(o * 27 + i)), static_cast<float>(w.at(o * 27 + i) * s));
  }
  // Without fusion, nothing is folded.
  CompileResult plain = compiled(kConvBn, false);
  EXPECT_EQ(plain.stats.batchNormsFolded, 0);
  EXPECT_EQ(plain.graph.producer(*plain.graph.findValue("n"))->op, OpKind::BatchNorm);
}

TEST(Fusion, ABatchNormIsNotFoldedWhenItsStatisticsOrTheConvsValueAreReadElsewhere) {
  // The statistics are an input: known only at run time.
  std::string text(kConvBn);
  text.replace(text.find("  param %m : f32[4] = randn(seed=5)\n"), 36, "  input %m : f32[4]\n");
  EXPECT_EQ(compiled(text).stats.batchNormsFolded, 0);
  // The conv's own value is an output too.
  std::string shared(kConvBn);
  shared.replace(shared.find("  output %n\n"), 12, "  output %n\n  output %c\n");
  EXPECT_EQ(compiled(shared).stats.batchNormsFolded, 0);
}

// GELU as PyTorch's ONNX export writes it out, x/2·(1 + erf(x/√2)), in the forms exporters use:
// each becomes one gelu that keeps the last mul's value and name, its constants gone.
TEST(Fusion, AGeluWrittenOutWithErfRunsAsOneGelu) {
  const std::vector<std::string> forms = {
      // PyTorch: div, erf, add, mul by x, mul by 0.5
      "%t = div(%x, 1.4142135381698608)\n  %e = erf(%t)\n  %s = add(%e, 1.0)\n"
      "  %m = mul(%x, %s)\n  %y = mul(%m, 0.5)\n",
      // commuted, and 1/√2 as a multiply
      "%t = mul(0.7071067690849304, %x)\n  %e = erf(%t)\n  %s = add(1.0, %e)\n"
      "  %m = mul(%s, %x)\n  %y = mul(0.5, %m)\n",
      // x/2 first
      "%t = div(%x, 1.4142135381698608)\n  %e = erf(%t)\n  %s = add(%e, 1.0)\n"
      "  %h = mul(%x, 0.5)\n  %y = mul(%h, %s)\n"};
  for (const std::string &form : forms) {
    SCOPED_TRACE(form);
    const std::string text = "graph g {\n  input %x : f32[4,8]\n  " + form + "  %z = tanh(%y)\n"
                             "  output %z\n  output %y\n}\n";
    CompileResult r = compiled(text);
    EXPECT_EQ(r.stats.gelusFolded, 1);
    const Node *y = r.graph.producer(*r.graph.findValue("y"));
    ASSERT_NE(y, nullptr);
    EXPECT_EQ(y->op, OpKind::Gelu);
    EXPECT_EQ(r.graph.value(y->operands[0]).name, "x");
    int nodes = 0;
    for (NodeId id : r.graph.order()) nodes += r.graph.node(id).op != OpKind::Constant;
    EXPECT_EQ(nodes, 2);  // gelu and tanh
    for (NodeId id : r.graph.order()) EXPECT_NE(r.graph.node(id).op, OpKind::Constant);
    EXPECT_EQ(compiled(text, false).stats.gelusFolded, 0);
  }
}

TEST(Fusion, AWrittenOutGeluIsKeptWhenAPartIsReadElsewhereOrItIsNotQuiteGelu) {
  const std::string head = "graph g {\n  input %x : f32[4,8]\n";
  const std::string body =
      "  %t = div(%x, 1.4142135381698608)\n  %e = erf(%t)\n  %s = add(%e, 1.0)\n"
      "  %m = mul(%x, %s)\n  %y = mul(%m, 0.5)\n  output %y\n";
  EXPECT_EQ(compiled(head + body + "}\n").stats.gelusFolded, 1);
  // erf's value is an output too; the constant is not √2; 1 is 2; another value is multiplied.
  EXPECT_EQ(compiled(head + body + "  output %e\n}\n").stats.gelusFolded, 0);
  std::string notRoot2 = body;
  notRoot2.replace(notRoot2.find("1.4142135381698608"), 18, "1.4142");
  EXPECT_EQ(compiled(head + notRoot2 + "}\n").stats.gelusFolded, 0);
  std::string plusTwo = body;
  plusTwo.replace(plusTwo.find("add(%e, 1.0)"), 12, "add(%e, 2.0)");
  EXPECT_EQ(compiled(head + plusTwo + "}\n").stats.gelusFolded, 0);
  std::string otherX = "graph g {\n  input %x : f32[4,8]\n  input %w : f32[4,8]\n" + body;
  otherX.replace(otherX.find("mul(%x, %s)"), 11, "mul(%w, %s)");
  EXPECT_EQ(compiled(otherX + "}\n").stats.gelusFolded, 0);
  // f16 keeps its five roundings.
  std::string half = "graph g {\n  input %x : f16[4,8]\n" + body + "}\n";
  EXPECT_EQ(compiled(half).stats.gelusFolded, 0);
}

}  // namespace
}  // namespace ferry
