// tools/ferry-compile/cuda_kernels.h — `--emit cuda`: the CUDA kernels an executable runs, as
// CUDA C++ with a comment per step saying what it computes, where in the model it comes from,
// and how it is launched (a generated kernel, or cuBLASLt with its epilogue and a tail kernel).
#pragma once

#include <string>

#include "runtime/executable.h"

namespace ferry {

/// The text; a comment alone when no step runs on a CUDA device.
std::string emitCudaKernels(const Executable &exe);

}  // namespace ferry
