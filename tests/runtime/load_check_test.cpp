// tests/runtime/load_check_test.cpp — what compiles, loads (RELIABILITY.md, item 3): a graph
// with extreme shapes is refused when it is compiled or its executable loads, never compiled
// and then refused by the loader; and validate() checks every step against the op table, so an
// executable whose types were edited (in memory, or in a file behind a recomputed checksum) is
// refused before a kernel sees it, the step named.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <string_view>

#include "ir/parser.h"
#include "passes/lower.h"
#include "runtime/executable.h"
#include "runtime/session.h"
#include "runtime/small_mlp.h"

namespace ferry {
namespace {

constexpr size_t kHeader = 32;

// The layout of docs/artifact.md, written independently of runtime/artifact.cpp.
std::string le(uint64_t v, size_t n) {
  std::string s;
  for (size_t i = 0; i < n; ++i) s += static_cast<char>((v >> (8 * i)) & 0xff);
  return s;
}
std::string str(std::string_view s) { return le(s.size(), 4) + std::string(s); }
uint64_t fnv1a(std::string_view b) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (char c : b) h = (h ^ static_cast<uint8_t>(c)) * 0x100000001b3ull;
  return h;
}
// The header's length and checksum made right for an edited payload.
std::string resealed(std::string bytes) {
  const std::string_view payload = std::string_view(bytes).substr(kHeader);
  bytes.replace(16, 8, le(payload.size(), 8));
  bytes.replace(24, 8, le(fnv1a(payload), 8));
  return bytes;
}

std::string loadError(std::string_view bytes) {
  Expected<Executable> e = Executable::deserialize(bytes, "m.ferry");
  return e.ok() ? "(loaded)" : e.status().message();
}

bool has(const std::string &text, std::string_view part) {
  return text.find(part) != std::string::npos;
}


int32_t slotNamed(const Executable &exe, std::string_view name) {
  for (size_t i = 0; i < exe.slots.size(); ++i)
    if (exe.slots[i].name == name) return static_cast<int32_t>(i);
  ADD_FAILURE() << "no slot %" << name;
  return 0;
}

// ---- the compile side and the load side agree -------------------------------------------------

// A graph of one input and one node, in .fy.
std::string graphOf(std::string_view input, std::string_view node) {
  return "graph g {\n  input %x : " + std::string(input) + " @cpu\n  %y = " + std::string(node) +
         "\n  output %y\n}\n";
}

// Compiled and saved, then loaded: either step may refuse, but what compiles must load.
// Returns the compile error ("" when it compiled), failing the test when the load refuses.
std::string compileThenLoad(const std::string &text) {
  Expected<Graph> g = parseGraph(text, "g.fy");
  if (!g) return g.status().message();
  Expected<Executable> exe = build(std::move(g).value(), CompileOptions{});
  if (!exe) return exe.status().message();
  const std::string loaded = loadError(exe->serialize());
  EXPECT_EQ(loaded, "(loaded)") << "compiled but does not load:\n" << text;
  return "";
}

TEST(WhatCompilesLoads, AZeroDimHidesNoAbsurdDim) {
  // Empty tensors whose other dims are huge but whose byte size (zero dims counted as 1) fits
  // in 63 bits compile and load.
  EXPECT_EQ(compileThenLoad(graphOf("f32[0,10000000000000]", "relu(%x)")), "");
  EXPECT_EQ(compileThenLoad(graphOf("f32[0,1]", "expand(%x, shape=[0,1099511627776])")), "");
  // Beyond that the shape rule refuses them, at the node: the loader would.
  for (const auto &[input, node] :
       {std::pair{"f32[0]", "reshape(%x, shape=[0,4611686018427387904,4])"},
        std::pair{"f32[0,1]", "expand(%x, shape=[0,4611686018427387904])"},
        std::pair{"f32[0]", "reshape(%x, shape=[0,1000000000000,1000000000000])"}}) {
    const std::string e = compileThenLoad(graphOf(input, node));
    EXPECT_TRUE(has(e, "g.fy:3:8: error: '")) << node << ": " << e;
    EXPECT_TRUE(has(e, "takes 2^63 bytes or more (zero dims counted as 1) [shape]"))
        << node << ": " << e;
  }
}

TEST(WhatCompilesLoads, ElementCountsWithinTheRuleButBytesBeyond63BitsAreRefused) {
  // 2^60 f64 elements pass the shape rule's 2^62-element bound but are 2^63 bytes.
  const std::string e =
      compileThenLoad(graphOf("f64[1]", "expand(%x, shape=[1152921504606846976])"));
  EXPECT_TRUE(has(e, "g.fy:3:8: error: 'expand' result f64[1152921504606846976]")) << e;
  EXPECT_TRUE(has(e, "takes 2^63 bytes or more")) << e;
  EXPECT_EQ(compileThenLoad(graphOf("f64[1]", "expand(%x, shape=[576460752303423487])")), "");
}

TEST(WhatCompilesLoads, RanksBeyondTheLoadersLimitAreRefusedAtCompile) {
  std::string ones64 = "1", ones65;
  for (int i = 1; i < 64; ++i) ones64 += ",1";
  ones65 = ones64 + ",1";
  EXPECT_EQ(compileThenLoad(graphOf("f32[" + ones64 + "]", "relu(%x)")), "");
  std::string e = compileThenLoad(graphOf("f32[" + ones65 + "]", "relu(%x)"));
  EXPECT_TRUE(has(e, "g.fy:2:14: error: type f32[" + ones65 + "] has 65 dims, at most 64 [shape]"))
      << e;
  e = compileThenLoad(graphOf("f32[" + ones64 + "]", "unsqueeze(%x, axes=[0])"));
  EXPECT_TRUE(has(e, "g.fy:3:8: error: 'unsqueeze' result f32[1," + ones64 +
                         "] has 65 dims, at most 64 [shape]"))
      << e;
}

// ---- validate() checks every step against the op table ---------------------------------------

// %x's dtype edited from f32 to f16 in the file, checksum recomputed: linear(f16, f32, f32)
// promotes to the f32 its result is typed, so the shape rule alone lets it through, but the
// CPU's linear kernel reads its operands in f32.
TEST(LoadChecks, AnOperandWhoseDTypeWasEditedIsRefusedAtLoadWithTheStepNamed) {
  const Executable exe = compiledSmallMlp();
  std::string bytes = exe.serialize();
  const std::string record = str("x") + str("f32");
  const size_t at = bytes.find(record, kHeader);
  ASSERT_NE(at, std::string::npos);
  bytes.replace(at + 5 + 4, 3, "f16");
  const std::string e = loadError(resealed(bytes));
  EXPECT_EQ(e, "mlp.fy:7:3: error: m.ferry: step 0 ('linear'): operand 0 (x) %x is f16[4,16], but "
               "'linear' computes in f32: a cast is missing [artifact]");
}

TEST(LoadChecks, ValidateChecksEveryStepsResultAgainstItsShapeRule) {
  Executable exe = compiledSmallMlp();
  ASSERT_TRUE(exe.validate().ok());
  const int32_t h = slotNamed(exe, "h");
  ASSERT_EQ(exe.slots[static_cast<size_t>(h)].type, (TensorType{DType::F32, {4, 8}}));
  exe.slots[static_cast<size_t>(h)].type.shape = {8, 4};
  Status s = exe.validate();
  EXPECT_TRUE(has(s.message(), "step 0 ('linear') writes %h typed f32[8,4] but 'linear' gives "
                               "f32[4,8]"))
      << s.message();
  // A Session is made only of a valid executable: no kernel is handed a slot of the wrong shape.
  Expected<Session> session = Session::create(exe);
  ASSERT_FALSE(session.ok());
  EXPECT_EQ(session.status().diagnostics()[0].code, "artifact");
  EXPECT_TRUE(has(session.status().message(), "step 0 ('linear') writes %h"))
      << session.status().message();
}

TEST(LoadChecks, ValidateChecksEveryStepsOperandDTypes) {
  Executable exe = compiledSmallMlp();
  exe.slots[static_cast<size_t>(slotNamed(exe, "a"))].type.dtype = DType::F16;
  exe.steps[1].op = OpKind::Identity;  // relu f32 -> f16 would be a shape-rule error instead
  Status s = exe.validate();
  EXPECT_TRUE(has(s.message(), "step 1 ('identity') writes %a typed f16[4,8] but 'identity' "
                               "gives f32[4,8]"))
      << s.message();
  // %x made f16 in memory, as the file edit above: linear(f16, f32, f32) still gives f32.
  exe = compiledSmallMlp();
  exe.slots[static_cast<size_t>(slotNamed(exe, "x"))].type.dtype = DType::F16;
  s = exe.validate();
  EXPECT_TRUE(has(s.message(), "step 0 ('linear'): operand 0 (x) %x is f16[4,16], but 'linear' "
                               "computes in f32: a cast is missing"))
      << s.message();
}

TEST(LoadChecks, ValidateRefusesSlotTypesTheLoaderWouldRefuse) {
  Executable exe = compiledSmallMlp();
  const int32_t x = slotNamed(exe, "x");
  exe.slots[static_cast<size_t>(x)].type.shape = {0, int64_t{1} << 62, 4};
  Status s = exe.validate();
  EXPECT_TRUE(has(s.message(), "slot " + std::to_string(x) +
                                   " (%x) is f32[0,4611686018427387904,4], which takes 2^63 "
                                   "bytes or more (zero dims counted as 1)"))
      << s.message();
}

// Found by executable_fuzz: a file whose workspace size was mutated to 7.8e18 bytes loaded, and
// Session::create asked the allocator for it. A workspace ends where its last slot or scratch
// block ends (runtime/memory_plan.h); one larger than that is refused at load, before it is
// allocated. The seed found by the fuzzer is kept under tests/fuzz/regressions/executable/.
TEST(LoadChecks, AWorkspaceLargerThanItsSlotsAndScratchNeedIsRefused) {
  Executable exe = compiledSmallMlp();
  ASSERT_TRUE(exe.validate().ok());
  ASSERT_EQ(exe.workspaces.size(), 1u);
  const size_t planned = exe.workspaces[0].bytes;
  exe.workspaces[0].bytes = planned + Executable::kAlignment;
  Status s = exe.validate();
  EXPECT_EQ(s.message(), "error: the workspace on cpu is " +
                             std::to_string(planned + Executable::kAlignment) +
                             " bytes, but its slots and scratch end at byte " +
                             std::to_string(planned) + " [artifact]");
  exe.workspaces[0].bytes = 0x6c756d74616d1240;  // the fuzzer's: "matmul" read as a size
  EXPECT_TRUE(has(exe.validate().message(), "the workspace on cpu is 7815273074989535808 bytes"))
      << exe.validate().message();
  exe.workspaces[0].bytes = planned;  // and the size lowering plans still loads
  EXPECT_TRUE(exe.validate().ok()) << exe.validate().message();
}

// Found by executable_fuzz: a file whose offsets were mutated so that relu's operand and result
// shared bytes loaded, and the kernel copied a buffer onto itself (ASan: memcpy-param-overlap).
// Two slots (or scratch blocks) live at the same step never share a byte (runtime/memory_plan.h);
// validate() now checks what the memory plan promises.
TEST(LoadChecks, SlotsLiveAtTheSameStepThatShareBytesAreRefused) {
  Executable exe = compiledSmallMlp();
  const auto h = static_cast<size_t>(slotNamed(exe, "h"));
  const auto a = static_cast<size_t>(slotNamed(exe, "a"));
  ASSERT_NE(exe.slots[h].offset, exe.slots[a].offset);
  // relu(%h) written over %h (the one nearer the start moved onto the other: the workspace
  // still ends where its slots do)
  const size_t shared = std::max(exe.slots[h].offset, exe.slots[a].offset);
  exe.slots[a].offset = exe.slots[h].offset = shared;
  Status s = exe.validate();
  EXPECT_TRUE(has(s.message(), "%h and %a are both live at step 1 ('relu') but share bytes " +
                                   std::to_string(shared) + " to " + std::to_string(shared + 128) +
                                   " of the workspace on cpu"))
      << s.message();
  // The same bytes for two slots whose lifetimes do not meet is what the plan does, and loads:
  // %h is last read at step 1, %logits first written at step 2.
  exe = compiledSmallMlp();
  const auto logits = static_cast<size_t>(slotNamed(exe, "logits"));
  ASSERT_FALSE(exe.slots[logits].external);
  exe.slots[logits].offset = exe.slots[h].offset;
  EXPECT_TRUE(exe.validate().ok()) << exe.validate().message();
}

// kSmallMlp compiled with fusion: step 0 is linear + relu, one fused step.
Executable fusedMlp() {
  Expected<Graph> g = parseGraph(kSmallMlp, "mlp.fy");
  EXPECT_TRUE(g.ok());
  Expected<Executable> exe = build(std::move(g).value(), CompileOptions{});
  EXPECT_TRUE(exe.ok()) << exe.status().message();
  return exe ? std::move(exe).value() : Executable{};
}

TEST(LoadChecks, AFusedBodyIsCheckedMicroOpByMicroOpAgainstTheOpTable) {
  const Executable good = fusedMlp();
  ASSERT_FALSE(good.steps.empty());
  ASSERT_EQ(good.steps[0].body.size(), 2u);  // linear, relu
  EXPECT_TRUE(good.validate().ok()) << good.validate().message();
  auto refused = [&](auto edit) {
    Executable exe = good;
    edit(exe.steps[0]);
    return exe.validate().message();
  };
  auto has = [](const std::string &s, const std::string &part) {
    return s.find(part) != std::string::npos;
  };
  // relu's value typed f16: the op table gives f32 for an f32 operand.
  std::string e = refused([](Step &st) { st.body[1].type.dtype = DType::F16; });
  EXPECT_TRUE(has(e, "step 0 (fused 'linear'), micro-op 1 ('relu' %a): writes %a typed "
                     "f16[4,8] but 'relu' gives f32[4,8]"))
      << e;
  // relu reading itself, then a micro-op past the end.
  e = refused([](Step &st) { st.body[1].args[0] = ~1; });
  EXPECT_TRUE(has(e, "micro-op 1 ('relu' %a): reads micro-op 1, which is not an earlier one")) << e;
  // The anchor reading a micro-op: anchors read step operands only.
  e = refused([](Step &st) { st.body[0].args[0] = ~0; });
  EXPECT_TRUE(has(e, "micro-op 0 ('linear' %h): reads micro-op 0, but an anchor reads step "
                     "operands only"))
      << e;
  // An operand index past the step's operands.
  e = refused([](Step &st) { st.body[0].args[1] = 7; });
  EXPECT_TRUE(has(e, "micro-op 0 ('linear' %h): reads operand 7 of 3")) << e;
  // A view after the first micro-op.
  e = refused([](Step &st) { st.body[1].op = OpKind::Identity; });
  EXPECT_TRUE(has(e, "micro-op 1 ('identity' %a): only elementwise ops follow a body's first "
                     "micro-op"))
      << e;
  // A body of one micro-op.
  e = refused([](Step &st) { st.body.pop_back(); });
  EXPECT_TRUE(has(e, "is fused but its body has 1 micro-op")) << e;
  // The step's op not its anchor's.
  e = refused([](Step &st) { st.op = OpKind::Relu; });
  EXPECT_TRUE(has(e, "its op is not its body's anchor or last op 'linear'")) << e;
  // A fused load step.
  {
    Executable exe = good;
    Step st = exe.steps[0];
    exe.loadSteps.push_back(st);
    EXPECT_TRUE(has(exe.validate().message(), "load step 0 ('linear') is fused, but a load step is one node"))
        << exe.validate().message();
  }
  // And through a saved file: the relu's dtype edited behind a recomputed checksum.
  std::string bytes = good.serialize();
  const std::string relu = str("relu") + le(0, 4) + le(1, 4) + le(0xffffffffu, 4);  // op, attrs, args
  const size_t at = bytes.find(relu);
  ASSERT_NE(at, std::string::npos);
  const size_t dtype = at + relu.size() + 4;  // the micro-op's type: its dtype's text first
  ASSERT_EQ(bytes.substr(dtype, 3), "f32");
  bytes.replace(dtype, 3, "f16");
  Expected<Executable> back = Executable::deserialize(resealed(bytes), "m.ferry");
  ASSERT_FALSE(back.ok());
  EXPECT_TRUE(has(back.status().message(), "m.ferry: step 0 (fused 'linear'), micro-op 1 ('relu' %a)"))
      << back.status().message();
}

}  // namespace
}  // namespace ferry
