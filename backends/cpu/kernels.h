// backends/cpu/kernels.h — internal: the CPU kernels by op family.
//
// Contract (what compile() guarantees and the runtime passes on): operands and result are dense
// row-major views on one device; data operands already have the dtype the op computes in (the
// result's dtype, or for comparisons one dtype shared by both), because the dtype pass inserted
// the casts; shapes are the inferred ones. A call outside the contract is an "internal" error,
// not undefined behaviour.
#pragma once

#include <array>
#include <memory>
#include <span>
#include <vector>

#include "backends/device.h"

namespace ferry::cpu {

/// A dense tensor in a CPU device's memory, as a kernel sees it. `type` outlives the call.
struct TensorView {
  std::byte *data = nullptr;
  const TensorType *type = nullptr;
  Device device;

  size_t bytes() const { return type->byteSize(); }
};

/// One launch of a prepared family kernel: operands and result as views (their types are the
/// step's, held by the kernel), the step's op and location for errors found in the data (a
/// gather index out of range), and its planned scratch (KernelPlan::scratchBytes bytes).
/// Everything else about the step (attributes, geometry, the loop for the op and dtype) was
/// decided when the kernel was prepared.
struct KernelCall {
  const OpInfo &op;
  std::span<const TensorView> operands;
  TensorView result;
  const Location &loc;  ///< the step's source location, for errors
  std::byte *scratch = nullptr;
};

/// The dtype `step` computes in: its result's, or for a comparison its operands'.
inline DType computeDTypeOf(const StepSpec &step) {
  return step.op.dtypeRule == DTypeRule::Compare && !step.operands.empty() ? step.operands[0].dtype
                                                                           : step.result.dtype;
}
/// Whether the CPU has a kernel for `op` computing in `dtype`.
bool hasKernel(OpKind op, DType dtype);
/// The kernel's cost factor (backends/target.h, KernelCapability), from ferry-bench-cpu-kernels.
double kernelCostFactor(OpKind op, DType dtype);
/// A kernel of this device, ready to launch (DeviceRuntime::prepare made it).
class Kernel : public PreparedKernel {
 public:
  virtual Status run(const KernelArgs &args) const = 0;
};

/// The plan of one step (CpuTarget::lower): the kernel's name and its scratch bytes. The step
/// is within the contract above (the target checked it).
KernelPlan planKernel(const StepSpec &step);
/// The kernel a plan names, prepared for `step`; an "internal" error for a name this build
/// does not know or a plan that does not fit the step.
Expected<std::unique_ptr<Kernel>> prepareKernel(const KernelPlan &plan, const StepSpec &step);

/// A prepared kernel made of one step's types and the function of a launch that computes it:
/// `compute(call)`, with whatever the family decided at prepare time captured in it. Launching
/// builds the call's views on the stack (past 16 operands, in a per-thread buffer grown once).
template <class F> class StepKernel final : public Kernel {
 public:
  StepKernel(const StepSpec &step, F compute)
      : op_(step.op),
        operands_(step.operands.begin(), step.operands.end()),
        result_(step.result),
        device_(step.device),
        loc_(step.loc),
        compute_(std::move(compute)) {}

  Status run(const KernelArgs &args) const override {
    constexpr size_t kInline = 16;
    const size_t n = operands_.size();
    std::array<TensorView, kInline> inline_;
    TensorView *views = inline_.data();
    if (n > kInline) {
      thread_local std::vector<TensorView> many;
      if (many.size() < n) many.resize(n);
      views = many.data();
    }
    for (size_t i = 0; i < n; ++i)
      views[i] = {const_cast<std::byte *>(args.operands[i]), &operands_[i], device_};
    return compute_(KernelCall{op_, std::span<const TensorView>(views, n),
                               {args.result, &result_, device_}, loc_, args.scratch});
  }

 private:
  const OpInfo &op_;
  std::vector<TensorType> operands_;
  TensorType result_;
  Device device_;
  Location loc_;
  F compute_;
};

/// `step`'s kernel computed by `compute` (StepKernel).
template <class F> Expected<std::unique_ptr<Kernel>> stepKernel(const StepSpec &step, F compute) {
  return std::unique_ptr<Kernel>(std::make_unique<StepKernel<F>>(step, std::move(compute)));
}

/// A family's kernel prepared for `step`: the family checks the step against its contract (an
/// "internal" error outside it, an "attr" error for a bad attribute value), reads the
/// attributes and picks its loop once; the kernel's launches only compute.
using FamilyPrepare = Expected<std::unique_ptr<Kernel>> (*)(const StepSpec &step);

// The small-GEMM path (small_gemm.cpp): matmul and linear in f32 or f64 on matrices small
// enough that a BLAS call and the pool's split cost more than the arithmetic.
bool smallGemmApplies(const StepSpec &step);
std::unique_ptr<Kernel> prepareSmallGemm(const StepSpec &step);

// fused.cpp: a fused step (StepSpec::body), every dtype its micro-ops' kernels compute in.
inline constexpr std::string_view kFusedKernel = "cpu.fused";
Expected<KernelPlan> planFused(const StepSpec &step);
Expected<std::unique_ptr<Kernel>> prepareFused(const KernelPlan &plan, const StepSpec &step);

/// Scratch bytes the linalg kernels take for `step` (operands converted to the compute type,
/// im2col columns, batch offsets); 0 for other families.
uint64_t linalgScratchBytes(const StepSpec &step);

// Families. Each family file prepares the family's kernels (and says how much scratch they
// take); which dtypes each computes in is hasKernel's (dispatch.cpp).
// elementwise.cpp, copy.cpp: every dtype the op accepts (float-producing ops: floating only).
Expected<std::unique_ptr<Kernel>> prepareUnary(const StepSpec &step);
Expected<std::unique_ptr<Kernel>> prepareBinary(const StepSpec &step);  // arithmetic, comparisons
Expected<std::unique_ptr<Kernel>> prepareWhere(const StepSpec &step);
Expected<std::unique_ptr<Kernel>> prepareCast(const StepSpec &step);
Expected<std::unique_ptr<Kernel>> prepareCopy(const StepSpec &step);  // reshape-like ops, identity
Expected<std::unique_ptr<Kernel>> prepareConstant(const StepSpec &step);
// linalg.cpp: matmul, linear, conv2d.
Expected<std::unique_ptr<Kernel>> prepareLinalg(const StepSpec &step);
// pool.cpp: max_pool2d, avg_pool2d, global_avg_pool.
uint64_t poolScratchBytes(const StepSpec &step);
Expected<std::unique_ptr<Kernel>> preparePool(const StepSpec &step);
// normalize.cpp: batch_norm, layer_norm, softmax, log_softmax.
uint64_t normalizeScratchBytes(const StepSpec &step);
Expected<std::unique_ptr<Kernel>> prepareNormalize(const StepSpec &step);
// reduce.cpp: sum, mean, max.
uint64_t reduceScratchBytes(const StepSpec &step);
Expected<std::unique_ptr<Kernel>> prepareReduce(const StepSpec &step);
// movement.cpp: transpose, concat, slice, gather, expand.
uint64_t movementScratchBytes(const StepSpec &step);
Expected<std::unique_ptr<Kernel>> prepareMovement(const StepSpec &step);

/// Planned scratch memory (KernelCall::scratch) handed out in 64-byte-aligned pieces, in the
/// order the plan counted them (bytes<T>() per piece).
class ScratchArena {
 public:
  explicit ScratchArena(std::byte *base) : at_(base) {}
  template <class T> static uint64_t bytes(int64_t count) {
    return (static_cast<uint64_t>(count) * sizeof(T) + 63) / 64 * 64;
  }
  template <class T> T *take(int64_t count) {
    FERRY_CHECK(at_ != nullptr || count == 0) << "a kernel takes scratch its plan did not count";
    T *p = reinterpret_cast<T *>(at_);
    at_ += bytes<T>(count);
    return p;
  }

 private:
  std::byte *at_;
};

/// An "internal" error at the call's node: the call broke the contract above.
Status contractError(const KernelCall &call, const std::string &what);
/// An "internal" error at the step's node: the step is outside the family's contract.
Status contractError(const StepSpec &step, const std::string &what);

}  // namespace ferry::cpu
