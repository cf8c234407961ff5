// backends/cpu/linalg.cpp — PLACEHOLDER until its kernels land: supports nothing.
#include "backends/cpu/kernels.h"

namespace ferry::cpu {

bool linalgSupports(OpKind, DType) { return false; }
Status linalg(const KernelCall &call) { return contractError(call, "no kernel yet"); }

}  // namespace ferry::cpu
