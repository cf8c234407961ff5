// backends/cpu/cpu_target.h — the CPU target: the capability table of the CPU kernels with their
// cost factors, and each step's kernel plan (which kernel, how much scratch). Needs no device.
#pragma once

#include "backends/target.h"

namespace ferry {

class CpuTarget final : public Target {
 public:
  DeviceKind kind() const override { return DeviceKind::Cpu; }
  std::string_view description() const override {
    return "cpu (oneDNN or OpenBLAS GEMMs, vectorised kernels on a thread pool; virtual devices cpu:N)";
  }
  KernelCapability capability(OpKind op, DType dtype) const override;
  /// Elementwise chains and GemmLike anchors with their epilogues (backends/cpu/fused.cpp).
  bool fuses() const override { return true; }
  /// Inputs read and outputs written in the caller's tensors.
  bool hostMemory() const override { return true; }
  Expected<KernelPlan> lower(const StepSpec &step) const override;
};

}  // namespace ferry
