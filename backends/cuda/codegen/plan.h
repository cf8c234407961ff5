// backends/cuda/codegen/plan.h — what a CUDA kernel plan's payload holds (KernelPlan::payload,
// backends/target.h), and its saved form.
//
// Three kinds of plan exist: "cuda.kernel", one generated kernel (kernel_source.h); "cuda.gemm",
// a cuBLASLt matmul with an optional epilogue, followed by an optional generated kernel for the
// rest of the fused group (its tail) — for a conv2d, the GEMM is preceded by the anchor kernel,
// its im2col, and the tail reads the GEMM's [N, Ho*Wo, O] output as NCHW; "cuda.anchored", a
// fused group whose anchor has a generated kernel of its own (a direct conv2d), followed by the
// tail's. Shapes, strides and cuBLASLt's layouts are not saved: the device runtime derives them
// from the step's types when it prepares the kernel. What is saved is what lowering decided and
// what needs the toolkit's compilers: launch sizes, the epilogue, and each generated kernel's
// images (backends/cuda/nvrtc.h): the PTX that NVRTC made from the source (kept beside it, with
// its hash, for dumps and errors), and cubins for sm_80 and sm_90 unless the target left them
// out. A GPU loads the cubin of exactly its architecture when there is one, else the PTX
// (CudaPlan::imageFor).
//
// The saved form is text lines `key value`, then the blobs `anchor_source`, `anchor_ptx`,
// `anchor_cubin_sm80`, `anchor_cubin_sm90`, `source`, `ptx`, `cubin_sm80` and `cubin_sm90`,
// each as `key <n>`, a newline and n bytes, any bytes (a newline after each but the last); an
// empty cubin is none. The source is kept beside the PTX so that what ran can be read, and the
// tests run the very text that NVRTC compiled. Version 1 of the form, which has no cubin blobs,
// still decodes (PTX only). A saved executable is checked by its checksum, but a payload is
// still parsed as untrusted: every field is checked, and a bad one is an error that names it.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "ir/status.h"

namespace ferry::cuda {

inline constexpr const char *kKernelPlanName = "cuda.kernel";
inline constexpr const char *kGemmPlanName = "cuda.gemm";
inline constexpr const char *kAnchoredPlanName = "cuda.anchored";

/// A generated kernel's image: its PTX, or one of its cubins.
enum class KernelImage : uint8_t { Ptx, CubinSm80, CubinSm90 };

/// The SM architecture (80 for sm_80) whose machine code a cubin holds, read from its ELF header;
/// 0 when `image` is not a 64-bit little-endian CUDA ELF image.
int cubinArchitecture(std::string_view image);

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
  std::string cubinSm80, cubinSm90;  ///< ELF images; empty: none
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
  std::string anchorCubinSm80, anchorCubinSm90;

  /// The image of the generated kernel (with `anchor`, of the anchor's kernel) that a GPU of
  /// compute capability `major`.`minor` loads: the cubin for exactly its architecture (sm_80 on
  /// 8.0, sm_90 on 9.0) when the plan has one whose ELF header says so, else the PTX, which the
  /// driver compiles for any GPU. Needs no GPU.
  KernelImage imageFor(int major, int minor, bool anchor) const;
  /// The bytes of that image.
  const std::string &image(KernelImage which, bool anchor) const;

  std::string encode() const;
  /// Parses a payload; an error with code "format" naming the field that is wrong.
  static Expected<CudaPlan> decode(const std::string &payload);
};

}  // namespace ferry::cuda
