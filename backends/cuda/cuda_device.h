// backends/cuda/cuda_device.h — the CUDA device runtime (backends/device.h): memory from a
// caching allocator per GPU, streams and events, copies with cudaMemcpyAsync (peer copies
// between GPUs), generated kernels loaded once per Session from the cubin of the GPU's
// architecture or from their PTX, cuBLASLt GEMMs.
//
// Made by the registry only when the CUDA runtime finds the GPUs asked for; an error with code
// "device" otherwise ("cuda:1 does not exist: this machine has 1 GPU"). Index errors found by a
// kernel (gather) are written to a flag in mapped host memory, one per prepared kernel, and
// reported by synchronize() with the step's location.
#pragma once

#include <memory>

#include "backends/device.h"

namespace ferry {

/// The number of GPUs the CUDA runtime sees (0 without a driver or a GPU).
int visibleCudaDevices();

/// Whether cuda:`index` is on this machine, or why not (code "device", the reason alone: "this
/// machine has 1 GPU (cuda:0)", "the CUDA runtime finds no GPU it can use (...)").
Status cudaDevicePresent(int index);

/// A device runtime for cuda:0 .. cuda:(devices-1), or why there is none.
Expected<std::unique_ptr<DeviceRuntime>> makeCudaDevice(int devices, bool checked);

}  // namespace ferry
