// backends/cuda/nvrtc.h — generated CUDA C++ to PTX and cubins, with NVRTC and nvJitLink, at
// compile time.
//
// Sources are compiled by NVRTC for virtual architecture compute_80 (Ampere; Hopper and later run
// the same PTX, which the driver compiles for the GPU at hand when a Session loads it), as C++17
// without fast math. nvJitLink then compiles that PTX to cubins, machine code for sm_80 (A100)
// and sm_90 (H100), so that a Session on those GPUs loads them without the driver's JIT; the PTX
// stays for every other GPU. The cubins come from the PTX by nvJitLink, not from NVRTC once per
// architecture: that adds 25-33 ms per kernel to NVRTC's 24-32 where NVRTC would add 72-97
// (docs/decisions.md).
//
// Everything is cached for the life of the process by the source's text: the same fusion group
// in two models, or twice in one, is compiled once, and the cubins of a kernel first compiled
// without them are made from its cached PTX.
#pragma once

#include <string>

#include "backends/cuda/codegen/kernel_source.h"

namespace ferry::cuda {

/// The virtual architecture PTX is generated for.
inline constexpr const char *kPtxArchitecture = "compute_80";

/// One kernel compiled: its PTX, and its cubins (ELF images) for sm_80 and sm_90, empty when
/// they were not asked for.
struct CompiledKernel {
  std::string ptx;
  std::string cubinSm80, cubinSm90;
};

/// `kernel` compiled to PTX and, with `cubins`, to cubins for sm_80 and sm_90. NVRTC's and
/// nvJitLink's errors (a generator bug) come back with code "internal" and the first lines of
/// their log; a missing library with code "device".
Expected<CompiledKernel> compileKernel(const KernelSource &kernel, bool cubins);

/// The PTX of `kernel` (compileKernel without cubins).
Expected<std::string> compileToPtx(const KernelSource &kernel);

/// What the cache saved and made, for tests and statistics: answers from the cache, NVRTC
/// compilations, and kernels whose cubins nvJitLink made.
struct CompileCacheStats {
  int64_t hits = 0, compiled = 0, cubins = 0;
};
CompileCacheStats compileCacheStats();

}  // namespace ferry::cuda
