// backends/cpu/pool.cpp — PLACEHOLDER until its kernels land: supports nothing.
#include "backends/cpu/kernels.h"

namespace ferry::cpu {

bool poolSupports(OpKind, DType) { return false; }
Status pool(const KernelCall &call) { return contractError(call, "no kernel yet"); }

}  // namespace ferry::cpu
