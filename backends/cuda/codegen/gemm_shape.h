// backends/cuda/codegen/gemm_shape.h — a matmul or linear step as the column-major GEMM cuBLASLt
// computes, with every size, leading dimension and batch offset; plain C++, so the tests check
// the mapping on the host (tests/cuda/gemm_shape_test.cpp) against the reference interpreter.
//
// ferry's tensors are row-major: C[M,N] = X[M,K] W[K,N] is, read column-major, C^T = W^T X^T. So
// cuBLASLt's A is ferry's second operand (the weight; transposed for linear, whose weight is
// [N,K]), its B is the first, and its m x n result is N x M: D = op(A) B with m = N, n = M, k = K.
// A matmul's batch dims broadcast: an operand whose batch is the result's steps by its matrix
// size, one with a single batch by 0 (strided batches, one cuBLASLt call); batch dims that
// broadcast partly ([2,1] against [2,3]) take one call per batch, at the offsets listed.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <vector>

#include "ir/ops.h"
#include "ir/status.h"
#include "ir/types.h"

namespace ferry::cuda {

struct GemmShape {
  int64_t m = 0, n = 0, k = 0;  ///< cuBLASLt's: m = N (output features), n = M (rows), k = K
  bool transposeA = false;      ///< linear's weight [N,K] is read transposed
  int64_t lda = 0, ldb = 0, ldd = 0;
  /// Strided batches: `batch` matrices, each operand's next one `stride` elements on (0: the
  /// same matrix for every batch).
  int64_t batch = 1, strideA = 0, strideB = 0, strideD = 0;
  /// When the batch dims broadcast partly: one call per batch, the element offsets of A, B and D
  /// (then `batch` is 1 and the strides unused).
  std::vector<std::array<int64_t, 3>> calls;
};

/// The GEMM of `op` (matmul, linear, or a conv2d of one group whose B is its im2col matrix) on
/// `operands` (x, weight[, bias]) giving `result` (for a conv2d: [N, Ho*Wo, O], stored in the
/// result's NCHW shape).
Expected<GemmShape> gemmShape(OpKind op, std::span<const TensorType> operands,
                              const TensorType &result);

}  // namespace ferry::cuda
