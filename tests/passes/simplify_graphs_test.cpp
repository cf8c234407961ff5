// tests/passes/simplify_graphs_test.cpp — simplify on whole graphs: through compile() (the
// autocast activation cast before its copy, compiled random graphs exact and idempotent), output
// names, a second run changing nothing, and random placed graphs checked against the
// interpreter. The rule-by-rule tests are in simplify_test.cpp.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <map>

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
  EXPECT_EQ(typed.stats.bytesOf(TransferDirection::D2H), 32 * 256 * 4);
  o.stopAfter = "";
  CompileResult r = compile(*g, o);
  ASSERT_TRUE(r.ok()) << renderText(r.diagnostics, {.snippet = false});
  EXPECT_EQ(r.stats.transfers, 1);
  EXPECT_EQ(r.stats.bytesOf(TransferDirection::D2H), 32 * 256 * 2);
  EXPECT_EQ(r.stats.castsFolded, 1);
  const ParamDecl *w = findParam(r.graph, "w");
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
    // Per run, and in all (a weight's copies are made once, at load: counted apart).
    EXPECT_LE(is.transferBytes, was.transferBytes) << seed;
    EXPECT_LE(is.transferBytes + is.loadTransferBytes, was.transferBytes + was.loadTransferBytes)
        << seed;
    bytesSaved +=
        was.transferBytes + was.loadTransferBytes - is.transferBytes - is.loadTransferBytes;
    EXPECT_LE(is.casts, was.casts) << seed;
    const std::string once = dump(g);
    CompileStats again = simplified(g);
    EXPECT_EQ(dump(g), once) << seed;
    EXPECT_EQ(again.castsFolded + again.castsRemoved + again.transfersRemoved + again.nodesRemoved,
              0)
        << seed;
  }
  // The rules did fire on these graphs (3000 seeds: 1005 folds, 7373 casts and 8067 transfers
  // removed, 3966 other nodes, 171456 bytes saved, per run or at load), so the checks above are
  // not vacuous.
  EXPECT_GT(total.castsFolded, 500);
  EXPECT_GT(total.castsRemoved, 3000);
  EXPECT_GT(total.transfersRemoved, 3000);
  EXPECT_GT(total.nodesRemoved, 1000);
  EXPECT_GT(bytesSaved, 100000);
}

}  // namespace
}  // namespace ferry
