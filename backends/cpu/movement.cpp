// backends/cpu/movement.cpp — PLACEHOLDER until its kernels land: supports nothing.
#include "backends/cpu/kernels.h"

namespace ferry::cpu {

bool movementSupports(OpKind, DType) { return false; }
Status movement(const KernelCall &call) { return contractError(call, "no kernel yet"); }

}  // namespace ferry::cpu
