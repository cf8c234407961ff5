// backends/cpu/kernels.h — internal: the CPU kernels by op family.
//
// Contract (what compile() guarantees and the runtime passes on): operands and result are dense
// row-major views on one device; data operands already have the dtype the op computes in (the
// result's dtype, or for comparisons one dtype shared by both), because the dtype pass inserted
// the casts; shapes are the inferred ones. A call outside the contract is an "internal" error,
// not undefined behaviour.
#pragma once

#include "backends/backend.h"

namespace ferry::cpu {

/// Whether runKernel has a kernel for `op` computing in `dtype`.
bool hasKernel(OpKind op, DType dtype);
/// The kernel's cost factor (backend.h, KernelCapability), from ferry-bench-cpu-kernels.
double kernelCostFactor(OpKind op, DType dtype);
/// Runs the kernel of `call.op` (ownership already checked by the backend).
Status runKernel(const KernelCall &call);

// Families. Each family file says which dtypes it computes in (xxxSupports(op, dtype), with
// `dtype` as hasKernel takes it) and runs the family's ops.
// elementwise.cpp, copy.cpp: every dtype the op accepts (float-producing ops: floating only).
Status unary(const KernelCall &call);
Status binary(const KernelCall &call);  // arithmetic and comparisons
Status where(const KernelCall &call);
Status cast(const KernelCall &call);
Status copyBytes(const KernelCall &call);  // reshape-like ops, identity, transfer
Status constant(const KernelCall &call);
// linalg.cpp: matmul, linear, conv2d.
bool linalgSupports(OpKind op, DType dtype);
Status linalg(const KernelCall &call);
// pool.cpp: max_pool2d, avg_pool2d, global_avg_pool.
bool poolSupports(OpKind op, DType dtype);
Status pool(const KernelCall &call);
// normalize.cpp: batch_norm, layer_norm, softmax, log_softmax, sum, mean, max.
bool normalizeSupports(OpKind op, DType dtype);
Status normalize(const KernelCall &call);
// movement.cpp: transpose, concat, slice, gather, expand.
bool movementSupports(OpKind op, DType dtype);
Status movement(const KernelCall &call);

/// An "internal" error at the call's node: the call broke the contract above.
Status contractError(const KernelCall &call, const std::string &what);

}  // namespace ferry::cpu
