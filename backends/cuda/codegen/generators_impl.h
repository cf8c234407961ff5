// backends/cuda/codegen/generators_impl.h — internal: the generators of the hand-written
// kernel templates (reductions, softmax, layer_norm, the copies of the movement and view ops,
// conv2d, the pools and batch_norm) and the pieces of source they share. stepKernel (kernels.cpp)
// picks one per step.
//
// Two shapes of kernel serve the row-wise ops (reductions, softmax, layer_norm): a short row is a
// thread's (grid-stride over rows, no synchronisation), a long one a block's (one block per row,
// a grid of exactly `rows` blocks, each thread a strided share of the row, then a tree in shared
// memory). kBlockRowMin is the boundary.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "backends/cuda/codegen/kernel_source.h"

namespace ferry::cuda {

// --- generators (one op family each) ---------------------------------------------------------

/// sum, mean and max over `axes` (reduce.cpp).
Expected<KernelSource> reduceKernel(const StepSpec &step);
/// softmax and log_softmax over `axis` (normalize.cpp).
Expected<KernelSource> softmaxKernel(const StepSpec &step);
/// layer_norm over the dims from `axis`, with optional weight and bias (normalize.cpp).
Expected<KernelSource> layerNormKernel(const StepSpec &step);
/// The copies of reshape, flatten, squeeze, unsqueeze, identity, transpose, slice and expand
/// (a strided read per result element), concat and gather (movement.cpp).
Expected<KernelSource> movementKernel(const StepSpec &step);
/// conv2d, NCHW, with groups, stride, padding, dilation and an optional bias: a direct sum per
/// result element (conv_pool.cpp).
Expected<KernelSource> conv2dKernel(const StepSpec &step);
/// max_pool2d and avg_pool2d with their padding, dilation and ceil_mode / count_include_pad, and
/// global_avg_pool (conv_pool.cpp).
Expected<KernelSource> poolKernel(const StepSpec &step);
/// batch_norm (inference: x, scale, bias, mean, var) over dim 1 (conv_pool.cpp).
Expected<KernelSource> batchNormKernel(const StepSpec &step);

// --- shared pieces ---------------------------------------------------------------------------

/// Rows of more elements than this take a block each; shorter ones a thread each.
inline constexpr int64_t kBlockRowMin = 32;
/// Threads of a grid-stride kernel's blocks, and the most blocks it launches.
inline constexpr int32_t kGridThreads = 256;
inline constexpr int64_t kMaxGridBlocks = 8192;

/// An "internal" error at the step's location: the step breaks the generator's contract.
Status contractError(const StepSpec &step, const std::string &what);

/// `v` as a long long literal in generated source ("42LL").
std::string ll(int64_t v);

/// Threads of a block that reduces a row of `length` elements: a power of two from 32 to 256,
/// about eight elements a thread before it grows.
int32_t blockThreads(int64_t length);

/// Blocks of a grid-stride kernel over `work` items of one thread each (at least one block).
int64_t gridBlocks(int64_t work);

/// `v` as a C literal of the compute type `type` ("float": `(float)0x1.8p+0`), exact.
std::string floatLiteral(double v, const std::string &type);

/// Dims of an index space with the stride each one moves a pointer by.
struct StridedDims {
  std::vector<int64_t> sizes;
  std::vector<int64_t> strides;
  /// Adds one dim (outermost first).
  void push(int64_t size, int64_t stride) {
    sizes.push_back(size);
    strides.push_back(stride);
  }
};

/// `dims` without its size-1 dims, and with each dim that continues the next one (stride =
/// next stride * next size) merged into it: the same offsets from fewer divisions.
StridedDims coalesce(const StridedDims &dims);

/// A function `ferry_i64 name(ferry_i64 i)`: the offset of row-major index `i` of `dims`, the sum
/// of each coordinate times its stride (constant divisions).
std::string offsetFunction(const std::string &name, const StridedDims &dims);

/// A function `type name(type v, type *red)` that combines `v` over the block's threads with
/// `combine` (an expression of `a` and `b`, associative) by a tree in `red` (blockDim.x elements
/// of shared memory, blockDim.x a power of two), returns the result to every thread and leaves
/// `red` free for the next call.
std::string blockReduceFunction(const std::string &name, const std::string &type,
                                const std::string &combine);

/// The kernel's first line: `FERRY_KERNEL ferry_kernel(char *out, ..., const char *in(N-1)) {`,
/// with scratch and error marked used.
std::string kernelSignature(size_t inputs);

}  // namespace ferry::cuda
