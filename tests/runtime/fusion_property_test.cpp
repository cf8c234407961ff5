// tests/runtime/fusion_property_test.cpp — random graphs compiled with and without fusion, run by
// a Session on the CPU: both give the reference interpreter's results, and the fused run gives
// exactly the unfused run's bytes (a fused kernel rounds every member's value to its dtype as
// storing it would). The graphs are drawn from the ops fusion groups (elementwise, casts, where,
// comparisons, GEMM anchors) plus a few that end groups, so that groups of every shape the pass
// makes occur: counted, and each shape required a few times. Graphs with extreme values (inf,
// NaN, 1e300) are checked fused against unfused only.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <map>

#include "backends/reference/interpreter.h"
#include "common/group_shapes.h"
#include "common/random_graph.h"
#include "common/value_check.h"
#include "ir/parser.h"
#include "ir/printer.h"
#include "passes/lower.h"
#include "runtime/session.h"

namespace ferry {
namespace {

constexpr int kGraphs = 2000;
constexpr int kMaxFailures = 5;

// Group shapes of an executable's steps, counted over the suite.
void count(const Executable &exe, testutil::GroupShapes &s) {
  for (const Step &st : exe.steps) {
    std::vector<TensorType> operands;
    for (int32_t o : st.operands) operands.push_back(exe.slots[static_cast<size_t>(o)].type);
    if (!st.body.empty()) s.add(st.body, operands, exe.slots[static_cast<size_t>(st.result)].type);
  }
}

std::vector<OpKind> fusableOps() {
  std::vector<OpKind> ops;
  for (const OpInfo &op : allOps())
    if (op.is(OpTrait::Elementwise) || op.is(OpTrait::GemmLike)) ops.push_back(op.kind);
  // A few that end groups or change shapes between them.
  for (OpKind k : {OpKind::Softmax, OpKind::Sum, OpKind::Transpose, OpKind::Reshape})
    ops.push_back(k);
  return ops;
}

struct Ran {
  Expected<RunResult> result = makeError("internal", "not run");
  std::unique_ptr<Executable> exe;
};

Ran runCompiled(const Graph &compiled, const CompileOptions &options,
                const std::vector<NamedTensor> &inputs) {
  Ran run;
  Expected<Executable> exe = lower(compiled, options);
  if (!exe) {
    run.result = exe.status();
    return run;
  }
  run.exe = std::make_unique<Executable>(*exe);
  Session::Options so;
  so.checkPlan = true;
  Expected<Session> session = Session::create(std::move(exe).value(), so);
  if (!session) {
    run.result = session.status();
    return run;
  }
  run.result = session->run(inputs);
  return run;
}

TEST(FusionProperty, FusedAndUnfusedGraphsGiveTheReferencesResultsAndTheSameBytes) {
  const std::vector<OpKind> ops = fusableOps();
  testutil::GroupShapes shapes;
  int graphs = 0, rejected = 0, bothFailed = 0, compared = 0, fusedGraphs = 0, failures = 0;
  for (int seed = 0; seed < kGraphs && failures < kMaxFailures; ++seed) {
    ++graphs;
    testutil::RandomGraphOptions gen{.maxNodes = 14,
                                     .insertedRate = 0,
                                     .devices = {Device::cpu()},
                                     .pinRate = 0,
                                     .dtypePinRate = 0.1,
                                     .ops = ops,
                                     .extremeValues = seed % 4 == 0,
                                     .compileReady = true};
    const Graph g = testutil::randomGraph(static_cast<uint64_t>(seed) + 77001, gen);
    CompileOptions options;
    options.dtype = seed % 3 == 0 ? DTypePolicy{DTypePolicy::Kind::Autocast, DType::F16}
                                  : DTypePolicy{DTypePolicy::Kind::Promote, DType::F16};
    options.capabilities = backendCapabilities();
    CompileResult fused = compile(g, options);
    CompileOptions plain = options;
    plain.fusion = false;
    CompileResult unfused = compile(g, plain);
    ASSERT_EQ(fused.ok(), unfused.ok()) << "seed " << seed;
    if (!fused.ok()) {
      ++rejected;
      continue;
    }
    EXPECT_TRUE(unfused.graph.groups().empty());
    EXPECT_EQ(fused.stats.fusionGroups, static_cast<int>(fused.graph.groups().size()));
    auto context = [&] { return "seed " + std::to_string(seed) + "\nfused:\n" + printGraph(fused.graph); };
    const std::map<std::string, TensorData> inputs =
        testutil::randomInputs(fused.graph, static_cast<uint64_t>(seed));
    std::vector<NamedTensor> given;
    for (const auto &[name, t] : inputs) given.push_back({name, Tensor(t)});
    Ran a = runCompiled(fused.graph, options, given);
    Ran b = runCompiled(unfused.graph, plain, given);
    Expected<std::vector<TensorData>> want = reference::run(unfused.graph, inputs);
    if (a.result.ok() != want.ok() || b.result.ok() != want.ok()) {
      ADD_FAILURE() << "fused " << (a.result.ok() ? "ran" : "failed: " + a.result.status().message())
                    << "; unfused " << (b.result.ok() ? "ran" : "failed: " + b.result.status().message())
                    << "; the reference " << (want.ok() ? "ran" : "failed: " + want.status().message())
                    << "\n" << context();
      ++failures;
      continue;
    }
    if (!want.ok()) {
      ++bothFailed;
      continue;
    }
    count(*a.exe, shapes);
    fusedGraphs += !fused.graph.groups().empty();
    // Fused and unfused: the same bytes.
    std::string diff;
    for (size_t k = 0; k < a.result->outputs.size() && diff.empty(); ++k) {
      const TensorData x = a.result->outputs[k].tensor.data(), y = b.result->outputs[k].tensor.data();
      if (x.type() != y.type() || std::memcmp(x.bytes().data(), y.bytes().data(), x.bytes().size()) != 0)
        diff = "output " + std::to_string(k) + " (%" + a.result->outputs[k].name +
               "): fused and unfused bytes differ: " +
               testutil::compareOutputs({y}, {x}, 0);
    }
    // And the reference's values, within the tolerance of the narrowest dtype.
    double narrowest = 0x1p-24;
    for (NodeId id : unfused.graph.order())
      narrowest = std::max(narrowest, testutil::unitRoundoff(unfused.graph.value(unfused.graph.node(id).result).type.dtype));
    const double scale = testutil::valueScale(unfused.graph, inputs);
    // Extreme values (inf, NaN, 1e300 in params) are compared between the two runs only: the
    // CPU's GEMMs and the reference differ on them by design (0 * inf in a conv's padding).
    if (diff.empty() && !gen.extremeValues && scale < 1e6) {
      const double tol = narrowest * scale * (8 + 4 * static_cast<double>(unfused.graph.order().size()));
      for (size_t k = 0; k < want->size() && diff.empty(); ++k) {
        const bool exact = !isFloating((*want)[k].dtype());
        diff = testutil::compareOutputs({(*want)[k]}, {a.result->outputs[k].tensor.data()}, exact ? 0 : tol);
        if (!diff.empty()) diff = "output " + std::to_string(k) + " against the reference: " + diff;
      }
    }
    if (!diff.empty()) {
      ADD_FAILURE() << diff << "\n" << context();
      ++failures;
      continue;
    }
    ++compared;
  }
  std::printf("%d graphs: %d rejected by compile, %d failed in both, %d compared (%d with groups); "
              "%s; anchors: matmul %d, linear %d, conv2d %d\n",
              graphs, rejected, bothFailed, compared, fusedGraphs, shapes.str().c_str(),
              shapes.anchors[OpKind::Matmul], shapes.anchors[OpKind::Linear],
              shapes.anchors[OpKind::Conv2d]);
  EXPECT_EQ(failures, 0);
  EXPECT_GE(compared, 1500);
  EXPECT_GE(fusedGraphs, compared / 3);
  // Every shape of group the pass makes, at least a few times.
  for (const auto &[name, n] : shapes.counts()) EXPECT_GE(n, 3) << name;
  for (OpKind k : {OpKind::Matmul, OpKind::Linear, OpKind::Conv2d})
    EXPECT_GE(shapes.anchors[k], 3) << opInfo(k).name;
}

// `text` (one input %x, one output) compiled with and without fusion and run on `x`: the two
// outputs, fused first; `steps` says how many steps each executable must have.
std::vector<TensorData> fusedAndUnfused(const std::string &text, const TensorData &x,
                                        std::pair<size_t, size_t> steps) {
  std::vector<TensorData> results;
  for (bool fusion : {true, false}) {
    Expected<Graph> g = parseGraph(text, "g.fy");
    EXPECT_TRUE(g.ok()) << g.status().message();
    if (!g) return {};
    CompileOptions options;
    options.fusion = fusion;
    Expected<Executable> exe = build(std::move(*g), options);
    EXPECT_TRUE(exe.ok()) << exe.status().message();
    if (!exe) return {};
    EXPECT_EQ(exe->steps.size(), fusion ? steps.first : steps.second);
    Expected<Session> s = Session::create(std::move(*exe));
    EXPECT_TRUE(s.ok()) << s.status().message();
    if (!s) return {};
    Expected<RunResult> r = s->run({{"x", Tensor(x)}});
    EXPECT_TRUE(r.ok()) << r.status().message();
    if (!r) return {};
    results.push_back(r->outputs[0].tensor.data());
  }
  return results;
}

// A fused result past the caches is written with non-temporal stores (backends/cpu/fused.cpp,
// 32 MiB and up): the same bytes as the unfused steps', f32 and f64, a length that ends in a
// partial block.
TEST(FusionProperty, ResultsPastTheCachesAreStreamedWithTheSameBytes) {
  for (const char *dtype : {"f32", "f64"}) {
    const int64_t n = (std::string(dtype) == "f32" ? 8388608 : 4194304) + 37;
    const std::string text = "graph g {\n  input %x : " + std::string(dtype) + "[" +
                             std::to_string(n) +
                             "] @cpu\n  %a = mul(%x, 1.5)\n  %b = tanh(%a)\n  %y = add(%b, %x)\n"
                             "  output %y\n}\n";
    SCOPED_TRACE(dtype);
    const DType t = std::string(dtype) == "f32" ? DType::F32 : DType::F64;
    const std::vector<TensorData> results =
        fusedAndUnfused(text, TensorData::randn(t, {n}, 5), {1, 3});
    ASSERT_EQ(results.size(), 2u);
    EXPECT_TRUE(results[0] == results[1]);
  }
}

// A GELU written out with erf, run as one gelu (passes/fold_gelu.cpp), stays within a few f32
// roundings of its five ops run one by one, over [-8, 8] and at ±1e30, -0 and a subnormal.
TEST(FusionProperty, AWrittenOutGeluRunsCloseToItsOps) {
  const std::string text =
      "graph g {\n  input %x : f32[4096]\n  %t = div(%x, 1.4142135381698608)\n  %e = erf(%t)\n"
      "  %s = add(%e, 1.0)\n  %m = mul(%x, %s)\n  %y = mul(%m, 0.5)\n  output %y\n}\n";
  TensorData x(DType::F32, {4096});
  for (int64_t i = 0; i < 4096; ++i) x.set(i, -8.0 + 16.0 * static_cast<double>(i) / 4095.0);
  for (int64_t i = 0; i < 4; ++i)
    x.set(i, std::vector<double>{-1e30, 1e30, -0.0, 3e-39}[static_cast<size_t>(i)]);
  const std::vector<TensorData> results = fusedAndUnfused(text, x, {1, 5});
  ASSERT_EQ(results.size(), 2u);
  for (int64_t i = 0; i < 4096; ++i) {
    const double a = results[0].at(i), b = results[1].at(i);
    // Both take 1 + erf(x/√2) in f32 from Eigen's erf, whose absolute error (a few 1e-7, not
    // the same in its two uses here) times x/2 is what 1 + erf's cancellation leaves of a
    // small result; elsewhere they agree to a few roundings.
    const double cancellation = 0x1p-20 * std::fabs(x.at(i));
    EXPECT_NEAR(a, b, 4e-7 * std::fabs(b) + cancellation) << "x = " << x.at(i);
  }
}

}  // namespace
}  // namespace ferry
