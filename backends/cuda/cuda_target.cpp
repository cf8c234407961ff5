// backends/cuda/cuda_target.cpp — the CUDA capability table and kernel plans (cuda_target.h).
//
// A GEMM step (matmul or linear, alone or anchoring a fused group) becomes a cuBLASLt matmul
// whose epilogue takes the linear's bias and a relu or tanh-gelu right after it, then, when the
// group goes on, a generated kernel for the rest (reading the GEMM's output from scratch, or in
// place when it has the result's type). Every other step is one generated kernel
// (codegen/kernel_source.h). The plan carries its PTX and, unless the target's options leave
// them out, its cubins for sm_80 and sm_90 (codegen/plan.h).
#include "backends/cuda/cuda_target.h"

#include "backends/cuda/codegen/gemm_shape.h"
#include "backends/cuda/codegen/kernel_source.h"
#include "backends/cuda/codegen/plan.h"
#include "backends/cuda/nvrtc.h"

namespace ferry {

namespace cuda {

bool hasKernel(OpKind op, DType dtype) {
  const OpInfo &info = opInfo(op);
  if (!acceptsDType(info.accepts, dtype)) return false;
  if (info.is(OpTrait::Elementwise))
    return info.dtypeRule != DTypeRule::PromoteFloat || isFloating(dtype);
  switch (op) {
    // cuBLASLt: f16 and bf16 on tensor cores with f32 accumulation, f32, and f64 (a linear's
    // bias is a cuBLASLt epilogue, which f64 lacks).
    case OpKind::Matmul:
      return dtype == DType::F16 || dtype == DType::BF16 || dtype == DType::F32 || dtype == DType::F64;
    case OpKind::Linear: return dtype == DType::F16 || dtype == DType::BF16 || dtype == DType::F32;
    case OpKind::Sum:
    case OpKind::Mean:
    case OpKind::Max:
    case OpKind::Softmax:
    case OpKind::LogSoftmax:
    case OpKind::LayerNorm:
    case OpKind::Reshape:
    case OpKind::Transpose:
    case OpKind::Concat:
    case OpKind::Slice:
    case OpKind::Gather:
    case OpKind::Unsqueeze:
    case OpKind::Squeeze:
    case OpKind::Flatten:
    case OpKind::Expand:
    case OpKind::Identity: return true;
    // Copies are the runtime's; a constant is a weight (uploaded once, at load).
    case OpKind::Transfer:
    case OpKind::Constant: return true;
    // conv2d: im2col and a cuBLASLt GEMM where it has one group, else a direct generated kernel
    // (codegen/conv_pool.cpp), as are the pools and batch_norm.
    case OpKind::Conv2d:
    case OpKind::MaxPool2d:
    case OpKind::AvgPool2d:
    case OpKind::GlobalAvgPool:
    case OpKind::BatchNorm: return true;
    default: return false;
  }
}

}  // namespace cuda

namespace {

Status contract(const StepSpec &step, const std::string &what) {
  return makeError("internal",
                   "step '" + std::string(step.op.name) + "' on " + step.device.str() +
                       " is outside the CUDA kernels' contract: " + what,
                   step.loc);
}

uint64_t align256(uint64_t n) { return (n + 255) / 256 * 256; }

// Whether micro-op j of `body` is read by any micro-op after `after`.
bool readAfter(const FusedBody &body, size_t j, size_t after) {
  for (size_t k = after + 1; k < body.size(); ++k)
    for (int32_t a : body[k].args)
      if (argIsMicroOp(a) && microOpOf(a) == j) return true;
  return false;
}

// The types of the operands the anchor (a fused body's first micro-op, or the step's op) reads.
Expected<std::vector<TensorType>> anchorOperandTypes(const StepSpec &step) {
  if (!step.body) return std::vector<TensorType>(step.operands.begin(), step.operands.end());
  std::vector<TensorType> types;
  for (int32_t arg : (*step.body)[0].args) {
    if (argIsMicroOp(arg) || static_cast<size_t>(arg) >= step.operands.size())
      return contract(step, "the anchor reads something other than the step's operands");
    types.push_back(step.operands[static_cast<size_t>(arg)]);
  }
  return types;
}

// `kernel` compiled (with `cubins`, to cubins too) into the plan's main (or tail) kernel.
Status compileInto(Expected<cuda::KernelSource> kernel, bool cubins, cuda::CudaPlan &plan) {
  if (!kernel) return kernel.status();
  Expected<cuda::CompiledKernel> compiled = cuda::compileKernel(*kernel, cubins);
  if (!compiled) return compiled.status();
  plan.blocks = kernel->blocks;
  plan.threads = kernel->threads;
  plan.inputs = kernel->inputs;
  plan.blockSync = kernel->blockSync;
  plan.sourceHash = kernel->hash();
  plan.source = std::move(kernel->source);
  plan.ptx = std::move(compiled->ptx);
  plan.cubinSm80 = std::move(compiled->cubinSm80);
  plan.cubinSm90 = std::move(compiled->cubinSm90);
  return Status();
}

// One generated kernel: the step's.
Expected<KernelPlan> lowerKernel(const StepSpec &step, bool cubins) {
  cuda::CudaPlan plan;
  FERRY_TRY(compileInto(cuda::stepKernel(step), cubins, plan));
  return KernelPlan{cuda::kKernelPlanName, 0, plan.encode()};
}

// A copy of the step's fused body, or a body of its one op.
FusedBody bodyOf(const StepSpec &step) {
  if (step.body) return *step.body;
  std::vector<int32_t> args(step.operands.size());
  for (size_t i = 0; i < args.size(); ++i) args[i] = static_cast<int32_t>(i);
  return {MicroOp{step.op.kind, step.attrs, args, step.result, "", step.loc}};
}

// A linear over no input features is its bias, broadcast: the anchor becomes a cast of the bias
// to the anchor's type (a no-op the elementwise kernel broadcasts), and the group one kernel.
Expected<KernelPlan> lowerEmptyLinear(const StepSpec &step, int32_t biasOperand, bool cubins) {
  FusedBody body = bodyOf(step);
  MicroOp &a = body[0];
  const DType to = a.type.dtype;
  a = MicroOp{OpKind::Cast, Attrs{AttrValue{to}}, {biasOperand}, a.type, a.name, a.loc};
  const StepSpec spec{opInfo(OpKind::Cast), body[0].attrs, step.operands, step.result, step.device,
                      step.loc, &body};
  return lowerKernel(spec, cubins);
}

// The GEMM's epilogue: the bias, and an activation right after the GEMM, of its type, that
// nothing after reads around (cuBLASLt's GELU is the tanh approximation). Not for f64, whose
// GEMMs cuBLASLt may have no epilogue algorithm for: the tail kernel applies it there.
void chooseEpilogue(const FusedBody *body, const TensorType &anchorType, bool bias,
                    cuda::CudaPlan &plan) {
  plan.epilogue = bias ? cuda::Epilogue::Bias : cuda::Epilogue::None;
  plan.gemmMicroOps = 1;
  if (!body || anchorType.dtype == DType::F64 || body->size() < 2 || readAfter(*body, 0, 1)) return;
  const MicroOp &next = (*body)[1];
  const bool readsAnchor = next.args.size() == 1 && argIsMicroOp(next.args[0]) && microOpOf(next.args[0]) == 0;
  if (!readsAnchor || next.type != anchorType) return;
  if (next.op == OpKind::Relu) {
    plan.epilogue = bias ? cuda::Epilogue::ReluBias : cuda::Epilogue::Relu;
    plan.gemmMicroOps = 2;
  } else if (next.op == OpKind::Gelu &&
             attrString(opInfo(OpKind::Gelu), next.attrs, "approximate") == "tanh") {
    plan.epilogue = bias ? cuda::Epilogue::GeluBias : cuda::Epilogue::Gelu;
    plan.gemmMicroOps = 2;
  }
}

Expected<KernelPlan> lowerGemm(const StepSpec &step, bool cubins) {
  cuda::CudaPlan plan;
  const bool fused = step.body != nullptr;
  const OpKind anchor = fused ? (*step.body)[0].op : step.op.kind;
  const TensorType &anchorType = fused ? (*step.body)[0].type : step.result;
  if (!cuda::hasKernel(anchor, anchorType.dtype))
    return contract(step, "no cuBLASLt GEMM computes it in " + std::string(dtypeName(anchorType.dtype)));
  Expected<std::vector<TensorType>> types = anchorOperandTypes(step);
  if (!types) return types.status();
  const bool bias = anchor == OpKind::Linear && types->size() == 3;
  {  // the GEMM's shape, checked now rather than when a Session prepares it
    Expected<cuda::GemmShape> shape = cuda::gemmShape(anchor, *types, anchorType);
    if (!shape) return shape.status();
    if (bias && shape->k == 0)  // no product for cuBLASLt's bias epilogue to add to
      return lowerEmptyLinear(step, fused ? (*step.body)[0].args[2] : 2, cubins);
  }
  chooseEpilogue(step.body, anchorType, bias, plan);
  plan.gemmWorkspaceBytes = cuda::kGemmWorkspaceBytes;
  uint64_t scratch = plan.gemmWorkspaceBytes;
  const bool tail = fused && static_cast<size_t>(plan.gemmMicroOps) < step.body->size();
  if (tail) {
    const TensorType &gemmOut = (*step.body)[static_cast<size_t>(plan.gemmMicroOps) - 1].type;
    if (gemmOut != step.result) {
      plan.gemmOutputOffset = static_cast<int64_t>(scratch);
      scratch += align256(gemmOut.byteSize());
    }
    FERRY_TRY(compileInto(cuda::elementwiseKernel(step, static_cast<size_t>(plan.gemmMicroOps)),
                          cubins, plan));
  }
  return KernelPlan{cuda::kGemmPlanName, scratch, plan.encode()};
}

// The kernel just compiled into `plan` becomes its anchor kernel (the main one is compiled next).
void moveToAnchor(cuda::CudaPlan &plan) {
  plan.anchorBlocks = plan.blocks;
  plan.anchorThreads = plan.threads;
  plan.anchorBlockSync = plan.blockSync;
  plan.anchorSource = std::move(plan.source);
  plan.anchorPtx = std::move(plan.ptx);
  plan.anchorCubinSm80 = std::move(plan.cubinSm80);
  plan.anchorCubinSm90 = std::move(plan.cubinSm90);
}

// A conv2d as a GEMM on cuBLASLt (tensor cores for f16 and bf16): its im2col matrix written into
// scratch by the anchor kernel, one strided-batched GEMM (an image per batch) whose epilogue
// adds the bias and a following relu or gelu, writing [N, Ho*Wo, O] into scratch, and the tail
// kernel, which reads that as NCHW and computes the rest of the group (at least a copy: a cast
// to the same type). For one group in f16, bf16 or f32, when the im2col matrix takes at most
// kMaxIm2colBytes; the others take the direct kernel (lowerAnchored, lowerKernel).
constexpr uint64_t kMaxIm2colBytes = uint64_t{256} << 20;

bool convAsGemm(const StepSpec &step) {
  const bool fused = step.body != nullptr;
  const OpKind op = fused ? (*step.body)[0].op : step.op.kind;
  if (op != OpKind::Conv2d) return false;
  const Attrs &attrs = fused ? (*step.body)[0].attrs : step.attrs;
  const TensorType &out = fused ? (*step.body)[0].type : step.result;
  Expected<std::vector<TensorType>> operands = anchorOperandTypes(step);
  if (!operands || operands->size() < 2 || (*operands)[1].rank() != 4 || out.rank() != 4) return false;
  const DType t = out.dtype;
  const Shape &w = (*operands)[1].shape;
  const uint64_t col = static_cast<uint64_t>(out.shape[0] * out.shape[2] * out.shape[3]) *
                       static_cast<uint64_t>(w[1] * w[2] * w[3]) * dtypeSize(t);
  return (t == DType::F16 || t == DType::BF16 || t == DType::F32) &&
         attrInt(opInfo(OpKind::Conv2d), attrs, "groups") == 1 && out.numel() > 0 &&
         w[1] * w[2] * w[3] > 0 && col <= kMaxIm2colBytes;
}

Expected<KernelPlan> lowerConvGemm(const StepSpec &step, bool cubins) {
  FusedBody body = bodyOf(step);
  const MicroOp a = body[0];
  Expected<std::vector<TensorType>> operands = anchorOperandTypes(step);
  if (!operands) return operands.status();
  cuda::CudaPlan plan;
  // The im2col, moved into the anchor's fields; then the tail's.
  FERRY_TRY(compileInto(cuda::im2colKernel(StepSpec{opInfo(a.op), a.attrs, *operands, a.type, step.device, a.loc}),
                        cubins, plan));
  moveToAnchor(plan);
  chooseEpilogue(&body, a.type, operands->size() == 3, plan);
  const MicroOp last = body[static_cast<size_t>(plan.gemmMicroOps) - 1];  // body may grow
  if (body.size() == static_cast<size_t>(plan.gemmMicroOps))  // nothing left: the copy to NCHW
    body.push_back(MicroOp{OpKind::Cast, Attrs{AttrValue{last.type.dtype}},
                           {~(plan.gemmMicroOps - 1)}, last.type,
                           last.name, last.loc});
  const int64_t O = a.type.shape[1], P = a.type.shape[2] * a.type.shape[3];
  const int64_t strides[] = {P * O, 1, a.type.shape[3] * O, O};
  const StepSpec tail{step.op, step.attrs, step.operands, step.result, step.device, step.loc, &body};
  FERRY_TRY(compileInto(cuda::elementwiseKernel(tail, static_cast<size_t>(plan.gemmMicroOps), strides),
                        cubins, plan));
  // Scratch: cuBLASLt's workspace, the im2col matrix, the GEMM's output.
  plan.gemmWorkspaceBytes = cuda::kGemmWorkspaceBytes;
  const Shape &w = (*operands)[1].shape;
  const uint64_t col = static_cast<uint64_t>(a.type.shape[0] * P * w[1] * w[2] * w[3]) * dtypeSize(a.type.dtype);
  plan.gemmColOffset = static_cast<int64_t>(align256(plan.gemmWorkspaceBytes));
  plan.gemmOutputOffset = plan.gemmColOffset + static_cast<int64_t>(align256(col));
  const uint64_t scratch = static_cast<uint64_t>(plan.gemmOutputOffset) + align256(last.type.byteSize());
  return KernelPlan{cuda::kGemmPlanName, scratch, plan.encode()};
}

// A fused group whose anchor has a generated kernel (conv2d): that kernel, writing scratch or
// the result, then the tail's.
Expected<KernelPlan> lowerAnchored(const StepSpec &step, bool cubins) {
  const MicroOp &a = (*step.body)[0];
  Expected<std::vector<TensorType>> operands = anchorOperandTypes(step);
  if (!operands) return operands.status();
  // The anchor's kernel first, moved into the anchor's fields; then the tail's.
  cuda::CudaPlan plan;
  FERRY_TRY(compileInto(
      cuda::stepKernel(StepSpec{opInfo(a.op), a.attrs, *operands, a.type, step.device, a.loc}),
      cubins, plan));
  moveToAnchor(plan);
  FERRY_TRY(compileInto(cuda::elementwiseKernel(step, 1), cubins, plan));
  plan.gemmMicroOps = 1;
  uint64_t scratch = 0;
  if (a.type != step.result) {
    plan.gemmOutputOffset = 0;
    scratch = align256(a.type.byteSize());
  }
  return KernelPlan{cuda::kAnchoredPlanName, scratch, plan.encode()};
}

}  // namespace

KernelCapability CudaTarget::capability(OpKind op, DType dtype) const {
  if (!cuda::hasKernel(op, dtype)) return {};
  return {true, 1.0};
}

Expected<KernelPlan> CudaTarget::lower(const StepSpec &step) const {
  if (step.device.kind != DeviceKind::Cuda) return contract(step, "the CUDA target runs on cuda devices only");
  if (step.op.kind == OpKind::Transfer) return contract(step, "a 'transfer' is not lowered to a kernel");
  const bool gemm = step.body ? opInfo((*step.body)[0].op).is(OpTrait::GemmLike)
                              : step.op.is(OpTrait::GemmLike);
  if (gemm) {
    const OpKind anchor = step.body ? (*step.body)[0].op : step.op.kind;
    if (anchor == OpKind::Matmul || anchor == OpKind::Linear)
      return lowerGemm(step, options_.cubins);
    if (convAsGemm(step)) return lowerConvGemm(step, options_.cubins);
    if (step.body) return lowerAnchored(step, options_.cubins);
    // A conv2d alone: its generated kernel, below.
  }
  if (!step.body && !cuda::hasKernel(step.op.kind, step.result.dtype) &&
      step.op.dtypeRule != DTypeRule::Compare)
    return contract(step, "no kernel computes it in " + std::string(dtypeName(step.result.dtype)) +
                              " (placement should have moved or rejected this node)");
  return lowerKernel(step, options_.cubins);
}

}  // namespace ferry
