// tests/passes/dtype_test.cpp — the dtype pass: strict rejections, promote and autocast casts,
// pins, outputs, minimal casts on the consumer's device, idempotence (story 4 of [placement]).
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <set>
#include <tuple>

#include "common/parse.h"
#include "ir/printer.h"
#include "ir/verifier.h"
#include "passes/compile.h"
#include "passes/pass.h"

namespace ferry {
namespace {

using enum DType;

constexpr DTypePolicy kStrict{DTypePolicy::Kind::Strict, F16};
constexpr DTypePolicy kPromote{DTypePolicy::Kind::Promote, F16};
constexpr DTypePolicy kAutocast{DTypePolicy::Kind::Autocast, F16};
constexpr DTypePolicy kAutocastBF16{DTypePolicy::Kind::Autocast, BF16};

// Devices as strict placement gives them when no operands disagree, so that these tests depend
// on the dtype pass alone (placement is its own pass and file): a node runs where it is pinned,
// a transfer where it sends to, any other node where its first placed operand is, else on the
// CPU; an unpinned param goes where its first consumer runs. Tests that use two devices write
// their transfers.
void placeForTest(Graph &g) {
  for (const ParamDecl &p : g.params())
    if (p.pin) g.value(p.value).device = p.pin;
  for (NodeId id : g.order()) {
    const Node &n = g.node(id);
    std::optional<Device> d = n.pinDevice;
    if (!d && n.op == OpKind::Transfer) d = attrDevice(n.info(), n.attrs, "to");
    for (ValueId o : n.operands)
      if (!d) d = g.value(o).device;
    g.value(n.result).device = d.value_or(Device::cpu());
    for (ValueId o : n.operands)
      if (!g.value(o).device) g.value(o).device = d.value_or(Device::cpu());
  }
}

// Every postcondition the pass promises, checked on every graph it accepts.
void expectPostconditions(const Graph &g) {
  Status s = verify(g);
  EXPECT_TRUE(s.ok()) << s.message();
  std::span<const NodeId> order = g.order();
  std::set<std::tuple<ValueId, DType, std::optional<Device>>> castKeys;
  for (size_t pos = 0; pos < order.size(); ++pos) {
    const Node &n = g.node(order[pos]);
    const OpInfo &op = n.info();
    const Value &r = g.value(n.result);
    std::optional<DType> common;
    for (size_t i = 0; i < n.operands.size(); ++i) {
      const Value &v = g.value(n.operands[i]);
      if (n.op != OpKind::Transfer) {
        EXPECT_EQ(v.device, r.device) << "operand %" << v.name << " of %" << r.name;
      }
      if (op.operand(i).role != OperandRole::Data || op.dtypeRule == DTypeRule::FromAttr) continue;
      if (n.pinDType) {
        EXPECT_EQ(v.type.dtype, *n.pinDType) << "%" << v.name << " -> %" << r.name;
      }
      // A pin sets the operands' dtype; the rule may still fix the result's (exp @i32 is f32).
      if (!n.pinDType &&
          (op.dtypeRule == DTypeRule::Promote || op.dtypeRule == DTypeRule::PromoteFloat)) {
        EXPECT_EQ(v.type.dtype, r.type.dtype) << "%" << v.name << " -> %" << r.name;
      }
      if (op.dtypeRule == DTypeRule::Compare) {
        if (common) {
          EXPECT_EQ(v.type.dtype, *common) << "%" << v.name << " -> %" << r.name;
        }
        common = v.type.dtype;
      }
    }
    if (!n.inserted || n.op != OpKind::Cast) continue;
    // One cast per (value, dtype, device).
    auto key = std::tuple(n.operands[0], attrDType(op, n.attrs, "to"), r.device);
    EXPECT_TRUE(castKeys.insert(key).second) << "%" << r.name << " duplicates another cast";
    // An inserted cast sits right after the definition of the value it reads (after other casts
    // of that value), on its own device.
    const Value &src = g.value(n.operands[0]);
    EXPECT_EQ(r.device, src.device) << "%" << r.name;
    size_t j = pos;
    while (j > 0 && g.node(order[j - 1]).inserted && g.node(order[j - 1]).op == OpKind::Cast &&
           g.node(order[j - 1]).operands[0] == n.operands[0])
      --j;
    if (src.kind == ValueKind::Result) {
      ASSERT_GT(j, 0u) << "%" << r.name;
      EXPECT_EQ(g.node(order[j - 1]).result, src.id)
          << "%" << r.name << " is not after %" << src.name;
    } else {
      for (size_t k = 0; k < j; ++k)
        EXPECT_TRUE(g.node(order[k]).inserted && g.node(order[k]).op == OpKind::Cast)
            << "%" << r.name << " of an input or param is not at the top";
    }
  }
}

struct Outcome {
  Graph graph;
  std::vector<Diagnostic> diagnostics;
  CompileStats stats;

  std::string text() const { return renderText(diagnostics, {.snippet = false}); }
  const Value &value(std::string_view name) const {
    std::optional<ValueId> v = graph.findValue(name);
    EXPECT_TRUE(v.has_value()) << "no value %" << name << " in\n" << printGraph(graph);
    return graph.value(v.value_or(0));
  }
  const Reason &deviceReason(std::string_view name) const {
    return graph.deviceReason(value(name).id);
  }
  const Reason &dtypeReason(std::string_view name) const {
    return graph.dtypeReason(value(name).id);
  }
  const Node &producer(std::string_view name) const {
    const Node *p = graph.producer(value(name).id);
    EXPECT_NE(p, nullptr) << "%" << name;
    return *p;
  }
  std::string operand(std::string_view name, size_t i) const {
    return graph.value(producer(name).operands.at(i)).name;
  }
  std::vector<std::string> casts() const {
    std::vector<std::string> out;
    for (NodeId id : graph.order())
      if (graph.node(id).op == OpKind::Cast && graph.node(id).inserted)
        out.push_back(graph.value(graph.node(id).result).name);
    return out;
  }
};

Outcome runPass(Graph g, DTypePolicy policy) {
  CompileOptions o;
  o.devices = {Device::cpu(), Device::cpu(1)};
  o.dtype = policy;
  DiagnosticEngine diags;
  CompileStats stats;
  PassContext ctx{o, diags, stats};
  std::vector<std::pair<std::string, DType>> outputs;
  for (const OutputDecl &out : g.outputs())
    outputs.emplace_back(g.value(out.value).name, g.value(out.value).type.dtype);
  auto insertedCasts = [&g] {
    return std::count_if(g.order().begin(), g.order().end(), [&g](NodeId id) {
      return g.node(id).inserted && g.node(id).op == OpKind::Cast;
    });
  };
  const auto castsBefore = insertedCasts();
  assignDTypes(g, ctx);
  if (!diags.hasErrors()) {
    expectPostconditions(g);
    EXPECT_EQ(insertedCasts() - castsBefore, stats.castsInserted);
    for (size_t i = 0; i < outputs.size(); ++i) {  // outputs keep their names and dtypes
      EXPECT_EQ(g.value(g.outputs()[i].value).name, outputs[i].first);
      EXPECT_EQ(g.value(g.outputs()[i].value).type.dtype, outputs[i].second) << outputs[i].first;
    }
  }
  return {std::move(g), diags.take(), stats};
}

Outcome run(std::string_view text, DTypePolicy policy) {
  Graph g = parseOk(text);
  placeForTest(g);
  return runPass(std::move(g), policy);
}

// ---- story 4: f32 input x f16 weight in linear -------------------------------------------------

constexpr std::string_view kStory4 = R"(graph story4 {
  input %x : f32[2,4]
  param %w : f16[3,4] = ones
  %h = linear(%x, %w)
  output %h
})";

TEST(DTypeStory4, StrictRejectsWithEveryOperandItsOriginAndAFix) {
  Outcome r = run(kStory4, kStrict);
  ASSERT_EQ(r.diagnostics.size(), 1u) << r.text();
  EXPECT_EQ(r.diagnostics[0].code, "dtype");
  EXPECT_EQ(r.text(),
            "t.fy:4:3: error: 'linear' (%h) input type f32 and weight type f16 should be the same "
            "[dtype]\n"
            "  operand 0 (input)  %x f32[2,4] @cpu  input 'x', declared f32 at t.fy:2:9\n"
            "  operand 1 (weight) %w f16[3,4] @cpu  param 'w', declared f16 at t.fy:3:9\n"
            "  fix: cast %w to f32: cast(%w, to=f32)\n"
            "  fix: or compile with dtype=promote\n");
  EXPECT_EQ(r.stats.castsInserted, 0);
  // Every note carries the location it talks about: the operand's definition.
  ASSERT_EQ(r.diagnostics[0].notes.size(), 2u);
  EXPECT_EQ(r.diagnostics[0].notes[0].loc.str(), "t.fy:2:9");
  EXPECT_EQ(r.diagnostics[0].notes[1].loc.str(), "t.fy:3:9");
}

TEST(DTypeStory4, PromoteInsertsExactlyOneCastOfTheWeight) {
  Outcome r = run(kStory4, kPromote);
  ASSERT_TRUE(r.diagnostics.empty()) << r.text();
  EXPECT_EQ(r.stats.castsInserted, 1);
  EXPECT_EQ(r.casts(), std::vector<std::string>{"w.f32"});
  const Node &cast = r.producer("w.f32");
  EXPECT_EQ(attrDType(cast.info(), cast.attrs, "to"), F32);
  EXPECT_EQ(r.operand("w.f32", 0), "w");
  EXPECT_EQ(r.value("w.f32").device, Device::cpu());
  EXPECT_EQ(r.dtypeReason("w.f32").kind, Reason::Kind::Rule);
  EXPECT_EQ(r.dtypeReason("w.f32").detail, "promote: f32 + f16 -> f32");
  EXPECT_EQ(r.deviceReason("w.f32").kind, Reason::Kind::Inserted);
  EXPECT_EQ(r.deviceReason("w.f32").from, r.value("w").id);
  EXPECT_EQ(cast.loc.str(), "t.fy:4:3");  // the consumer's location
  EXPECT_EQ(r.operand("h", 0), "x");
  EXPECT_EQ(r.operand("h", 1), "w.f32");
  EXPECT_EQ(r.value("h").type.dtype, F32);
}

TEST(DTypeStory4, AutocastCastsTheInputAndLeavesTheF16WeightAlone) {
  Outcome r = run(kStory4, kAutocast);
  ASSERT_TRUE(r.diagnostics.empty()) << r.text();
  // The input is cast; the weight already is f16. The output keeps dtype f32 and its name.
  EXPECT_EQ(r.casts(), (std::vector<std::string>{"x.f16", "h"}));
  EXPECT_EQ(r.stats.castsInserted, 2);
  EXPECT_EQ(r.operand("h.f16", 0), "x.f16");
  EXPECT_EQ(r.operand("h.f16", 1), "w");
  EXPECT_EQ(r.value("h.f16").type.dtype, F16);
  EXPECT_EQ(r.dtypeReason("h.f16").detail, "autocast: linear computes in f16 (f32 accumulation)");
  EXPECT_EQ(r.value("h").type, (TensorType{F32, {2, 3}}));
  EXPECT_EQ(r.operand("h", 0), "h.f16");
  EXPECT_EQ(r.dtypeReason("h").detail, "output %h keeps its dtype f32");
  EXPECT_EQ(r.graph.value(r.graph.outputs()[0].value).name, "h");
}

TEST(DTypeStory4, AutocastCastsF32WeightsAsPlainCastsOfParamsThatSimplifyCanFold) {
  Outcome r = run(R"(graph g {
  input %x : f32[2,4]
  param %w : f32[3,4] = ones
  param %b : f32[3] = zeros
  %h = linear(%x, %w, %b)
  %y = relu(%h)
  output %y
})",
                  kAutocast);
  ASSERT_TRUE(r.diagnostics.empty()) << r.text();
  EXPECT_EQ(r.casts(), (std::vector<std::string>{"x.f16", "w.f16", "b.f16", "y"}));
  for (const char *name : {"w.f16", "b.f16"}) {
    const Node &cast = r.producer(name);
    EXPECT_EQ(cast.op, OpKind::Cast);
    EXPECT_TRUE(cast.inserted);
    ASSERT_EQ(cast.operands.size(), 1u);
    EXPECT_EQ(r.graph.value(cast.operands[0]).kind, ValueKind::Param) << name;
  }
  EXPECT_EQ(r.value("y.f16").type.dtype, F16);  // relu follows its input
  EXPECT_EQ(r.dtypeReason("y.f16").kind, Reason::Kind::Inherited);
  EXPECT_EQ(r.dtypeReason("y.f16").from, r.value("h").id);
}

// Through the pipeline: placement first, then this pass, verified (verifyPlaced too) after it.
TEST(DTypeStory4, CompileRunsThePassAfterPlacement) {
  CompileOptions o;
  o.dtype = kPromote;
  o.stopAfter = "dtype";
  CompileResult r = compile(parseOk(kStory4), o);
  ASSERT_TRUE(r.ok()) << renderText(r.diagnostics, {.snippet = false});
  EXPECT_EQ(r.lastPass, "dtype");
  EXPECT_EQ(r.stats.castsInserted, 1);
  EXPECT_EQ(r.stats.casts, 1);
  o.dtype = kStrict;
  CompileResult strict = compile(parseOk(kStory4), o);
  EXPECT_FALSE(strict.ok());
  EXPECT_EQ(strict.lastPass, "dtype");
  ASSERT_EQ(strict.diagnostics.size(), 1u);
  EXPECT_EQ(strict.diagnostics[0].message,
            "'linear' (%h) input type f32 and weight type f16 should be the same");
}

TEST(DTypeCasts, CompileOnTwoDevicesPutsEveryCastOnItsConsumersDevice) {
  CompileOptions o;
  o.devices = {Device::cpu(), Device::cpu(1)};
  o.placement = PlacementPolicy::Auto;
  o.dtype = kAutocast;
  o.stopAfter = "dtype";
  CompileResult r = compile(parseOk(R"(graph g {
  input %x : f32[2,4] @cpu:1
  param %w : f32[4,4] @cpu:1 = ones
  param %g : f32[4] = ones
  %h @cpu:1 = linear(%x, %w)
  %r @cpu = relu(%h)
  %s @cpu:1 = softmax(%r)
  %l @cpu = layer_norm(%r, %g)
  %o @cpu = add(%s, %l)
  output %o, %r
})"),
                            o);
  ASSERT_TRUE(r.ok()) << renderText(r.diagnostics, {.snippet = false});
  const Graph &g = r.graph;
  std::set<Device> castDevices;
  std::vector<std::vector<NodeId>> users = g.users();
  for (NodeId id : g.order()) {
    const Node &n = g.node(id);
    if (n.op != OpKind::Cast || !n.inserted) continue;
    castDevices.insert(*g.value(n.result).device);
    for (NodeId u : users[n.result]) {
      EXPECT_EQ(g.value(n.result).device, g.value(g.node(u).result).device)
          << "%" << g.value(n.result).name;
    }
  }
  EXPECT_EQ(castDevices, (std::set<Device>{Device::cpu(), Device::cpu(1)}));
  EXPECT_EQ(g.value(*g.findValue("h")).type.dtype, F16);
  EXPECT_EQ(g.value(*g.findValue("s")).type.dtype, F32);
  EXPECT_EQ(g.value(g.outputs()[1].value).name, "r");  // relu's result came back to f32
  EXPECT_EQ(g.value(g.outputs()[1].value).type.dtype, F32);
}

// ---- strict ------------------------------------------------------------------------------------

TEST(DTypeStrict, ReportsEveryMismatchOnceWithoutCascades) {
  Outcome r = run(R"(graph g {
  input %x : f32[2,4]
  input %y : f16[4,4]
  param %w1 : f16[4,4] = ones
  param %w2 : f16[4,4] = ones
  param %b : f32[4] = zeros
  %h1 = linear(%x, %w1)
  %h2 = linear(%h1, %w2)
  %h3 = linear(%h1, %w2, %b)
  %m = matmul(%x, %y)
  %s = add(%h2, %m)
  output %s, %h3
})",
                  kStrict);
  // h2 is not judged by h1 (a rejected node's result); h3's weight and bias still disagree.
  ASSERT_EQ(r.diagnostics.size(), 3u) << r.text();
  EXPECT_EQ(r.diagnostics[0].loc.line, 7);
  EXPECT_EQ(r.diagnostics[1].loc.line, 9);
  EXPECT_EQ(r.diagnostics[1].message,
            "'linear' (%h3) weight type f16 and bias type f32 should be the same");
  EXPECT_EQ(r.diagnostics[2].message, "'matmul' (%m) a type f32 and b type f16 should be the same");
  EXPECT_NE(
      r.text().find("  operand 0 (input)  %h1 f32[2,4] @cpu  'linear' at t.fy:7:3: promote: f32 + "
                    "f16 -> f32\n"),
      std::string::npos)
      << r.text();
  EXPECT_NE(r.text().find("  fix: cast %y to f32: cast(%y, to=f32)\n"), std::string::npos);
}

TEST(DTypeStrict, NormsRejectMixedFloatsAndIntegersMixWithFloatsToo) {
  Outcome r = run(R"(graph g {
  input %x : f16[2,4]
  param %g : f32[4] = ones
  input %i : i64[3,4]
  param %w : f32[2,4] = ones
  %n = layer_norm(%x, %g)
  %l = linear(%i, %w)
  output %n, %l
})",
                  kStrict);
  ASSERT_EQ(r.diagnostics.size(), 2u) << r.text();
  EXPECT_EQ(r.diagnostics[0].message,
            "'layer_norm' (%n) input type f16 and weight type f32 should be the same");
  EXPECT_EQ(r.diagnostics[0].fixes[0], "cast %x to f32: cast(%x, to=f32)");
  EXPECT_EQ(r.diagnostics[1].message,
            "'linear' (%l) input type i64 and weight type f32 should be the same");
}

TEST(DTypeStrict, ElementwiseOpsPromoteSilentlyWithCountedCasts) {
  Outcome r = run(R"(graph g {
  input %x : f32[4]
  input %y : f16[4]
  input %i : i32[4]
  %a = add(%x, %y)
  %c = less(%i, %y)
  %d = div(%i, %i)
  output %a, %c, %d
})",
                  kStrict);
  ASSERT_TRUE(r.diagnostics.empty()) << r.text();
  EXPECT_EQ(r.casts(), (std::vector<std::string>{"y.f32", "i.f16", "i.f32"}));
  EXPECT_EQ(r.stats.castsInserted, 3);
  EXPECT_EQ(r.value("c").type.dtype, Bool);
  EXPECT_EQ(r.operand("d", 0), "i.f32");  // true division computes in f32: both operands cast
  EXPECT_EQ(r.operand("d", 1), "i.f32");
  EXPECT_EQ(r.dtypeReason("d").detail, "promote: i32 + i32 -> f32");
}

TEST(DTypeStrict, PinnedNodesAreCastNotRejected) {
  Outcome r = run(R"(graph g {
  input %x : f32[2,4]
  param %w : f16[3,4] = ones
  %h @f16 = linear(%x, %w)
  output %h
})",
                  kStrict);
  ASSERT_TRUE(r.diagnostics.empty()) << r.text();
  EXPECT_EQ(r.casts(), (std::vector<std::string>{"x.f16", "h"}));
  EXPECT_EQ(r.dtypeReason("h.f16").detail, "pinned @f16 at t.fy:4:3");
}

// ---- promote -----------------------------------------------------------------------------------

TEST(DTypePromote, FollowsResultTypeWithZeroDimOperandsAndRoles) {
  Outcome r = run(R"(graph g {
  input %a : f16[4]
  input %s : f32[]
  input %i : i32[4]
  input %c : bool[4]
  input %idx : i64[2]
  %r = add(%a, %s)
  %q = mul(%i, %s)
  %w = where(%c, %a, %i)
  %k = concat(%a, %q)
  %g @f32 = gather(%a, %idx)
  %e = exp(%i)
  output %r, %w, %k, %e
})",
                  kPromote);
  ASSERT_TRUE(r.diagnostics.empty()) << r.text();
  // f16[4] + f32[] -> f16 (the zero-dim operand is of the same category); i32[4] * f32[] -> f32
  // (it is of a higher one); where's condition and gather's indices are never cast.
  EXPECT_EQ(r.casts(), (std::vector<std::string>{"s.f16", "i.f32", "i.f16", "a.f32"}));
  EXPECT_EQ(r.value("r").type.dtype, F16);
  EXPECT_EQ(r.dtypeReason("r").detail, "promote: f16 + f32[] -> f16");
  EXPECT_EQ(r.value("q").type.dtype, F32);
  EXPECT_EQ(r.operand("w", 0), "c");
  EXPECT_EQ(r.operand("w", 1), "a");
  EXPECT_EQ(r.operand("w", 2), "i.f16");
  EXPECT_EQ(r.value("w").type.dtype, F16);
  EXPECT_EQ(r.value("k").type.dtype, F32);
  EXPECT_EQ(r.operand("g", 0), "a.f32");
  EXPECT_EQ(r.operand("g", 1), "idx");
  EXPECT_EQ(r.operand("e", 0), "i.f32");
}

TEST(DTypePromote, GemmsAndNormsPromoteToo) {
  Outcome r = run(R"(graph g {
  input %x : f16[1,2,4,4]
  param %k : f32[3,2,1,1] = ones
  param %sc : f32[3] = ones
  param %bi : bf16[3] = zeros
  param %mu : f32[3] = zeros
  param %va : f32[3] = ones
  %c = conv2d(%x, %k)
  %n = batch_norm(%c, %sc, %bi, %mu, %va)
  output %n
})",
                  kPromote);
  ASSERT_TRUE(r.diagnostics.empty()) << r.text();
  EXPECT_EQ(r.casts(), (std::vector<std::string>{"x.f32", "bi.f32"}));
  EXPECT_EQ(r.value("n").type.dtype, F32);
}

// ---- autocast ----------------------------------------------------------------------------------

constexpr std::string_view kAutocastModel = R"(graph g {
  input %x : f32[2,8]
  param %w : f32[8,8] = ones
  param %g : f32[8] = ones
  %h = linear(%x, %w)
  %r = relu(%h)
  %s = softmax(%r)
  %l = layer_norm(%r, %g)
  %ls = log_softmax(%r)
  %e = exp(%r)
  %lg = log(%r)
  %p = pow(%r, %r)
  %m = mean(%r)
  %sm = sum(%r)
  %mx = max(%r)
  %o = add(%s, %l)
  output %o, %r, %ls, %e, %lg, %p, %m, %sm, %mx
})";

TEST(DTypeAutocast, GemmsRunLowAndSoftmaxNormsReductionsExpLogPowStayF32) {
  Outcome r = run(kAutocastModel, kAutocast);
  ASSERT_TRUE(r.diagnostics.empty()) << r.text();
  EXPECT_EQ(r.value("h").type.dtype, F16);
  EXPECT_EQ(r.value("r.f16").type.dtype, F16);
  for (const char *name : {"s", "l", "ls", "e", "lg", "p", "m", "sm", "mx", "o"}) {
    EXPECT_EQ(r.value(name).type.dtype, F32) << name;
    EXPECT_EQ(r.operand(name, 0), name == std::string("o") ? "s" : "r") << name;
  }
  EXPECT_EQ(r.dtypeReason("s").detail, "autocast: softmax computes in f32");
  // One cast of r up to f32 serves every f32 op and, renamed, the output %r (which keeps dtype
  // f32 and its name); the relu's own result is now %r.f16.
  EXPECT_EQ(r.casts(), (std::vector<std::string>{"x.f16", "w.f16", "r"}));
  EXPECT_EQ(r.operand("r", 0), "r.f16");
  EXPECT_EQ(r.stats.castsInserted, 3);
  std::vector<std::string> outputs;
  for (const OutputDecl &o : r.graph.outputs()) outputs.push_back(r.graph.value(o.value).name);
  EXPECT_EQ(outputs, (std::vector<std::string>{"o", "r", "ls", "e", "lg", "p", "m", "sm", "mx"}));
}

TEST(DTypeAutocast, LowPrecisionInputsComeBackInTheirDtype) {
  Outcome r = run(R"(graph g {
  input %x : bf16[2,8]
  %s = softmax(%x)
  output %s
})",
                  kAutocastBF16);
  ASSERT_TRUE(r.diagnostics.empty()) << r.text();
  EXPECT_EQ(r.casts(), (std::vector<std::string>{"x.f32", "s"}));
  EXPECT_EQ(r.value("s.f32").type.dtype, F32);
  EXPECT_EQ(r.value("s").type.dtype, BF16);
}

TEST(DTypeAutocast, LeavesF64AndIntegerGemmsAndBf16IsHonoured) {
  Outcome r = run(R"(graph g {
  input %d : f64[2,4]
  param %wd : f64[3,4] = ones
  input %i : i32[2,4]
  param %wi : i32[4,4] = ones
  input %x : f16[2,4]
  param %w : f32[3,4] = ones
  %a = linear(%d, %wd)
  %b = matmul(%i, %wi)
  %c = linear(%x, %w)
  output %a, %b, %c
})",
                  kAutocastBF16);
  ASSERT_TRUE(r.diagnostics.empty()) << r.text();
  EXPECT_EQ(r.casts(), (std::vector<std::string>{"x.bf16", "w.bf16", "c"}));
  EXPECT_EQ(r.value("c.bf16").type.dtype, BF16);
  EXPECT_EQ(r.value("c").type.dtype, F32);
  EXPECT_EQ(r.value("a").type.dtype, F64);
  EXPECT_EQ(r.value("b").type.dtype, I32);
}

TEST(DTypeAutocast, APinBeatsThePolicy) {
  Outcome r = run(R"(graph g {
  input %x : f32[2,4]
  param %w : f32[3,4] = ones
  %h @f32 = linear(%x, %w)
  %s @f16 = softmax(%h)
  output %h, %s
})",
                  kAutocast);
  ASSERT_TRUE(r.diagnostics.empty()) << r.text();
  EXPECT_EQ(r.casts(), (std::vector<std::string>{"h.f16", "s"}));
  EXPECT_EQ(r.value("h").type.dtype, F32);
  EXPECT_EQ(r.dtypeReason("h").detail, "pinned @f32 at t.fy:4:3");
  EXPECT_EQ(r.value("s.f16").type.dtype, F16);
}

// ---- pins --------------------------------------------------------------------------------------

TEST(DTypePins, PinnedNodesComputeInTheirDtypeUnlessTheRuleFixesTheResult) {
  for (DTypePolicy policy : {kStrict, kPromote, kAutocast}) {
    Outcome r = run(R"(graph g {
  input %x : f32[4]
  input %y : f32[4]
  %a @f16 = add(%x, %y)
  %c @f16 = less(%a, %x)
  %w = where(%c, %a, %y)
  %n @i32 = sum(%x)
  output %w
})",
                    policy);
    ASSERT_TRUE(r.diagnostics.empty()) << policy.str() << "\n" << r.text();
    EXPECT_EQ(r.value("a").type.dtype, F16) << policy.str();
    EXPECT_EQ(r.value("c").type.dtype, Bool) << policy.str();
    EXPECT_EQ(r.operand("c", 1), "x.f16") << policy.str();  // the cast of x, made once
    EXPECT_EQ(r.value("w").type.dtype, F32) << policy.str();
    EXPECT_EQ(r.operand("w", 1), "a.f32") << policy.str();
    EXPECT_EQ(r.operand("n", 0), "x.i32") << policy.str();
    EXPECT_EQ(r.value("n").type.dtype, I64) << policy.str();  // torch.sum of integers
    EXPECT_EQ(r.casts(), (std::vector<std::string>{"x.f16", "y.f16", "x.i32", "a.f32"}))
        << policy.str();
  }
}

TEST(DTypePins, APinTheOpCannotTakeIsAnErrorThatSaysWhy) {
  Outcome r = run(R"(graph g {
  input %x : f32[2,4]
  %s @i32 = softmax(%x)
  %t = relu(%s)
  output %t
})",
                  kPromote);
  ASSERT_EQ(r.diagnostics.size(), 1u) << r.text();
  EXPECT_EQ(r.text(), "t.fy:3:3: error: operand 0 (x) of 'softmax' must have a floating dtype "
                      "(f16, bf16, f32, f64), got i32[2,4] [dtype]\n"
                      "  its operands were cast to i32: pinned @i32 at t.fy:3:3\n");
}

TEST(DTypePins, APinThatRetypesIndicesIsCaughtAtTheirConsumer) {
  Outcome r = run(R"(graph g {
  input %x : f32[4,2]
  input %i : i32[3]
  %j @f32 = neg(%i)
  %g = gather(%x, %j)
  output %g
})",
                  kPromote);
  ASSERT_EQ(r.diagnostics.size(), 1u) << r.text();
  EXPECT_EQ(r.diagnostics[0].loc.line, 5);
  EXPECT_EQ(r.diagnostics[0].message,
            "operand 1 (indices) of 'gather' must be i32 or i64, got f32[3]");
  EXPECT_NE(r.text().find("  %j is f32: pinned @f32 at t.fy:4:3\n"), std::string::npos) << r.text();
}

// ---- casts: minimal, on the consumer's device, idempotent ---------------------------------------

TEST(DTypeCasts, AValueReadByThreeF16ConsumersIsCastOnce) {
  Outcome r = run(R"(graph g {
  input %x : f32[4]
  %a @f16 = relu(%x)
  %b @f16 = neg(%x)
  %c @f16 = add(%x, %x)
  output %a, %b, %c
})",
                  kPromote);
  ASSERT_TRUE(r.diagnostics.empty()) << r.text();
  EXPECT_EQ(r.stats.castsInserted, 4);  // x once, and the three outputs back to f32
  EXPECT_EQ(r.casts(), (std::vector<std::string>{"x.f16", "a", "b", "c"}));
  EXPECT_EQ(r.operand("a.f16", 0), "x.f16");
  EXPECT_EQ(r.operand("b.f16", 0), "x.f16");
  EXPECT_EQ(r.operand("c.f16", 0), "x.f16");
  EXPECT_EQ(r.operand("c.f16", 1), "x.f16");
}

TEST(DTypeCasts, CastsGoOnTheConsumersDeviceRightAfterWhatTheyRead) {
  constexpr std::string_view kTwoDevices = R"(graph g {
  input %x : f32[2,4] @cpu
  param %w : f16[3,4] @cpu:1 = ones
  param %v : f16[3,4] = ones
  %r = relu(%x)
  %a @cpu = linear(%r, %v)
  %rt = transfer(%r, to=cpu:1)
  %b @cpu:1 = linear(%rt, %w)
  %bt = transfer(%b, to=cpu)
  %s @cpu = add(%a, %bt)
  output %s
})";
  Outcome r = run(kTwoDevices, kAutocast);
  ASSERT_TRUE(r.diagnostics.empty()) << r.text();
  EXPECT_EQ(r.casts(), (std::vector<std::string>{"r.f16", "rt.f16", "s"}));
  EXPECT_EQ(r.value("r.f16").device, Device::cpu());
  EXPECT_EQ(r.value("rt.f16").device, Device::cpu(1));
  EXPECT_EQ(r.value("s").device, Device::cpu());
  EXPECT_EQ(r.value("bt").type.dtype, F16);  // the transfer carries the f16 result
  std::vector<std::string> order;
  for (NodeId id : r.graph.order()) order.push_back(r.graph.value(r.graph.node(id).result).name);
  EXPECT_EQ(order,
            (std::vector<std::string>{"r", "r.f16", "a", "rt", "rt.f16", "b", "bt", "s.f16", "s"}));

  Outcome p = run(kTwoDevices, kPromote);
  ASSERT_TRUE(p.diagnostics.empty()) << p.text();
  EXPECT_EQ(p.casts(), (std::vector<std::string>{"v.f32", "w.f32"}));
  EXPECT_EQ(p.value("w.f32").device, Device::cpu(1));
  EXPECT_EQ(p.value("v.f32").device, Device::cpu());
}

TEST(DTypeCasts, ACastForAPinnedTransferRunsOnTheSendingSide) {
  Outcome r = run(R"(graph g {
  input %x : f32[2,4] @cpu
  %t @f16 = transfer(%x, to=cpu:1)
  %y @cpu:1 = relu(%t)
  output %y
})",
                  kPromote);
  ASSERT_TRUE(r.diagnostics.empty()) << r.text();
  EXPECT_EQ(r.casts(), (std::vector<std::string>{"x.f16", "y"}));
  EXPECT_EQ(r.value("x.f16").device, Device::cpu());  // half the bytes cross
  EXPECT_EQ(r.value("y").device, Device::cpu(1));
}

TEST(DTypeCasts, ASecondRunChangesNothing) {
  for (DTypePolicy policy : {kStrict, kPromote, kAutocast, kAutocastBF16}) {
    Outcome first = run(kAutocastModel, policy);
    ASSERT_TRUE(first.diagnostics.empty()) << first.text();
    std::string once = printGraph(first.graph);
    Outcome second = runPass(std::move(first.graph), policy);
    ASSERT_TRUE(second.diagnostics.empty()) << second.text();
    EXPECT_EQ(second.stats.castsInserted, 0) << policy.str();
    EXPECT_EQ(printGraph(second.graph), once) << policy.str();
  }
}

TEST(DTypeCasts, ADumpReadsBackAndRecompilesToItself) {
  Outcome first = run(kAutocastModel, kAutocast);
  ASSERT_TRUE(first.diagnostics.empty()) << first.text();
  std::string dump = printGraph(first.graph);
  Outcome again = run(dump, kAutocast);
  ASSERT_TRUE(again.diagnostics.empty()) << again.text();
  EXPECT_EQ(again.stats.castsInserted, 0);
  EXPECT_EQ(printGraph(again.graph), dump);
}

// ---- property: random graphs under every policy ------------------------------------------------

// A random graph of [2,4] values over every dtype rule (promote, float, compare, keep, sum, cast,
// GEMM, norms), with random pins and two devices joined by transfers.
Graph randomGraph(std::mt19937 &rng) {
  auto pick = [&](auto &&xs) { return xs[rng() % std::size(xs)]; };
  const DType data[] = {U8, I8, I32, I64, F16, BF16, F32, F64, F32, F32};
  const DType floats[] = {F16, BF16, F32, F64};
  const OpKind ops[] = {OpKind::Add,     OpKind::Mul,      OpKind::Sub,    OpKind::Div,
                        OpKind::Maximum, OpKind::Pow,      OpKind::Relu,   OpKind::Neg,
                        OpKind::Exp,     OpKind::Tanh,     OpKind::Linear, OpKind::Softmax,
                        OpKind::Less,    OpKind::Where,    OpKind::Cast,   OpKind::LayerNorm,
                        OpKind::Concat,  OpKind::Transfer, OpKind::Matmul, OpKind::Sum};
  Graph g("random");
  std::vector<ValueId> pool, bools;
  auto place = [&](ValueId v, Device d) { g.value(v).device = d; };
  for (int i = 0; i < 3; ++i) {
    Device d = Device::cpu(static_cast<int>(rng() % 2));
    pool.push_back(g.addInput("x" + std::to_string(i), {pick(data), {2, 4}}, d, {"r.fy", 1, 1}));
    place(pool.back(), d);
  }
  for (int i = 0; i < 28; ++i) {
    OpKind k = pick(ops);
    const OpInfo &op = opInfo(k);
    ValueId a = pick(pool);
    Device d = *g.value(a).device;
    std::vector<ValueId> operands{a};
    std::vector<NamedAttr> named;
    auto sameDevice = [&]() {
      for (int tries = 0; tries < 8; ++tries)
        if (ValueId b = pick(pool); g.value(b).device == d) return b;
      return a;
    };
    auto weight = [&](Shape shape) {
      ValueId w = g.addParam(g.uniqueName("w"), TensorData::zeros(pick(floats), std::move(shape)),
                             {}, std::nullopt, {"r.fy", 2, 1});
      place(w, d);
      return w;
    };
    if (k == OpKind::Where) {
      if (bools.empty()) continue;
      operands = {pick(bools), a, sameDevice()};
      if (g.value(operands[0]).device != d) continue;
    } else if (k == OpKind::Linear || k == OpKind::Matmul) {
      operands.push_back(weight({4, 4}));
    } else if (k == OpKind::LayerNorm) {
      operands.push_back(weight({4}));
    } else if (k == OpKind::Cast) {
      named.push_back({"to", pick(data)});
    } else if (k == OpKind::Transfer) {
      d = Device::cpu(1 - d.index);
      named.push_back({"to", d});
    } else if (k == OpKind::Sum) {
      named.push_back({"axes", std::vector<int64_t>{0}});
      named.push_back({"keepdims", true});
    } else if (op.minOperands == 2) {
      operands.push_back(sameDevice());
    }
    std::optional<DType> pin;
    if (k != OpKind::Cast && k != OpKind::Transfer && rng() % 6 == 0)
      pin = op.accepts == Accepts::Float ? pick(floats) : pick(data);
    std::vector<TensorType> types;
    for (ValueId o : operands) types.push_back(g.value(o).type);
    Attrs attrs = *makeAttrs(op, named, {});
    InferResult r = inferType(op, types, attrs);
    if (!std::holds_alternative<TensorType>(r)) continue;
    TensorType t = std::get<TensorType>(r);
    if (t.shape != Shape{2, 4}) continue;
    NodeId id = g.addNode({k, operands, attrs, std::nullopt, pin, {"r.fy", 3 + i, 3}},
                          g.uniqueName("v"), t);
    place(g.node(id).result, d);
    (t.dtype == Bool ? bools : pool).push_back(g.node(id).result);
  }
  g.addOutput(pool.back(), std::nullopt, {});
  if (pool.size() > 4) g.addOutput(pool[pool.size() / 2], std::nullopt, {});
  return g;
}

TEST(DTypeProperty, RandomGraphsKeepEveryPostconditionAndAreIdempotent) {
  std::mt19937 rng(7);
  int accepted = 0, rejected = 0;
  for (int i = 0; i < 400; ++i) {
    Graph g = randomGraph(rng);
    ASSERT_TRUE(verify(g).ok()) << verify(g).message() << printGraph(g);
    for (DTypePolicy policy : {kStrict, kPromote, kAutocast, kAutocastBF16}) {
      SCOPED_TRACE("graph " + std::to_string(i) + " " + policy.str());
      Outcome first = runPass(g, policy);  // postconditions and outputs checked inside
      if (!first.diagnostics.empty()) {
        ++rejected;
        for (const Diagnostic &d : first.diagnostics) EXPECT_EQ(d.code, "dtype") << first.text();
        continue;
      }
      ++accepted;
      std::string once = printGraph(first.graph);
      Outcome second = runPass(std::move(first.graph), policy);
      EXPECT_TRUE(second.diagnostics.empty()) << second.text();
      EXPECT_EQ(second.stats.castsInserted, 0);
      EXPECT_EQ(printGraph(second.graph), once);
    }
  }
  EXPECT_GT(accepted, 1000);
  EXPECT_GT(rejected, 50);
}

}  // namespace
}  // namespace ferry
