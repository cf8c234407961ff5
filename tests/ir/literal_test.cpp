// tests/ir/literal_test.cpp — scalar literal operands in `.fy` text (`add(%x, 1.0)`): each kind
// parses to a zero-dim literal constant of the dtype its reader computes in, prints back inline
// as written, and every misuse is one error at the literal's line:col.
#include <gtest/gtest.h>

#include <cmath>
#include <set>
#include <tuple>

#include "common/parse.h"
#include "common/random_graph.h"
#include "ir/literal.h"
#include "ir/parser.h"
#include "ir/printer.h"
#include "ir/verifier.h"

namespace ferry {
namespace {

// A graph with input %x of `type` and the statement `body` defining %y.
std::string G(std::string_view type, std::string_view body) {
  return "graph g {\n  input %x : " + std::string(type) + "\n  " + std::string(body) +
         "\n  output %y\n}\n";
}

// The literal operand `i` of %y's node.
const Node &literalNode(const Graph &g, size_t i = 1) {
  const Node &y = *g.producer(*g.findValue("y"));
  const Node *lit = g.producer(y.operands.at(i));
  EXPECT_TRUE(lit != nullptr && lit->literal) << printGraph(g);
  return *lit;
}

const TensorData &valueOf(const Node &n) { return attrTensor(n.info(), n.attrs, "value"); }

std::string body(const Graph &g) {
  std::string text = printGraph(g, {.locations = false});
  size_t at = text.find("\n  %y");
  return text.substr(at + 3, text.find('\n', at + 1) - at - 3);
}

struct KindCase {
  std::string type, literal;  // the input's type, the literal as written
  DTypeCategory kind;
  DType stored;  // the dtype `add` computes in, which the literal is stored in
  double value;
  std::string printed;  // as the printer writes it back
};

TEST(Literal, EachKindParsesToAZeroDimConstantOfItsReadersDType) {
  const double inf = std::numeric_limits<double>::infinity();
  const std::vector<KindCase> cases = {
      {"f32[2]", "0.5", DTypeCategory::Floating, DType::F32, 0.5, "0.5"},
      {"f32[2]", "1e-3", DTypeCategory::Floating, DType::F32, 0.0010000000474974513, "0.001"},
      {"f64[2]", "1e-3", DTypeCategory::Floating, DType::F64, 1e-3, "0.001"},
      {"f32[2]", "-2.0", DTypeCategory::Floating, DType::F32, -2.0, "-2.0"},
      {"f32[2]", "3.", DTypeCategory::Floating, DType::F32, 3.0, "3.0"},
      {"f32[2]", ".25", DTypeCategory::Floating, DType::F32, 0.25, "0.25"},
      {"f32[2]", "1e5", DTypeCategory::Floating, DType::F32, 1e5, "1e+05"},
      {"f16[2]", "inf", DTypeCategory::Floating, DType::F16, inf, "inf"},
      {"f16[2]", "-inf", DTypeCategory::Floating, DType::F16, -inf, "-inf"},
      {"bf16[2]", "nan", DTypeCategory::Floating, DType::BF16, NAN, "nan"},
      {"f16[2]", "0.1", DTypeCategory::Floating, DType::F16, 0.0999755859375, "0.1"},
      {"bf16[2]", "0.1", DTypeCategory::Floating, DType::BF16, 0.10009765625, "0.1"},
      {"i32[2]", "0.5", DTypeCategory::Floating, DType::F32, 0.5, "0.5"},
      {"i32[2]", "2", DTypeCategory::Integer, DType::I32, 2, "2"},
      {"i32[2]", "-1", DTypeCategory::Integer, DType::I32, -1, "-1"},
      {"u8[2]", "+7", DTypeCategory::Integer, DType::U8, 7, "7"},
      {"f16[2]", "2", DTypeCategory::Integer, DType::F16, 2, "2"},
      {"f16[2]", "2049", DTypeCategory::Integer, DType::F16, 2048, "2048"},  // f16's nearest
      {"bool[2]", "2", DTypeCategory::Integer, DType::I64, 2, "2"},
      {"bool[2]", "1.5", DTypeCategory::Floating, DType::F32, 1.5, "1.5"},
      {"bool[2]", "true", DTypeCategory::Bool, DType::Bool, 1, "true"},
      {"i8[2]", "false", DTypeCategory::Bool, DType::I8, 0, "false"},
      {"f32[2]", "true", DTypeCategory::Bool, DType::F32, 1, "true"},
  };
  for (const KindCase &c : cases) {
    SCOPED_TRACE(c.type + " + " + c.literal);
    Graph g = parseOk(G(c.type, "%y = add(%x, " + c.literal + ")"));
    if (g.outputs().empty()) continue;
    const Node &lit = literalNode(g);
    EXPECT_EQ(lit.op, OpKind::Constant);
    EXPECT_EQ(*lit.literal, c.kind);
    EXPECT_EQ(g.value(lit.result).type, (TensorType{c.stored, {}}));
    EXPECT_EQ(valueOf(lit).type(), g.value(lit.result).type);
    if (std::isnan(c.value))
      EXPECT_TRUE(std::isnan(valueOf(lit).at(0)));
    else
      EXPECT_EQ(valueOf(lit).at(0), c.value);
    EXPECT_EQ(body(g),
              "%y : " + std::string(dtypeName(c.stored)) + "[2] = add(%x, " + c.printed + ")");
    EXPECT_TRUE(verify(g).ok()) << verify(g).message();
  }
}

TEST(Literal, IsANodeOfItsOwnRightBeforeItsReaderWithTheReadersOrigin) {
  Graph w = parseOk("graph g {\n  input %x : f32[2]\n  input %c : bool[2]\n"
                    "  %y = where(%c, 1.0, %x)  # model.py:7:3\n  output %y\n}\n");
  ASSERT_EQ(w.order().size(), 2u);
  const Node &lit = w.node(w.order()[0]);
  const Node &y = w.node(w.order()[1]);
  ASSERT_TRUE(lit.literal);
  EXPECT_EQ(y.operands[1], lit.result);
  EXPECT_EQ(w.value(lit.result).name, "y.a");  // named after its reader and operand
  EXPECT_EQ(lit.loc.str(), "model.py:7:3");
  EXPECT_FALSE(lit.pinDevice);
  EXPECT_FALSE(lit.inserted);
}

TEST(Literal, NamesNeverClashWithTheTextsValuesAndCannotBeUsed) {
  // %y.b is defined further down: the literal takes another name.
  Graph g = parseOk("graph g {\n  input %x : f32[2]\n  %y = add(%x, 1.0)\n  %y.b = relu(%y)\n"
                    "  output %y.b\n}\n");
  const Node &y = *g.producer(*g.findValue("y"));
  EXPECT_EQ(g.value(y.operands[1]).name, "y.b.1");
  // A literal's name is not a value of the text.
  Expected<Graph> bad =
      parseGraph("graph g {\n  input %x : f32[2]\n  %y = add(%x, 1.0)\n  %z = relu(%y.b)\n"
                 "  output %z, %y.b\n}\n",
                 "t.fy");
  ASSERT_FALSE(bad.ok());
  ASSERT_EQ(bad.status().diagnostics().size(), 2u) << bad.status().message();
  EXPECT_EQ(bad.status().diagnostics()[0].message.find("use of undefined value %y.b"), 0u);
  EXPECT_EQ(bad.status().diagnostics()[0].loc.str(), "t.fy:4:13");
  EXPECT_EQ(bad.status().diagnostics()[1].loc.str(), "t.fy:5:14");
}

struct ErrorCase {
  std::string name, text;
  int line, col;
  std::string code, message;
};

TEST(Literal, EachMisuseIsOneErrorAtItsPlaceSayingWhatWasExpected) {
  auto two = [](std::string_view body) {
    return "graph g {\n  input %x : f16[2]\n  input %u : u8[2]\n  input %c : bool[2]\n  " +
           std::string(body) + "\n  output %x\n}\n";
  };
  const std::vector<ErrorCase> cases = {
      {"two points", two("%y = add(%x, 1.0.0)"), 5, 16, "parse",
       "invalid number '1.0.0' (numbers are written 2, -1, 0.5, 1e-3, inf or nan)"},
      {"exponent without digits", two("%y = mul(%x, 1e)"), 5, 16, "parse",
       "invalid number '1e' (numbers are written"},
      {"letters in a number", two("%y = mul(%x, 2x)"), 5, 16, "parse", "invalid number '2x'"},
      {"integer beyond 64 bits", two("%y = add(%x, 99999999999999999999)"), 5, 16, "literal",
       "integer literal '99999999999999999999' does not fit in 64 bits"},
      {"float beyond a double", two("%y = add(%x, 1e999)"), 5, 16, "literal",
       "number '1e999' is out of the range of a double"},
      {"unary op", two("%y = relu(1.0)"), 5, 13, "literal",
       "operand 0 (x) of 'relu' must be a tensor (%name), found literal 1.0"},
      {"gemm", two("%y = matmul(%x, 2.0)"), 5, 19, "literal",
       "operand 1 (b) of 'matmul' must be a tensor (%name), found literal 2.0"},
      {"cast", two("%y = cast(1, to=f16)"), 5, 13, "literal",
       "operand 0 (x) of 'cast' must be a tensor (%name), found literal 1"},
      {"bool operand", two("%y = where(true, %x, %x)"), 5, 14, "literal",
       "operand 0 (cond) of 'where' must be a bool tensor (%name), found literal true"},
      {"index operand", two("%y = gather(%x, 1)"), 5, 19, "literal",
       "operand 1 (indices) of 'gather' must be an index tensor (%name of i32 or i64), found "
       "literal 1"},
      {"only literals", two("%y = add(1.0, 2)"), 5, 8, "literal",
       "'add' has only literal operands: at least one must be a tensor (%name)"},
      {"u8 overflow", two("%y = add(%u, 300)"), 5, 16, "literal",
       "literal 300 is out of range for u8 (0 to 255), the dtype 'add' computes in"},
      {"u8 negative", two("%y = add(%u, -1)"), 5, 16, "literal",
       "literal -1 is out of range for u8 (0 to 255)"},
      {"f16 overflow", two("%y = mul(%x, 1e5)"), 5, 16, "literal",
       "literal 1e+05 is out of range for f16 (its largest finite value is 65504.0)"},
      {"integer overflowing f16", two("%y = mul(%x, 70000)"), 5, 16, "literal",
       "literal 70000 is out of range for f16"},
      {"literal after an attribute", two("%y = softmax(axis=0, 1.0)"), 5, 24, "parse",
       "operands must come before attributes"},
      {"arity", two("%y = add(%x, 1.0, 2.0)"), 5, 8, "arity",
       "'add' takes 2 operands (a, b), got 3"},
      {"accepted dtypes", two("%y = sub(true, %c)"), 5, 8, "dtype",
       "operand 0 (a) of 'sub' must have a numeric (non-bool) dtype, got bool[]"},
      {"a literal result", two("1.0 = relu(%x)"), 5, 3, "parse",
       "expected a statement (input, param, output or %name = op(...)), found '1.0'"},
      {"a literal input", two("input 1.0 : f32[2]"), 5, 9, "parse",
       "expected a value name such as %x after 'input', found '1.0'"},
      {"a literal param", two("param 2 : f32[2] = zeros"), 5, 9, "parse",
       "expected a value name such as %w after 'param', found '2'"},
      {"a literal output", "graph g {\n  input %x : f32[2]\n  output true\n}\n", 3, 10, "parse",
       "expected a value name such as %y after 'output', found 'true'"},
      {"a word that is no literal", two("%y = add(%x, yes)"), 5, 16, "parse",
       "expected an operand (%name, or a literal such as 1.0, 2 or true) or an attribute "
       "(name=value), found 'yes'"},
  };
  for (const ErrorCase &c : cases) {
    SCOPED_TRACE(c.name);
    Expected<Graph> g = parseGraph(c.text, "bad.fy");
    ASSERT_FALSE(g.ok()) << printGraph(*g);
    const std::vector<Diagnostic> &ds = g.status().diagnostics();
    ASSERT_EQ(ds.size(), 1u) << g.status().message();
    EXPECT_EQ(ds[0].loc.str(), "bad.fy:" + std::to_string(c.line) + ":" + std::to_string(c.col));
    EXPECT_EQ(ds[0].code, c.code);
    EXPECT_NE(ds[0].message.find(c.message), std::string::npos)
        << "want: " << c.message << "\ngot:  " << ds[0].message;
  }
}

TEST(Literal, ErrorsExplainThemselves) {
  Expected<Graph> g = parseGraph(G("u8[2]", "%y = add(%x, 300)"), "bad.fy");
  ASSERT_FALSE(g.ok());
  const Diagnostic &d = g.status().diagnostics().at(0);
  ASSERT_EQ(d.notes.size(), 1u);
  EXPECT_EQ(d.notes[0].message,
            "a literal does not widen the dtype of the tensors it meets (PyTorch's rule for "
            "Python scalars): cast them to a wider dtype first");
  g = parseGraph(G("f32[2]", "%y = relu(2)"), "bad.fy");
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.status().diagnostics().at(0).notes.at(0).message,
            "literals are data operands of add, sub, mul, div, pow, maximum, minimum, equal, "
            "less, greater and where (as PyTorch takes Python scalars there)");
}

TEST(Literal, PrintsInlineAsWrittenAndReadsBackToTheSameGraph) {
  const std::string text = "graph g {\n"
                           "  input %x : f16[2,3]  # m.py:1:1\n"
                           "  input %i : i32[3]  # m.py:2:1\n"
                           "  input %c : bool[3]  # m.py:3:1\n"
                           "  %a : f16[2,3] = mul(%x, 0.1)  # m.py:4:1\n"
                           "  %b : f16[2,3] = pow(2.0, %a)  # m.py:5:1\n"
                           "  %d : f32[3] = div(%i, 2)  # m.py:6:1\n"
                           "  %e : bool[3] = less(%i, -1)  # m.py:7:1\n"
                           "  %f : f32[3] = where(%c, 1.0, 0)  # m.py:8:1\n"
                           "  %h : i32[3] = maximum(%i, true)  # m.py:9:1\n"
                           "  %k : f16[2,3] = add(%x, -inf)  # m.py:10:1\n"
                           "  output %b, %d, %e, %f, %h, %k  # m.py:11:1\n"
                           "}\n";
  Graph g = parseOk(text);
  // Two statements per literal in the graph, one in the text.
  EXPECT_EQ(g.order().size(), 15u);
  std::string printed = printGraph(g);
  for (const char *line :
       {"%a : f16[2,3] = mul(%x, 0.1)", "%b : f16[2,3] = pow(2.0, %a)", "%d : f32[3] = div(%i, 2)",
        "%e : bool[3] = less(%i, -1)", "%f : f32[3] = where(%c, 1.0, 0)",
        "%h : i32[3] = maximum(%i, true)", "%k : f16[2,3] = add(%x, -inf)"})
    EXPECT_NE(printed.find(line), std::string::npos) << line << "\n" << printed;
  EXPECT_EQ(printed.find("constant"), std::string::npos) << printed;
  Graph again = parseOk(printed);
  EXPECT_EQ(printGraph(again), printed);
  EXPECT_EQ(testutil::graphDifference(g, again), "");
  // A literal's dtype is what its reader computes in: div of i32 by 2 computes in f32.
  const Node &a = *g.producer(*g.findValue("a"));
  EXPECT_EQ(g.value(a.operands[1]).type, (TensorType{DType::F16, {}}));
  const Node &d = *g.producer(*g.findValue("d"));
  EXPECT_EQ(g.value(d.operands[1]).type, (TensorType{DType::F32, {}}));
}

TEST(Literal, FloatsPrintAsTheShortestTextThatReadsBackToTheirValue) {
  // The value in the dtype it is stored in: 1/3 in f16 is 0.33325195..., written 0.3333.
  for (auto [type, written, printed] :
       std::vector<std::tuple<std::string, std::string, std::string>>{
           {"f16[2]", "0.333333333", "0.3333"},
           {"bf16[2]", "0.333333333", "0.334"},
           {"f32[2]", "0.333333333", "0.33333334"},
           {"f64[2]", "0.333333333", "0.333333333"},
           {"f32[2]", "1e-30", "1e-30"},
           {"f32[2]", "-0.0", "-0.0"},
           {"f16[2]", "65504", "65504"},
           {"f16[2]", "65504.0", "65500.0"},  // f16's nearest to 65500 is 65504
           {"f32[2]", "1e20", "1e+20"}}) {
    SCOPED_TRACE(type + " " + written);
    Graph g = parseOk(G(type, "%y = mul(%x, " + written + ")"));
    std::string line = body(g);
    EXPECT_EQ(line.substr(line.find("mul(")), "mul(%x, " + printed + ")");
    Graph again = parseOk(printGraph(g));
    EXPECT_TRUE(valueOf(literalNode(again)) == valueOf(literalNode(g)));
  }
}

TEST(Literal, VerifyKeepsOneReaderThatTakesALiteralAndNoOutput) {
  Graph g = parseOk(G("f32[2]", "%y = add(%x, 1.0)"));
  ASSERT_TRUE(verify(g).ok());
  const ValueId lit = literalNode(g).result;
  {
    Graph h = g;  // a second reader
    Expected<Attrs> attrs = makeAttrs(opInfo(OpKind::Mul), {}, {});
    h.addNode({OpKind::Mul, {*h.findValue("x"), lit}, *attrs, {}, {}, {}}, "z", {DType::F32, {2}});
    Status s = verify(h);
    EXPECT_NE(s.message().find("literal %y.b is read more than once"), std::string::npos)
        << s.message();
  }
  {
    Graph h = g;  // a reader that takes no literal
    Expected<Attrs> attrs = makeAttrs(opInfo(OpKind::Relu), {}, {});
    h.addNode({OpKind::Relu, {lit}, *attrs, {}, {}, {}}, "z", {DType::F32, {}});
    Status s = verify(h);
    EXPECT_NE(s.message().find("literal %y.b is operand 0 of 'relu', which takes no literal"),
              std::string::npos)
        << s.message();
  }
  {
    Graph h = g;
    h.addOutput(lit, std::nullopt, {});
    EXPECT_NE(verify(h).message().find("literal %y.b is an output"), std::string::npos);
    // The printer still writes something that says what it is.
    EXPECT_NE(printGraph(h).find("%y.b : f32[] = constant(value=f32[]{1.0})"), std::string::npos);
  }
  {
    Graph h = g;  // a float literal stored as an integer would read back as another graph
    h.node(h.order()[0]).attrs[0] = TensorData::full(DType::I32, {}, 1);
    h.value(lit).type = {DType::I32, {}};
    EXPECT_NE(
        verify(h).message().find("a literal is a zero-dim constant whose dtype holds its kind"),
        std::string::npos)
        << verify(h).message();
  }
}

TEST(Literal, RetypingRereadsTheTextAndDropsTheKindOnlyWhereItMust) {
  Graph g = parseOk(G("f16[2]", "%y = mul(%x, 0.1)"));
  const ValueId lit = literalNode(g).result;
  retypeLiteral(g, lit, DType::F32);  // f32's 0.1, not f16's
  EXPECT_EQ(valueOf(literalNode(g)).at(0), static_cast<double>(0.1f));
  EXPECT_EQ(*literalNode(g).literal, DTypeCategory::Floating);
  retypeLiteral(g, lit, DType::I32);  // a pin @i32: 0.1 truncates to 0, written 0
  EXPECT_EQ(*literalNode(g).literal, DTypeCategory::Integer);
  EXPECT_EQ(literalOf(g, lit).str(), "0");
  retypeLiteral(g, lit, DType::Bool);
  EXPECT_EQ(literalOf(g, lit).str(), "false");

  Graph h = parseOk(G("f32[2]", "%y = mul(%x, 100000)"));
  retypeLiteral(h, literalNode(h).result, DType::F16);  // no longer fits: inf, a float
  EXPECT_EQ(literalOf(h, literalNode(h).result).str(), "inf");
  EXPECT_EQ(*literalNode(h).literal, DTypeCategory::Floating);
}

// The random graphs of the round-trip tests hold literals of every kind, in both positions.
TEST(Literal, RandomGraphsHoldLiteralsOfEveryKindThatRoundTrip) {
  std::set<DTypeCategory> kinds;
  std::set<size_t> positions;
  int graphsWithLiterals = 0;
  for (uint64_t seed = 0; seed < 250; ++seed) {
    Graph g = testutil::randomGraph(seed, {.npyParams = false});
    bool any = false;
    for (NodeId id : g.order())
      for (size_t i = 0; i < g.node(id).operands.size(); ++i)
        if (const Node *p = g.producer(g.node(id).operands[i]); p && p->literal) {
          kinds.insert(*p->literal);
          positions.insert(i);
          any = true;
        }
    graphsWithLiterals += any;
    const std::string once = printGraph(g, {.locations = false});
    Expected<Graph> again = parseGraph(once, "g.fy");
    ASSERT_TRUE(again.ok()) << again.status().message() << "\n" << once;
    ASSERT_EQ(printGraph(*again, {.locations = false}), once);
  }
  EXPECT_EQ(kinds.size(), 3u);
  EXPECT_EQ(positions, (std::set<size_t>{0, 1, 2}));
  EXPECT_GT(graphsWithLiterals, 40);
}

}  // namespace
}  // namespace ferry
