// backends/cpu/dispatch.cpp — which kernel family runs an op, and which (op, dtype) pairs have
// one: the one place where the CPU binds kernels to ops.
#include "backends/cpu/kernels.h"

namespace ferry::cpu {

namespace {

enum class Family : uint8_t {
  Unary,
  Binary,
  Where,
  Cast,
  Copy,
  Constant,
  Linalg,
  Pool,
  Normalize,
  Reduce,
  Movement
};

// No default: a new row in ir/ops.def must be placed here (-Wswitch), even if only as None.
Family familyOf(OpKind k) {
  switch (k) {
    case OpKind::Neg:
    case OpKind::Abs:
    case OpKind::Exp:
    case OpKind::Log:
    case OpKind::Sqrt:
    case OpKind::Rsqrt:
    case OpKind::Tanh:
    case OpKind::Sigmoid:
    case OpKind::Relu:
    case OpKind::Gelu:
    case OpKind::Erf:
    case OpKind::Silu:
    case OpKind::LeakyRelu: return Family::Unary;
    case OpKind::Add:
    case OpKind::Sub:
    case OpKind::Mul:
    case OpKind::Div:
    case OpKind::Pow:
    case OpKind::Maximum:
    case OpKind::Minimum:
    case OpKind::Equal:
    case OpKind::Less:
    case OpKind::Greater: return Family::Binary;
    case OpKind::Where: return Family::Where;
    case OpKind::Cast: return Family::Cast;
    case OpKind::Reshape:
    case OpKind::Unsqueeze:
    case OpKind::Squeeze:
    case OpKind::Flatten:
    case OpKind::Identity: return Family::Copy;
    // Never run as a kernel (CpuTarget::lower refuses it: DeviceRuntime::copy moves the bytes); in the
    // table so that the capability table says every dtype can be transferred.
    case OpKind::Transfer: return Family::Copy;
    case OpKind::Constant: return Family::Constant;
    case OpKind::Matmul:
    case OpKind::Linear:
    case OpKind::Conv2d: return Family::Linalg;
    case OpKind::MaxPool2d:
    case OpKind::AvgPool2d:
    case OpKind::GlobalAvgPool: return Family::Pool;
    case OpKind::BatchNorm:
    case OpKind::LayerNorm:
    case OpKind::Softmax:
    case OpKind::LogSoftmax: return Family::Normalize;
    case OpKind::Sum:
    case OpKind::Mean:
    case OpKind::Max: return Family::Reduce;
    case OpKind::Transpose:
    case OpKind::Concat:
    case OpKind::Slice:
    case OpKind::Gather:
    case OpKind::Expand: return Family::Movement;
  }
  FERRY_CHECK(false) << "op without a family";
  return Family::Copy;
}

}  // namespace

bool hasKernel(OpKind op, DType dtype) {
  const OpInfo &info = opInfo(op);
  switch (familyOf(op)) {
    case Family::Unary:
    case Family::Binary:
      // Float-producing ops (exp, div...) compute in a floating dtype: the dtype pass casts
      // their integer operands first.
      return acceptsDType(info.accepts, dtype) &&
             (info.dtypeRule != DTypeRule::PromoteFloat || isFloating(dtype));
    case Family::Where:
    case Family::Cast:
    case Family::Copy:
    case Family::Constant: return true;
    // Every dtype the op accepts: the families convert what they do not compute in natively
    // (f16/bf16 through f32, integers through int64).
    case Family::Linalg:
    case Family::Pool:
    case Family::Normalize:
    case Family::Reduce:
    case Family::Movement: return acceptsDType(info.accepts, dtype);
  }
  return false;
}

// Measured with ferry-bench-cpu-kernels (bench/README.md, "Cost factors"), single-threaded:
// each kernel's time relative to the f32 kernel of the same op, over the ratio of the cost
// model's estimates (GEMMs are estimated by flops, the same for every dtype; elementwise ops by
// bytes, half for f16). The numbers are rounded: they rank devices, they do not predict times.
double kernelCostFactor(OpKind op, DType dtype) {
  const bool half = dtype == DType::F16 || dtype == DType::BF16;
  const bool integer = !isFloating(dtype);
  switch (familyOf(op)) {
    case Family::Linalg:
      // f16/bf16 convert around sgemm: 0.9-1.9x; dgemm runs at about half sgemm's rate:
      // 1.9-2.6x; the integers are plain loops without BLAS: 26-42x.
      return half ? 1.5 : dtype == DType::F64 ? 2 : integer ? 40 : 1;
    case Family::Unary:
    case Family::Binary:
      // f16 converts to f32 and back: 0.9-1.5x the f32 time for half the bytes; the integers
      // compute in int64: relu on i32 takes 6-8x f32's time for the same bytes.
      return half ? 2.5 : integer ? 6 : 1;
    default: return 1;
  }
}

namespace {

FamilyPrepare familyPrepare(OpKind op) {
  switch (familyOf(op)) {
    case Family::Unary: return prepareUnary;
    case Family::Binary: return prepareBinary;
    case Family::Where: return prepareWhere;
    case Family::Cast: return prepareCast;
    case Family::Copy: return prepareCopy;
    case Family::Constant: return prepareConstant;
    case Family::Linalg: return prepareLinalg;
    case Family::Pool: return preparePool;
    case Family::Normalize: return prepareNormalize;
    case Family::Reduce: return prepareReduce;
    case Family::Movement: return prepareMovement;
  }
  return nullptr;
}

// The scratch bytes `step`'s family kernel takes.
uint64_t scratchBytes(const StepSpec &step) {
  switch (familyOf(step.op.kind)) {
    case Family::Linalg: return linalgScratchBytes(step);
    case Family::Pool: return poolScratchBytes(step);
    case Family::Normalize: return normalizeScratchBytes(step);
    case Family::Reduce: return reduceScratchBytes(step);
    case Family::Movement: return movementScratchBytes(step);
    default: return 0;
  }
}

}  // namespace

Status contractError(const KernelCall &call, const std::string &what) {
  return makeError("internal",
                   "CPU kernel of '" + std::string(call.op.name) +
                       "' called outside its contract: " + what,
                   call.loc);
}

Status contractError(const StepSpec &step, const std::string &what) {
  return makeError("internal",
                   "CPU kernel of '" + std::string(step.op.name) +
                       "' called outside its contract: " + what,
                   step.loc);
}

namespace {

constexpr std::string_view kSmallGemm = "cpu.gemm.small";

std::string familyKernelName(const OpInfo &op) { return "cpu." + std::string(op.name); }

}  // namespace

KernelPlan planKernel(const StepSpec &step) {
  if (smallGemmApplies(step)) return {std::string(kSmallGemm), 0, {}};
  return {familyKernelName(step.op), scratchBytes(step), {}};
}

Expected<std::unique_ptr<Kernel>> prepareKernel(const KernelPlan &plan, const StepSpec &step) {
  auto mismatch = [&](const std::string &why) {
    return makeError("internal",
                     "the kernel plan '" + plan.kernel + "' of '" + std::string(step.op.name) +
                         "' on " + step.device.str() + " " + why,
                     step.loc);
  };
  if (!plan.payload.empty()) return mismatch("carries a payload; CPU kernels take none");
  if (!step.constants.empty() && step.constants.size() != step.operands.size())
    return mismatch("is given " + std::to_string(step.constants.size()) + " constants for " +
                    std::to_string(step.operands.size()) + " operands");
  if (plan.kernel == kFusedKernel || step.body) {
    if (plan.kernel != kFusedKernel) return mismatch("is not the fused kernel of a fused step");
    return prepareFused(plan, step);
  }
  const DType compute = computeDTypeOf(step);
  if (!hasKernel(step.op.kind, compute))
    return makeError("internal",
                     "the CPU backend has no kernel for '" + std::string(step.op.name) + "' in " +
                         std::string(dtypeName(compute)) +
                         " (placement should have moved or rejected this node)",
                     step.loc);
  if (plan.kernel == kSmallGemm) {
    if (!smallGemmApplies(step)) return mismatch("does not fit this step's op and types");
    return prepareSmallGemm(step);
  }
  if (plan.kernel != familyKernelName(step.op))
    return mismatch("is not a kernel of this build's CPU target for this op");
  if (const uint64_t need = scratchBytes(step); plan.scratchBytes < need)
    return mismatch("plans " + std::to_string(plan.scratchBytes) + " scratch bytes, the kernel needs " +
                    std::to_string(need));
  return familyPrepare(step.op.kind)(step);
}

}  // namespace ferry::cpu
