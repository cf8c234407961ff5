// tests/runtime/session_test.cpp — build, lower and run from an app's point of view: results
// equal the reference interpreter's, inputs are checked with distinct errors, transfers are
// counted against the plan, many threads share one session.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>
#include <thread>

#include "backends/cpu/cpu_target.h"
#include "backends/reference/interpreter.h"
#include "common/parse.h"
#include "common/scratch.h"
#include "ir/parser.h"
#include "passes/lower.h"
#include "runtime/session.h"

namespace ferry {
namespace {

CompileOptions on(std::vector<Device> devices, PlacementPolicy p = PlacementPolicy::Strict) {
  CompileOptions o;
  o.devices = std::move(devices);
  o.target = o.devices.front();
  o.placement = p;
  return o;
}

Session::Options checked() {
  Session::Options o;
  o.checkPlan = true;
  return o;
}

Session open(std::string_view text, CompileOptions options, Session::Options so = checked()) {
  Expected<Executable> exe = build(parseOk(text), options);
  EXPECT_TRUE(exe.ok()) << exe.status().message();
  Expected<Session> s = Session::create(std::move(exe).value(), so);
  EXPECT_TRUE(s.ok()) << s.status().message();
  return std::move(s).value();
}

// Under auto, the weight is copied to cpu once, at load (its copy is free per run), the matmul
// runs there with the input, and its smaller result crosses to cpu:1 in every run.
constexpr std::string_view kTwoDevices = R"(graph two {
  input %x : f32[4,3] @cpu
  param %w : f32[3,2] @cpu:1 = randn(seed=5)
  %h = relu(%x)
  %y = matmul(%h, %w)
  %z @cpu:1 = tanh(%y)
  output %z
})";

// Elementwise ops only: the chain every kernel family can run.
constexpr std::string_view kElementwise = R"(graph ew {
  input %x : f32[8,5] @cpu
  input %b : f32[5] @cpu
  param %s : f32[5] = randn(seed=2)
  %a = add(%x, %b)
  %m = mul(%a, %s)
  %t = tanh(%m)
  %g = greater(%t, %b)
  %w = where(%g, %t, %x)
  output %w
  output %g
})";

TensorData sample(DType t, Shape shape, uint64_t seed) {
  return TensorData::randn(t, std::move(shape), seed);
}

void expectClose(const TensorData &got, const TensorData &want, double tol = 1e-5) {
  ASSERT_EQ(got.type(), want.type());
  for (int64_t i = 0; i < got.numel(); ++i)
    EXPECT_NEAR(got.at(i), want.at(i), tol * (1 + std::fabs(want.at(i)))) << "element " << i;
}

TEST(Session, RunsAndMatchesTheReferenceInterpreter) {
  Session s = open(kElementwise, on({Device::cpu()}));
  const TensorData x = sample(DType::F32, {8, 5}, 1), b = sample(DType::F32, {5}, 2);
  Expected<RunResult> r = s.run({{"x", x}, {"b", b}});
  ASSERT_TRUE(r.ok()) << r.status().message();
  auto want = reference::run(parseOk(kElementwise), {{"x", x}, {"b", b}});
  ASSERT_TRUE(want.ok()) << want.status().message();
  ASSERT_EQ(r->outputs.size(), 2u);
  EXPECT_EQ(r->outputs[0].name, "w");
  EXPECT_EQ(r->outputs[1].name, "g");
  expectClose(r->outputs[0].tensor.data(), (*want)[0]);
  EXPECT_EQ(r->outputs[1].tensor.data(), (*want)[1]);
  ASSERT_NE(r->find("g"), nullptr);
  EXPECT_EQ(r->find("nope"), nullptr);
  EXPECT_TRUE(r->stats.stepSeconds.empty()) << "steps are timed only when profiling";
  EXPECT_EQ(r->stats.transfers, 0);
  Expected<RunResult> profiled = s.run({{"x", x}, {"b", b}}, Session::RunOptions{.profile = true});
  ASSERT_TRUE(profiled.ok()) << profiled.status().message();
  EXPECT_EQ(profiled->stats.stepSeconds.size(), s.executable().steps.size());
  EXPECT_EQ(r->outputs[0].tensor.device(), Device::cpu());
}

// Scalar literals (`add(%x, 1.0)`) run as zero-dim weights of their reader's dtype, on its device:
// no cast, no transfer, values as PyTorch computes them.
TEST(Session, ScalarLiteralsComputeInTheirTensorsDType) {
  constexpr std::string_view kLiterals = R"(graph lit {
  input %x : f32[2,3] @cpu:1
  input %h : f16[4] @cpu:1
  input %i : i32[3] @cpu:1
  %y = add(%x, 1.0)
  %z = mul(%h, 0.5)
  %k = add(%i, 2)
  %d = div(%i, 2)
  %g = greater(%i, 0.5)
  %w = where(%g, %y, -1.0)
  output %y, %z, %k, %d, %w
})";
  for (PlacementPolicy p : {PlacementPolicy::Strict, PlacementPolicy::Auto}) {
    SCOPED_TRACE(std::string(placementPolicyName(p)));
    Session::Options moved = checked();
    moved.moveInputs = true;  // the inputs are made on the host; the model takes them on cpu:1
    Session s = open(kLiterals, on({Device::cpu(), Device::cpu(1)}, p), moved);
    EXPECT_EQ(s.executable().planTransfers, 0) << "a literal runs where its reader does";
    const TensorData x =
        TensorData::fromDoubles(DType::F32, {2, 3}, std::vector<double>{0, 1, 2, -3, 4.5, -0.25});
    const TensorData h =
        TensorData::fromDoubles(DType::F16, {4}, std::vector<double>{1, -3, 0.1, 65504});
    const TensorData i = TensorData::fromDoubles(DType::I32, {3}, std::vector<double>{-3, 0, 7});
    const std::map<std::string, TensorData> inputs{{"x", x}, {"h", h}, {"i", i}};
    Expected<RunResult> r = s.run({{"x", x}, {"h", h}, {"i", i}});
    ASSERT_TRUE(r.ok()) << r.status().message();
    auto host = [&](std::string_view name) { return r->find(name)->data(); };
    EXPECT_EQ(host("y"), TensorData::fromDoubles(DType::F32, {2, 3},
                                                 std::vector<double>{1, 2, 3, -2, 5.5, 0.75}));
    // f16 stays f16 (a Python float does not promote it); 65504 * 0.5 is exact.
    EXPECT_EQ(host("z"), TensorData::fromDoubles(DType::F16, {4},
                                                 std::vector<double>{0.5, -1.5, 0.1 / 2, 32752}));
    EXPECT_EQ(host("k"), TensorData::fromDoubles(DType::I32, {3}, std::vector<double>{-1, 2, 9}));
    EXPECT_EQ(host("d"),
              TensorData::fromDoubles(DType::F32, {3}, std::vector<double>{-1.5, 0, 3.5}));
    EXPECT_EQ(host("w"), TensorData::fromDoubles(DType::F32, {2, 3},
                                                 std::vector<double>{-1, -1, 3, -1, -1, 0.75}));
    auto want = reference::run(parseOk(kLiterals), inputs);
    ASSERT_TRUE(want.ok()) << want.status().message();
    for (size_t o = 0; o < want->size(); ++o)
      EXPECT_EQ(r->outputs[o].tensor.data(), (*want)[o]) << r->outputs[o].name;
  }
}

TEST(Session, TransfersBetweenVirtualDevicesAreCountedAgainstThePlan) {
  Session s = open(kTwoDevices, on({Device::cpu(), Device::cpu(1)}, PlacementPolicy::Auto));
  const Executable &exe = s.executable();
  ASSERT_GE(exe.planTransfers, 1);
  const TensorData x = sample(DType::F32, {4, 3}, 3);
  Expected<RunResult> r = s.run({{"x", x}});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->stats.transfers, exe.planTransfers);
  EXPECT_EQ(r->stats.transferBytes, exe.planTransferBytes);
  auto want = reference::run(parseOk(kTwoDevices), {{"x", x}});
  ASSERT_TRUE(want.ok());
  expectClose(r->outputs[0].tensor.data(), (*want)[0]);
}

TEST(Session, StrictRejectsAnInputOnAnotherDeviceAndAutoMovesIt) {
  constexpr std::string_view text = R"(graph m {
    input %x : f32[2,2] @cpu:1
    %y = neg(%x)
    output %y
  })";
  const TensorData x = sample(DType::F32, {2, 2}, 4);
  {
    Session s = open(text, on({Device::cpu(), Device::cpu(1)}));
    Expected<RunResult> r = s.run({{"x", x}});
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.status().message().find("input 'x' is on cpu, but the model takes it on cpu:1"),
              std::string::npos)
        << r.status().message();
    Expected<Tensor> moved = Tensor(x).to(Device::cpu(1));
    ASSERT_TRUE(moved.ok());
    Expected<RunResult> ok = s.run({{"x", *moved}});
    ASSERT_TRUE(ok.ok()) << ok.status().message();
    EXPECT_EQ(ok->stats.inputMoves, 0);
  }
  {
    Session s = open(text, on({Device::cpu(), Device::cpu(1)}, PlacementPolicy::Auto));
    Expected<RunResult> r = s.run({{"x", x}});
    ASSERT_TRUE(r.ok()) << r.status().message();
    EXPECT_EQ(r->stats.inputMoves, 1);
    EXPECT_EQ(r->stats.inputMoveBytes, 16);
    EXPECT_EQ(r->stats.transfers, s.executable().planTransfers + 1);
    EXPECT_EQ(r->outputs[0].tensor.data().at(0), -x.at(0));
  }
}

// Each misuse is its own error, naming the input and what was expected against what came.
TEST(Session, MisusedInputsGiveDistinctErrors) {
  Session s = open(kElementwise, on({Device::cpu()}));
  const TensorData x = sample(DType::F32, {8, 5}, 1), b = sample(DType::F32, {5}, 2);
  struct Case {
    std::vector<NamedTensor> inputs;
    std::string want;
  };
  Expected<Tensor> bOn1 = Tensor(b).to(Device::cpu(1));
  ASSERT_TRUE(bOn1.ok());
  const std::vector<Case> cases = {
      {{{"x", x}, {"b", b}, {"c", b}}, "unknown input 'c': the model's inputs are 'x', 'b'"},
      {{{"x", x}}, "input 'b' is missing"},
      {{}, "inputs 'x', 'b' are missing"},
      {{{"x", x}, {"b", b}, {"b", b}}, "input 'b' is given twice"},
      {{{"x", sample(DType::F32, {8, 4}, 1)}, {"b", b}},
       "input 'x' has the wrong shape: expected [8,5], got [8,4]"},
      {{{"x", sample(DType::F16, {8, 5}, 1)}, {"b", b}},
       "input 'x' has the wrong dtype: expected f32, got f16"},
      {{{"x", x}, {"b", *bOn1}}, "input 'b' is on cpu:1, but the model takes it on cpu"},
  };
  for (const Case &c : cases) {
    Expected<RunResult> r = s.run(c.inputs);
    ASSERT_FALSE(r.ok()) << c.want;
    EXPECT_NE(r.status().message().find(c.want), std::string::npos)
        << "got: " << r.status().message() << "\nwant: " << c.want;
    EXPECT_EQ(r.status().diagnostics().front().code, "input");
  }
  // Several problems at once are all reported.
  Expected<RunResult> r = s.run({{"x", sample(DType::F16, {1}, 1)}});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().diagnostics().size(), 3u) << r.status().message();
  // And the session still works afterwards.
  EXPECT_TRUE(s.run({{"x", x}, {"b", b}}).ok());
}

TEST(Session, OutputsComeBackOnTheirDeviceWhenAsked) {
  Session s = open(kTwoDevices, on({Device::cpu(), Device::cpu(1)}, PlacementPolicy::Auto));
  const int32_t slot = s.executable().outputs[0];
  const Device where = s.executable().slots[static_cast<size_t>(slot)].device;
  Session::RunOptions ro;
  ro.outputsOnDevice = true;
  Expected<RunResult> r = s.run({{"x", sample(DType::F32, {4, 3}, 3)}}, ro);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->outputs[0].tensor.device(), where);
}

// An output pinned to another device than its value's keeps the name the user gave it, under
// every policy: the manifest, the run's outputs and RunResult::find all say "y". The value the
// transfer copies gets another name; an input stays what callers feed.
TEST(Session, APinnedOutputKeepsItsNameUnderEveryPolicy) {
  constexpr std::string_view text = R"(graph g {
    input %x : f32[4,3] @cpu:1
    %y = relu(%x)
    %z = neg(%y)
    output %y @cpu
    output %z
    output %x @cpu
  })";
  for (PlacementPolicy policy : {PlacementPolicy::Strict, PlacementPolicy::Auto}) {
    SCOPED_TRACE(placementPolicyName(policy));
    Session s = open(text, on({Device::cpu(), Device::cpu(1)}, policy));
    const Executable &exe = s.executable();
    std::vector<std::string> names;
    for (int32_t o : exe.outputs) names.push_back(exe.slots[static_cast<size_t>(o)].name);
    EXPECT_EQ(names[0], "y");
    EXPECT_EQ(names[1], "z");
    const TensorData x = sample(DType::F32, {4, 3}, 5);
    Expected<Tensor> on1 = Tensor(x).to(Device::cpu(1));
    ASSERT_TRUE(on1.ok());
    Expected<RunResult> r = s.run({{"x", *on1}});
    ASSERT_TRUE(r.ok()) << r.status().message();
    const Tensor *y = r->find("y");
    ASSERT_NE(y, nullptr) << "outputs: " << names[0] << ", " << names[1] << ", " << names[2];
    for (int64_t i = 0; i < x.numel(); ++i) EXPECT_EQ(y->data().at(i), std::max(0.0, x.at(i)));
    EXPECT_NE(r->find("z"), nullptr);
  }
}

// 8 threads x 200 runs of one checked session, each thread with its own inputs, every output
// compared with the reference: a one-device elementwise model, and a two-device one whose runs
// copy between arenas (`copies`: its plan has transfers, each run's counted and checked against
// the plan) around a GEMM on the shared thread pool.
void hammer(std::string_view text, const CompileOptions &options, bool copies,
            const std::function<std::map<std::string, TensorData>(int)> &inputsOf) {
  Session s = open(text, options);
  const int transfersPerRun = s.executable().planTransfers;
  ASSERT_EQ(transfersPerRun > 0, copies) << transfersPerRun << " transfers per run: the model must "
                                         << (copies ? "" : "not ") << "copy between devices";
  const Graph g = parseOk(text);
  constexpr int kThreads = 8, kRuns = 200;
  std::vector<std::map<std::string, TensorData>> inputs;
  std::vector<std::vector<TensorData>> want;
  for (int t = 0; t < kThreads; ++t) {
    inputs.push_back(inputsOf(t));
    auto w = reference::run(g, inputs.back());
    ASSERT_TRUE(w.ok()) << w.status().message();
    want.push_back(*w);
  }
  std::vector<int> wrong(kThreads, 0), failed(kThreads, 0), moved(kThreads, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      const auto i = static_cast<size_t>(t);
      for (int run = 0; run < kRuns; ++run) {
        std::vector<NamedTensor> feed;
        for (const auto &[name, data] : inputs[i]) feed.push_back({name, Tensor(data)});
        Expected<RunResult> r = s.run(feed);
        if (!r.ok()) {
          ++failed[i];
          continue;
        }
        moved[i] += r->stats.transfers;
        if (r->outputs.size() != want[i].size()) {
          ++wrong[i];
          continue;
        }
        for (size_t o = 0; o < want[i].size(); ++o) {
          const TensorData &got = r->outputs[o].tensor.data();
          if (got.type() != want[i][o].type()) {
            ++wrong[i];
            break;
          }
          for (int64_t e = 0; e < got.numel(); ++e)
            if (std::fabs(got.at(e) - want[i][o].at(e)) > 1e-5) {
              ++wrong[i];
              break;
            }
        }
      }
    });
  for (std::thread &t : threads) t.join();
  for (int t = 0; t < kThreads; ++t) {
    EXPECT_EQ(failed[static_cast<size_t>(t)], 0) << "thread " << t;
    EXPECT_EQ(wrong[static_cast<size_t>(t)], 0) << "thread " << t;
    EXPECT_EQ(moved[static_cast<size_t>(t)], kRuns * transfersPerRun) << "thread " << t;
  }
}

TEST(Session, ManyThreadsShareOneSession) {
  const TensorData b = sample(DType::F32, {5}, 99);
  hammer(kElementwise, on({Device::cpu()}), false, [&](int t) {
    return std::map<std::string, TensorData>{
        {"x", sample(DType::F32, {8, 5}, 100 + static_cast<uint64_t>(t))}, {"b", b}};
  });
}

TEST(Session, ManyThreadsShareOneSessionThatCopiesBetweenDevices) {
  hammer(kTwoDevices, on({Device::cpu(), Device::cpu(1)}, PlacementPolicy::Auto), true, [](int t) {
    return std::map<std::string, TensorData>{
        {"x", sample(DType::F32, {4, 3}, 200 + static_cast<uint64_t>(t))}};
  });
}

// (A build with only the CPU's backend, whether or not this one has CUDA's.)
TEST(Session, AnExecutableForADeviceWithoutABackendIsAnError) {
  const std::vector<BackendEntry> cpuOnly{builtinBackends().front()};
  Expected<Executable> exe = build(parseOk(R"(graph g {
    input %x : f32[2] @cuda:0
    %y = neg(%x)
    output %y
  })"),
                                   on({Device::cuda(0), Device::cpu()}), nullptr, cpuOnly);
  ASSERT_TRUE(exe.ok()) << exe.status().message();
  Session::Options options;
  options.backends = cpuOnly;
  Expected<Session> s = Session::create(std::move(exe).value(), options);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("runs on cuda:0, and this build of ferry has no backend"),
            std::string::npos)
      << s.status().message();
}

TEST(Build, PlacementReadsTheBackendsCapabilityTableAndTheCallersOnTop) {
  const Capabilities table = backendCapabilities();
  const CpuTarget cpu;
  EXPECT_FALSE(table.supports(Device::cpu(), OpKind::Exp, DType::I32));
  EXPECT_TRUE(table.supports(Device::cpu(1), OpKind::Matmul, DType::F16));
  EXPECT_GT(table.costFactor(Device::cpu(), OpKind::Matmul, DType::F16), 1);
  EXPECT_EQ(table.costFactor(Device::cpu(), OpKind::Matmul, DType::F16),
            cpu.capability(OpKind::Matmul, DType::F16).costFactor);
  EXPECT_EQ(table.costFactor(Device::cpu(), OpKind::Matmul, DType::F32), 1);
  for (const OpInfo &op : allOps())
    for (DType t : kAllDTypes)
      EXPECT_EQ(table.supports(Device::cpu(), op.kind, t), cpu.capability(op.kind, t).supported);

  // A gap the caller adds is kept: nothing else runs relu in f32, so the graph is rejected.
  CompileOptions o = on({Device::cpu()});
  o.capabilities.setMissing(DeviceKind::Cpu, OpKind::Relu, DType::F32);
  Expected<Executable> exe = build(parseOk(R"(graph g {
  input %x : f32[4] @cpu
  %y = relu(%x)
  output %y
})"),
                                   o);
  ASSERT_FALSE(exe.ok());
  EXPECT_NE(exe.status().message().find("has no kernel for f32 on cpu"), std::string::npos)
      << exe.status().message();
}

TEST(Lower, RejectsAGraphThatWasNotPlaced) {
  CompileOptions o = on({Device::cpu()});
  o.stopAfter = "verify";
  CompileResult r = compile(parseOk(kElementwise), o);
  ASSERT_TRUE(r.ok());
  Expected<Executable> exe = lower(r.graph, o);
  ASSERT_FALSE(exe.ok());
  EXPECT_NE(
      exe.status().message().find("has no device: lower() takes a graph that compile() placed"),
      std::string::npos)
      << exe.status().message();
  Expected<Executable> viaBuild = build(parseOk(kElementwise), o);
  ASSERT_FALSE(viaBuild.ok());
  EXPECT_NE(viaBuild.status().message().find("runs the whole pipeline"), std::string::npos);
}

TEST(Lower, ARejectedGraphCarriesItsDiagnostics) {
  Expected<Executable> exe = build(parseOk(kTwoDevices), on({Device::cpu(), Device::cpu(1)}));
  ASSERT_FALSE(exe.ok());
  EXPECT_EQ(exe.status().diagnostics().front().code, "device") << exe.status().message();
}

TEST(Lower, ConstantsBecomeWeightsAndActivationsShareTheWorkspace) {
  Expected<Executable> exe = build(parseOk(R"(graph c {
    input %x : f32[256] @cpu
    %k = constant(value=f32[1]{2.0})
    %a = mul(%x, %k)
    %b = exp(%a)
    %c = neg(%b)
    %d = abs(%c)
    output %d
  })"),
                                   on({Device::cpu()}));
  ASSERT_TRUE(exe.ok()) << exe.status().message();
  for (const Step &st : exe->steps) EXPECT_NE(st.op, OpKind::Constant);
  ASSERT_EQ(exe->weights.size(), 1u);
  ASSERT_EQ(exe->workspaces.size(), 1u);
  // x, a, b, c, d are 1 KiB each, but at most three are alive at once.
  EXPECT_LE(exe->workspaces[0].bytes, 3u * 1024);
  Expected<Session> s = Session::create(std::move(exe).value(), checked());
  ASSERT_TRUE(s.ok());
  TensorData x = sample(DType::F32, {256}, 8);
  Expected<RunResult> r = s->run({{"x", x}});
  ASSERT_TRUE(r.ok()) << r.status().message();
  for (int64_t i = 0; i < 256; ++i)
    EXPECT_NEAR(r->outputs[0].tensor.data().at(i), std::exp(2 * x.at(i)),
                1e-5 * std::exp(2 * x.at(i)));
}

}  // namespace
}  // namespace ferry

namespace ferry {
namespace {

std::string readText(const std::string &path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// The shipped MLP and CNN: compiled, run, saved, loaded into a fresh Session and run again give
// the same bytes.
TEST(Session, SavedAndLoadedExamplesGiveIdenticalOutputs) {
  for (const char *name : {"mlp", "cnn"}) {
    const std::string path = std::string(FERRY_SOURCE_DIR) + "/examples/" + name + ".fy";
    Expected<Graph> g = parseGraph(readText(path), path);
    ASSERT_TRUE(g.ok()) << g.status().message();
    std::map<std::string, TensorData> inputs;
    std::vector<NamedTensor> given;
    for (const InputDecl &in : g->inputs()) {
      const Value &v = g->value(in.value);
      given.push_back({v.name, TensorData::randn(v.type.dtype, v.type.shape, 11)});
      inputs.emplace(v.name, given.back().tensor.data());
    }
    auto want = reference::run(*g, inputs);
    ASSERT_TRUE(want.ok()) << want.status().message();
    Expected<Executable> exe = build(std::move(*g), on({Device::cpu()}));
    ASSERT_TRUE(exe.ok()) << exe.status().message();
    const testutil::ScratchDir scratch(std::string("session_") + name);
    const std::string file = (scratch / "model.ferry").string();
    ASSERT_TRUE(exe->save(file).ok());

    Expected<Session> first = Session::create(std::move(*exe), checked());
    ASSERT_TRUE(first.ok()) << first.status().message();
    Expected<RunResult> a = first->run(given);
    ASSERT_TRUE(a.ok()) << a.status().message();

    Expected<Executable> loaded = Executable::load(file);
    ASSERT_TRUE(loaded.ok()) << loaded.status().message();
    Expected<Session> fresh = Session::create(std::move(*loaded), checked());
    ASSERT_TRUE(fresh.ok()) << fresh.status().message();
    Expected<RunResult> b = fresh->run(given);
    ASSERT_TRUE(b.ok()) << b.status().message();

    ASSERT_EQ(a->outputs.size(), b->outputs.size());
    for (size_t i = 0; i < a->outputs.size(); ++i) {
      EXPECT_EQ(a->outputs[i].name, b->outputs[i].name);
      EXPECT_TRUE(a->outputs[i].tensor.data() == b->outputs[i].tensor.data()) << name;
      // And the run is right, not only repeatable.
      const TensorData &got = b->outputs[i].tensor.data(), &ref = (*want)[i];
      ASSERT_EQ(got.type(), ref.type());
      for (int64_t e = 0; e < got.numel(); ++e)
        EXPECT_NEAR(got.at(e), ref.at(e), 1e-4 * (1 + std::fabs(ref.at(e)))) << name << " " << e;
    }
  }
}

}  // namespace
}  // namespace ferry

namespace ferry {
namespace {

// What a Session trusts an executable for is checked by validate() (and so by load()).
TEST(Lower, ValidateRejectsInconsistentPlans) {
  CompileOptions o;
  o.devices = {Device::cpu(), Device::cpu(1)};
  o.placement = PlacementPolicy::Auto;
  Expected<Executable> exe = build(parseOk(kTwoDevices, "model.fy"), o);
  ASSERT_TRUE(exe.ok()) << exe.status().message();
  ASSERT_TRUE(exe->validate().ok());
  auto expectError = [](const Executable &e, const std::string &want) {
    Status s = e.validate();
    ASSERT_FALSE(s.ok()) << want;
    EXPECT_NE(s.message().find(want), std::string::npos) << s.message();
  };
  Executable e = *exe;
  e.planTransfers += 1;
  expectError(e, "the plan counts");
  e = *exe;
  e.inputs.push_back(e.inputs[0]);
  expectError(e, "is listed twice");
  e = *exe;
  e.slots[static_cast<size_t>(e.steps[0].result)].weight = 0;
  expectError(e, "is not a weight but names weight 0");
  e = *exe;
  std::swap(e.devices[0], e.devices[1]);
  expectError(e, "not sorted and unique");
  e = *exe;
  e.workspaces.push_back(e.workspaces[0]);
  expectError(e, "two workspaces on");
  e = *exe;
  e.workspaces[0].bytes = 0;
  expectError(e, "outside its device's workspace");
  // A transfer to the device its value is on already: no copy between devices, so the plan's
  // transfer count would not be what the backends count.
  ASSERT_EQ(exe->loadSteps.size(), 1u);  // %w, copied to cpu once
  e = *exe;
  Step &load = e.loadSteps[0];
  ASSERT_EQ(load.op, OpKind::Transfer);
  Slot &from = e.slots[static_cast<size_t>(load.operands[0])];
  ASSERT_EQ(from.kind, SlotKind::Weight);  // %w: it needs no workspace on its new device
  from.device = e.slots[static_cast<size_t>(load.result)].device;
  expectError(e, "load step 0 ('transfer') moves %w from " + from.device.str() + " to itself");
  // Load steps: counted apart, reading weights only, writing loaded slots, each once.
  e = *exe;
  e.planLoadTransferBytes += 1;
  expectError(e, "the plan counts 1 load-time transfers of 25 bytes, the load steps make 1 of 24");
  e = *exe;
  e.loadSteps[0].operands[0] = e.inputs[0];
  expectError(e, "load step 0 ('transfer') reads %x, which is not a weight");
  e = *exe;
  e.loadSteps[0].result = e.steps[0].result;
  expectError(e, "load step 0 ('transfer') writes no loaded slot");
  e = *exe;
  e.loadSteps.clear();
  expectError(e, "is a loaded slot that no load step writes");
  e = *exe;
  e.loadSteps.push_back(e.loadSteps[0]);
  expectError(e, "load step 1 ('transfer') writes %w.cpu a second time");
  e = *exe;  // a run's step must not write what a load step holds
  e.steps.back().result = e.loadSteps[0].result;
  expectError(e, "writes no activation slot");
}

}  // namespace
}  // namespace ferry

namespace ferry {
namespace {

// Step start offsets place every step on one timeline with the run: in step order, none
// overlapping the next, the input copy before them all, all inside the run.
TEST(Session, StepStartsLineUpWithStepTimesInsideTheRun) {
  constexpr std::string_view moved = R"(graph m {
    input %x : f32[4,3] @cpu:1
    param %w : f32[3,3] @cpu = randn(seed=5)
    %h = relu(%x)
    %y = matmul(%h, %w)
    %z @cpu = tanh(%y)
    output %z
  })";
  // Rounding of the subtractions, far below any clock tick.
  constexpr double kEpsilon = 1e-9;
  Session s = open(moved, on({Device::cpu(), Device::cpu(1)}, PlacementPolicy::Auto));
  ASSERT_GE(s.executable().planTransfers, 1);
  for (int run = 0; run < 3; ++run) {
    Expected<RunResult> r =
        s.run({{"x", sample(DType::F32, {4, 3}, 6)}}, Session::RunOptions{.profile = true});
    ASSERT_TRUE(r.ok()) << r.status().message();
    const RunStats &st = r->stats;
    ASSERT_EQ(st.stepStarts.size(), s.executable().steps.size());
    ASSERT_EQ(st.stepSeconds.size(), st.stepStarts.size());
    EXPECT_GE(st.inputCopyStart, 0.0);
    EXPECT_GE(st.inputCopySeconds, 0.0);
    ASSERT_FALSE(st.stepStarts.empty());
    EXPECT_LE(st.inputCopyStart + st.inputCopySeconds, st.stepStarts[0] + kEpsilon);
    for (size_t i = 0; i < st.stepStarts.size(); ++i) {
      EXPECT_GE(st.stepSeconds[i], 0.0) << "step " << i;
      if (i + 1 == st.stepStarts.size()) break;
      EXPECT_LE(st.stepStarts[i], st.stepStarts[i + 1]) << "step " << i;
      EXPECT_LE(st.stepStarts[i] + st.stepSeconds[i], st.stepStarts[i + 1] + kEpsilon)
          << "step " << i;
    }
    EXPECT_LE(st.stepStarts.back() + st.stepSeconds.back(), st.seconds + kEpsilon);
  }
}

}  // namespace
}  // namespace ferry
