// backends/cpu/dispatch.cpp — which kernel family runs an op, and which (op, dtype) pairs have
// one: the one place where the CPU binds kernels to ops.
#include <array>
#include <vector>

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

FamilyKernel familyKernel(OpKind op) {
  switch (familyOf(op)) {
    case Family::Unary: return unary;
    case Family::Binary: return binary;
    case Family::Where: return where;
    case Family::Cast: return cast;
    case Family::Copy: return copyBytes;
    case Family::Constant: return constant;
    case Family::Linalg: return linalg;
    case Family::Pool: return pool;
    case Family::Normalize: return normalize;
    case Family::Movement: return movement;
  }
  return nullptr;
}

Status contractError(const KernelCall &call, const std::string &what) {
  return makeError("internal",
                   "CPU kernel of '" + std::string(call.op.name) +
                       "' called outside its contract: " + what,
                   call.loc);
}

}  // namespace ferry::cpu

namespace ferry::cpu {

namespace {

constexpr std::string_view kSmallGemm = "cpu.gemm.small";

std::string familyKernelName(const OpInfo &op) { return "cpu." + std::string(op.name); }

// Runs a family kernel: the step's types, attributes and location held once, views of the
// launch's pointers made on the stack.
class FamilyKernelStep final : public Kernel {
 public:
  FamilyKernelStep(const StepSpec &step, FamilyKernel fn)
      : op_(step.op),
        attrs_(step.attrs),
        operands_(step.operands.begin(), step.operands.end()),
        result_(step.result),
        device_(step.device),
        loc_(step.loc),
        fn_(fn) {}

  Status run(const KernelArgs &args) const override {
    constexpr size_t kInline = 16;
    const size_t n = operands_.size();
    std::array<TensorView, kInline> inline_;
    std::vector<TensorView> many;  // a concat of more than kInline operands
    if (n > kInline) many.resize(n);
    TensorView *views = n > kInline ? many.data() : inline_.data();
    for (size_t i = 0; i < n; ++i)
      views[i] = {const_cast<std::byte *>(args.operands[i]), &operands_[i], device_};
    return fn_(KernelCall{op_, attrs_, std::span<const TensorView>(views, n),
                          {args.result, &result_, device_}, loc_, args.scratch});
  }

 private:
  const OpInfo &op_;
  Attrs attrs_;
  std::vector<TensorType> operands_;
  TensorType result_;
  Device device_;
  Location loc_;
  FamilyKernel fn_;
};

}  // namespace

KernelPlan planKernel(const StepSpec &step) {
  if (smallGemmApplies(step)) return {std::string(kSmallGemm), 0, {}};
  return {familyKernelName(step.op), linalgScratchBytes(step), {}};
}

Expected<std::unique_ptr<Kernel>> prepareKernel(const KernelPlan &plan, const StepSpec &step) {
  auto mismatch = [&](const std::string &why) {
    return makeError("internal",
                     "the kernel plan '" + plan.kernel + "' of '" + std::string(step.op.name) +
                         "' on " + step.device.str() + " " + why,
                     step.loc);
  };
  if (!plan.payload.empty()) return mismatch("carries a payload; CPU kernels take none");
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
  if (plan.scratchBytes < linalgScratchBytes(step))
    return mismatch("plans " + std::to_string(plan.scratchBytes) + " scratch bytes, the kernel needs " +
                    std::to_string(linalgScratchBytes(step)));
  return std::unique_ptr<Kernel>(std::make_unique<FamilyKernelStep>(step, familyKernel(step.op.kind)));
}

}  // namespace ferry::cpu
