// tests/passes/every_problem_test.cpp — compile() reports every independent problem of a model in
// one run: verify, placement and dtype each judge it past the others' errors, none repeating or
// cascading another's; fixes respect the user's pins; dtype errors say why an operand has its
// dtype.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "common/parse.h"
#include "passes/compile.h"
#include "passes/explain.h"
#include "passes/pass.h"

namespace ferry {
namespace {

// A model as ferry-compile reads it: type errors of single nodes left to compile()'s verify.
Graph parseModel(std::string_view text) {
  return parseOk(text, "t.fy", ParseOptions{.deferTypeErrors = true});
}

CompileOptions on(std::vector<Device> devices, PlacementPolicy placement = PlacementPolicy::Strict,
                  DTypePolicy::Kind dtype = DTypePolicy::Kind::Strict) {
  CompileOptions o;
  o.devices = std::move(devices);
  o.target = o.devices.front();
  o.placement = placement;
  o.dtype.kind = dtype;
  return o;
}

std::vector<std::string> codes(const CompileResult &r) {
  std::vector<std::string> out;
  for (const Diagnostic &d : r.diagnostics)
    if (d.severity == Severity::Error) out.push_back(d.code + " " + d.loc.str());
  return out;
}

std::string text(const CompileResult &r) { return renderText(r.diagnostics, {.snippet = false}); }

const std::vector<Device> kCudaModel{Device::cpu(), Device::cuda(0), Device::cuda(1)};

TEST(EveryProblem, IndicesOfTheWrongDTypeAndADeviceConflictInOneRun) {
  CompileResult r = compile(parseModel(R"(graph b {
  input %ids : f32[6] @cuda:0
  param %table : f32[100,16] @cuda:0 = randn(seed=1)
  param %w : f32[8,16] @cuda:1 = randn(seed=2)
  %e = gather(%table, %ids)
  %h = linear(%e, %w)
  output %h
})"),
                            on(kCudaModel));
  EXPECT_EQ(codes(r), (std::vector<std::string>{"dtype t.fy:5:3", "device t.fy:6:3"})) << text(r);
  EXPECT_EQ(r.lastPass, "dtype");
  ASSERT_EQ(r.diagnostics.size(), 2u);
  const Diagnostic &kind = r.diagnostics[0];
  ASSERT_EQ(kind.notes.size(), 1u);
  EXPECT_EQ(kind.notes[0].message, "operand 1 (indices) %ids f32[6]  input 'ids', declared f32 at "
                                   "t.fy:2:9");
  EXPECT_EQ(kind.notes[0].loc.str(), "t.fy:2:9");
  EXPECT_EQ(kind.fixes, std::vector<std::string>{"cast %ids to i64: cast(%ids, to=i64)"});
  EXPECT_EQ(r.diagnostics[1].fixes,
            std::vector<std::string>{"drop the @cuda:1 pin on %w, or pin it to cuda:0"});
}

// Under autocast the gather's table is retyped to f16 and the dtype pass re-infers the gather: its
// index error, which verify reported, is not reported again.
TEST(EveryProblem, AnOperandKindErrorIsReportedOnceThoughTheDTypePassRetypesTheNode) {
  CompileResult r =
      compile(parseModel(R"(graph g {
  input %x : f32[4,8]
  input %ids : f32[3]
  param %w : f32[16,8] = ones
  %e = linear(%x, %w)
  %g = gather(%e, %ids)
  %y = relu(%g)
  output %y
})"),
              on({Device::cpu()}, PlacementPolicy::Strict, DTypePolicy::Kind::Autocast));
  EXPECT_EQ(codes(r), std::vector<std::string>{"dtype t.fy:6:3"}) << text(r);
}

// The graph lives on cuda:0 (an input and a weight there): each table created on the cpu is its
// own error whose fix is its pin, whichever way it reaches the graph.
TEST(EveryProblem, TablesPinnedToTheCpuAreEachReportedWithTheirPin) {
  CompileResult r = compile(parseModel(R"(graph c {
  input %x : f32[8,16] @cuda:0
  param %w1 : f32[16,16] @cuda:0 = randn(seed=1)
  param %pos : f32[8,16] @cpu = randn(seed=2)
  %mask @cpu = constant(value=f32[]{1.0})
  %h = linear(%x, %w1)
  %p = add(%h, %pos)
  %nm = neg(%mask)
  %m = mul(%p, %nm)
  output %m
})"),
                            on(kCudaModel));
  ASSERT_EQ(codes(r), (std::vector<std::string>{"device t.fy:7:3", "device t.fy:9:3"})) << text(r);
  EXPECT_EQ(r.diagnostics[0].fixes,
            std::vector<std::string>{"drop the @cpu pin on %pos, or pin it to cuda:0"});
  EXPECT_EQ(r.diagnostics[1].fixes,
            std::vector<std::string>{
                "drop the @cpu pin on %mask, which puts %nm on cpu, or pin it to cuda:0"});
  // The nodes are placed as their fixes put them: on cuda:0.
  EXPECT_EQ(r.graph.value(*r.graph.findValue("m")).device, Device::cuda(0));
}

// An input's declared device counts like a pin: one input on cuda:0 against one (larger) table
// pinned to the cpu is a tie, which the device other than the default cpu wins.
TEST(EveryProblem, AnInputsDeviceCountsAndTheCpuLosesATie) {
  CompileResult r = compile(parseModel(R"(graph t {
  input %x : f32[2,4] @cuda:0
  param %table : f32[2,4] @cpu = ones
  param %big : f32[1000] = zeros
  %y = add(%x, %table)
  %z = relu(%big)
  output %y, %z
})"),
                            on(kCudaModel));
  ASSERT_EQ(codes(r), std::vector<std::string>{"device t.fy:5:3"}) << text(r);
  EXPECT_EQ(r.diagnostics[0].fixes,
            std::vector<std::string>{"drop the @cpu pin on %table, or pin it to cuda:0"});
}

// An activation off the graph's device is moved, whatever pinned it upstream; a pinned operand
// and a moved one in one node get one fix each.
TEST(EveryProblem, ActivationsGetTheTransferFixAndPinnedDataTheirPin) {
  CompileResult r = compile(parseModel(R"(graph g {
  input %x : f32[4,8] @cuda:0
  input %c : f32[4,8]
  param %w : f32[4,8] @cuda:0 = ones
  param %v : f32[4,8] @cuda:0 = ones
  param %s : f32[4,8] @cpu = ones
  %a = add(%x, %w)
  %b = add(%a, %v)
  %r @cpu = relu(%c)
  %y = where(%x, %b, %r)
  %z = add(%y, %s)
  output %z
})"),
                            on(kCudaModel));
  // Three pins on each side (%x, %w, %v; %c, %r, %s), and the device other than the cpu wins the
  // tie: the graph lives on cuda:0. where's condition must be bool: reported, and the node still
  // placed and judged.
  ASSERT_EQ(codes(r),
            (std::vector<std::string>{"dtype t.fy:10:3", "device t.fy:10:3", "device t.fy:11:3"}))
      << text(r);
  EXPECT_EQ(r.diagnostics[0].fixes, std::vector<std::string>{"cast %x to bool: cast(%x, to=bool)"});
  EXPECT_EQ(r.diagnostics[1].fixes,
            std::vector<std::string>{"move %r to cuda:0 with transfer(%r, to=cuda:0), or compile "
                                     "with placement=auto to insert the transfer"});
  EXPECT_EQ(r.diagnostics[2].fixes,
            std::vector<std::string>{"drop the @cpu pin on %s, or pin it to cuda:0"});
}

// A dtype conflict and a device conflict on one node are two problems; the chain after the node
// is judged as if both were fixed, so nothing down it is reported.
TEST(EveryProblem, TwoProblemsOfOneNodeAndNoneDownItsChain) {
  CompileResult r = compile(parseModel(R"(graph g {
  input %x : f32[4,8]
  param %w1 : f16[16,8] @cuda:0 = ones
  param %w2 : f16[16,16] = ones
  param %w3 : f16[16,16] = ones
  %h1 = linear(%x, %w1)
  %h2 = linear(%h1, %w2)
  %h3 = relu(%h2)
  %h4 = linear(%h3, %w3)
  output %h4
})"),
                            on(kCudaModel));
  EXPECT_EQ(codes(r), (std::vector<std::string>{"device t.fy:6:3", "dtype t.fy:6:3"})) << text(r);
}

// A written type the op does not give is reported by verify; nothing computed from the value is
// judged by that type (the dtype pass would find %h2 f16 x f32), and the rest still is.
TEST(EveryProblem, AWrongWrittenTypeIsReportedOnceAndTheRestJudged) {
  for (PlacementPolicy placement : {PlacementPolicy::Strict, PlacementPolicy::Auto}) {
    CompileResult r = compile(parseModel(R"(graph d {
  input %x : f32[4,8]
  param %w1 : f32[16,8] = ones
  param %w2 : f32[16,16] = ones
  param %a : f32[4,3] = ones
  param %b : f16[3,2] = ones
  %h1 : f16[4,16] = linear(%x, %w1)
  %h2 = linear(%h1, %w2)
  %m = matmul(%a, %b)
  output %h2, %m
})"),
                              on({Device::cpu(), Device::cpu(1)}, placement));
    EXPECT_EQ(codes(r), (std::vector<std::string>{"type t.fy:7:3", "dtype t.fy:9:3"})) << text(r);
  }
}

// A shape error with a written type: verify reports it and the node keeps the written type. Auto
// placement, whose cost model would read the inconsistent shapes, decides nothing then; nothing
// crashes, and the dtype conflict elsewhere is still reported.
TEST(EveryProblem, AShapeErrorWithAWrittenTypeUnderBothPolicies) {
  const char *model = R"(graph s {
  input %a : f32[4,3]
  input %b : f32[5,2]
  input %s : f32[]
  param %w : f16[2,3] = ones
  %m : f32[4,2] = matmul(%a, %b)
  %n : f32[4] = matmul(%s, %s)
  %l = linear(%a, %w)
  %y = relu(%m)
  output %y, %n, %l
})";
  for (PlacementPolicy placement : {PlacementPolicy::Strict, PlacementPolicy::Auto}) {
    CompileResult r = compile(parseModel(model), on({Device::cpu(), Device::cpu(1)}, placement));
    EXPECT_EQ(codes(r),
              (std::vector<std::string>{"shape t.fy:6:3", "shape t.fy:7:3", "dtype t.fy:8:3"}))
        << text(r);
    EXPECT_EQ(r.lastPass, "dtype");
  }
}

// Why an operand has its dtype: the chain a dtype error shows.
TEST(EveryProblem, DTypeChainsSayWhereADTypeComesFrom) {
  Graph g = parseModel(R"(graph g {
  input %x : f16[4,8]
  param %w : f32[4,8] = ones
  %a = relu(%x)
  %b = cast(%a, to=f32)
  %c @bf16 = neg(%b)
  %d = add(%x, %w)
  %e = sum(%a)
  output %c, %d, %e
})");
  auto why = [&](const char *name) { return explainDType(g, *g.findValue(name)); };
  EXPECT_EQ(why("a"), "inherited from %x (t.fy:2:9) <- input 'x', declared f16 at t.fy:2:9");
  EXPECT_EQ(why("b"), "cast to f32 at t.fy:5:3");
  EXPECT_EQ(why("c"), "pinned @bf16 at t.fy:6:3");
  EXPECT_EQ(why("d"), "'add' at t.fy:7:3: promote: f16 + f32 -> f32");
  EXPECT_EQ(why("w"), "param 'w', declared f32 at t.fy:3:9");
}

}  // namespace
}  // namespace ferry
