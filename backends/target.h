// backends/target.h — the compile-time half of a backend: what a device kind can run, at what
// cost, and how one step lowers to a kernel plan. No hardware is needed: a build with a CUDA
// target compiles and saves executables for `cuda:N` on a machine without a GPU.
//
// The run-time half is backends/device.h. The two meet in the KernelPlan, which lowering stores
// in the Executable (plain data, saved with it) and DeviceRuntime::prepare turns into a ready
// kernel once per Session. Passes never call a target directly: lowering does (passes/lower.h),
// and placement reads the capability tables through CompileOptions::capabilities.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ir/device.h"
#include "ir/ops.h"
#include "ir/status.h"
#include "ir/types.h"

namespace ferry {

/// One entry of a target's capability table.
struct KernelCapability {
  bool supported = false;
  /// The kernel's time over the cost model's estimate for its device kind, relative to the
  /// target's best-served dtype: `auto` placement multiplies its compute estimate by it. An f16
  /// GEMM that converts around an f32 one is 1.5; an integer GEMM without BLAS, 40.
  double costFactor = 1;
};

/// One member of a fused step's body (the micro-op program of a fusion group, DESIGN
/// "Lowering and execution (v2)"): an op of the table with complete attributes, reading the
/// step's operands and earlier micro-ops, computing a value of `type`. One format serves every
/// target: the CPU runs it tile by tile, a GPU target prints it as kernel source.
struct MicroOp {
  OpKind op = OpKind::Identity;
  Attrs attrs;
  /// What each operand of `op` reads: `i >= 0` the step's operand i, `i < 0` micro-op `~i`
  /// (an earlier one).
  std::vector<int32_t> args;
  TensorType type;
  std::string name;  ///< the member node's result in the compiled graph, for dumps and errors
  Location loc;      ///< the member node's
};

/// The body of a fused step: micro-ops in order, the last one's value the step's result. A
/// GemmLike anchor (matmul, linear, conv2d) comes first and reads step operands only; every
/// other micro-op is elementwise (unary, binary, where, cast) and has the result's shape: its
/// step operands broadcast to it, NumPy's way. Empty for a step of one node.
using FusedBody = std::vector<MicroOp>;

/// Whether micro-op argument `arg` is an earlier micro-op (else a step operand), and which.
inline bool argIsMicroOp(int32_t arg) { return arg < 0; }
inline size_t microOpOf(int32_t arg) { return static_cast<size_t>(~arg); }

/// One step as lowering sees it, and as DeviceRuntime::prepare sees it again at run time: the
/// op with complete attributes, the operand and result types (dense, row-major), the device it
/// runs on and the user's location, for errors.
struct StepSpec {
  const OpInfo &op;
  const Attrs &attrs;
  std::span<const TensorType> operands;
  const TensorType &result;
  Device device;
  const Location &loc;
  /// A fused step's body (then `op` is the body's anchor, or its last op when it has none, and
  /// `operands` are the group's inputs); null for a step of one node.
  const FusedBody *body = nullptr;
  /// At prepare only, from a Session that allows it (Session::Options::maxPackedWeightBytes):
  /// per operand, its bytes in the step's device memory when they are the same on every launch
  /// (a weight, or a slot the load steps computed), else null; empty when none are given. A
  /// kernel may keep a copy of them in a layout of its own (the CPU's oneDNN GEMMs pack their
  /// weights so) within `packBudget`; the operand is still passed at each launch, at this same
  /// address.
  std::span<const std::byte *const> constants = {};
  /// The bytes such copies may still take, the session's, shared by its kernels: a kernel
  /// subtracts what it keeps and keeps nothing that does not fit. Null: no copies.
  uint64_t *packBudget = nullptr;
};

/// What lowering decided for one step, saved in the executable: which of the target's kernels
/// runs it, the scratch memory it needs (planned with the activations, handed to the kernel
/// at launch: kernels allocate nothing), and whatever else the kernel needs that the step's op,
/// attributes and types do not say (a CUDA target's PTX or GEMM description; empty on the CPU).
struct KernelPlan {
  std::string kernel;  ///< the target's own name, e.g. "cpu.gemm.small"; checked by prepare
  uint64_t scratchBytes = 0;
  std::string payload;
};

class Target {
 public:
  virtual ~Target() = default;

  /// The device kind whose devices this target compiles for.
  virtual DeviceKind kind() const = 0;
  /// Says what the target is, for messages ("cpu (oneDNN or OpenBLAS GEMMs, ...)").
  virtual std::string_view description() const = 0;

  /// Whether the target has a kernel for `op` computing in `dtype` (the result's dtype; for
  /// comparisons, the operands'), and its cost factor.
  virtual KernelCapability capability(OpKind op, DType dtype) const = 0;

  /// Whether the target runs fused steps (StepSpec::body): then the fusion pass groups nodes on
  /// its devices (elementwise chains, GemmLike anchors with their epilogues). Default: no.
  virtual bool fuses() const { return false; }

  /// Whether the target's device memory is the host's (the CPU's): then lowering gives the
  /// model's inputs and outputs on its devices no workspace bytes (Slot::external), and a Session
  /// reads each input where the caller's tensor is and writes each output where the caller
  /// receives it, copying neither. Default: no (a GPU's inputs are uploaded, its outputs
  /// downloaded).
  virtual bool hostMemory() const { return false; }

  /// The kernel plan of one step. A step the capability table does not claim, or that breaks
  /// the op's contract (operand count or dtypes that compile() never produces), is an error
  /// with code "internal" at the step's location.
  virtual Expected<KernelPlan> lower(const StepSpec &step) const = 0;
};

}  // namespace ferry
