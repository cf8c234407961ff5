// tests/passes/simplify_test.cpp — simplify on graphs placed by hand: each rule with a case where
// it applies and one where it must not, folding against storeDouble and TensorData::randn, the
// losslessness table against the interpreter, the joint device/dtype rewrites on the statistics.
// Whole graphs (compile(), idempotence, random graphs) are in simplify_graphs_test.cpp.
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
#include "passes/pass_test_util.h"

namespace ferry {
namespace {

// --- 1. Folding -------------------------------------------------------------------------------

TEST(SimplifyFold, ACastOfAParamBecomesAParamOfTheNewDType) {
  Graph g = placed(R"(graph g {
  input %x : f16[2,3] @cuda:0
  param %w : f32[2,3] @cuda:0 = [0.1, 1.5, -2.25, 65519.0, 1e-08, 70000.0]
  %c @cuda:0 = cast(%w, to=f16)
  %y @cuda:0 = mul(%x, %c)
  output %y
})");
  const ValueId original = *g.findValue("w");
  const TensorData old = g.paramOf(original).data;
  g.deviceReason(original) = {Reason::Kind::Pinned, -1, {"t.fy", 3, 9}, {}};
  CompileStats s = simplified(g);
  EXPECT_EQ(dump(g), expected(R"(graph g {
  input %x : f16[2,3] @cuda:0
  param %w : f16[2,3] @cuda:0 = [0.0999755859375, 1.5, -2.25, 65504.0, 0.0, inf]
  %y : f16[2,3] @cuda:0 = mul(%x, %w)
  output %y
}
)"));
  const ParamDecl *p = findParam(g, "w");
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->init.kind, Initializer::Kind::Data);
  EXPECT_EQ(p->pin, Device::cuda(0));
  for (int64_t i = 0; i < old.numel(); ++i) {
    std::byte expected[2];
    storeDouble(DType::F16, expected, old.at(i));
    EXPECT_EQ(std::memcmp(p->data.bytes().data() + 2 * i, expected, 2), 0) << i;
  }
  // The cast was the param's only reader: the param itself is converted (same value, name,
  // pin and device reason), so apps address the weight as before and nothing is added.
  EXPECT_EQ(p->value, original);
  EXPECT_EQ(g.params().size(), 1u);
  EXPECT_EQ(g.deviceReason(original).kind, Reason::Kind::Pinned);
  EXPECT_EQ(g.deviceReason(original).loc, (Location{"t.fy", 3, 9}));
  EXPECT_EQ(g.dtypeReason(original).kind, Reason::Kind::Rule);
  EXPECT_EQ(g.dtypeReason(original).detail, "folded into the param at compile time");
  EXPECT_EQ(s.castsFolded, 1);
  EXPECT_EQ(s.castsRemoved, 0);
  EXPECT_EQ(s.nodesRemoved, 0);
  EXPECT_EQ(countOps(g, OpKind::Cast), 0);
}

TEST(SimplifyFold, IntegersConvertExactlyAndWrapAsTheInterpretersCast) {
  Graph g = placed(R"(graph g {
  param %w : i64[3] @cpu = [5000000000, -3, 9007199254740993]
  %c @cpu = cast(%w, to=i32)
  %d @cpu = cast(%w, to=f64)
  output %c, %d
})");
  simplified(g);
  EXPECT_EQ(dump(g), expected(R"(graph g {
  param %c : i32[3] @cpu = [705032704, -3, 1]
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

// Apps and checkpoints address weights by name: a fold that replaces its param takes the name;
// while the original is still read, or folds to two dtypes, the folds keep suffixed names.
TEST(SimplifyFold, AFoldTakesItsParamsNameOnlyWhenItReplacesIt) {
  Graph g = placed(R"(graph g {
  input %x : f16[2] @cpu
  input %z : bf16[2] @cpu
  input %u : f32[2] @cpu
  param %w : f32[2] @cpu = [1.0, 2.0]
  param %v : f32[2] @cpu = [3.0, 4.0]
  %a @cpu = cast(%w, to=f16)
  %b @cpu = cast(%w, to=bf16)
  %c @cpu = cast(%v, to=f16)
  %s @cpu = add(%a, %x)
  %t @cpu = mul(%b, %z)
  %q @cpu = mul(%c, %x)
  %r @cpu = add(%v, %u)
  output %s, %t, %q, %r
})");
  simplified(g);
  EXPECT_EQ(dump(g), expected(R"(graph g {
  input %x : f16[2] @cpu
  input %z : bf16[2] @cpu
  input %u : f32[2] @cpu
  param %v : f32[2] @cpu = [3.0, 4.0]
  param %w.f16 : f16[2] @cpu = [1.0, 2.0]
  param %w.bf16 : bf16[2] @cpu = [1.0, 2.0]
  param %v.f16 : f16[2] @cpu = [3.0, 4.0]
  %s : f16[2] @cpu = add(%w.f16, %x)
  %t : bf16[2] @cpu = mul(%w.bf16, %z)
  %q : f16[2] @cpu = mul(%v.f16, %x)
  %r : f32[2] @cpu = add(%v, %u)
  output %s, %t, %q, %r
}
)"));
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
  param %w : f16[2] @cpu = [1.0, 2.0]
  %s : f16[2] @cpu = add(%w, %x)
  %t : f16[2] @cpu = mul(%w, %s)
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

// Simplify removes cast(cast(x: S, M), S) exactly for the pairs where M holds every value of S
// (so S -> M -> T also equals S -> T), and then the interpreter shows the round trip changes no
// value. u8 -> i8 -> u8 also round-trips (integer casts wrap) but i8 does not hold 200: kept.
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
      // M holds every value of S when converting there and reading back as double changes none.
      const TensorData mid = castTensor(in, m);
      bool holds = true;
      for (int64_t i = 0; i < in.numel(); ++i)
        holds = holds && (mid.at(i) == in.at(i) || (std::isnan(mid.at(i)) && std::isnan(in.at(i))));
      const bool exact = holds && sameValues((*before)[0], in);
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
  EXPECT_EQ(after.bytesOf(TransferDirection::D2H), 32 * 256 * 2);
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
  EXPECT_EQ(g.deviceReason(cast.id).kind, Reason::Kind::Inserted);
  EXPECT_EQ(g.deviceReason(cast.id).detail,
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
  o.capabilities.setMissing(DeviceKind::Cuda, OpKind::Cast, DType::F16);
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
  EXPECT_EQ(described(g).bytesOf(TransferDirection::H2D), 16 * 2);
  ASSERT_TRUE(g.findValue("t"));
  EXPECT_EQ(g.deviceReason(*g.findValue("t")).detail,
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
  %c : f32[16] @cpu = cast(%x, to=f32)  # inserted
  %y : f16[16] @cuda:0 = transfer(%x, to=cuda:0)  # inserted
  %z : f32[16] @cpu = relu(%c)
  output %y, %z
}
)"));
  EXPECT_EQ(h.dtypeReason(*h.findValue("y")).detail,
            "the f16 -> f32 cast before the transfer is undone after it: 2 bytes/elem sent "
            "instead of 4");
}

TEST(SimplifyJoint, AWeightSentToTheDeviceIsCastOnTheHostAtCompileTime) {
  // A weight pinned to the host and computed with in f16 on the device: the cast moves before
  // the copy and folds, so the copy (made once, at load) moves half the bytes and nothing casts.
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
  param %w : f16[16,8] @cpu = randn(seed=3)
  %c : f16[16,8] @cuda:0 = transfer(%w, to=cuda:0)  # inserted
  %y : f16[4,16] @cuda:0 = linear(%x, %c)
  output %y
}
)"));
  EXPECT_EQ(s.castsFolded, 1);
  EXPECT_EQ(described(g).loadTransferBytes, 16 * 8 * 2);
  EXPECT_EQ(described(g).bytesOf(TransferDirection::H2D), 0);  // a weight's copy: not per run
  EXPECT_EQ(described(g).casts, 0);

  // The other way: an f16 weight computed with in f32 on the device is sent as f16 and widened
  // there, rather than folded to f32 and sent at twice the bytes (both at load).
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
  EXPECT_EQ(described(h).loadTransferBytes, 16 * 8 * 2);
  EXPECT_EQ(described(h).loadCasts, 1);  // the widening runs once, at load, too
}

// --- 4. Merging, 5. dead code --------------------------------------------------------------------

// %a alone reads %t1 and %c alone reads %a, so both stay out of the CSE table until a merge gives
// their operand a second reader (%t2 -> %t1, then %b -> %a): the chain still merges in one run.
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
  %c @cpu = cast(%x, to=f16)
  %d @cpu = cast(%x, to=bf16)
  %t @cpu:1 = transfer(%x, to=cpu:1)
  %u @cuda:0 = transfer(%x, to=cuda:0)
  %a @cpu = sum(%x, axes=[0])
  %b @cpu = sum(%x, axes=[1])
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

}  // namespace
}  // namespace ferry
