// tests/passes/simplify_test.cpp — simplify on graphs placed by hand: each rule with a case where
// it applies and one where it must not, folding against storeDouble and TensorData::randn, the
// losslessness table against the interpreter, the joint device/dtype rewrites on the statistics,
// output names, idempotence, and random placed graphs checked against the interpreter.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "backends/reference/interpreter.h"
#include "common/random_graph.h"
#include "ir/parser.h"
#include "ir/printer.h"
#include "ir/verifier.h"
#include "passes/compile.h"
#include "passes/pass.h"

namespace ferry {
namespace {

// A graph as placement and dtype leave it, written by hand: each statement's `@device` becomes
// its value's device; cast and transfer nodes lose their pin and are marked inserted.
Graph placed(std::string_view text) {
  Expected<Graph> parsed = parseGraph(text, "t.fy");
  EXPECT_TRUE(parsed.ok()) << parsed.status().message();
  Graph g = std::move(parsed).value();
  for (ParamDecl &p : g.params()) g.value(p.value).device = p.pin;
  for (NodeId id : g.order()) {
    Node &n = g.node(id);
    g.value(n.result).device = n.pinDevice;
    if (n.op == OpKind::Cast || n.op == OpKind::Transfer) {
      n.pinDevice.reset();
      n.inserted = true;
    }
  }
  return g;
}

// What compile() checks after placement (verifyPlaced), and that transfers go where they say.
std::string placedProblems(const Graph &g) {
  if (Status s = verify(g); !s.ok()) return s.message();
  for (const ParamDecl &p : g.params())
    if (!g.value(p.value).device) return "param %" + g.value(p.value).name + " has no device";
  for (NodeId id : g.order()) {
    const Node &n = g.node(id);
    const Value &r = g.value(n.result);
    if (!r.device) return "%" + r.name + " has no device";
    if (n.op == OpKind::Transfer) {
      if (attrDevice(n.info(), n.attrs, "to") != *r.device) return "%" + r.name + " misdirected";
      continue;
    }
    for (ValueId o : n.operands)
      if (g.value(o).device != r.device) return "operand of %" + r.name + " elsewhere";
  }
  return "";
}

CompileOptions options() {
  CompileOptions o;
  o.devices = {Device::cpu(), Device::cpu(1), Device::cuda(0), Device::cuda(1)};
  return o;
}

// Runs simplify alone and checks the placed invariants hold afterwards.
CompileStats simplified(Graph &g, const CompileOptions &o = options()) {
  DiagnosticEngine diags;
  CompileStats stats;
  PassContext ctx{o, diags, stats};
  simplify(g, ctx);
  EXPECT_FALSE(diags.hasErrors());
  EXPECT_EQ(placedProblems(g), "");
  return stats;
}

std::string dump(const Graph &g) { return printGraph(g, {.locations = false}); }

// The dump of a placed graph written by hand, so expectations do not depend on the printer's
// layout (aligned comments, one output per line).
std::string expected(std::string_view text) { return dump(placed(text)); }

CompileStats described(const Graph &g) {
  CompileStats s;
  describeGraph(g, options(), s);
  return s;
}

const ParamDecl *findParam(const Graph &g, std::string_view name) {
  for (const ParamDecl &p : g.params())
    if (g.value(p.value).name == name) return &p;
  return nullptr;
}

int countOps(const Graph &g, OpKind op) {
  int n = 0;
  for (NodeId id : g.order()) n += g.node(id).op == op;
  return n;
}

// --- 1. Folding -------------------------------------------------------------------------------

TEST(SimplifyFold, ACastOfAParamBecomesAParamOfTheNewDType) {
  Graph g = placed(R"(graph g {
  input %x : f16[2,3] @cuda:0
  param %w : f32[2,3] @cuda:0 = [0.1, 1.5, -2.25, 65519.0, 1e-08, 70000.0]
  %c @cuda:0 = cast(%w, to=f16)
  %y @cuda:0 = mul(%x, %c)
  output %y
})");
  const TensorData old = g.paramOf(*g.findValue("w")).data;
  CompileStats s = simplified(g);
  EXPECT_EQ(dump(g), expected(R"(graph g {
  input %x : f16[2,3] @cuda:0
  param %w.f16 : f16[2,3] @cuda:0 = [0.0999755859375, 1.5, -2.25, 65504.0, 0.0, inf]
  %y : f16[2,3] @cuda:0 = mul(%x, %w.f16)
  output %y
}
)"));
  const ParamDecl *p = findParam(g, "w.f16");
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->init.kind, Initializer::Kind::Data);
  EXPECT_EQ(p->pin, Device::cuda(0));
  for (int64_t i = 0; i < old.numel(); ++i) {
    std::byte expected[2];
    storeDouble(DType::F16, expected, old.at(i));
    EXPECT_EQ(std::memcmp(p->data.bytes().data() + 2 * i, expected, 2), 0) << i;
  }
  const Value &v = g.value(p->value);
  EXPECT_EQ(v.deviceReason.kind, Reason::Kind::Inserted);
  EXPECT_EQ(v.deviceReason.from, *g.findValue("w"));
  EXPECT_EQ(v.deviceReason.detail, "folded cast of %w at compile time");
  EXPECT_EQ(v.dtypeReason.kind, Reason::Kind::Rule);
  EXPECT_EQ(s.castsFolded, 1);
  EXPECT_EQ(s.castsRemoved, 0);
  EXPECT_EQ(s.nodesRemoved, 0);
  EXPECT_EQ(countOps(g, OpKind::Cast), 0);
}

TEST(SimplifyFold, IntegersConvertExactlyAndSaturateAsTheInterpretersCast) {
  Graph g = placed(R"(graph g {
  param %w : i64[3] @cpu = [5000000000, -3, 9007199254740993]
  %c @cpu = cast(%w, to=i32)
  %d @cpu = cast(%w, to=f64)
  output %c, %d
})");
  simplified(g);
  EXPECT_EQ(dump(g), expected(R"(graph g {
  param %c : i32[3] @cpu = [2147483647, -3, 2147483647]
  param %d : f64[3] @cpu = [5000000000.0, -3.0, 9007199254740992.0]
  output %c, %d
}
)"));
}

TEST(SimplifyFold, AFoldedParamThatIsAnOutputTakesTheOutputsName) {
  Graph g = placed(R"(graph g {
  param %w : f32[2] @cpu = [1.0, 2.5]
  %c @cpu = cast(%w, to=f16)
  output %c
})");
  simplified(g);
  EXPECT_EQ(dump(g), expected(R"(graph g {
  param %c : f16[2] @cpu = [1.0, 2.5]
  output %c
}
)"));
}

TEST(SimplifyFold, ZerosAndOnesKeepTheirInitializer) {
  Graph g = placed(R"(graph g {
  param %z : f32[4] @cpu = zeros
  param %o : i64[4] @cpu = ones
  %zc @cpu = cast(%z, to=bf16)
  %oc @cpu = cast(%o, to=bool)
  output %zc, %oc
})");
  simplified(g);
  ASSERT_EQ(g.params().size(), 2u);
  EXPECT_EQ(g.params()[0].init.kind, Initializer::Kind::Zeros);
  EXPECT_EQ(g.params()[0].data, TensorData::zeros(DType::BF16, {4}));
  EXPECT_EQ(g.params()[1].init.kind, Initializer::Kind::Ones);
  EXPECT_EQ(g.params()[1].data, TensorData::full(DType::Bool, {4}, 1));
}

// randn(seed) of T equals the cast of randn(seed) of S exactly when S keeps f32's rounding of the
// samples and T needs no more than that; the fold keeps `randn(seed=N)` exactly then.
TEST(SimplifyFold, RandnKeepsItsInitializerExactlyWhenRegeneratingGivesTheSameBits) {
  const DType floats[] = {DType::F16, DType::BF16, DType::F32, DType::F64};
  int kept = 0;
  for (DType s : floats) {
    for (DType t : floats) {
      if (s == t) continue;
      std::string text =
          "graph g {\n  param %w : " + std::string(dtypeName(s)) +
          "[64,64] @cpu = randn(seed=7)\n  %c @cpu = cast(%w, to=" + std::string(dtypeName(t)) +
          ")\n  output %c\n}\n";
      Graph g = placed(text);
      const TensorData old = g.params()[0].data;
      simplified(g);
      ASSERT_EQ(g.params().size(), 1u);
      const ParamDecl &p = g.params()[0];
      TensorData expected(t, {64, 64});
      for (int64_t i = 0; i < old.numel(); ++i) expected.set(i, old.at(i));
      EXPECT_EQ(p.data, expected) << dtypeName(s) << " -> " << dtypeName(t);
      const bool regenerates = TensorData::randn(t, {64, 64}, 7) == expected;
      EXPECT_EQ(p.init.kind == Initializer::Kind::Randn, regenerates)
          << dtypeName(s) << " -> " << dtypeName(t);
      kept += regenerates;
    }
  }
  EXPECT_EQ(kept, 5);  // f32 -> f16, bf16; f64 -> f16, bf16, f32
  Graph g =
      placed("graph g {\n  param %w : f32[8] @cpu = randn(seed=1)\n  %c @cpu = cast(%w, to=i32)\n"
             "  output %c\n}\n");
  simplified(g);
  EXPECT_EQ(g.params()[0].init.kind, Initializer::Kind::Data);
}

TEST(SimplifyFold, TwoCastsOfOneParamShareOneFoldedParam) {
  Graph g = placed(R"(graph g {
  input %x : f16[2] @cpu
  param %w : f32[2] @cpu = [1.0, 2.0]
  %a @cpu = cast(%w, to=f16)
  %b @cpu = cast(%w, to=f16)
  %s @cpu = add(%a, %x)
  %t @cpu = mul(%b, %s)
  output %t
})");
  CompileStats s = simplified(g);
  EXPECT_EQ(dump(g), expected(R"(graph g {
  input %x : f16[2] @cpu
  param %w.f16 : f16[2] @cpu = [1.0, 2.0]
  %s : f16[2] @cpu = add(%w.f16, %x)
  %t : f16[2] @cpu = mul(%w.f16, %s)
  output %t
}
)"));
  EXPECT_EQ(s.castsFolded, 1);
  EXPECT_EQ(s.castsRemoved, 1);
}

TEST(SimplifyFold, ACastOfAConstantFoldsIntoAConstant) {
  Graph g = placed(R"(graph g {
  input %x : f16[2] @cpu
  %k @cpu = constant(value=f32[2]{0.5, 3.0})
  %c @cpu = cast(%k, to=f16)
  %y @cpu = add(%x, %c)
  output %y
})");
  CompileStats s = simplified(g);
  EXPECT_EQ(dump(g), expected(R"(graph g {
  input %x : f16[2] @cpu
  %k.f16 : f16[2] @cpu = constant(value=f16[2]{0.5, 3.0})  # inserted
  %y : f16[2] @cpu = add(%x, %k.f16)
  output %y
}
)"));
  EXPECT_EQ(s.castsFolded, 1);
  EXPECT_EQ(s.nodesRemoved, 1);  // the f32 constant
}

TEST(SimplifyFold, ATransferOfAParamIsNotFolded) {
  const char *text = R"(graph g {
  input %x : f32[2] @cuda:0
  param %w : f32[2] @cpu = [1.0, 2.0]
  %t @cuda:0 = transfer(%w, to=cuda:0)
  %y @cuda:0 = add(%x, %t)
  output %y
})";
  Graph g = placed(text);
  const std::string before = dump(g);
  CompileStats s = simplified(g);
  EXPECT_EQ(dump(g), before);
  EXPECT_EQ(s.transfersRemoved, 0);
}

// --- 2. No-ops and round trips ------------------------------------------------------------------

TEST(SimplifyRoundTrips, NoOpCastsTransfersAndIdentitiesGo) {
  Graph g = placed(R"(graph g {
  input %x : f32[2] @cpu
  %c @cpu = cast(%x, to=f32)
  %t @cpu = transfer(%c, to=cpu)
  %i @cpu = identity(%t)
  %y @cpu = relu(%i)
  output %y
})");
  CompileStats s = simplified(g);
  EXPECT_EQ(dump(g), expected(R"(graph g {
  input %x : f32[2] @cpu
  %y : f32[2] @cpu = relu(%x)
  output %y
}
)"));
  EXPECT_EQ(s.castsRemoved, 1);
  EXPECT_EQ(s.transfersRemoved, 1);
  EXPECT_EQ(s.nodesRemoved, 1);
}

TEST(SimplifyRoundTrips, ATransferThereAndBackIsRemoved) {
  Graph g = placed(R"(graph g {
  input %x : f32[8] @cpu
  %a @cuda:0 = transfer(%x, to=cuda:0)
  %b @cpu = transfer(%a, to=cpu)
  %y @cpu = relu(%b)
  output %y
})");
  CompileStats s = simplified(g);
  EXPECT_EQ(dump(g), expected(R"(graph g {
  input %x : f32[8] @cpu
  %y : f32[8] @cpu = relu(%x)
  output %y
}
)"));
  EXPECT_EQ(s.transfersRemoved, 2);
}

TEST(SimplifyRoundTrips, AHopIsShortcutOnlyWhenNothingElseReadsTheMiddle) {
  Graph g = placed(R"(graph g {
  input %x : f32[8] @cpu
  %a @cuda:0 = transfer(%x, to=cuda:0)
  %b @cuda:1 = transfer(%a, to=cuda:1)
  %y @cuda:1 = relu(%b)
  output %y
})");
  CompileStats s = simplified(g);
  EXPECT_EQ(dump(g), expected(R"(graph g {
  input %x : f32[8] @cpu
  %b : f32[8] @cuda:1 = transfer(%x, to=cuda:1)  # inserted
  %y : f32[8] @cuda:1 = relu(%b)
  output %y
}
)"));
  EXPECT_EQ(s.transfersRemoved, 1);

  const char *shared = R"(graph g {
  input %x : f32[8] @cpu
  %a @cuda:0 = transfer(%x, to=cuda:0)
  %b @cuda:1 = transfer(%a, to=cuda:1)
  %y @cuda:1 = relu(%b)
  %z @cuda:0 = relu(%a)
  output %y, %z
})";
  Graph h = placed(shared);
  const std::string before = dump(h);
  simplified(h);
  EXPECT_EQ(dump(h), before);
}

TEST(SimplifyRoundTrips, ALosslessCastRoundTripIsRemovedANarrowingOneIsKept) {
  Graph g = placed(R"(graph g {
  input %x : f16[4] @cpu
  %a @cpu = cast(%x, to=f32)
  %b @cpu = cast(%a, to=f16)
  %y @cpu = relu(%b)
  output %y
})");
  CompileStats s = simplified(g);
  EXPECT_EQ(dump(g), expected(R"(graph g {
  input %x : f16[4] @cpu
  %y : f16[4] @cpu = relu(%x)
  output %y
}
)"));
  EXPECT_EQ(s.castsRemoved, 2);

  const char *narrowing = R"(graph g {
  input %x : f32[4] @cpu
  %a @cpu = cast(%x, to=f16)
  %b @cpu = cast(%a, to=f32)
  %y @cpu = relu(%b)
  output %y
})";
  Graph h = placed(narrowing);
  const std::string before = dump(h);
  CompileStats t = simplified(h);
  EXPECT_EQ(dump(h), before);
  EXPECT_EQ(t.castsRemoved, 0);
}

TEST(SimplifyRoundTrips, ALosslessMiddleStepIsSkipped) {
  Graph g = placed(R"(graph g {
  input %x : f16[4] @cpu
  %a @cpu = cast(%x, to=f32)
  %b @cpu = cast(%a, to=f64)
  output %b
})");
  CompileStats s = simplified(g);
  EXPECT_EQ(dump(g), expected(R"(graph g {
  input %x : f16[4] @cpu
  %b : f64[4] @cpu = cast(%x, to=f64)  # inserted
  output %b
}
)"));
  EXPECT_EQ(s.castsRemoved, 1);
}

// Values of `t` to feed a round trip: every bit pattern of the 1- and 2-byte types, and for the
// wider ones the values where precision or range ends.
TensorData candidates(DType t) {
  if (t == DType::Bool) return TensorData::fromDoubles(t, {2}, std::vector<double>{0, 1});
  if (dtypeSize(t) <= 2) {
    const int64_t n = int64_t{1} << (8 * dtypeSize(t));
    TensorData d(t, {n});
    for (int64_t i = 0; i < n; ++i)
      std::memcpy(d.mutableBytes().data() + i * dtypeSize(t), &i, dtypeSize(t));
    return d;
  }
  const std::vector<double> v{0,       1,      -1,       0.5,        -0.25,         3,
                              255,     256,    257,      -129,       2049,          65504,
                              65520,   1e5,    16777217, 2147483647, -2147483648.0, 1e-8,
                              1.0 / 3, 3.0e38, 1e300,    -1e-300,    0x1p-149,      0};
  TensorData d = TensorData::fromDoubles(t, {static_cast<int64_t>(v.size())}, v);
  if (t == DType::I64) d.setInt(d.numel() - 1, (int64_t{1} << 53) + 1);  // beyond double
  return d;
}

bool sameValues(const TensorData &a, const TensorData &b) {
  if (a.type() != b.type()) return false;
  for (int64_t i = 0; i < a.numel(); ++i) {
    double x = a.at(i), y = b.at(i);
    if (std::isnan(x) && std::isnan(y)) continue;
    if (!isFloating(a.dtype()) ? a.atInt(i) != b.atInt(i) : x != y) return false;
    if (x == 0 && std::signbit(x) != std::signbit(y)) return false;
  }
  return true;
}

// Simplify removes cast(cast(x: S, M), S) exactly for the pairs whose round trip the interpreter
// shows to change no value, and the simplified graph computes the same as the original.
TEST(SimplifyRoundTrips, TheLosslessnessTableMatchesTheInterpreter) {
  int lossless = 0;
  for (DType s : kAllDTypes) {
    for (DType m : kAllDTypes) {
      if (s == m) continue;
      TensorData in = candidates(s);
      std::string text = "graph g {\n  input %x : " + in.type().str() +
                         " @cpu\n  %m @cpu = cast(%x, to=" + std::string(dtypeName(m)) +
                         ")\n  %y @cpu = cast(%m, to=" + std::string(dtypeName(s)) +
                         ")\n  output %y\n}\n";
      Graph g = placed(text);
      auto before = reference::run(g, {{"x", in}});
      ASSERT_TRUE(before.ok()) << before.status().message();
      const bool exact = sameValues((*before)[0], in);
      simplified(g);
      const bool removed = countOps(g, OpKind::Cast) == 0;
      EXPECT_EQ(removed, exact) << dtypeName(s) << " -> " << dtypeName(m);
      lossless += removed;
      auto after = reference::run(g, {{"x", in}});
      ASSERT_TRUE(after.ok());
      // Values, not bytes: a runtime f16 -> f32 -> f16 quiets a signalling NaN's payload.
      EXPECT_TRUE(sameValues((*after)[0], (*before)[0])) << dtypeName(s) << " -> " << dtypeName(m);
      EXPECT_EQ(g.value(g.outputs()[0].value).name, "y");
    }
  }
  // bool -> all 8; u8, i8 -> 6 each; i32 -> i64, f64; f16, bf16 -> f32, f64; f32 -> f64.
  EXPECT_EQ(lossless, 27);
}

// --- 3. Device and dtype together ---------------------------------------------------------------

TEST(SimplifyJoint, AValueCastToF16AndSentToTheHostIsCastBeforeTheTransfer) {
  Graph g = placed(R"(graph g {
  input %x : f32[32,256] @cuda:0
  %a @cuda:0 = relu(%x)
  %t @cpu = transfer(%a, to=cpu)
  %y @cpu = cast(%t, to=f16)
  output %y @cpu
})");
  const CompileStats before = described(g);
  EXPECT_EQ(before.transferBytes, 32 * 256 * 4);
  CompileStats s = simplified(g);
  const CompileStats after = described(g);
  EXPECT_EQ(after.transferBytes, before.transferBytes / 2);
  EXPECT_EQ(after.d2hBytes, 32 * 256 * 2);
  EXPECT_EQ(after.transfers, 1);
  EXPECT_EQ(after.casts, 1);
  EXPECT_EQ(s.castsRemoved, 0);
  EXPECT_EQ(s.transfersRemoved, 0);
  EXPECT_EQ(dump(g), expected(R"(graph g {
  input %x : f32[32,256] @cuda:0
  %a : f32[32,256] @cuda:0 = relu(%x)
  %a.f16 : f16[32,256] @cuda:0 = cast(%a, to=f16)  # inserted
  %y : f16[32,256] @cpu = transfer(%a.f16, to=cpu)  # inserted
  output %y @cpu
}
)"));
  ASSERT_TRUE(g.findValue("a.f16"));
  const Value &cast = g.value(*g.findValue("a.f16"));
  EXPECT_EQ(cast.deviceReason.kind, Reason::Kind::Inserted);
  EXPECT_EQ(cast.deviceReason.detail,
            "cast moved before the transfer to cpu: 2 bytes/elem instead of 4");
}

TEST(SimplifyJoint, TheCastStaysWhereItIsWhenMovingItWouldNotPay) {
  // The transfer is read by another node: moving the cast would add a second copy.
  const char *shared = R"(graph g {
  input %x : f32[8] @cuda:0
  %t @cpu = transfer(%x, to=cpu)
  %y @cpu = cast(%t, to=f16)
  %z @cpu = relu(%t)
  output %y, %z
})";
  // The user pinned the cast to the host.
  const char *pinned = R"(graph g {
  input %x : f32[8] @cuda:0
  %t @cpu = transfer(%x, to=cpu)
  %y @cpu = cast(%t, to=f16)
  output %y
})";
  // Widening: moving the cast before the copy would double the bytes.
  const char *widening = R"(graph g {
  input %x : f16[8] @cuda:0
  %t @cpu = transfer(%x, to=cpu)
  %y @cpu = cast(%t, to=f32)
  output %y
})";
  for (const char *text : {shared, pinned, widening}) {
    Graph g = placed(text);
    if (text == pinned) g.node(g.value(*g.findValue("y")).def).pinDevice = Device::cpu();
    const std::string before = dump(g);
    simplified(g);
    EXPECT_EQ(dump(g), before);
  }
  // No f16 cast kernel on cuda: the cast stays on the host.
  CompileOptions o = options();
  o.capabilities.missing.push_back({DeviceKind::Cuda, OpKind::Cast, DType::F16});
  Graph g = placed(pinned);
  const std::string before = dump(g);
  simplified(g, o);
  EXPECT_EQ(dump(g), before);
}

TEST(SimplifyJoint, AWideningCastMovesAfterTheTransfer) {
  Graph g = placed(R"(graph g {
  input %x : bf16[16] @cpu
  %c @cpu = cast(%x, to=f32)
  %t @cuda:0 = transfer(%c, to=cuda:0)
  %y @cuda:0 = relu(%t)
  output %y
})");
  simplified(g);
  EXPECT_EQ(dump(g), expected(R"(graph g {
  input %x : bf16[16] @cpu
  %x.cuda0 : bf16[16] @cuda:0 = transfer(%x, to=cuda:0)  # inserted
  %t : f32[16] @cuda:0 = cast(%x.cuda0, to=f32)  # inserted
  %y : f32[16] @cuda:0 = relu(%t)
  output %y
}
)"));
  EXPECT_EQ(described(g).h2dBytes, 16 * 2);
  ASSERT_TRUE(g.findValue("t"));
  EXPECT_EQ(g.value(*g.findValue("t")).deviceReason.detail,
            "cast moved after the transfer to cuda:0: 2 bytes/elem instead of 4");

  // The f32 value is also read on the host: moving the cast would add one.
  const char *shared = R"(graph g {
  input %x : bf16[16] @cpu
  %c @cpu = cast(%x, to=f32)
  %t @cuda:0 = transfer(%c, to=cuda:0)
  %y @cuda:0 = relu(%t)
  %z @cpu = relu(%c)
  output %y, %z
})";
  Graph h = placed(shared);
  const std::string before = dump(h);
  simplified(h);
  EXPECT_EQ(dump(h), before);
}

TEST(SimplifyJoint, ACastRoundTripAcrossATransferIsRemoved) {
  Graph g = placed(R"(graph g {
  input %x : f16[16] @cpu
  %c @cpu = cast(%x, to=f32)
  %t @cuda:0 = transfer(%c, to=cuda:0)
  %y @cuda:0 = cast(%t, to=f16)
  output %y
})");
  CompileStats s = simplified(g);
  EXPECT_EQ(dump(g), expected(R"(graph g {
  input %x : f16[16] @cpu
  %y : f16[16] @cuda:0 = transfer(%x, to=cuda:0)  # inserted
  output %y
}
)"));
  EXPECT_EQ(s.castsRemoved, 2);
  EXPECT_EQ(s.transfersRemoved, 0);

  // The widened value is also read on the host: its cast stays, the round trip still goes.
  Graph h = placed(R"(graph g {
  input %x : f16[16] @cpu
  %c @cpu = cast(%x, to=f32)
  %t @cuda:0 = transfer(%c, to=cuda:0)
  %y @cuda:0 = cast(%t, to=f16)
  %z @cpu = relu(%c)
  output %y, %z
})");
  simplified(h);
  EXPECT_EQ(dump(h), expected(R"(graph g {
  input %x : f16[16] @cpu
  %y : f16[16] @cuda:0 = transfer(%x, to=cuda:0)  # inserted
  %c : f32[16] @cpu = cast(%x, to=f32)  # inserted
  %z : f32[16] @cpu = relu(%c)
  output %y, %z
}
)"));
  EXPECT_EQ(h.value(*h.findValue("y")).dtypeReason.detail,
            "the f16 -> f32 cast before the transfer is undone after it: 2 bytes/elem sent "
            "instead of 4");
}

TEST(SimplifyJoint, AWeightSentToTheDeviceIsCastOnTheHostAtCompileTime) {
  // A weight pinned to the host and computed with in f16 on the device: the cast moves before
  // the copy and folds, so each run copies half the bytes and casts nothing.
  Graph g = placed(R"(graph g {
  input %x : f16[4,8] @cuda:0
  param %w : f32[16,8] @cpu = randn(seed=3)
  %t @cuda:0 = transfer(%w, to=cuda:0)
  %c @cuda:0 = cast(%t, to=f16)
  %y @cuda:0 = linear(%x, %c)
  output %y
})");
  CompileStats s = simplified(g);
  EXPECT_EQ(dump(g), expected(R"(graph g {
  input %x : f16[4,8] @cuda:0
  param %w.f16 : f16[16,8] @cpu = randn(seed=3)
  %c : f16[16,8] @cuda:0 = transfer(%w.f16, to=cuda:0)  # inserted
  %y : f16[4,16] @cuda:0 = linear(%x, %c)
  output %y
}
)"));
  EXPECT_EQ(s.castsFolded, 1);
  EXPECT_EQ(described(g).h2dBytes, 16 * 8 * 2);
  EXPECT_EQ(described(g).casts, 0);

  // The other way: an f16 weight computed with in f32 on the device is sent as f16 and widened
  // there, rather than folded to f32 and sent at twice the bytes.
  Graph h = placed(R"(graph g {
  input %x : f32[4,8] @cuda:0
  param %w : f16[16,8] @cpu = randn(seed=3)
  %c @cpu = cast(%w, to=f32)
  %t @cuda:0 = transfer(%c, to=cuda:0)
  %y @cuda:0 = linear(%x, %t)
  output %y
})");
  CompileStats u = simplified(h);
  EXPECT_EQ(dump(h), expected(R"(graph g {
  input %x : f32[4,8] @cuda:0
  param %w : f16[16,8] @cpu = randn(seed=3)
  %w.cuda0 : f16[16,8] @cuda:0 = transfer(%w, to=cuda:0)  # inserted
  %w.cuda0.f32 : f32[16,8] @cuda:0 = cast(%w.cuda0, to=f32)  # inserted
  %y : f32[4,16] @cuda:0 = linear(%x, %w.cuda0.f32)
  output %y
}
)"));
  EXPECT_EQ(u.castsFolded, 0);
  EXPECT_EQ(u.castsRemoved, 0);
  EXPECT_EQ(described(h).h2dBytes, 16 * 8 * 2);
}

// --- 4. Merging, 5. dead code --------------------------------------------------------------------

TEST(SimplifyMerge, IdenticalNodesMergeIntoTheFirst) {
  Graph g = placed(R"(graph g {
  input %x : f32[4] @cpu
  %t1 @cuda:0 = transfer(%x, to=cuda:0)
  %t2 @cuda:0 = transfer(%x, to=cuda:0)
  %a @cuda:0 = relu(%t1)
  %b @cuda:0 = relu(%t2)
  %c @cuda:0 = cast(%a, to=f16)
  %d @cuda:0 = cast(%b, to=f16)
  %y @cuda:0 = add(%c, %d)
  output %y
})");
  CompileStats s = simplified(g);
  EXPECT_EQ(dump(g), expected(R"(graph g {
  input %x : f32[4] @cpu
  %t1 : f32[4] @cuda:0 = transfer(%x, to=cuda:0)  # inserted
  %a : f32[4] @cuda:0 = relu(%t1)
  %c : f16[4] @cuda:0 = cast(%a, to=f16)  # inserted
  %y : f16[4] @cuda:0 = add(%c, %c)
  output %y
}
)"));
  EXPECT_EQ(s.transfersRemoved, 1);
  EXPECT_EQ(s.castsRemoved, 1);
  EXPECT_EQ(s.nodesRemoved, 1);
}

TEST(SimplifyMerge, NodesThatDifferInDeviceAttributesOrDTypePinStay) {
  const char *text = R"(graph g {
  input %x : f32[4,2] @cpu
  %a @cpu = sum(%x, axes=[0])
  %b @cpu = sum(%x, axes=[1])
  %c @cpu = cast(%x, to=f16)
  %d @cpu = cast(%x, to=bf16)
  %t @cpu:1 = transfer(%x, to=cpu:1)
  %u @cuda:0 = transfer(%x, to=cuda:0)
  %e @cpu @f32 = relu(%x)
  %f @cpu = relu(%x)
  output %a, %b, %c, %d, %t, %u, %e, %f
})";
  Graph g = placed(text);
  const std::string before = dump(g);
  simplified(g);
  EXPECT_EQ(dump(g), before);
}

TEST(SimplifyMerge, TwoIdenticalOutputsKeepBothNames) {
  Graph g = placed(R"(graph g {
  input %x : f32[4] @cpu
  %a @cpu = relu(%x)
  %b @cpu = relu(%x)
  %c @cpu = neg(%x)
  %d @cpu = neg(%x)
  %e @cpu = relu(%d)
  output %a, %b, %c, %e
})");
  simplified(g);
  // %b stays (both are outputs); %d goes: %c is its first twin, %e now reads %c.
  EXPECT_EQ(dump(g), expected(R"(graph g {
  input %x : f32[4] @cpu
  %a : f32[4] @cpu = relu(%x)
  %b : f32[4] @cpu = relu(%x)
  %c : f32[4] @cpu = neg(%x)
  %e : f32[4] @cpu = relu(%c)
  output %a, %b, %c, %e
}
)"));
}

TEST(SimplifyDeadCode, NodesAndParamsNothingReadsAreRemoved) {
  Graph g = placed(R"(graph g {
  input %x : f32[4] @cpu
  param %w : f32[4] @cpu = ones
  param %v : f32[4] @cpu = zeros
  %a @cpu = mul(%x, %w)
  %b @cpu = relu(%a)
  %t @cuda:0 = transfer(%b, to=cuda:0)
  %c @cuda:0 = cast(%t, to=f16)
  %y @cpu = add(%x, %v)
  output %y
})");
  CompileStats s = simplified(g);
  EXPECT_EQ(dump(g), expected(R"(graph g {
  input %x : f32[4] @cpu
  param %v : f32[4] @cpu = zeros
  %y : f32[4] @cpu = add(%x, %v)
  output %y
}
)"));
  EXPECT_EQ(s.nodesRemoved, 2);
  EXPECT_EQ(s.transfersRemoved, 1);
  EXPECT_EQ(s.castsRemoved, 1);
  EXPECT_EQ(g.params().size(), 1u);
}

// --- Through compile() -------------------------------------------------------------------------

TEST(SimplifyEndToEnd, UnderAutocastTheActivationIsCastBeforeItsCopyToTheHost) {
  // The host computes linear in f16 (autocast) on an activation that lives on the device:
  // placement copies it in f32 and dtype casts it on the host; simplify casts it on the device
  // and copies half the bytes, and folds the weight's cast.
  const char *text = R"(graph m {
  input %x : f32[32,256] @cuda:0
  param %w : f32[64,256] @cpu = randn(seed=1)
  %y @cpu = linear(%x, %w)
  output %y
})";
  CompileOptions o;
  o.devices = {Device::cpu(), Device::cuda(0)};
  o.placement = PlacementPolicy::Auto;
  o.dtype = {DTypePolicy::Kind::Autocast, DType::F16};
  Expected<Graph> g = parseGraph(text, "m.fy");
  ASSERT_TRUE(g.ok());
  o.stopAfter = "dtype";
  CompileResult typed = compile(*g, o);
  ASSERT_TRUE(typed.ok()) << renderText(typed.diagnostics, {.snippet = false});
  EXPECT_EQ(typed.stats.d2hBytes, 32 * 256 * 4);
  o.stopAfter = "";
  CompileResult r = compile(*g, o);
  ASSERT_TRUE(r.ok()) << renderText(r.diagnostics, {.snippet = false});
  EXPECT_EQ(r.stats.transfers, 1);
  EXPECT_EQ(r.stats.d2hBytes, 32 * 256 * 2);
  EXPECT_EQ(r.stats.castsFolded, 1);
  const ParamDecl *w = findParam(r.graph, "w.f16");
  ASSERT_NE(w, nullptr) << dump(r.graph);
  EXPECT_EQ(w->init.kind, Initializer::Kind::Randn);
  EXPECT_EQ(w->data, TensorData::randn(DType::F16, {64, 256}, 1));
  for (NodeId id : r.graph.order()) {
    const Node &n = r.graph.node(id);
    if (n.op == OpKind::Cast && r.graph.value(n.operands[0]).name == "x") {
      EXPECT_EQ(r.graph.value(n.result).device, Device::cuda(0));
    }
  }
}

// Inputs for a random graph: floats from randn, integers small, bools alternating.
std::map<std::string, TensorData> inputsFor(const Graph &g, uint64_t seed) {
  std::map<std::string, TensorData> inputs;
  for (const InputDecl &in : g.inputs()) {
    const TensorType &t = g.value(in.value).type;
    TensorData d = TensorData::randn(DType::F64, t.shape, seed++);
    TensorData x(t.dtype, t.shape);
    for (int64_t i = 0; i < x.numel(); ++i)
      x.set(i, isFloating(t.dtype) ? d.at(i) : static_cast<double>(i % 5) - 1);
    inputs.emplace(g.value(in.value).name, x);
  }
  return inputs;
}

// On what placement and dtype really produce, simplify changes no value (its rewrites are exact),
// no output, moves no more bytes, leaves no more casts, and a second run changes nothing.
TEST(SimplifyEndToEnd, OnCompiledRandomGraphsItIsExactAndIdempotent) {
  int checked = 0, simplifiedSome = 0;
  for (uint64_t seed = 1; seed <= 600; ++seed) {
    testutil::RandomGraphOptions gen{.maxNodes = 12,
                                     .insertedRate = 0,
                                     .devices = {Device::cpu(), Device::cpu(1), Device::cuda(0)},
                                     .pinRate = seed % 2 ? 0.3 : 1.0,
                                     .dtypePinRate = 0.1,
                                     .compileReady = true};
    const Graph original = testutil::randomGraph(seed, gen);
    CompileOptions o = options();
    o.devices = gen.devices;
    o.placement = PlacementPolicy::Auto;
    o.dtype = seed % 3 == 0   ? DTypePolicy{DTypePolicy::Kind::Promote, DType::F16}
              : seed % 3 == 1 ? DTypePolicy{DTypePolicy::Kind::Autocast, DType::F16}
                              : DTypePolicy{DTypePolicy::Kind::Autocast, DType::BF16};
    o.stopAfter = "dtype";
    CompileResult r = compile(original, o);
    if (!r.ok()) continue;
    const std::map<std::string, TensorData> inputs = inputsFor(r.graph, seed);
    auto want = reference::run(r.graph, inputs);
    if (!want.ok()) continue;  // e.g. a gather index out of range
    const CompileStats was = described(r.graph);
    std::vector<std::string> names;
    for (const OutputDecl &out : r.graph.outputs()) names.push_back(r.graph.value(out.value).name);

    Graph &g = r.graph;
    const CompileStats did = simplified(g, o);
    auto got = reference::run(g, inputs);
    ASSERT_TRUE(got.ok()) << seed << ": " << got.status().message();
    ASSERT_EQ(got->size(), want->size());
    for (size_t i = 0; i < want->size(); ++i) {
      EXPECT_TRUE(sameValues((*got)[i], (*want)[i])) << "seed " << seed << " output " << i;
      EXPECT_EQ(g.value(g.outputs()[i].value).name, names[i]) << seed;
    }
    const CompileStats is = described(g);
    EXPECT_LE(is.transferBytes, was.transferBytes) << seed;
    EXPECT_LE(is.casts, was.casts) << seed;
    const std::string once = dump(g);
    const CompileStats again = simplified(g, o);
    EXPECT_EQ(dump(g), once) << seed;
    EXPECT_EQ(again.castsFolded + again.castsRemoved + again.transfersRemoved + again.nodesRemoved,
              0)
        << seed;
    ++checked;
    simplifiedSome += did.castsFolded + did.castsRemoved + did.transfersRemoved > 0;
  }
  EXPECT_GT(checked, 300);
  EXPECT_GT(simplifiedSome, 50);
}

// --- Outputs, idempotence, random graphs ---------------------------------------------------------

TEST(SimplifyOutputs, AnOutputKeepsItsNameThroughAnIdentityWhenItsReplacementCannotTakeIt) {
  Graph g = placed(R"(graph g {
  input %x : f32[4] @cpu
  %a @cuda:0 = transfer(%x, to=cuda:0)
  %y @cpu = transfer(%a, to=cpu)
  output %y, %x
})");
  CompileStats s = simplified(g);
  EXPECT_EQ(dump(g), expected(R"(graph g {
  input %x : f32[4] @cpu
  %y : f32[4] @cpu = identity(%x)  # inserted
  output %y, %x
}
)"));
  EXPECT_EQ(s.transfersRemoved, 2);
  const std::string once = dump(g);
  simplified(g);
  EXPECT_EQ(dump(g), once);
}

TEST(SimplifyIdempotence, ASecondRunChangesNothing) {
  Graph g = placed(R"(graph g {
  input %x : f32[8,8] @cpu
  input %z : f16[8,8] @cuda:0
  param %w : f32[8,8] @cpu = randn(seed=5)
  param %u : f32[8,8] @cuda:0 = ones
  %wc @cuda:0 = transfer(%w, to=cuda:0)
  %wh @cuda:0 = cast(%wc, to=f16)
  %xc @cuda:0 = transfer(%x, to=cuda:0)
  %xc2 @cuda:0 = transfer(%x, to=cuda:0)
  %xh @cuda:0 = cast(%xc, to=f16)
  %xh2 @cuda:0 = cast(%xc2, to=f16)
  %uh @cuda:0 = cast(%u, to=f16)
  %m @cuda:0 = matmul(%xh, %wh)
  %n @cuda:0 = add(%m, %xh2)
  %o @cuda:0 = mul(%n, %uh)
  %p @cuda:0 = add(%o, %z)
  %q @cuda:0 = cast(%p, to=f32)
  %r @cuda:0 = cast(%q, to=f16)
  %back @cpu = transfer(%r, to=cpu)
  %dead @cpu = relu(%back)
  output %r
})");
  CompileStats first = simplified(g);
  EXPECT_GT(first.castsFolded + first.castsRemoved + first.transfersRemoved, 0);
  const std::string once = dump(g);
  CompileStats second = simplified(g);
  EXPECT_EQ(dump(g), once);
  EXPECT_EQ(
      second.castsFolded + second.castsRemoved + second.transfersRemoved + second.nodesRemoved, 0);
  // Through the text form too: a dump reads back and simplifies to itself.
  Graph reread = placed(once);
  simplified(reread);
  EXPECT_EQ(dump(reread), once);
}

// A random placed graph of casts, transfers and a few computing ops over one input and a param.
Graph randomPlaced(uint64_t seed) {
  testutil::Rng rng(seed);
  const Device devices[] = {Device::cpu(), Device::cpu(1), Device::cuda(0), Device::cuda(1)};
  Graph g("r");
  std::vector<ValueId> values;
  auto dev = [&] { return devices[rng.below(4)]; };
  auto dt = [&] { return kAllDTypes[static_cast<size_t>(rng.below(kAllDTypes.size()))]; };
  values.push_back(g.addInput("x", {dt(), {6}}, dev(), {}));
  {
    const DType t = dt();
    TensorData data(t, {6});
    const double samples[] = {-300.5, -1, 0, 0.5, 2.75, 70000, 1e-9, 3e9, 255, 1.0 / 3};
    for (int64_t i = 0; i < 6; ++i) data.set(i, samples[rng.below(10)]);
    ValueId p = g.addParam("w", data, {}, std::nullopt, {});
    g.value(p).device = dev();
    values.push_back(p);
  }
  const int steps = static_cast<int>(rng.range(3, 14));
  for (int s = 0; s < steps; ++s) {
    const ValueId v = values[static_cast<size_t>(rng.below(static_cast<int64_t>(values.size())))];
    const Value &val = g.value(v);
    const Device here = *val.device;
    const int64_t kind = rng.below(10);
    OpKind op = kind < 4   ? OpKind::Cast
                : kind < 8 ? OpKind::Transfer
                : kind < 9 ? OpKind::Neg
                           : OpKind::Identity;
    if (op == OpKind::Neg && val.type.dtype == DType::Bool) op = OpKind::Identity;
    std::vector<NamedAttr> given;
    Device where = here;
    if (op == OpKind::Cast) given.push_back({"to", dt()});
    if (op == OpKind::Transfer) {
      where = dev();
      given.push_back({"to", where});
    }
    Attrs attrs = *makeAttrs(opInfo(op), given, {});
    std::vector<TensorType> types{val.type};
    TensorType type = std::get<TensorType>(inferType(opInfo(op), types, attrs));
    NodeId id =
        g.addNode({op, {v}, attrs, std::nullopt, std::nullopt, {}}, g.uniqueName("v"), type);
    g.node(id).inserted = op == OpKind::Cast || op == OpKind::Transfer;
    g.value(g.node(id).result).device = where;
    values.push_back(g.node(id).result);
  }
  g.addOutput(values.back(), std::nullopt, {});
  for (int k = 0; k < 2; ++k)
    if (rng.chance(0.5))
      g.addOutput(values[static_cast<size_t>(rng.below(static_cast<int64_t>(values.size())))],
                  std::nullopt, {});
  return g;
}

TEST(SimplifyProperty, RandomPlacedGraphsComputeTheSameMoveNoMoreAndSimplifyOnce) {
  CompileStats total;
  int64_t bytesSaved = 0;
  for (uint64_t seed = 1; seed <= 3000; ++seed) {
    Graph g = randomPlaced(seed);
    ASSERT_EQ(placedProblems(g), "") << seed;
    TensorData x(g.value(g.inputs()[0].value).type.dtype, {6});
    const double samples[] = {-2.5, 0, 1, 7.25, 300, -1e5};
    for (int64_t i = 0; i < 6; ++i) x.set(i, samples[i]);
    auto before = reference::run(g, {{"x", x}});
    ASSERT_TRUE(before.ok()) << seed;
    const CompileStats was = described(g);
    std::vector<std::string> names;
    for (const OutputDecl &o : g.outputs()) names.push_back(g.value(o.value).name);

    const CompileStats did = simplified(g);
    total.castsFolded += did.castsFolded;
    total.castsRemoved += did.castsRemoved;
    total.transfersRemoved += did.transfersRemoved;
    total.nodesRemoved += did.nodesRemoved;
    ASSERT_EQ(placedProblems(g), "") << seed << "\n" << dump(g);
    auto after = reference::run(g, {{"x", x}});
    ASSERT_TRUE(after.ok()) << seed;
    ASSERT_EQ(after->size(), before->size());
    for (size_t i = 0; i < before->size(); ++i) {
      EXPECT_EQ((*after)[i], (*before)[i]) << "seed " << seed << " output " << i;
      EXPECT_EQ(g.value(g.outputs()[i].value).name, names[i]) << seed;
    }
    const CompileStats is = described(g);
    EXPECT_LE(is.transferBytes, was.transferBytes) << seed;
    bytesSaved += was.transferBytes - is.transferBytes;
    EXPECT_LE(is.casts, was.casts) << seed;
    const std::string once = dump(g);
    CompileStats again = simplified(g);
    EXPECT_EQ(dump(g), once) << seed;
    EXPECT_EQ(again.castsFolded + again.castsRemoved + again.transfersRemoved + again.nodesRemoved,
              0)
        << seed;
  }
  // The rules did fire on these graphs (3000 seeds: 1005 folds, 7373 casts and 8067 transfers
  // removed, 3966 other nodes, 171474 bytes per run saved), so the checks above are not vacuous.
  EXPECT_GT(total.castsFolded, 500);
  EXPECT_GT(total.castsRemoved, 3000);
  EXPECT_GT(total.transfersRemoved, 3000);
  EXPECT_GT(total.nodesRemoved, 1000);
  EXPECT_GT(bytesSaved, 100000);
}

}  // namespace
}  // namespace ferry
