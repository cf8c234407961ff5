// backends/cuda/libraries.h — the CUDA toolkit's big libraries, loaded when first needed.
//
// NVRTC (110 MB), nvJitLink (100 MB) and cuBLASLt (540 MB) are opened with dlopen the first time
// a CUDA kernel is compiled, its cubins made or a cuBLASLt GEMM prepared, not linked: linked,
// they cost every process that links ferry 80 ms and 240 MB of resident memory at start, GPU or
// not (measured on the 2-core CI machine; docs/decisions.md, "CUDA libraries loaded on first
// use"). The CUDA runtime (cudart) is linked statically: it is small and itself opens the driver
// only when first called.
//
// Each library is looked up by its soname (libnvrtc.so.13), then in the toolkit folder this
// build was configured with. Failing both is an error with code "device" that names the file
// and what dlopen said.
#pragma once

#include <cublasLt.h>
#include <nvJitLink.h>
#include <nvrtc.h>

#include "ir/status.h"

namespace ferry::cuda {

struct Nvrtc {
  decltype(&::nvrtcCreateProgram) createProgram;
  decltype(&::nvrtcCompileProgram) compileProgram;
  decltype(&::nvrtcDestroyProgram) destroyProgram;
  decltype(&::nvrtcGetPTXSize) getPTXSize;
  decltype(&::nvrtcGetPTX) getPTX;
  decltype(&::nvrtcGetProgramLogSize) getProgramLogSize;
  decltype(&::nvrtcGetProgramLog) getProgramLog;
  decltype(&::nvrtcGetErrorString) getErrorString;
  decltype(&::nvrtcVersion) version;
};

/// nvJitLink's entry points are versioned: every libnvJitLink.so.<major> exports the
/// `__nvJitLink<Name>_<major>_0` ones (the header's inline functions call the newest), which
/// these are.
struct NvJitLink {
  nvJitLinkResult (*create)(nvJitLinkHandle *handle, uint32_t numOptions,
                            const char *const *options);
  nvJitLinkResult (*destroy)(nvJitLinkHandle *handle);
  nvJitLinkResult (*addData)(nvJitLinkHandle handle, nvJitLinkInputType type, const void *data,
                             size_t size, const char *name);
  nvJitLinkResult (*complete)(nvJitLinkHandle handle);
  nvJitLinkResult (*getLinkedCubinSize)(nvJitLinkHandle handle, size_t *size);
  nvJitLinkResult (*getLinkedCubin)(nvJitLinkHandle handle, void *cubin);
  nvJitLinkResult (*getErrorLogSize)(nvJitLinkHandle handle, size_t *size);
  nvJitLinkResult (*getErrorLog)(nvJitLinkHandle handle, char *log);
};

struct CublasLt {
  decltype(&::cublasLtCreate) create;
  decltype(&::cublasLtDestroy) destroy;
  decltype(&::cublasLtMatmul) matmul;
  decltype(&::cublasLtMatmulDescCreate) matmulDescCreate;
  decltype(&::cublasLtMatmulDescDestroy) matmulDescDestroy;
  decltype(&::cublasLtMatmulDescSetAttribute) matmulDescSetAttribute;
  decltype(&::cublasLtMatrixLayoutCreate) matrixLayoutCreate;
  decltype(&::cublasLtMatrixLayoutDestroy) matrixLayoutDestroy;
  decltype(&::cublasLtMatrixLayoutSetAttribute) matrixLayoutSetAttribute;
  decltype(&::cublasLtMatmulPreferenceCreate) matmulPreferenceCreate;
  decltype(&::cublasLtMatmulPreferenceDestroy) matmulPreferenceDestroy;
  decltype(&::cublasLtMatmulPreferenceSetAttribute) matmulPreferenceSetAttribute;
  decltype(&::cublasLtMatmulAlgoGetHeuristic) matmulAlgoGetHeuristic;
  decltype(&::cublasLtGetStatusString) getStatusString;
};

/// The loaded library's functions (loaded once per process), or why it cannot be loaded.
Expected<const Nvrtc *> nvrtc();
Expected<const NvJitLink *> nvJitLink();
Expected<const CublasLt *> cublasLt();

}  // namespace ferry::cuda
