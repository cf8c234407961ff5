// tests/tools/ferry_compile_dot_test.cpp — ferry-compile's pictures: one bold edge per transfer
// however many users it has, long chains drawn as one box, long names cut in labels (whole in
// tooltips), and a legend for every kind of node.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tool_test_util.h"

namespace ferry {
namespace {

using namespace tooltest;

// %x crosses to cpu:1 once and is read there by three nodes.
constexpr const char *kThreeUsers = R"(graph three {
  input %x : f32[4,8] @cpu
  %a @cpu:1 = relu(%x)
  %b @cpu:1 = neg(%x)
  %c @cpu:1 = exp(%x)
  %s = add(%a, %b)
  %t = add(%s, %c)
  output %t
}
)";

// A chain of `n` elementwise nodes after the input (relu, neg, exp, tanh in turn), the last one
// the output; `pin` >= 0 pins that node to cpu. Value `v<i>` is node i's result.
std::string chain(int n, int pin = -1, const std::string &name = "") {
  const char *ops[] = {"relu", "neg", "exp", "tanh"};
  std::string s = "graph chain {\n  input %x : f32[4,8] @cpu\n";
  auto value = [&](int i) { return i == 5 && !name.empty() ? name : "v" + std::to_string(i); };
  for (int i = 0; i < n; ++i)
    s += "  %" + value(i) + (i == pin ? " @cpu" : "") + " = " + ops[i % 4] + "(%" +
         (i == 0 ? std::string("x") : value(i - 1)) + ")\n";
  return s + "  output %" + value(n - 1) + "\n}\n";
}

class FerryCompileDot : public FerryCompileTest {};

// The picture counts the transfers the summary counts: one bold edge per transfer, however
// many nodes read its result.
TEST_F(FerryCompileDot, OneTransferIsOneBoldEdgeWhateverItsUsers) {
  const std::string model = shellQuote(write("three.fy", kThreeUsers));
  const std::string flags = " --devices cpu,cpu:1 --placement auto";
  Result text = run(model + flags);
  ASSERT_EQ(text.exit, 0) << text.err;
  EXPECT_TRUE(contains(text.out, "#   transfers: 1, 128 B\n")) << text.out;
  Result dot = run(model + flags + " --emit dot");
  ASSERT_EQ(dot.exit, 0) << dot.err;
  const std::vector<std::string> bold = drawn(dot.out, "style=bold");
  ASSERT_EQ(bold.size(), 1u) << dot.out;
  // Into the transfer's point (node 5), which the three users read from.
  EXPECT_TRUE(bold[0].starts_with("  v0 -> n5 [label=\"transfer -> cpu:1 128 B\\nf32[4,8]\""))
      << bold[0];
  EXPECT_EQ(drawn(dot.out, "n5 [shape=point").size(), 1u) << dot.out;
  EXPECT_EQ(drawn(dot.out, "  n5 -> n").size(), 3u) << dot.out;
  EXPECT_EQ(count(dot.out, "transfer -> cpu:1"), 1u) << dot.out;
}

// A weight's copy is made once, at load: the picture says so, where an activation's says bytes
// per run.
TEST_F(FerryCompileDot, AWeightsCopyIsDrawnAsMadeAtLoad) {
  const std::string model = shellQuote(std::string(FERRY_SOURCE_DIR) + "/examples/bias_elsewhere.fy");
  Result dot = run(model + " --devices cpu,cpu:1 --placement auto --emit dot");
  ASSERT_EQ(dot.exit, 0) << dot.err;
  const std::vector<std::string> bold = drawn(dot.out, "style=bold");
  ASSERT_EQ(bold.size(), 1u) << dot.out;
  EXPECT_TRUE(contains(bold[0], "label=\"transfer -> cpu:1 1.0 KiB at load\\nf32[256]\""))
      << bold[0];
  EXPECT_TRUE(contains(dot.out, "transfer of %fc1.bias to cpu:1, 1024 bytes once, at load (a weight)"))
      << dot.out;
  EXPECT_FALSE(contains(dot.out, "bytes per run")) << dot.out;
}

// A 300-node chain is one box; the picture stays small.
TEST_F(FerryCompileDot, ALongChainIsOneBox) {
  Result r = run("--emit dot " + shellQuote(write("chain.fy", chain(300))));
  ASSERT_EQ(r.exit, 0) << r.err;
  // v0 .. v298 are one box (the output v299 stays a node of its own).
  const std::vector<std::string> boxes = drawn(r.out, "shape=box3d");
  ASSERT_EQ(boxes.size(), 1u) << r.out;
  EXPECT_TRUE(contains(boxes[0], "label=\"299 nodes: relu, neg, exp, ...\\n(%v0 .. %v298)\\n"
                                 "f32[4,8]\""))
      << boxes[0];
  EXPECT_TRUE(contains(boxes[0], "tooltip=\"299 nodes, drawn as one box: %v0, %v1, ")) << boxes[0];
  EXPECT_EQ(drawn(r.out, "shape=box,").size(), 1u) << r.out;  // %v299
  EXPECT_LT(r.out.size(), 5000u);
  EXPECT_TRUE(
      contains(r.out, "legend_chain [shape=box3d, label=\"more than 16 nodes\\nin a chain\"]"))
      << r.out;
  // The text dump still has every node.
  const std::string text = run(shellQuote(path("chain.fy"))).out;
  EXPECT_EQ(count(text, " = relu(") + count(text, " = neg("), 150u);
}

// The threshold: 16 nodes before the output are drawn one by one, 17 are one box.
TEST_F(FerryCompileDot, OnlyChainsOfMoreThanSixteenNodesAreCollapsed) {
  Result sixteen = run("--emit dot " + shellQuote(write("a.fy", chain(17))));
  ASSERT_EQ(sixteen.exit, 0) << sixteen.err;
  EXPECT_EQ(drawn(sixteen.out, "shape=box3d").size(), 0u);
  Result seventeen = run("--emit dot " + shellQuote(write("b.fy", chain(18))));
  ASSERT_EQ(seventeen.exit, 0) << seventeen.err;
  EXPECT_EQ(drawn(seventeen.out, "shape=box3d").size(), 1u);
}

// What breaks a chain, each kind on its own: node 20 of a 60-node chain is pinned to a device or
// a dtype, a cast, a transfer, marked inserted, rejected, or a graph output. Each time the chain
// is cut there: one box of the 20 nodes before it, one of the 38 after it (the last node, v59,
// is the output and not counted), and node 20 drawn on its own. The transfer moves the rest of
// the chain to cpu:1; were it part of a chain, the second box would hold it (39 nodes).
TEST_F(FerryCompileDot, EveryKindOfNodeThatMustBeSeenBreaksAChain) {
  const std::string v20 = "  %v20 = relu(%v19)\n";
  struct Case {
    std::string kind, line, extraInput, extraOutput;
    int exit = 0;
    std::string drawnAs;  ///< in the DOT line of node 20
  };
  const Case cases[] = {
      {"pinned to a device", "  %v20 @cpu = relu(%v19)\n", "", "", 0, "label=\"%v20 = relu"},
      {"pinned to a dtype", "  %v20 @f32 = relu(%v19)\n", "", "", 0, "label=\"%v20 = relu"},
      {"a cast", "  %v20 = cast(%v19, to=f16)\n", "", "", 0, "label=\"%v20 = cast"},
      {"a transfer", "  %v20 = transfer(%v19, to=cpu:1)\n", "", "", 0, "shape=point"},
      {"inserted", "  %v20 = relu(%v19)  # inserted\n", "", "", 0, "label=\"%v20 = relu"},
      // %h on cpu:1 and %v19 on cpu: strict placement rejects the add.
      {"rejected", "  %v20 = add(%v19, %h)\n", "  input %h : f32[4,8] @cpu:1\n", "", 1,
       "color=red"},
      {"a graph output", v20, "", "  output %v20\n", 0, "label=\"%v20 = relu"},
  };
  for (const Case &c : cases) {
    SCOPED_TRACE("node 20 is " + c.kind);
    std::string text = chain(60);
    ASSERT_TRUE(contains(text, v20));
    text.replace(text.find(v20), v20.size(), c.line);
    text.insert(text.find("  %v0 "), c.extraInput);
    text.insert(text.find("  output %v59"), c.extraOutput);
    Result r = run("--emit dot --devices cpu,cpu:1 " + shellQuote(write("c.fy", text)));
    ASSERT_EQ(r.exit, c.exit) << r.err;
    const std::vector<std::string> boxes = drawn(r.out, "shape=box3d");
    ASSERT_EQ(boxes.size(), 2u) << r.out;
    EXPECT_TRUE(contains(boxes[0], "label=\"20 nodes: ")) << boxes[0];
    EXPECT_TRUE(contains(boxes[0], "(%v0 .. %v19)")) << boxes[0];
    EXPECT_TRUE(contains(boxes[1], "label=\"38 nodes: ")) << boxes[1];
    EXPECT_TRUE(contains(boxes[1], "(%v21 .. %v58)")) << boxes[1];
    const std::vector<std::string> node = drawn(r.out, "  n20 [");
    ASSERT_EQ(node.size(), 1u) << r.out;
    EXPECT_TRUE(contains(node[0], c.drawnAs)) << node[0];
  }
}

// A 200-character name is cut in labels, whole in the tooltip.
TEST_F(FerryCompileDot, LongNamesAreCutInLabels) {
  const std::string name = "layer_" + std::string(188, 'n') + "_final";
  ASSERT_EQ(name.size(), 200u);
  Result r = run("--emit dot " + shellQuote(write("long.fy", chain(8, 5, name))));
  ASSERT_EQ(r.exit, 0) << r.err;
  const std::string shortened = "layer_nnnnnnnnnnnnnn...nnn_final";  // its first 20 and last 9
  const std::vector<std::string> node = drawn(r.out, "label=\"%" + shortened + " = neg");
  ASSERT_EQ(node.size(), 1u) << r.out;
  EXPECT_TRUE(contains(node[0], "tooltip=\"%" + name + ": ")) << node[0];
  // Only tooltips carry the whole name.
  for (const std::string &line : drawn(r.out, name))
    EXPECT_TRUE(contains(line, "tooltip=\"%" + name) || contains(line, "from %" + name)) << line;
}

// The legend shows every kind of node the picture draws.
TEST_F(FerryCompileDot, TheLegendHasEveryKind) {
  Result r = run("--emit dot " + shellQuote(write("three.fy", kThreeUsers)) +
                 " --devices cpu,cpu:1 --placement auto");
  ASSERT_EQ(r.exit, 0) << r.err;
  for (const char *item :
       {"legend_in [shape=invhouse, label=\"input\"]",
        "legend_param [shape=cylinder, label=\"param\"]", "legend_op [shape=box, label=\"op\"]",
        "legend_cast [shape=hexagon, color=\"#b8860b\", penwidth=1.5, "
        "label=\"cast\"]",
        "legend_inserted [shape=box, style=\"filled,dashed\", label=\"inserted\"]",
        "legend_rejected [shape=box, style=\"filled,bold\", color=red, "
        "fontcolor=red, penwidth=2, label=\"rejected\"]",
        "legend_a -> legend_b [label=\"transfer\", style=bold", "label=\"@cpu\"",
        "label=\"@cpu:1\""})
    EXPECT_TRUE(contains(r.out, item)) << item << " missing from:\n" << r.out;
  EXPECT_FALSE(contains(r.out, "legend_chain")) << "no long chain here";
}

}  // namespace
}  // namespace ferry
