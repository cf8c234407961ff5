// backends/cuda/codegen/kernels.cpp — which generator prints a step's kernel.
#include "backends/cuda/codegen/kernel_source.h"

namespace ferry::cuda {

Expected<KernelSource> stepKernel(const StepSpec &step) {
  if (step.body || step.op.is(OpTrait::Elementwise)) return elementwiseKernel(step);
  return makeError("internal", "no CUDA kernel prints '" + std::string(step.op.name) + "'", step.loc);
}

}  // namespace ferry::cuda
