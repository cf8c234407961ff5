// backends/cpu/kernels.h — internal: the CPU kernels by op family.
//
// Contract (what compile() guarantees and the runtime passes on): operands and result are dense
// row-major views on one device; data operands already have the dtype the op computes in (the
// result's dtype, or for comparisons one dtype shared by both), because the dtype pass inserted
// the casts; shapes are the inferred ones. A call outside the contract is an "internal" error,
// not undefined behaviour.
#pragma once

#include <span>

#include "backends/device.h"

namespace ferry::cpu {

/// A dense tensor in a CPU device's memory, as a kernel sees it. `type` outlives the call.
struct TensorView {
  std::byte *data = nullptr;
  const TensorType *type = nullptr;
  Device device;

  size_t bytes() const { return type->byteSize(); }
};

/// One launch of a family kernel: the step's op and attributes, operands and the result to
/// write, all on the step's device, and its planned scratch (KernelPlan::scratchBytes bytes).
struct KernelCall {
  const OpInfo &op;
  const Attrs &attrs;
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

/// The family kernel that runs `op`.
using FamilyKernel = Status (*)(const KernelCall &call);
FamilyKernel familyKernel(OpKind op);

// The small-GEMM path (small_gemm.cpp): matmul and linear in f32 or f64 on matrices small
// enough that a BLAS call and the pool's split cost more than the arithmetic.
bool smallGemmApplies(const StepSpec &step);
std::unique_ptr<Kernel> prepareSmallGemm(const StepSpec &step);

/// Scratch bytes the linalg kernels take for `step` (operands converted to the compute type,
/// im2col columns, batch offsets); 0 for other families.
uint64_t linalgScratchBytes(const StepSpec &step);

// Families. Each family file says which dtypes it computes in (xxxSupports(op, dtype), with
// `dtype` as hasKernel takes it) and runs the family's ops.
// elementwise.cpp, copy.cpp: every dtype the op accepts (float-producing ops: floating only).
Status unary(const KernelCall &call);
Status binary(const KernelCall &call);  // arithmetic and comparisons
Status where(const KernelCall &call);
Status cast(const KernelCall &call);
Status copyBytes(const KernelCall &call);  // reshape-like ops, identity, transfer
Status constant(const KernelCall &call);
// linalg.cpp: matmul, linear, conv2d.
bool linalgSupports(OpKind op, DType dtype);
Status linalg(const KernelCall &call);
// pool.cpp: max_pool2d, avg_pool2d, global_avg_pool.
bool poolSupports(OpKind op, DType dtype);
Status pool(const KernelCall &call);
// normalize.cpp: batch_norm, layer_norm, softmax, log_softmax, sum, mean, max.
bool normalizeSupports(OpKind op, DType dtype);
Status normalize(const KernelCall &call);
// movement.cpp: transpose, concat, slice, gather, expand.
bool movementSupports(OpKind op, DType dtype);
Status movement(const KernelCall &call);

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

}  // namespace ferry::cpu
