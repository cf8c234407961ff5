// tools/ferry-compile/cuda_kernels.h — `--emit cuda`: the CUDA kernels an executable runs, as
// CUDA C++ with a comment per step saying what it computes, where in the model it comes from,
// how it is launched (a generated kernel, or cuBLASLt with its epilogue and a tail kernel), and
// the sizes of each kernel's PTX and cubins in the executable (not their bytes: they are binary).
#pragma once

#include <string>

#include "runtime/executable.h"

namespace ferry {

/// The text; a comment alone when no step runs on a CUDA device.
std::string emitCudaKernels(const Executable &exe);

}  // namespace ferry
