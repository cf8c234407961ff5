// backends/cuda/nvrtc.h — generated CUDA C++ to PTX, with NVRTC, at compile time.
//
// Sources are compiled for virtual architecture compute_80 (Ampere; Hopper and later run the
// same PTX, which the driver compiles for the GPU at hand when a Session loads it), as C++17
// without fast math, and cached for the life of the process by their text: the same fusion
// group in two models, or twice in one, is compiled once.
#pragma once

#include <string>

#include "backends/cuda/codegen/kernel_source.h"

namespace ferry::cuda {

/// The virtual architecture PTX is generated for.
inline constexpr const char *kPtxArchitecture = "compute_80";

/// The PTX of `kernel`. NVRTC's errors (a generator bug) come back with code "internal" and the
/// first lines of its log; a missing NVRTC with code "device".
Expected<std::string> compileToPtx(const KernelSource &kernel);

/// How many compilations the cache saved and made, for tests and statistics.
struct PtxCacheStats {
  int64_t hits = 0, compiled = 0;
};
PtxCacheStats ptxCacheStats();

}  // namespace ferry::cuda
