// backends/cpu/dispatch.cpp — which kernel runs an op, and which (op, dtype) pairs have one.
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
    case OpKind::Silu: return Family::Unary;
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
    // Never run as a kernel (CpuBackend::run refuses it: Backend::copy moves the bytes); in the
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
    case OpKind::Sum:
    case OpKind::Mean:
    case OpKind::Max:
    case OpKind::Softmax:
    case OpKind::LogSoftmax: return Family::Normalize;
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
    case Family::Linalg: return linalgSupports(op, dtype);
    case Family::Pool: return poolSupports(op, dtype);
    case Family::Normalize: return normalizeSupports(op, dtype);
    case Family::Movement: return movementSupports(op, dtype);
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

Status runKernel(const KernelCall &call) {
  const OpInfo &op = call.op;
  const auto n = static_cast<int>(call.operands.size());
  if (n < op.minOperands || (op.maxOperands >= 0 && n > op.maxOperands))
    return contractError(call, std::to_string(n) + " operands");
  if (call.attrs.size() != op.attrs.size()) return contractError(call, "attributes not complete");
  const DType compute = op.dtypeRule == DTypeRule::Compare && n > 0 ? call.operands[0].type->dtype
                                                                    : call.result.type->dtype;
  if (!hasKernel(op.kind, compute))
    return makeError("internal",
                     "the CPU backend has no kernel for '" + std::string(op.name) + "' in " +
                         std::string(dtypeName(compute)) +
                         " (placement should have moved or rejected this node)",
                     call.loc);
  switch (familyOf(op.kind)) {
    case Family::Unary: return unary(call);
    case Family::Binary: return binary(call);
    case Family::Where: return where(call);
    case Family::Cast: return cast(call);
    case Family::Copy: return copyBytes(call);
    case Family::Constant: return constant(call);
    case Family::Linalg: return linalg(call);
    case Family::Pool: return pool(call);
    case Family::Normalize: return normalize(call);
    case Family::Movement: return movement(call);
  }
  return contractError(call, "no kernel");
}

Status contractError(const KernelCall &call, const std::string &what) {
  return makeError("internal",
                   "CPU kernel of '" + std::string(call.op.name) +
                       "' called outside its contract: " + what,
                   call.loc);
}

}  // namespace ferry::cpu
