// tests/passes/literal_pass_test.cpp — scalar literals (`add(%x, 1.0)`) through compile(): the
// dtype pass retypes a literal to its reader's compute dtype instead of casting it (pins,
// autocast), placement puts it with its reader, simplify keeps it one per reader, and the
// compiled dump reads back and recompiles to itself.
#include <gtest/gtest.h>

#include "common/parse.h"
#include "ir/literal.h"
#include "ir/printer.h"
#include "ir/verifier.h"
#include "passes/compile.h"

namespace ferry {
namespace {

CompileOptions options(DTypePolicy dtype = {DTypePolicy::Kind::Strict, DType::F16},
                       PlacementPolicy placement = PlacementPolicy::Strict) {
  CompileOptions o;
  o.devices = {Device::cpu(), Device::cpu(1)};
  o.dtype = dtype;
  o.placement = placement;
  return o;
}

CompileResult compileOk(std::string_view text, const CompileOptions &o = options()) {
  CompileResult r = compile(parseOk(text), o);
  EXPECT_TRUE(r.ok()) << renderText(r.diagnostics, {.snippet = false});
  EXPECT_TRUE(verify(r.graph).ok()) << verify(r.graph).message();
  return r;
}

// The statement defining %name in the compiled dump, without its location comment.
std::string line(const Graph &g, std::string_view name) {
  const std::string text = printGraph(g, {.locations = false});
  const std::string key = "\n  %" + std::string(name) + " ";
  size_t at = text.find(key);
  if (at == std::string::npos) return "<no %" + std::string(name) + ">\n" + text;
  return text.substr(at + 4, text.find('\n', at + 1) - at - 4);
}

const Node &literalOf(const Graph &g, std::string_view reader, size_t i) {
  const Node &n = *g.producer(*g.findValue(reader));
  const Node *lit = g.producer(n.operands.at(i));
  EXPECT_TRUE(lit && lit->literal);
  return *lit;
}

// A dump of a compiled graph parses, prints the same, and compiles to the same statements.
void expectReadsBackAndRecompiles(const CompileResult &r, const CompileOptions &o) {
  const std::string dump = printGraph(r.graph, {.locations = false});
  Expected<Graph> again = parseGraph(dump, "compiled.fy");
  ASSERT_TRUE(again.ok()) << again.status().message() << "\n" << dump;
  EXPECT_EQ(printGraph(*again, {.locations = false}), dump);
  CompileResult re = compile(std::move(*again), o);
  ASSERT_TRUE(re.ok()) << renderText(re.diagnostics, {.snippet = false});
  EXPECT_EQ(printGraph(re.graph, {.locations = false}), dump);
}

TEST(LiteralPass, APinnedReaderRetypesItsLiteralInsteadOfCastingIt) {
  const std::string_view text = R"(graph g {
  input %x : f32[4]
  %y @f16 = add(%x, 0.1)
  %z @i32 = mul(%x, 1.5)
  %w @bool = add(%x, 2)
  output %y, %z, %w
})";
  const CompileOptions o = options();
  CompileResult r = compileOk(text, o);
  EXPECT_EQ(r.stats.castsInserted, 6) << "one cast of %x per pin and one back per output";
  EXPECT_EQ(line(r.graph, "y.f16"), "y.f16 : f16[4] @cpu @f16 = add(%x.f16, 0.1)");
  // f16's 0.1, re-read from the text "0.1", not a rounding of f32's
  EXPECT_EQ(attrTensor(opInfo(OpKind::Constant), literalOf(r.graph, "y.f16", 1).attrs, "value"),
            TensorData::full(DType::F16, {}, 0.1));
  // Converted as `cast` converts, and written as what it now is: 1.5 as i32 is 1, 2 as bool true.
  EXPECT_EQ(line(r.graph, "z.i32"), "z.i32 : i32[4] @cpu @i32 = mul(%x.i32, 1)");
  EXPECT_EQ(line(r.graph, "w.bool"), "w.bool : bool[4] @cpu @bool = add(%x.bool, true)");
  const Node &lit = literalOf(r.graph, "y.f16", 1);
  const Reason &why = r.graph.dtypeReason(lit.result);
  EXPECT_EQ(why.kind, Reason::Kind::FromConsumer);
  EXPECT_EQ(r.graph.value(why.from).name, "y.f16");
  expectReadsBackAndRecompiles(r, o);
}

TEST(LiteralPass, AutocastMovesALiteralWithItsTensorWithoutACast) {
  const std::string_view text = R"(graph g {
  input %a : f32[4,4]
  %h = matmul(%a, %a)
  %q = mul(%h, 0.1)
  %p = pow(%q, 2.5)
  output %p
})";
  for (DType low : {DType::F16, DType::BF16}) {
    SCOPED_TRACE(std::string(dtypeName(low)));
    const CompileOptions o = options({DTypePolicy::Kind::Autocast, low});
    CompileResult r = compileOk(text, o);
    const std::string l(dtypeName(low));
    // The matmul computes in `low`; the mul follows it, its literal with it; pow (autocast's f32
    // list) reads a cast of %q and its literal in f32.
    EXPECT_EQ(line(r.graph, "q"), "q : " + l + "[4,4] @cpu = mul(%h, 0.1)");
    EXPECT_EQ(line(r.graph, "p"), "p : f32[4,4] @cpu = pow(%q.f32, 2.5)");
    EXPECT_EQ(r.graph.value(literalOf(r.graph, "q", 1).result).type.dtype, low);
    for (NodeId id : r.graph.order()) {
      const Node &n = r.graph.node(id);
      if (n.op == OpKind::Cast) {
        EXPECT_FALSE(isLiteral(r.graph, n.operands[0]));
      }
    }
    expectReadsBackAndRecompiles(r, o);
  }
}

TEST(LiteralPass, PlacementPutsALiteralOnItsReadersDevice) {
  const std::string_view text = R"(graph g {
  input %x : f32[4] @cpu:1
  input %y : f32[4] @cpu
  %a = add(%x, 1.0)
  %b @cpu:1 = mul(%y, 2.0)
  output %a, %b
})";
  for (PlacementPolicy p : {PlacementPolicy::Strict, PlacementPolicy::Auto}) {
    SCOPED_TRACE(std::string(placementPolicyName(p)));
    const CompileOptions o = options({DTypePolicy::Kind::Strict, DType::F16}, p);
    if (p == PlacementPolicy::Strict) {
      // %y on cpu is read on cpu:1: strict rejects that, and says nothing of the literal.
      CompileResult bad = compile(parseOk(text), o);
      ASSERT_FALSE(bad.ok());
      ASSERT_EQ(bad.diagnostics.size(), 1u) << renderText(bad.diagnostics);
      EXPECT_NE(bad.diagnostics[0].message.find("'mul'"), std::string::npos);
      continue;
    }
    CompileResult r = compileOk(text, o);
    for (std::string_view reader : {"a", "b"}) {
      const Node &lit = literalOf(r.graph, reader, 1);
      EXPECT_EQ(r.graph.value(lit.result).device, Device::cpu(1)) << reader;
    }
    EXPECT_EQ(r.stats.transfers, 1) << "only %y moves";
  }
  CompileResult r = compileOk(R"(graph g {
  input %x : f32[4] @cpu:1
  %a = add(%x, 1.0)
  output %a
})");
  const Node &lit = literalOf(r.graph, "a", 1);
  EXPECT_EQ(r.graph.value(lit.result).device, Device::cpu(1));
  EXPECT_EQ(r.graph.deviceReason(lit.result).kind, Reason::Kind::FromConsumer);
  EXPECT_EQ(r.stats.transfers, 0);
}

TEST(LiteralPass, SimplifyKeepsOneLiteralPerReader) {
  const std::string_view text = R"(graph g {
  input %x : f32[4]
  %a = add(%x, 1.0)
  %b = mul(%x, 1.0)
  %c = add(%a, %b)
  output %c
})";
  CompileResult r = compileOk(text);
  EXPECT_EQ(line(r.graph, "a"), "a : f32[4] @cpu = add(%x, 1.0)");
  EXPECT_EQ(line(r.graph, "b"), "b : f32[4] @cpu = mul(%x, 1.0)");
  EXPECT_NE(literalOf(r.graph, "a", 1).id, literalOf(r.graph, "b", 1).id);
  expectReadsBackAndRecompiles(r, options());
}

}  // namespace
}  // namespace ferry
