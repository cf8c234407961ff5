// tests/cuda/emulated_cuda_test.cpp — whole models compiled for cpu, cuda:0 and cuda:1 by the real
// CUDA target and run by a Session whose cuda runtime is an emulation on the host: device memory is
// host memory the Session may not touch (uploads and downloads), each plan is decoded as the CUDA
// runtime decodes it, its launch is cuda::launchSequence (the same data the CUDA runtime issues),
// the generated kernels run compiled for the host (emulate.h), and a GEMM call is computed with
// cuBLASLt's semantics (column-major, strided batches, bias and relu/gelu epilogues). What is
// left for a GPU: the CUDA and cuBLASLt calls themselves.
//
// Two passes, so that the host compiler runs once: the first creates every Session with an
// empty kernel library (prepare records each kernel's source and fails), the sources are compiled
// into one library, and the second creates and runs them against the reference interpreter.
#include <gtest/gtest.h>

#ifdef FERRY_HAVE_CUDA

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <map>
#include <mutex>

#include "backends/cuda/codegen/gemm_shape.h"
#include "backends/cuda/codegen/kernel_source.h"
#include "backends/cuda/codegen/launch.h"
#include "backends/cuda/codegen/plan.h"
#include "backends/cuda/cuda_target.h"
#include "backends/reference/interpreter.h"
#include "common/random_graph.h"
#include "common/value_check.h"
#include "cuda/codegen_steps.h"
#include "ir/printer.h"
#include "passes/lower.h"
#include "runtime/session.h"

namespace ferry {
namespace {

// Kernel sources seen by prepare, and the library they were compiled into.
struct KernelLibrary {
  std::mutex mutex;
  bool recording = false;  // the first pass: prepare records sources and succeeds without them
  std::vector<cuda::KernelSource> pending;
  std::map<std::string, std::pair<std::shared_ptr<cudatest::HostKernels>, size_t>> compiled;

  // The compiled kernel of `k`, or null after recording it for the next compile.
  std::pair<const cudatest::HostKernels *, size_t> find(const cuda::KernelSource &k) {
    std::lock_guard lock(mutex);
    auto it = compiled.find(k.source);
    if (it != compiled.end()) return {it->second.first.get(), it->second.second};
    pending.push_back(k);
    return {nullptr, 0};
  }
  std::string compilePending() {
    std::vector<cuda::KernelSource> unique;
    std::map<std::string, size_t> index;
    for (const cuda::KernelSource &k : pending)
      if (index.emplace(k.source, unique.size()).second) unique.push_back(k);
    pending.clear();
    if (unique.empty()) return "";
    auto lib = std::make_shared<cudatest::HostKernels>(unique);
    if (!lib->ok()) return lib->errors();
    for (size_t i = 0; i < unique.size(); ++i) compiled[unique[i].source] = {lib, i};
    return "";
  }
};

KernelLibrary &library() {
  static KernelLibrary l;
  return l;
}

struct Loaded {
  const cudatest::HostKernels *lib = nullptr;
  size_t index = 0;
};

struct EmulatedKernel final : public PreparedKernel {
  std::string name;  // the plan's kernel
  cuda::CudaPlan plan;
  std::vector<int32_t> anchorOperands;
  Loaded main, anchor;
  // The GEMM.
  cuda::GemmShape shape;
  DType dtype = DType::F32;
  Location loc;
  std::string what;
};

// Device memory is host memory, handed out and checked as a GPU's: the Session reaches it only
// through upload, download and copy.
class EmulatedCuda final : public DeviceRuntime {
 public:
  explicit EmulatedCuda(int devices) {
    for (int i = 0; i < devices; ++i) devices_.push_back(Device::cuda(i));
  }
  ~EmulatedCuda() override {
    for (auto &[p, bytes] : blocks_) ::operator delete(const_cast<std::byte *>(p), std::align_val_t{256});
  }
  std::span<const Device> devices() const override { return devices_; }
  Expected<std::byte *> allocate(Device, size_t bytes) override {
    auto *p = static_cast<std::byte *>(::operator new(bytes == 0 ? 1 : bytes, std::align_val_t{256}));
    std::memset(p, 0x5a, bytes);  // garbage, as a GPU's fresh memory
    std::lock_guard lock(mutex_);
    blocks_[p] = bytes;
    return p;
  }
  void release(Device, std::byte *data) override {
    std::lock_guard lock(mutex_);
    FERRY_CHECK(blocks_.erase(data) == 1) << "release of memory this runtime did not allocate";
    ::operator delete(data, std::align_val_t{256});
  }
  bool owns(Device, const std::byte *data, size_t bytes) const override {
    std::lock_guard lock(mutex_);
    auto it = blocks_.upper_bound(data);
    if (it == blocks_.begin()) return false;
    --it;
    return data >= it->first && data + bytes <= it->first + it->second;
  }
  Status copy(Device, const std::byte *source, Device, std::byte *destination, size_t bytes,
              Stream) override {
    std::memmove(destination, source, bytes);
    return Status();
  }
  Status upload(const std::byte *host, Device, std::byte *destination, size_t bytes, Stream) override {
    std::memcpy(destination, host, bytes);
    return Status();
  }
  bool uploadReadsHostOnIssue(const std::byte *) const override { return true; }
  Status download(Device, const std::byte *source, std::byte *host, size_t bytes, Stream) override {
    std::memcpy(host, source, bytes);
    return Status();
  }

  Expected<std::unique_ptr<PreparedKernel>> prepare(const KernelPlan &plan, const StepSpec &step) override {
    auto k = std::make_unique<EmulatedKernel>();
    k->name = plan.kernel;
    k->loc = step.loc;
    k->what = "'" + std::string(step.op.name) + "'";
    Expected<cuda::CudaPlan> decoded = cuda::CudaPlan::decode(plan.payload);
    if (!decoded) return decoded.status();
    k->plan = std::move(*decoded);
    bool missing = false;
    // The very texts NVRTC compiled, from the plan (their hash checked), compiled for the host.
    auto load = [&](const std::string &text, int64_t blocks, int32_t threads, bool blockSync,
                    Loaded &into) -> Status {
      cuda::KernelSource source;
      source.source = text;
      source.blocks = blocks;
      source.threads = threads;
      source.blockSync = blockSync;
      auto [lib, index] = library().find(source);
      missing |= lib == nullptr;
      into = {lib, index};
      return Status();
    };
    if (!k->plan.source.empty()) {
      cuda::KernelSource check;
      check.source = k->plan.source;
      if (check.hash() != k->plan.sourceHash)
        return makeError("internal", "the plan's source does not match its hash", step.loc);
      FERRY_TRY(load(k->plan.source, k->plan.blocks, k->plan.threads, k->plan.blockSync, k->main));
    } else if (plan.kernel != cuda::kGemmPlanName) {
      return makeError("internal", "a plan without a kernel", step.loc);
    }
    if (!k->plan.anchorSource.empty())  // an anchored plan's, or a conv2d GEMM's im2col
      FERRY_TRY(load(k->plan.anchorSource, k->plan.anchorBlocks, k->plan.anchorThreads,
                     k->plan.anchorBlockSync, k->anchor));
    const bool fused = step.body != nullptr;
    if (plan.kernel != cuda::kKernelPlanName) {
      if (!fused && plan.kernel == cuda::kAnchoredPlanName)
        return makeError("internal", "an anchored plan without a body", step.loc);
      const MicroOp *a = fused ? &(*step.body)[0] : nullptr;
      std::vector<TensorType> types;
      if (fused) {
        for (int32_t arg : a->args) {
          k->anchorOperands.push_back(arg);
          types.push_back(step.operands[static_cast<size_t>(arg)]);
        }
      } else {
        for (size_t i = 0; i < step.operands.size(); ++i) {
          k->anchorOperands.push_back(static_cast<int32_t>(i));
          types.push_back(step.operands[i]);
        }
      }
      if (plan.kernel == cuda::kGemmPlanName) {
        const OpKind op = fused ? a->op : step.op.kind;
        const TensorType &out =
            fused ? (*step.body)[static_cast<size_t>(k->plan.gemmMicroOps) - 1].type : step.result;
        Expected<cuda::GemmShape> shape = cuda::gemmShape(op, types, out);
        if (!shape) return shape.status();
        k->shape = std::move(*shape);
        k->dtype = out.dtype;
      }
    }
    if (missing && !library().recording)
      return makeError("internal", "a kernel the first pass did not see");
    return std::unique_ptr<PreparedKernel>(std::move(k));
  }

  Status launch(const PreparedKernel &prepared, const KernelArgs &args, Stream) override {
    const auto &k = static_cast<const EmulatedKernel &>(prepared);
    if (library().recording) return Status();  // the first pass's load steps: nothing compiled
    const cuda::LaunchSequence seq =
        cuda::launchSequence(k.name, k.plan, k.anchorOperands,
                             k.name == cuda::kGemmPlanName ? &k.shape : nullptr, dtypeSize(k.dtype), args);
    if (!seq.prologue.in.empty() &&
        k.anchor.lib->run(k.anchor.index, seq.prologue.out, seq.prologue.scratch, seq.prologue.in) != 0)
      return makeError("runtime", "the im2col of " + k.what + " failed", k.loc);
    for (const cuda::GemmCall &c : seq.gemms) gemm(k, c);
    if (seq.zeroBytes > 0) std::memset(seq.zeroFill, 0, seq.zeroBytes);
    for (const cuda::KernelCall &c : seq.kernels) {
      const Loaded &l = c.anchor ? k.anchor : k.main;
      if (l.lib->run(l.index, c.out, c.scratch, c.in) != 0)
        return makeError("runtime", "an index out of range in " + k.what + " (found by the kernel)", k.loc);
    }
    return Status();
  }

 private:
  static void gemm(const EmulatedKernel &k, const cuda::GemmCall &c) {
    cudatest::hostGemm(k.shape, k.dtype, k.plan.epilogue, c.a, c.b, c.bias, c.d);
  }

  std::vector<Device> devices_;
  mutable std::mutex mutex_;
  std::map<const std::byte *, size_t> blocks_;
};

// The real CUDA target, without cubins: the host runs the source, and hundreds of graphs compile
// in half the time (CudaTarget.AnMlpHasCubinsForSm80AndSm90ThatSurviveSaving checks the cubins).
std::vector<BackendEntry> emulatedRegistry() {
  return {builtinBackends().front(),
          {DeviceKind::Cuda, "emulated cuda",
           [] {
             return std::unique_ptr<Target>(
                 std::make_unique<CudaTarget>(CudaTargetOptions{.cubins = false}));
           },
           [](const DeviceOptions &o) -> Expected<std::unique_ptr<DeviceRuntime>> {
             return std::unique_ptr<DeviceRuntime>(std::make_unique<EmulatedCuda>(o.devices));
           }}};
}

struct Model {
  int seed = 0;
  Graph compiled;
  std::unique_ptr<Executable> exe;
};

// Which random graphs a scenario compiles, and how.
struct Scenario {
  uint64_t seedBase = 0;
  int graphs = 300;
  std::vector<Device> devices;  ///< the first is where inputs and pins go most of the time
  std::function<void(int seed, testutil::RandomGraphOptions &)> generator;
  std::function<void(int seed, CompileOptions &)> options;
};

struct Counts {
  int compiled = 0, rejected = 0, compared = 0, onGpu = 0, twoGpus = 0, gemms = 0, convGemms = 0, anchored = 0,
      fusedOnGpu = 0, bothFailed = 0, failures = 0;
};

// Compiles the scenario's graphs with the real CUDA target, runs them on the emulated runtime,
// compares with the reference (gtest failures for the differences).
Counts runScenario(const Scenario &sc) {
  const std::vector<BackendEntry> registry = emulatedRegistry();
  std::vector<Model> models;
  Counts c;
  for (int seed = 0; seed < sc.graphs; ++seed) {
    testutil::RandomGraphOptions gen{.maxNodes = 12,
                                     .insertedRate = 0,
                                     .devices = sc.devices,
                                     .pinRate = (seed / 2) % 2 == 0 ? 0.3 : 1.0,
                                     .firstDeviceBias = 0.8,
                                     .dtypePinRate = 0.1,
                                     .extremeValues = false,
                                     .compileReady = true};
    sc.generator(seed, gen);
    const Graph g = testutil::randomGraph(sc.seedBase + static_cast<uint64_t>(seed), gen);
    CompileOptions o;
    o.devices = sc.devices;
    std::sort(o.devices.begin(), o.devices.end());
    o.target = Device::cuda(0);
    sc.options(seed, o);
    useBackendCapabilities(o, registry);
    CompileResult r = compile(g, o);
    if (!r.ok()) {
      ++c.rejected;
      continue;
    }
    Expected<Executable> exe = lower(r.graph, o, registry);
    EXPECT_TRUE(exe.ok()) << "seed " << seed << ": " << exe.status().message() << "\n" << printGraph(r.graph);
    if (!exe) {
      ++c.failures;
      continue;
    }
    models.push_back({seed, r.graph, std::make_unique<Executable>(std::move(*exe))});
  }
  c.compiled = static_cast<int>(models.size());
  // First pass: the kernels' sources; then one compile.
  Session::Options so;
  so.backends = registry;
  so.checkPlan = true;
  library().recording = true;
  for (const Model &m : models) {
    Expected<Session> s = Session::create(*m.exe, so);
    EXPECT_TRUE(s.ok()) << "seed " << m.seed << ": " << s.status().message();
  }
  library().recording = false;
  const std::string errors = library().compilePending();
  EXPECT_EQ(errors, "") << errors.substr(0, 3000);
  if (!errors.empty()) return c;
  for (const Model &m : models) {
    if (c.failures >= 5) break;
    auto context = [&] { return "seed " + std::to_string(m.seed) + "\n" + printGraph(m.compiled); };
    Expected<Session> s = Session::create(*m.exe, so);
    if (!s.ok()) {
      ADD_FAILURE() << "session: " << s.status().message() << "\n" << context();
      ++c.failures;
      continue;
    }
    bool gpu = false, second = false;
    for (const Step &st : m.exe->steps) {
      const bool cudaStep = st.plan.kernel.starts_with("cuda.");
      gpu |= cudaStep;
      c.gemms += st.plan.kernel == cuda::kGemmPlanName;
      if (st.plan.kernel == cuda::kGemmPlanName) {
        Expected<cuda::CudaPlan> plan = cuda::CudaPlan::decode(st.plan.payload);
        c.convGemms += plan && plan->gemmColOffset >= 0;
      }
      c.anchored += st.plan.kernel == cuda::kAnchoredPlanName;
      c.fusedOnGpu += cudaStep && !st.body.empty();
    }
    for (const Slot &slot : m.exe->slots) second |= slot.device == Device::cuda(1);
    c.onGpu += gpu;
    c.twoGpus += gpu && second;
    const std::map<std::string, TensorData> inputs = testutil::randomInputs(m.compiled, static_cast<uint64_t>(m.seed));
    std::vector<NamedTensor> given;
    for (const auto &[name, t] : inputs) {
      Expected<Tensor> on = Tensor(t).to(*m.compiled.value(*m.compiled.findValue(name)).device);
      EXPECT_TRUE(on.ok()) << on.status().message();
      if (on) given.push_back({name, *on});
    }
    Expected<RunResult> got = s->run(given);
    Expected<std::vector<TensorData>> want = reference::run(m.compiled, inputs);
    if (got.ok() != want.ok()) {
      ADD_FAILURE() << "the session " << (got.ok() ? "ran" : "failed: " + got.status().message())
                    << "; the reference " << (want.ok() ? "ran" : "failed: " + want.status().message())
                    << "\n" << context();
      ++c.failures;
      continue;
    }
    if (!got.ok()) {
      ++c.bothFailed;
      continue;
    }
    double narrowest = 0x1p-24;
    for (NodeId id : m.compiled.order())
      narrowest = std::max(narrowest, testutil::unitRoundoff(m.compiled.value(m.compiled.node(id).result).type.dtype));
    const double scale = testutil::valueScale(m.compiled, inputs);
    if (!(scale < 1e6)) continue;
    const double tol = narrowest * scale * (8 + 4 * static_cast<double>(m.compiled.order().size()));
    std::string diff;
    for (size_t k = 0; k < want->size() && diff.empty(); ++k) {
      const bool exact = !isFloating((*want)[k].dtype());
      // A float computed differently can cross an integer cast's boundary: integers get 1.
      diff = testutil::compareOutputs({(*want)[k]}, {got->outputs[k].tensor.data()}, exact ? 1 : tol);
      if (!diff.empty()) diff = "output " + std::to_string(k) + ": " + diff;
    }
    if (!diff.empty()) {
      ADD_FAILURE() << diff << "\n" << context();
      ++c.failures;
      continue;
    }
    ++c.compared;
  }
  std::printf("%d graphs compiled (%d rejected), %d ran on a GPU in part (%d on both cuda:0 and "
              "cuda:1), %d compared, %d failed in both; %d cuBLASLt GEMM steps (%d of them conv2d), %d anchored steps, "
              "%d fused steps on a GPU\n",
              c.compiled, c.rejected, c.onGpu, c.twoGpus, c.compared, c.bothFailed, c.gemms,
              c.convGemms, c.anchored, c.fusedOnGpu);
  return c;
}

// Every op, mostly on cuda:0 (inputs and pins there, strict placement half the time), with
// GEMMs, convolutions and norms often, and cuda:1 beside it.
TEST(EmulatedCuda, RandomGraphsOnTheCpuAndTwoGpusRunAsTheReferenceDoes) {
  std::vector<OpKind> gpuHeavy = testutil::wellConditionedOps();
  for (OpKind k : {OpKind::Matmul, OpKind::Linear, OpKind::Conv2d, OpKind::Cast, OpKind::Exp,
                   OpKind::LayerNorm, OpKind::BatchNorm})
    for (int i = 0; i < 3; ++i) gpuHeavy.push_back(k);
  const Counts c = runScenario(
      {.seedBase = 5550001,
       .graphs = 300,
       .devices = {Device::cuda(0), Device::cpu(), Device::cuda(1)},
       .generator = [&](int seed, testutil::RandomGraphOptions &gen) { if (seed % 4 != 0) gen.ops = gpuHeavy; },
       .options = [](int seed, CompileOptions &o) {
         o.placement = seed % 2 == 0 ? PlacementPolicy::Strict : PlacementPolicy::Auto;
         o.dtype = seed % 4 == 0 ? DTypePolicy{DTypePolicy::Kind::Autocast, DType::F16}
                                 : DTypePolicy{DTypePolicy::Kind::Promote, DType::F16};
       }});
  EXPECT_EQ(c.failures, 0);
  EXPECT_GE(c.compared, 150);
  EXPECT_GE(c.onGpu, 100);
  EXPECT_GE(c.gemms, 10);
  EXPECT_GE(c.anchored, 3);
  EXPECT_GE(c.twoGpus, 10);
}

// Fusion groups on cuda:0: the ops the fusion pass groups (elementwise chains, casts, where,
// comparisons, GEMM anchors) and a few that end groups, every value on the GPU.
TEST(EmulatedCuda, FusedGroupsOnAGpuRunAsTheReferenceDoes) {
  std::vector<OpKind> ops;
  for (const OpInfo &op : allOps())
    if (op.is(OpTrait::Elementwise) || op.is(OpTrait::GemmLike)) ops.push_back(op.kind);
  for (OpKind k : {OpKind::Softmax, OpKind::Sum, OpKind::Transpose, OpKind::Reshape}) ops.push_back(k);
  const Counts c = runScenario(
      {.seedBase = 6660001,
       .graphs = 300,
       .devices = {Device::cuda(0)},
       .generator = [&](int, testutil::RandomGraphOptions &gen) {
         gen.ops = ops;
         gen.maxNodes = 14;
       },
       .options = [](int seed, CompileOptions &o) {
         o.dtype = seed % 3 == 0 ? DTypePolicy{DTypePolicy::Kind::Autocast, DType::F16}
                                 : DTypePolicy{DTypePolicy::Kind::Promote, DType::F16};
       }});
  EXPECT_EQ(c.failures, 0);
  EXPECT_GE(c.compared, 150);
  EXPECT_GE(c.fusedOnGpu, 100);
  EXPECT_GE(c.gemms, 20);
  EXPECT_GE(c.convGemms + c.anchored, 5);
}

// Convolutions on cuda:0, alone and anchoring groups, in f32, f16 and bf16: those of one group
// run as im2col and a cuBLASLt GEMM (with the bias and a relu or gelu in its epilogue, and the
// tail reading its [N, Ho*Wo, O] output as NCHW), grouped ones as the direct kernel.
TEST(EmulatedCuda, ConvolutionsOnAGpuRunAsTheReferenceDoes) {
  const std::vector<OpKind> ops{OpKind::Conv2d, OpKind::Conv2d, OpKind::Conv2d, OpKind::Relu,
                                OpKind::Gelu,   OpKind::Add,    OpKind::Mul,    OpKind::Tanh,
                                OpKind::Cast,   OpKind::MaxPool2d};
  const Counts c = runScenario(
      {.seedBase = 9110001,
       .graphs = 200,
       .devices = {Device::cuda(0)},
       .generator = [&](int, testutil::RandomGraphOptions &gen) {
         gen.ops = ops;
         gen.maxNodes = 8;
       },
       .options = [](int seed, CompileOptions &o) {
         o.dtype = seed % 3 == 0   ? DTypePolicy{DTypePolicy::Kind::Autocast, DType::F16}
                   : seed % 3 == 1 ? DTypePolicy{DTypePolicy::Kind::Autocast, DType::BF16}
                                   : DTypePolicy{DTypePolicy::Kind::Promote, DType::F16};
       }});
  EXPECT_EQ(c.failures, 0);
  EXPECT_GE(c.compared, 100);
  EXPECT_GE(c.convGemms, 25);
  EXPECT_GE(c.anchored, 1);
}

}  // namespace
}  // namespace ferry

#endif  // FERRY_HAVE_CUDA
