// backends/cuda/codegen/launch.h — what one launch of a CUDA kernel plan does, in order, as plain
// data: the cuBLASLt calls with their pointers, an empty GEMM's zero fill, and the generated
// kernels with their arguments. The CUDA device runtime issues it (cuda_device.cpp); the tests'
// emulated device runs the same sequence on the host (tests/cuda/emulated_device.h), so the
// pointer arithmetic of plans (scratch offsets, in-place tails, per-batch calls) is checked
// without a GPU.
#pragma once

#include <cstddef>
#include <span>
#include <vector>

#include "backends/cuda/codegen/gemm_shape.h"
#include "backends/cuda/codegen/plan.h"
#include "backends/device.h"

namespace ferry::cuda {

/// One cublasLtMatmul: D = epilogue(op(A) B (+ bias)), with the plan's layouts (a strided batch
/// is one call).
struct GemmCall {
  const std::byte *a = nullptr, *b = nullptr;
  std::byte *d = nullptr;
  const std::byte *bias = nullptr;  ///< null without a bias epilogue
};

/// One generated kernel: its `out`, `scratch` and `in` pointers (the error flag is the runtime's).
struct KernelCall {
  bool anchor = false;  ///< the plan's anchor kernel (cuda.anchored), else its main or tail kernel
  std::byte *out = nullptr;
  std::byte *scratch = nullptr;
  std::vector<const std::byte *> in;
};

struct LaunchSequence {
  /// A conv2d's im2col kernel (the plan's anchor kernel), before the GEMMs; empty `in` if none.
  KernelCall prologue;
  std::vector<GemmCall> gemms;
  std::byte *zeroFill = nullptr;  ///< an empty GEMM's output (k = 0): zeroBytes of zeros
  size_t zeroBytes = 0;
  std::vector<KernelCall> kernels;  ///< after the GEMMs and the zero fill, in order
};

/// The sequence of one launch of a plan named `kernel` (kKernelPlanName, kGemmPlanName or
/// kAnchoredPlanName). `anchorOperands` are the step operands the anchor micro-op reads, in its
/// operand order (x, weight[, bias] for a GEMM); `shape` the GEMM's (cuda.gemm only), whose
/// elements are `elementSize` bytes.
LaunchSequence launchSequence(std::string_view kernel, const CudaPlan &plan,
                              std::span<const int32_t> anchorOperands, const GemmShape *shape,
                              size_t elementSize, const KernelArgs &args);

}  // namespace ferry::cuda
