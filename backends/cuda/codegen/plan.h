// backends/cuda/codegen/plan.h — what a CUDA kernel plan's payload holds (KernelPlan::payload,
// backends/target.h), and its saved form.
//
// Three kinds of plan exist: "cuda.kernel", one generated kernel (kernel_source.h); "cuda.gemm",
// a cuBLASLt matmul with an optional epilogue, followed by an optional generated kernel for the
// rest of the fused group (its tail) — for a conv2d, the GEMM is preceded by the anchor kernel,
// its im2col, and the tail reads the GEMM's [N, Ho*Wo, O] output as NCHW; "cuda.anchored", a
// fused group whose anchor has a generated kernel of its own (a direct conv2d), followed by the
// tail's. Shapes, strides and cuBLASLt's layouts are not saved: the
// device runtime derives them from the step's types when it prepares the kernel. What is saved is
// what lowering decided and what needs the toolkit's compiler: launch sizes, the epilogue, and
// the PTX that NVRTC made from the source (kept beside it, with its hash, for dumps and errors).
//
// The saved form is text lines `key value`, then the texts `anchor_source`, `anchor_ptx`,
// `source` and `ptx`, each as `key <n>`, a newline and n bytes (a newline after each but the
// last). The source is kept beside the PTX so that what ran can be read, and the tests run the
// very text that NVRTC compiled. A
// saved executable is checked by its checksum, but a payload is still parsed as untrusted: every
// field is checked, and a bad one is an error that names it.
#pragma once

#include <cstdint>
#include <string>

#include "ir/status.h"

namespace ferry::cuda {

inline constexpr const char *kKernelPlanName = "cuda.kernel";
inline constexpr const char *kGemmPlanName = "cuda.gemm";
inline constexpr const char *kAnchoredPlanName = "cuda.anchored";

/// What cuBLASLt applies to the product before it is stored (cublasLtEpilogue_t's subset).
enum class Epilogue : uint8_t { None, Bias, ReluBias, GeluBias, Relu, Gelu };
const char *epilogueName(Epilogue e);

struct CudaPlan {
  // The generated kernel (cuda.kernel; the tail of cuda.gemm and cuda.anchored when `ptx` is not
  // empty).
  int64_t blocks = 1;
  int32_t threads = 256;
  int32_t inputs = 0;
  bool blockSync = false;
  uint64_t sourceHash = 0;
  std::string source;  ///< the CUDA C++ that NVRTC compiled, kept for dumps and the tests
  std::string ptx;
  // cuda.gemm only.
  Epilogue epilogue = Epilogue::None;
  /// Micro-ops of the fused body the GEMM or the anchor kernel computes (the anchor, and those
  /// cuBLASLt's epilogue applies); the tail kernel computes the rest.
  int32_t gemmMicroOps = 0;
  /// Where the GEMM's or anchor kernel's output goes when a tail follows: scratch at this offset
  /// (the tail reads it and writes the result); -1 when it is written to the result (no tail, or
  /// a tail in place).
  int64_t gemmOutputOffset = -1;
  /// cuBLASLt's workspace: scratch bytes at offset 0.
  uint64_t gemmWorkspaceBytes = 0;
  /// A conv2d's GEMM: where in scratch the anchor kernel writes the im2col matrix that is the
  /// GEMM's B (saved only then; -1 for the other GEMMs, whose B is the step's x).
  int64_t gemmColOffset = -1;
  // cuda.anchored, and a conv2d's cuda.gemm: the anchor's generated kernel (a direct conv2d, or
  // the im2col), whose `in` pointers are the anchor micro-op's operands (the im2col's: x).
  int64_t anchorBlocks = 1;
  int32_t anchorThreads = 256;
  bool anchorBlockSync = false;
  std::string anchorSource;
  std::string anchorPtx;

  std::string encode() const;
  /// Parses a payload; an error with code "format" naming the field that is wrong.
  static Expected<CudaPlan> decode(const std::string &payload);
};

}  // namespace ferry::cuda
