// tests/cuda/cuda_target_test.cpp — the CUDA target on a machine without a GPU: NVRTC compiles
// every generated kernel of the random graphs to PTX, models compile for cuda:0 into executables
// whose plans are complete (and survive saving and loading), placement falls back where the
// CUDA kernels are missing, and a Session on a machine without a GPU fails with a clear error.
// Built only with the CUDA toolkit (FERRY_HAVE_CUDA).
#include <gtest/gtest.h>

#ifdef FERRY_HAVE_CUDA

#include <chrono>
#include <set>

#include "backends/cuda/codegen/gemm_shape.h"
#include "backends/cuda/codegen/plan.h"
#include "backends/cuda/cuda_device.h"
#include "backends/cuda/cuda_target.h"
#include "backends/cuda/nvrtc.h"
#include "cuda/codegen_steps.h"
#include "common/random_graph.h"
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
  int compiled = 0;
  const auto start = std::chrono::steady_clock::now();
  for (const cudatest::CollectedStep &s : steps) {
    if (!sources.insert(s.kernel.source).second) continue;
    Expected<std::string> ptx = cuda::compileToPtx(s.kernel);
    ASSERT_TRUE(ptx.ok()) << s.what << ": " << ptx.status().message() << "\n"
                          << s.kernel.source.substr(cuda::prelude().size());
    EXPECT_NE(ptx->find(".entry ferry_kernel"), std::string::npos) << s.what;
    EXPECT_NE(ptx->find(std::string(".target sm_80")), std::string::npos) << s.what;
    ++compiled;
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("%zu steps, %d distinct kernels compiled to PTX in %.1f s\n", steps.size(), compiled, seconds);
  EXPECT_GE(compiled, 150);
  // Compiled again: the cache answers.
  const cuda::PtxCacheStats before = cuda::ptxCacheStats();
  ASSERT_TRUE(cuda::compileToPtx(steps.front().kernel).ok());
  EXPECT_EQ(cuda::ptxCacheStats().hits, before.hits + 1);
  EXPECT_EQ(cuda::ptxCacheStats().compiled, before.compiled);
}

TEST(CudaTarget, NvrtcErrorsComeBackWithTheLog) {
  cuda::KernelSource k;
  k.source = cuda::prelude() + "FERRY_KERNEL ferry_kernel(char *out) { undeclared_thing(out); }\n";
  Expected<std::string> ptx = cuda::compileToPtx(k);
  ASSERT_FALSE(ptx.ok());
  EXPECT_EQ(ptx.status().diagnostics().front().code, "internal");
  EXPECT_NE(ptx.status().message().find("undeclared_thing"), std::string::npos) << ptx.status().message();
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

// The MLP on cuda:0: linear+relu is one cuBLASLt GEMM with its bias and relu epilogue, the
// second linear another, softmax a generated kernel; every plan decodes, and the executable
// saves and loads with them.
TEST(CudaTarget, AnMlpCompilesForCuda0WithCompletePlansThatSurviveSaving) {
  const Graph g = parse(R"(graph mlp {
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
})");
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
  const std::string good = p.encode();
  auto rejects = [](const std::string &payload, const std::string &field) {
    Expected<cuda::CudaPlan> r = cuda::CudaPlan::decode(payload);
    ASSERT_FALSE(r.ok()) << payload.substr(0, 60);
    EXPECT_EQ(r.status().diagnostics().front().code, "format");
    EXPECT_NE(r.status().message().find(field), std::string::npos) << r.status().message();
  };
  rejects("", "header");
  rejects("ferry-cuda-plan 2\n", "header");
  std::string s = good;
  s.replace(s.find("threads 128"), 11, "threads 4096");
  rejects(s, "threads");
  s = good;
  s.replace(s.find("epilogue gelu_bias"), 18, "epilogue swish_bias");
  rejects(s, "epilogue");
  rejects(good.substr(0, good.size() - 1), "ptx");
  s = good;
  s.replace(s.find("anchor_ptx 16"), 13, "anchor_ptx 99");
  rejects(s, "anchor_ptx");
  p.source = "// the tail's source";
  p.anchorSource = "// the anchor's";
  q = cuda::CudaPlan::decode(p.encode());
  ASSERT_TRUE(q.ok()) << q.status().message();
  EXPECT_EQ(q->source, p.source);
  EXPECT_EQ(q->anchorSource, p.anchorSource);
  rejects(good + "x", "ptx");
  s = good;
  s.replace(s.find("blocks 12"), 9, "blocks -1");
  rejects(s, "blocks");
}

}  // namespace
}  // namespace ferry

#endif  // FERRY_HAVE_CUDA
