// backends/cpu/dispatch.cpp — which kernel runs an op, and which (op, dtype) pairs have one.
#include "backends/cpu/kernels.h"

namespace ferry::cpu {

namespace {

enum class Family : uint8_t { None, Unary, Binary, Where, Cast, Copy, Constant };

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
    case OpKind::Transfer:
    case OpKind::Identity: return Family::Copy;
    case OpKind::Constant: return Family::Constant;
    // Not yet on the CPU backend: supports() says so, and placement falls them back or rejects.
    case OpKind::Matmul:
    case OpKind::Linear:
    case OpKind::Conv2d:
    case OpKind::MaxPool2d:
    case OpKind::AvgPool2d:
    case OpKind::GlobalAvgPool:
    case OpKind::BatchNorm:
    case OpKind::LayerNorm:
    case OpKind::Sum:
    case OpKind::Mean:
    case OpKind::Max:
    case OpKind::Softmax:
    case OpKind::LogSoftmax:
    case OpKind::Transpose:
    case OpKind::Concat:
    case OpKind::Slice:
    case OpKind::Gather:
    case OpKind::Expand: return Family::None;
  }
  return Family::None;
}

}  // namespace

bool hasKernel(OpKind op, DType dtype) {
  const OpInfo &info = opInfo(op);
  switch (familyOf(op)) {
    case Family::None: return false;
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
  }
  return false;
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
    case Family::None: break;
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
