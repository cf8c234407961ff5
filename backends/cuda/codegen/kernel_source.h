// backends/cuda/codegen/kernel_source.h — CUDA C++ source for one step, written at compile time.
//
// Every CUDA kernel ferry runs is printed here, as text, from the step's op, attributes and
// types (shapes are constants in the source), and compiled by NVRTC when the model is compiled
// (backends/cuda/nvrtc.h): the executable carries the PTX and cubins, and a GPU machine runs it
// without recompiling. Fused groups (a micro-op program, backends/target.h) and single elementwise
// ops are generated from their micro-ops (elementwise.cpp); reductions (reduce.cpp), softmax,
// log_softmax and layer_norm (normalize.cpp), the copies of the movement and view ops
// (movement.cpp), and conv2d, the pools and batch_norm (conv_pool.cpp) are hand-written
// templates filled in with the step's shapes; kernels.cpp picks the generator. GEMMs are not here:
// cuBLASLt runs them (backends/cuda/cuda_device.cpp).
//
// The same text compiles for the host through emulate.h (with FERRY_EMULATE defined): that is
// how the tests check the generated code against the reference interpreter on machines without
// a GPU. So the source uses only what both sides have: builtin types (NVRTC has no standard
// headers), the prelude's helpers (prelude.cpp), the CUDA math functions that <cmath> also has,
// and, for block-wide reductions, __syncthreads and __shared__ arrays.
//
// The kernel's entry point is `ferry_kernel`, with one parameter per pointer, in this order:
//   char *out, char *scratch, unsigned *error, const char *in0, ..., const char *in(N-1)
// `error` is the device-side flag an index error sets (movement.cpp's gather): the runtime reads
// it when it synchronizes and reports the step's location. Launches are one-dimensional.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "backends/target.h"

namespace ferry::cuda {

/// One kernel's source and how to launch it.
struct KernelSource {
  std::string source;  ///< complete: the prelude, then the kernel
  int32_t inputs = 0;  ///< the `in` pointers the kernel takes
  int64_t blocks = 1;  ///< grid size (x)
  int32_t threads = 256;  ///< block size (x)
  /// The kernel synchronizes its block's threads (__syncthreads): block-wide reductions.
  bool blockSync = false;

  /// FNV-1a of `source`: what NVRTC's cache is keyed by.
  uint64_t hash() const;
};

/// The kernel's entry point in every source.
inline constexpr const char *kKernelName = "ferry_kernel";

/// The helpers every source starts with: storage loads and stores of each dtype, f16/bf16
/// rounding, saturating float-to-integer conversion, NaN-propagating max/min.
const std::string &prelude();

/// The storage type (`unsigned short` for f16), compute type (`float`) and name suffix (`f16`) of
/// a dtype in generated code.
const char *storageType(DType t);
const char *computeType(DType t);
const char *dtypeSuffix(DType t);

/// The kernel of an elementwise step: a fused group's body without an anchor, one elementwise
/// op (unary, binary, where, cast, comparison), or, with `computedBefore` > 0, the elementwise
/// tail of a body whose first micro-op is a GEMM: the first `computedBefore` micro-ops are the
/// GEMM's (its anchor and the epilogue cuBLASLt applies), and the value of the last of them is
/// read from the last `in` pointer (after the step's operands); the tail reads no earlier one.
/// One pass over the result,
/// grid-stride, four elements per thread with vector loads and stores of the operands that are
/// dense; broadcast operands are indexed from the result's index with constant strides.
/// With `anchorStrides` (one per result dim), the GEMM's output is read at those element
/// strides instead of densely: a conv2d's GEMM writes [N, Ho*Wo, O], read as NCHW.
Expected<KernelSource> elementwiseKernel(const StepSpec &step, size_t computedBefore = 0,
                                         std::span<const int64_t> anchorStrides = {});

/// The im2col matrix of a conv2d step with one group (conv_pool.cpp): [N, Ho*Wo, C*kH*kW] in
/// x's dtype, row q the taps output pixel q reads, zero in the padding; its one `in` is x.
Expected<KernelSource> im2colKernel(const StepSpec &step);

/// A step's kernel, printed by this folder: elementwise ops and fused groups (elementwiseKernel),
/// sum/mean/max, softmax/log_softmax, layer_norm, the copies of the movement and view ops,
/// conv2d (a direct kernel), max/avg/global pools and batch_norm (kernels.cpp). Matmul and
/// linear have none: cuBLASLt runs them.
Expected<KernelSource> stepKernel(const StepSpec &step);

}  // namespace ferry::cuda
