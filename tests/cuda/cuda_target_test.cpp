// tests/cuda/cuda_target_test.cpp — the CUDA target on a machine without a GPU: NVRTC compiles
// every generated kernel of the random graphs to PTX (and nvJitLink a tenth of them to cubins),
// models compile for cuda:0 into executables whose plans are complete, with cubins for sm_80 and
// sm_90 (and survive saving and loading), a GPU picks the image of its architecture, placement
// falls back where the CUDA kernels are missing, and a Session on a machine without a GPU fails
// with a clear error. Built only with the CUDA toolkit (FERRY_HAVE_CUDA).
#include <gtest/gtest.h>

#ifdef FERRY_HAVE_CUDA

#include <chrono>
#include <cstdio>
#include <set>
#include <utility>

#include "backends/cuda/codegen/gemm_shape.h"
#include "backends/cuda/codegen/plan.h"
#include "backends/cuda/cuda_device.h"
#include "backends/cuda/cuda_target.h"
#include "backends/cuda/nvrtc.h"
#include "backends/registry.h"
#include "common/random_graph.h"
#include "cuda/codegen_steps.h"
#include "ir/parser.h"
#include "passes/lower.h"
#include "runtime/session.h"

namespace ferry {
namespace {

// Every distinct generated source, elementwise and not, compiled to PTX.
TEST(CudaTarget, NvrtcCompilesEveryGeneratedKernelOfTheRandomGraphs) {
  std::vector<cudatest::CollectedStep> steps = cudatest::collectSteps(150, true);
  for (cudatest::CollectedStep &s : cudatest::collectSteps(150, false)) steps.push_back(std::move(s));
  std::set<std::string> sources;
  int compiled = 0, linked = 0;
  const auto start = std::chrono::steady_clock::now();
  for (const cudatest::CollectedStep &s : steps) {
    if (!sources.insert(s.kernel.source).second) continue;
    Expected<std::string> ptx = cuda::compileToPtx(s.kernel);
    ASSERT_TRUE(ptx.ok()) << s.what << ": " << ptx.status().message() << "\n"
                          << s.kernel.source.substr(cuda::prelude().size());
    EXPECT_NE(ptx->find(".entry ferry_kernel"), std::string::npos) << s.what;
    EXPECT_NE(ptx->find(std::string(".target sm_80")), std::string::npos) << s.what;
    // A tenth of them to cubins too, from the cached PTX: each kind of kernel goes through
    // nvJitLink without the whole suite's time.
    if (compiled++ % 10 == 0) {
      Expected<cuda::CompiledKernel> images = cuda::compileKernel(s.kernel, true);
      ASSERT_TRUE(images.ok()) << s.what << ": " << images.status().message();
      EXPECT_EQ(images->ptx, *ptx) << s.what;
      EXPECT_EQ(cuda::cubinArchitecture(images->cubinSm80), 80) << s.what;
      EXPECT_EQ(cuda::cubinArchitecture(images->cubinSm90), 90) << s.what;
      ++linked;
    }
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("%zu steps, %d distinct kernels compiled to PTX, %d of them to cubins, in %.1f s\n",
              steps.size(), compiled, linked, seconds);
  EXPECT_GE(compiled, 150);
  // Compiled again: the cache answers.
  const cuda::CompileCacheStats before = cuda::compileCacheStats();
  ASSERT_TRUE(cuda::compileToPtx(steps.front().kernel).ok());
  EXPECT_EQ(cuda::compileCacheStats().hits, before.hits + 1);
  EXPECT_EQ(cuda::compileCacheStats().compiled, before.compiled);
}

TEST(CudaTarget, NvrtcErrorsComeBackWithTheLog) {
  cuda::KernelSource k;
  k.source = cuda::prelude() + "FERRY_KERNEL ferry_kernel(char *out) { undeclared_thing(out); }\n";
  Expected<std::string> ptx = cuda::compileToPtx(k);
  ASSERT_FALSE(ptx.ok());
  EXPECT_EQ(ptx.status().diagnostics().front().code, "internal");
  EXPECT_NE(ptx.status().message().find("undeclared_thing"), std::string::npos) << ptx.status().message();
}

// The cache holds a source's PTX and cubins: compiled without cubins, then with, the source goes
// through NVRTC once and nvJitLink once; asked again without cubins, it gets none.
TEST(CudaTarget, TheCacheKeepsThePtxAndTheCubinsOfASource) {
  cuda::KernelSource k;
  k.source = cuda::prelude() +
             "FERRY_KERNEL ferry_kernel(char *out, char *, unsigned *) { out[threadIdx.x] = 7; }\n"
             "// TheCacheKeepsThePtxAndTheCubinsOfASource\n";
  const cuda::CompileCacheStats start = cuda::compileCacheStats();
  Expected<cuda::CompiledKernel> ptxOnly = cuda::compileKernel(k, false);
  ASSERT_TRUE(ptxOnly.ok()) << ptxOnly.status().message();
  EXPECT_TRUE(ptxOnly->cubinSm80.empty() && ptxOnly->cubinSm90.empty());
  Expected<cuda::CompiledKernel> all = cuda::compileKernel(k, true);
  ASSERT_TRUE(all.ok()) << all.status().message();
  EXPECT_EQ(all->ptx, ptxOnly->ptx);
  EXPECT_EQ(cuda::cubinArchitecture(all->cubinSm80), 80);
  EXPECT_EQ(cuda::cubinArchitecture(all->cubinSm90), 90);
  Expected<cuda::CompiledKernel> again = cuda::compileKernel(k, true);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->cubinSm80, all->cubinSm80);
  EXPECT_EQ(again->cubinSm90, all->cubinSm90);
  Expected<cuda::CompiledKernel> without = cuda::compileKernel(k, false);
  ASSERT_TRUE(without.ok());
  EXPECT_TRUE(without->cubinSm80.empty() && without->cubinSm90.empty());
  const cuda::CompileCacheStats end = cuda::compileCacheStats();
  EXPECT_EQ(end.compiled, start.compiled + 1);
  EXPECT_EQ(end.cubins, start.cubins + 1);
  EXPECT_EQ(end.hits, start.hits + 3);
}

// A cubin's ELF header names its machine (EM_CUDA) and its SM architecture.
void expectCubinFor(const std::string &image, int sm, const std::string &what) {
  ASSERT_GE(image.size(), 64u) << what;
  EXPECT_EQ(image.substr(0, 4), "\177ELF") << what;
  EXPECT_EQ(image[4], 2) << what;  // 64-bit
  EXPECT_EQ(static_cast<uint8_t>(image[18]) | static_cast<uint8_t>(image[19]) << 8, 190) << what;
  EXPECT_EQ(cuda::cubinArchitecture(image), sm) << what;
}

Graph parse(const std::string &text) {
  Expected<Graph> g = parseGraph(text, "test.fy");
  EXPECT_TRUE(g.ok()) << g.status().message();
  return std::move(g).value();
}

CompileOptions gpuOptions() {
  CompileOptions o;
  o.devices = {Device::cpu(), Device::cuda(0)};
  o.target = Device::cuda(0);  // strict placement: everything follows the input to cuda:0
  return o;
}

// An MLP on cuda:0, with a tail after its softmax.
constexpr const char *kMlp = R"(graph mlp {
  input %x : f32[32,784] @cuda:0
  param %w1 : f32[256,784] = randn(seed=1)
  param %b1 : f32[256] = zeros
  param %w2 : f32[10,256] = randn(seed=2)
  param %b2 : f32[10] = zeros
  %h = linear(%x, %w1, %b1)
  %a = relu(%h)
  %l = linear(%a, %w2, %b2)
  %p = softmax(%l)
  %q = mul(%p, 2)
  output %q
})";

// The MLP on cuda:0: linear+relu is one cuBLASLt GEMM with its bias and relu epilogue, the
// second linear another, softmax a generated kernel; every plan decodes, and the executable
// saves and loads with them.
TEST(CudaTarget, AnMlpCompilesForCuda0WithCompletePlansThatSurviveSaving) {
  const Graph g = parse(kMlp);
  Expected<Executable> exe = build(g, gpuOptions());
  ASSERT_TRUE(exe.ok()) << exe.status().message();
  int gemms = 0, kernels = 0;
  for (const Step &st : exe->steps) {
    if (st.op == OpKind::Transfer) continue;  // the runtime's copies (the weights', at load)
    ASSERT_TRUE(st.plan.kernel == cuda::kGemmPlanName || st.plan.kernel == cuda::kKernelPlanName)
        << stepOpName(st) << ": " << st.plan.kernel;
    Expected<cuda::CudaPlan> plan = cuda::CudaPlan::decode(st.plan.payload);
    ASSERT_TRUE(plan.ok()) << plan.status().message();
    if (st.plan.kernel == cuda::kGemmPlanName) {
      ++gemms;
      EXPECT_GE(st.plan.scratchBytes, cuda::kGemmWorkspaceBytes);
      if (stepOpName(st) == "linear+relu") {
        EXPECT_EQ(plan->epilogue, cuda::Epilogue::ReluBias);
        EXPECT_TRUE(plan->ptx.empty());  // nothing left after the epilogue
      }
    } else {
      ++kernels;
      EXPECT_NE(plan->ptx.find(".entry ferry_kernel"), std::string::npos);
    }
  }
  EXPECT_EQ(gemms, 2);
  EXPECT_GE(kernels, 1);
  Expected<Executable> loaded = Executable::deserialize(exe->serialize(), "mlp.ferry");
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  ASSERT_EQ(loaded->steps.size(), exe->steps.size());
  for (size_t i = 0; i < exe->steps.size(); ++i)
    EXPECT_EQ(loaded->steps[i].plan.payload, exe->steps[i].plan.payload);
}

// Every generated kernel of the MLP on cuda:0 carries cubins for sm_80 and sm_90 beside its PTX,
// ELF images of those architectures, which a GPU of each picks, and which survive saving and
// loading the executable.
TEST(CudaTarget, AnMlpHasCubinsForSm80AndSm90ThatSurviveSaving) {
  const Graph g = parse(kMlp);
  Expected<Executable> exe = build(g, gpuOptions());
  ASSERT_TRUE(exe.ok()) << exe.status().message();
  const std::string path = ::testing::TempDir() + "ferry_cubins_mlp.ferry";
  ASSERT_TRUE(exe->save(path).ok());
  Expected<Executable> loaded = Executable::load(path);
  std::remove(path.c_str());
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  ASSERT_EQ(loaded->steps.size(), exe->steps.size());
  int kernels = 0;
  for (size_t i = 0; i < exe->steps.size(); ++i) {
    const Step &st = exe->steps[i];
    if (st.op == OpKind::Transfer) continue;
    Expected<cuda::CudaPlan> plan = cuda::CudaPlan::decode(st.plan.payload);
    ASSERT_TRUE(plan.ok()) << plan.status().message();
    if (plan->ptx.empty()) continue;  // a GEMM with nothing after its epilogue
    ++kernels;
    const std::string what = stepOpName(st);
    expectCubinFor(plan->cubinSm80, 80, what);
    expectCubinFor(plan->cubinSm90, 90, what);
    EXPECT_EQ(plan->imageFor(8, 0, false), cuda::KernelImage::CubinSm80) << what;
    EXPECT_EQ(plan->imageFor(9, 0, false), cuda::KernelImage::CubinSm90) << what;
    EXPECT_EQ(plan->imageFor(8, 6, false), cuda::KernelImage::Ptx) << what;
    Expected<cuda::CudaPlan> saved = cuda::CudaPlan::decode(loaded->steps[i].plan.payload);
    ASSERT_TRUE(saved.ok()) << saved.status().message();
    EXPECT_EQ(saved->ptx, plan->ptx) << what;
    EXPECT_EQ(saved->cubinSm80, plan->cubinSm80) << what;
    EXPECT_EQ(saved->cubinSm90, plan->cubinSm90) << what;
  }
  EXPECT_EQ(kernels, 2);  // softmax's and mul's; the GEMMs have no tail
}

// A GEMM whose output the rest of the group reads in a wider dtype: cuBLASLt writes scratch,
// the tail kernel reads it.
TEST(CudaTarget, AGemmWithATailWritesScratchWhenTheTypesDiffer) {
  CompileOptions o = gpuOptions();
  o.dtype = DTypePolicy{DTypePolicy::Kind::Promote, DType::F16};
  Expected<Executable> exe = build(parse(R"(graph g {
  input %x : f16[8,64] @cuda:0
  param %w : f16[64,32] = randn(seed=1)
  %h = matmul(%x, %w)
  %c = cast(%h, to=f32)
  %y = sigmoid(%c)
  output %y
})"), o);
  ASSERT_TRUE(exe.ok()) << exe.status().message();
  const Step &st = exe->steps.back();  // after the weight's transfer to cuda:0, at load
  ASSERT_EQ(stepOpName(st), "matmul+cast+sigmoid");
  Expected<cuda::CudaPlan> plan = cuda::CudaPlan::decode(st.plan.payload);
  ASSERT_TRUE(plan.ok()) << st.plan.kernel << ": " << plan.status().message();
  EXPECT_EQ(plan->gemmMicroOps, 1);
  EXPECT_GE(plan->gemmOutputOffset, static_cast<int64_t>(cuda::kGemmWorkspaceBytes));
  EXPECT_GE(st.plan.scratchBytes, cuda::kGemmWorkspaceBytes + 8 * 32 * 2);
  EXPECT_FALSE(plan->ptx.empty());
  EXPECT_EQ(plan->inputs, 3);  // x, w, and the GEMM's output
}

// What the CUDA kernels lack (an integer matmul: cuBLASLt's are float) runs on the CPU under
// fallback, with the warning naming it, and is an error without it.
TEST(CudaTarget, PlacementFallsBackToTheCpuForOpsWithoutACudaKernel) {
  const std::string text = R"(graph g {
  input %x : i32[4,8] @cuda:0
  param %w : i32[8,2] = zeros
  %m = matmul(%x, %w)
  %y = relu(%m)
  output %y
})";
  CompileOptions o = gpuOptions();
  useBackendCapabilities(o);
  EXPECT_FALSE(o.capabilities.supports(Device::cuda(0), OpKind::Matmul, DType::I32));
  EXPECT_TRUE(o.capabilities.supports(Device::cuda(0), OpKind::Matmul, DType::BF16));
  CompileResult r = compile(parse(text), o);
  ASSERT_TRUE(r.ok());
  bool warned = false;
  for (const Diagnostic &d : r.diagnostics) warned |= d.code == "fallback";
  EXPECT_TRUE(warned);
  int matmuls = 0;
  for (NodeId id : r.graph.order()) {
    const Node &n = r.graph.node(id);
    if (n.op == OpKind::Matmul) {
      ++matmuls;
      EXPECT_EQ(r.graph.value(n.result).device, Device::cpu());
    }
  }
  EXPECT_EQ(matmuls, 1);
  o.fallback = false;
  CompileResult rejected = compile(parse(text), o);
  EXPECT_FALSE(rejected.ok());
}

// Every op of the table has a CUDA kernel in some dtype it accepts.
TEST(CudaTarget, EveryOpHasACudaKernel) {
  for (const OpInfo &op : allOps()) {
    bool any = false;
    for (DType t : kAllDTypes) any |= cuda::hasKernel(op.kind, t);
    EXPECT_TRUE(any) << op.name;
  }
}

// A conv2d group on cuda:0: im2col, a cuBLASLt GEMM with the bias and the relu as its epilogue,
// then the tail (the mul) reading the GEMM's [N, Ho*Wo, O] output from scratch as NCHW.
TEST(CudaTarget, AConvGroupIsIm2colAndAGemmWithItsEpilogueThenTheTail) {
  Expected<Executable> exe = build(parse(R"(graph g {
  input %x : f32[2,3,8,8] @cuda:0
  param %w : f32[4,3,3,3] = randn(seed=1)
  param %b : f32[4] = zeros
  %c = conv2d(%x, %w, %b, padding=[1, 1])
  %r = relu(%c)
  %y = mul(%r, 0.5)
  output %y
})"), gpuOptions());
  ASSERT_TRUE(exe.ok()) << exe.status().message();
  const Step &st = exe->steps.back();
  ASSERT_EQ(st.plan.kernel, cuda::kGemmPlanName) << stepOpName(st);
  Expected<cuda::CudaPlan> plan = cuda::CudaPlan::decode(st.plan.payload);
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  EXPECT_NE(plan->anchorPtx.find(".entry ferry_kernel"), std::string::npos);  // the im2col
  EXPECT_NE(plan->ptx.find(".entry ferry_kernel"), std::string::npos);        // the tail
  EXPECT_EQ(plan->epilogue, cuda::Epilogue::ReluBias);
  EXPECT_EQ(plan->gemmMicroOps, 2);
  // Scratch: the workspace, the im2col matrix [2, 64, 27] f32, the GEMM's output [2, 64, 4].
  EXPECT_EQ(plan->gemmColOffset, static_cast<int64_t>(plan->gemmWorkspaceBytes));
  EXPECT_EQ(plan->gemmOutputOffset, plan->gemmColOffset + (2 * 64 * 27 * 4 + 255) / 256 * 256);
  EXPECT_EQ(st.plan.scratchBytes, static_cast<uint64_t>(plan->gemmOutputOffset) + 2 * 64 * 4 * 4);
  Expected<cuda::GemmShape> shape = cuda::gemmShape(
      OpKind::Conv2d, std::vector<TensorType>{{DType::F32, {2, 3, 8, 8}}, {DType::F32, {4, 3, 3, 3}}},
      TensorType{DType::F32, {2, 4, 8, 8}});
  ASSERT_TRUE(shape.ok());
  EXPECT_EQ(shape->m, 4);
  EXPECT_EQ(shape->n, 64);
  EXPECT_EQ(shape->k, 27);
  EXPECT_EQ(shape->batch, 2);
  EXPECT_EQ(shape->strideA, 0);  // one weight for every image
  // The im2col and the tail have their cubins.
  expectCubinFor(plan->anchorCubinSm80, 80, "the im2col");
  expectCubinFor(plan->anchorCubinSm90, 90, "the im2col");
  expectCubinFor(plan->cubinSm80, 80, "the tail");
  expectCubinFor(plan->cubinSm90, 90, "the tail");
}

// A grouped conv2d has no GEMM: its direct kernel, then the tail's.
TEST(CudaTarget, AGroupedConvIsAnAnchoredPlanWithTwoKernels) {
  Expected<Executable> exe = build(parse(R"(graph g {
  input %x : f32[2,4,8,8] @cuda:0
  param %w : f32[4,2,3,3] = randn(seed=1)
  %c = conv2d(%x, %w, padding=[1, 1], groups=2)
  %r = relu(%c)
  output %r
})"), gpuOptions());
  ASSERT_TRUE(exe.ok()) << exe.status().message();
  const Step &st = exe->steps.back();
  ASSERT_EQ(st.plan.kernel, cuda::kAnchoredPlanName) << stepOpName(st);
  Expected<cuda::CudaPlan> plan = cuda::CudaPlan::decode(st.plan.payload);
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  EXPECT_NE(plan->anchorPtx.find(".entry ferry_kernel"), std::string::npos);
  EXPECT_NE(plan->ptx.find(".entry ferry_kernel"), std::string::npos);
  EXPECT_EQ(plan->gemmOutputOffset, -1);  // the conv's output has the result's type: in place
  EXPECT_EQ(plan->gemmColOffset, -1);
  // Both kernels have their cubins; the anchor's are the conv's, not the tail's.
  expectCubinFor(plan->anchorCubinSm80, 80, "the anchor");
  expectCubinFor(plan->anchorCubinSm90, 90, "the anchor");
  expectCubinFor(plan->cubinSm80, 80, "the tail");
  expectCubinFor(plan->cubinSm90, 90, "the tail");
  EXPECT_NE(plan->anchorCubinSm80, plan->cubinSm80);
  EXPECT_EQ(plan->imageFor(9, 0, true), cuda::KernelImage::CubinSm90);
  EXPECT_EQ(&plan->image(cuda::KernelImage::CubinSm90, true), &plan->anchorCubinSm90);
}

// A CUDA target without cubins (CudaTargetOptions) makes plans with the PTX alone, of every kind:
// an anchored conv, a GEMM with a tail, a kernel.
TEST(CudaTarget, ATargetWithoutCubinsMakesPtxOnlyPlans) {
  std::vector<BackendEntry> registry = builtinBackends();
  for (BackendEntry &e : registry)
    if (e.kind == DeviceKind::Cuda)
      e.target = [] {
        return std::unique_ptr<Target>(
            std::make_unique<CudaTarget>(CudaTargetOptions{.cubins = false}));
      };
  const Graph g = parse(R"(graph g {
  input %x : f32[2,4,8,8] @cuda:0
  input %a : f32[4,16] @cuda:0
  param %w : f32[4,2,3,3] = randn(seed=1)
  param %m : f32[16,8] = randn(seed=2)
  %c = conv2d(%x, %w, padding=[1, 1], groups=2)
  %y = sigmoid(%c)
  %g = matmul(%a, %m)
  %t = tanh(%g)
  %s = softmax(%t)
  output %y
  output %s
})");
  Expected<Executable> exe = build(g, gpuOptions(), nullptr, registry);
  ASSERT_TRUE(exe.ok()) << exe.status().message();
  std::set<std::string> kinds;
  for (const Step &st : exe->steps) {
    if (st.op == OpKind::Transfer) continue;
    Expected<cuda::CudaPlan> plan = cuda::CudaPlan::decode(st.plan.payload);
    ASSERT_TRUE(plan.ok()) << plan.status().message();
    kinds.insert(st.plan.kernel);
    EXPECT_FALSE(plan->ptx.empty()) << stepOpName(st);
    EXPECT_TRUE(plan->cubinSm80.empty() && plan->cubinSm90.empty()) << stepOpName(st);
    EXPECT_TRUE(plan->anchorCubinSm80.empty() && plan->anchorCubinSm90.empty()) << stepOpName(st);
    EXPECT_EQ(plan->imageFor(8, 0, false), cuda::KernelImage::Ptx);
  }
  EXPECT_EQ(kinds, (std::set<std::string>{cuda::kAnchoredPlanName, cuda::kGemmPlanName,
                                          cuda::kKernelPlanName}));
}

TEST(CudaTarget, ASessionWithoutAGpuIsAClearDeviceError) {
  if (visibleCudaDevices() > 0) GTEST_SKIP() << "this machine has a GPU";
  Expected<Executable> exe = build(parse(R"(graph g {
  input %x : f32[4] @cuda:0
  %y = relu(%x)
  output %y
})"), gpuOptions());
  ASSERT_TRUE(exe.ok()) << exe.status().message();
  Expected<Session> s = Session::create(std::move(exe).value());
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().diagnostics().front().code, "device");
  EXPECT_NE(s.status().message().find("cuda"), std::string::npos) << s.status().message();
}

TEST(CudaPlan, EncodesAndDecodesAndRejectsBrokenPayloads) {
  cuda::CudaPlan p;
  p.blocks = 12;
  p.threads = 128;
  p.inputs = 3;
  p.blockSync = true;
  p.sourceHash = 0xfedcba9876543210ull;
  p.epilogue = cuda::Epilogue::GeluBias;
  p.gemmMicroOps = 2;
  p.gemmOutputOffset = 4096;
  p.gemmWorkspaceBytes = 1 << 20;
  p.ptx = std::string("//ptx\n\0binary ok", 16);
  p.anchorBlocks = 7;
  p.anchorThreads = 64;
  p.anchorBlockSync = true;
  p.anchorPtx = "// anchor\nptx 3\n";  // looks like a field: only the length counts
  // Any bytes: NULs, newlines, what looks like the next field.
  p.cubinSm80 = std::string("\177ELF\0\n\ncubin_sm90 3\n\xff", 21);
  p.cubinSm90 = std::string("\0\0\n", 3);
  p.anchorCubinSm80 = "anchor 80";
  p.anchorCubinSm90 = std::string(1000, '\xee');
  Expected<cuda::CudaPlan> q = cuda::CudaPlan::decode(p.encode());
  ASSERT_TRUE(q.ok()) << q.status().message();
  EXPECT_EQ(q->blocks, 12);
  EXPECT_EQ(q->threads, 128);
  EXPECT_EQ(q->inputs, 3);
  EXPECT_TRUE(q->blockSync);
  EXPECT_EQ(q->sourceHash, p.sourceHash);
  EXPECT_EQ(q->epilogue, cuda::Epilogue::GeluBias);
  EXPECT_EQ(q->gemmMicroOps, 2);
  EXPECT_EQ(q->gemmOutputOffset, 4096);
  EXPECT_EQ(q->gemmWorkspaceBytes, 1u << 20);
  EXPECT_EQ(q->ptx, p.ptx);
  EXPECT_EQ(q->anchorBlocks, 7);
  EXPECT_EQ(q->anchorThreads, 64);
  EXPECT_TRUE(q->anchorBlockSync);
  EXPECT_EQ(q->anchorPtx, p.anchorPtx);
  EXPECT_EQ(q->cubinSm80, p.cubinSm80);
  EXPECT_EQ(q->cubinSm90, p.cubinSm90);
  EXPECT_EQ(q->anchorCubinSm80, p.anchorCubinSm80);
  EXPECT_EQ(q->anchorCubinSm90, p.anchorCubinSm90);
  const std::string good = p.encode();
  auto rejects = [](const std::string &payload, const std::string &field) {
    Expected<cuda::CudaPlan> r = cuda::CudaPlan::decode(payload);
    ASSERT_FALSE(r.ok()) << payload.substr(0, 60);
    EXPECT_EQ(r.status().diagnostics().front().code, "format");
    EXPECT_NE(r.status().message().find(field), std::string::npos) << r.status().message();
  };
  rejects("", "header");
  rejects("ferry-cuda-plan 3\n", "header");
  std::string s = good;
  s.replace(s.find("threads 128"), 11, "threads 4096");
  rejects(s, "threads");
  s = good;
  s.replace(s.find("epilogue gelu_bias"), 18, "epilogue swish_bias");
  rejects(s, "epilogue");
  rejects(good.substr(0, good.size() - 1), "plan: cubin_sm90:");
  s = good;
  s.replace(s.find("anchor_ptx 16"), 13, "anchor_ptx 99");
  rejects(s, "anchor_ptx");
  // A cubin cut short, or longer than announced, is an error naming it.
  const size_t cubin = good.find("\ncubin_sm80 21\n") + 1;
  rejects(good.substr(0, cubin + 14 + 10), "plan: cubin_sm80:");
  s = good;
  s.replace(cubin, 13, "cubin_sm80 20");
  rejects(s, "plan: cubin_sm80:");
  s = good;
  s.replace(s.find("anchor_cubin_sm90 1000"), 22, "anchor_cubin_sm90 1001");
  rejects(s, "plan: anchor_cubin_sm90:");
  s = good;
  s.replace(s.find("anchor_cubin_sm80 9"), 19, "anchor_cubin_sm80 -9");
  rejects(s, "plan: anchor_cubin_sm80:");
  p.source = "// the tail's source";
  p.anchorSource = "// the anchor's";
  q = cuda::CudaPlan::decode(p.encode());
  ASSERT_TRUE(q.ok()) << q.status().message();
  EXPECT_EQ(q->source, p.source);
  EXPECT_EQ(q->anchorSource, p.anchorSource);
  rejects(good + "x", "plan: cubin_sm90:");
  s = good;
  s.replace(s.find("blocks 12"), 9, "blocks -1");
  rejects(s, "blocks");
}

// A payload of the form's version 1, from before cubins, decodes: PTX only. Version 1 ends with
// the PTX; anything after it is an error naming it.
TEST(CudaPlan, PayloadsWithoutCubinsStillDecode) {
  const std::string v1 =
      "ferry-cuda-plan 1\nblocks 2\nthreads 64\ninputs 1\nblock_sync 0\nsource_hash 7\n"
      "epilogue none\ngemm_micro_ops 0\ngemm_output_offset -1\ngemm_workspace_bytes 0\n"
      "anchor_blocks 1\nanchor_threads 256\nanchor_block_sync 0\nanchor_source 0\n\n"
      "anchor_ptx 0\n\nsource 7\n// src\n\nptx 5\n//ptx";
  Expected<cuda::CudaPlan> p = cuda::CudaPlan::decode(v1);
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_EQ(p->blocks, 2);
  EXPECT_EQ(p->source, "// src\n");
  EXPECT_EQ(p->ptx, "//ptx");
  EXPECT_TRUE(p->cubinSm80.empty() && p->cubinSm90.empty());
  EXPECT_TRUE(p->anchorCubinSm80.empty() && p->anchorCubinSm90.empty());
  EXPECT_EQ(p->imageFor(8, 0, false), cuda::KernelImage::Ptx);
  EXPECT_EQ(p->imageFor(9, 0, false), cuda::KernelImage::Ptx);
  Expected<cuda::CudaPlan> trailing =
      cuda::CudaPlan::decode(v1 + "\ncubin_sm80 0\n\ncubin_sm90 0\n");
  ASSERT_FALSE(trailing.ok());
  EXPECT_EQ(trailing.status().diagnostics().front().code, "format");
  EXPECT_NE(trailing.status().message().find("plan: ptx:"), std::string::npos)
      << trailing.status().message();
  // Encoded again, it is the current version, with empty cubins, and decodes the same.
  Expected<cuda::CudaPlan> again = cuda::CudaPlan::decode(p->encode());
  ASSERT_TRUE(again.ok()) << again.status().message();
  EXPECT_EQ(again->ptx, p->ptx);
  EXPECT_EQ(again->source, p->source);
  EXPECT_TRUE(again->cubinSm80.empty() && again->cubinSm90.empty());
}

// The 64-byte ELF64 header of a cubin for `sm` under CUDA's ELF ABI version `abi` (7: the SM in
// e_flags' low byte; 8, CUDA 13's: in bits 8 to 15, as nvJitLink writes them).
std::string cubinHeader(int sm, int abi) {
  std::string h(64, '\0');
  h.replace(0, 4, "\177ELF");
  h[4] = 2;  // 64-bit
  h[5] = 1;  // little-endian
  h[8] = static_cast<char>(abi);
  h[18] = static_cast<char>(190);  // EM_CUDA
  const uint32_t flags = abi == 7 ? 0x500500u | static_cast<uint32_t>(sm)
                                  : 0x6000004u | static_cast<uint32_t>(sm) << 8;
  for (int i = 0; i < 4; ++i) h[static_cast<size_t>(48 + i)] = static_cast<char>(flags >> (8 * i));
  return h;
}

TEST(CudaPlan, CubinArchitectureIsReadFromTheElfHeader) {
  EXPECT_EQ(cuda::cubinArchitecture(cubinHeader(80, 8)), 80);
  EXPECT_EQ(cuda::cubinArchitecture(cubinHeader(90, 8)), 90);
  EXPECT_EQ(cuda::cubinArchitecture(cubinHeader(80, 7)), 80);
  EXPECT_EQ(cuda::cubinArchitecture(cubinHeader(90, 7)), 90);
  EXPECT_EQ(cuda::cubinArchitecture(cubinHeader(90, 9)), 0);  // an ABI version it cannot read
  EXPECT_EQ(cuda::cubinArchitecture(""), 0);
  EXPECT_EQ(cuda::cubinArchitecture(cubinHeader(80, 8).substr(0, 63)), 0);
  EXPECT_EQ(cuda::cubinArchitecture(
                "//\n// Generated by NVIDIA NVVM Compiler\n.version 9.0\n.target sm_80\n"
                "..............................................."),
            0);  // PTX
  std::string x86 = cubinHeader(80, 8);
  x86[18] = 62;  // EM_X86_64
  EXPECT_EQ(cuda::cubinArchitecture(x86), 0);
  std::string bigEndian = cubinHeader(80, 8);
  bigEndian[5] = 2;
  EXPECT_EQ(cuda::cubinArchitecture(bigEndian), 0);
}

// Which image a GPU loads: the cubin of exactly its architecture, whose header says so; the PTX
// on every other GPU, and when the plan has no such cubin.
TEST(CudaPlan, AGpuLoadsTheCubinOfItsArchitectureElseThePtx) {
  cuda::CudaPlan p;
  p.ptx = "// ptx";
  p.anchorPtx = "// anchor ptx";
  p.cubinSm80 = cubinHeader(80, 8);
  p.cubinSm90 = cubinHeader(90, 8);
  using cuda::KernelImage;
  EXPECT_EQ(p.imageFor(8, 0, false), KernelImage::CubinSm80);
  EXPECT_EQ(p.imageFor(9, 0, false), KernelImage::CubinSm90);
  for (auto [major, minor] : {std::pair{7, 5}, std::pair{8, 6}, std::pair{8, 7}, std::pair{8, 9},
                              std::pair{9, 1}, std::pair{10, 0}, std::pair{12, 0}, std::pair{0, 0}})
    EXPECT_EQ(p.imageFor(major, minor, false), KernelImage::Ptx) << major << "." << minor;
  EXPECT_EQ(p.image(KernelImage::CubinSm80, false), p.cubinSm80);
  EXPECT_EQ(p.image(KernelImage::CubinSm90, false), p.cubinSm90);
  EXPECT_EQ(p.image(KernelImage::Ptx, false), p.ptx);
  // The anchor's kernel has images of its own: none here.
  EXPECT_EQ(p.imageFor(8, 0, true), KernelImage::Ptx);
  EXPECT_EQ(p.image(KernelImage::Ptx, true), p.anchorPtx);
  p.anchorCubinSm90 = cubinHeader(90, 7);
  EXPECT_EQ(p.imageFor(9, 0, true), KernelImage::CubinSm90);
  EXPECT_EQ(p.image(KernelImage::CubinSm90, true), p.anchorCubinSm90);
  // A cubin whose header names another architecture, or is not a cubin, is not loaded.
  std::swap(p.cubinSm80, p.cubinSm90);
  EXPECT_EQ(p.imageFor(8, 0, false), KernelImage::Ptx);
  EXPECT_EQ(p.imageFor(9, 0, false), KernelImage::Ptx);
  p.cubinSm80 = "not an ELF image, but long enough to be one if it were: .........................";
  EXPECT_EQ(p.imageFor(8, 0, false), KernelImage::Ptx);
  p.cubinSm80.clear();
  EXPECT_EQ(p.imageFor(8, 0, false), KernelImage::Ptx);
}

}  // namespace
}  // namespace ferry

#endif  // FERRY_HAVE_CUDA
