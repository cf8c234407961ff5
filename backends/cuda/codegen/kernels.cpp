// backends/cuda/codegen/kernels.cpp — which generator prints a step's kernel.
#include "backends/cuda/codegen/generators_impl.h"

namespace ferry::cuda {

Expected<KernelSource> stepKernel(const StepSpec &step) {
  if (step.body || step.op.is(OpTrait::Elementwise)) return elementwiseKernel(step);
  switch (step.op.kind) {
    case OpKind::Sum:
    case OpKind::Mean:
    case OpKind::Max: return reduceKernel(step);
    case OpKind::Softmax:
    case OpKind::LogSoftmax: return softmaxKernel(step);
    case OpKind::LayerNorm: return layerNormKernel(step);
    case OpKind::Reshape:
    case OpKind::Flatten:
    case OpKind::Squeeze:
    case OpKind::Unsqueeze:
    case OpKind::Identity:
    case OpKind::Transpose:
    case OpKind::Slice:
    case OpKind::Expand:
    case OpKind::Concat:
    case OpKind::Gather: return movementKernel(step);
    case OpKind::Conv2d: return conv2dKernel(step);
    case OpKind::MaxPool2d:
    case OpKind::AvgPool2d:
    case OpKind::GlobalAvgPool: return poolKernel(step);
    case OpKind::BatchNorm: return batchNormKernel(step);
    default: break;
  }
  return makeError("internal", "no CUDA kernel prints '" + std::string(step.op.name) + "'", step.loc);
}

}  // namespace ferry::cuda
