// backends/cpu/normalize.cpp — PLACEHOLDER until its kernels land: supports nothing.
#include "backends/cpu/kernels.h"

namespace ferry::cpu {

bool normalizeSupports(OpKind, DType) { return false; }
Status normalize(const KernelCall &call) { return contractError(call, "no kernel yet"); }

}  // namespace ferry::cpu
