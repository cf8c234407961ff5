// backends/cuda/cuda_target.h — the CUDA target: what ferry's CUDA kernels can run, and each
// step's kernel plan, with its generated kernel compiled by NVRTC to PTX and by nvJitLink to
// cubins for sm_80 and sm_90. Needs no GPU: a machine with the toolkit compiles and saves
// executables for `cuda:N` (backends/target.h).
#pragma once

#include "backends/target.h"

namespace ferry {

struct CudaTargetOptions {
  /// Cubins for sm_80 and sm_90 beside each generated kernel's PTX (backends/cuda/nvrtc.h), so
  /// that an A100 or H100 loads machine code without the driver's JIT. Off: PTX only, in half
  /// the compile time, for tests that compile hundreds of random graphs.
  bool cubins = true;
};

class CudaTarget final : public Target {
 public:
  explicit CudaTarget(CudaTargetOptions options = {}) : options_(options) {}
  DeviceKind kind() const override { return DeviceKind::Cuda; }
  std::string_view description() const override {
    return "cuda (cuBLASLt GEMMs, NVRTC-generated fused kernels)";
  }
  KernelCapability capability(OpKind op, DType dtype) const override;
  /// Elementwise chains as one generated kernel; GEMM anchors as cuBLASLt with its epilogue and a
  /// generated kernel for the rest.
  bool fuses() const override { return true; }
  Expected<KernelPlan> lower(const StepSpec &step) const override;

 private:
  CudaTargetOptions options_;
};

namespace cuda {
/// Whether the CUDA kernels run `op` computing in `dtype` (the target's capability table).
bool hasKernel(OpKind op, DType dtype);
/// The scratch cuBLASLt may use per GEMM.
inline constexpr uint64_t kGemmWorkspaceBytes = uint64_t{4} << 20;
}  // namespace cuda

}  // namespace ferry
