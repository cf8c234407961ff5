// backends/cuda/libraries.cpp — dlopen of NVRTC, nvJitLink and cuBLASLt (libraries.h).
#include "backends/cuda/libraries.h"

#include <dlfcn.h>

#include <mutex>
#include <string>

namespace ferry::cuda {

namespace {

#define FERRY_STR2(x) #x
#define FERRY_STR(x) FERRY_STR2(x)

// The library `name` (without ".so.<major>"), opened once; null with `error` set when it cannot be.
void *openLibrary(const char *name, std::string &error) {
  const std::string soname = std::string(name) + ".so." FERRY_STR(FERRY_CUDA_MAJOR);
  void *h = dlopen(soname.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (h) return h;
  const std::string first = dlerror();
  const std::string path = std::string(FERRY_CUDA_LIBRARY_DIR) + "/" + soname;
  h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (h) return h;
  error = "the CUDA backend needs " + soname + " (the CUDA " FERRY_STR(FERRY_CUDA_MAJOR) +
          " toolkit's) and cannot open it: " + first + "; " + dlerror();
  return nullptr;
}

template <class F> bool resolve(void *h, const char *symbol, F &out, std::string &error) {
  out = reinterpret_cast<F>(dlsym(h, symbol));
  if (!out && error.empty()) error = std::string("symbol ") + symbol + " not found: " + dlerror();
  return out != nullptr;
}

}  // namespace

Expected<const Nvrtc *> nvrtc() {
  static Nvrtc functions;
  static std::string error;
  static std::once_flag once;
  std::call_once(once, [] {
    void *h = openLibrary("libnvrtc", error);
    if (!h) return;
    resolve(h, "nvrtcCreateProgram", functions.createProgram, error);
    resolve(h, "nvrtcCompileProgram", functions.compileProgram, error);
    resolve(h, "nvrtcDestroyProgram", functions.destroyProgram, error);
    resolve(h, "nvrtcGetPTXSize", functions.getPTXSize, error);
    resolve(h, "nvrtcGetPTX", functions.getPTX, error);
    resolve(h, "nvrtcGetProgramLogSize", functions.getProgramLogSize, error);
    resolve(h, "nvrtcGetProgramLog", functions.getProgramLog, error);
    resolve(h, "nvrtcGetErrorString", functions.getErrorString, error);
    resolve(h, "nvrtcVersion", functions.version, error);
  });
  if (!error.empty()) return makeError("device", error);
  return &functions;
}

Expected<const NvJitLink *> nvJitLink() {
  static NvJitLink functions;
  static std::string error;
  static std::once_flag once;
  std::call_once(once, [] {
    void *h = openLibrary("libnvJitLink", error);
    if (!h) return;
    // "Create" -> "__nvJitLinkCreate_13_0" (libraries.h).
    auto versioned = [](const char *name) {
      return std::string("__nvJitLink") + name + "_" FERRY_STR(FERRY_CUDA_MAJOR) "_0";
    };
    resolve(h, versioned("Create").c_str(), functions.create, error);
    resolve(h, versioned("Destroy").c_str(), functions.destroy, error);
    resolve(h, versioned("AddData").c_str(), functions.addData, error);
    resolve(h, versioned("Complete").c_str(), functions.complete, error);
    resolve(h, versioned("GetLinkedCubinSize").c_str(), functions.getLinkedCubinSize, error);
    resolve(h, versioned("GetLinkedCubin").c_str(), functions.getLinkedCubin, error);
    resolve(h, versioned("GetErrorLogSize").c_str(), functions.getErrorLogSize, error);
    resolve(h, versioned("GetErrorLog").c_str(), functions.getErrorLog, error);
  });
  if (!error.empty()) return makeError("device", error);
  return &functions;
}

Expected<const CublasLt *> cublasLt() {
  static CublasLt functions;
  static std::string error;
  static std::once_flag once;
  std::call_once(once, [] {
    void *h = openLibrary("libcublasLt", error);
    if (!h) return;
    resolve(h, "cublasLtCreate", functions.create, error);
    resolve(h, "cublasLtDestroy", functions.destroy, error);
    resolve(h, "cublasLtMatmul", functions.matmul, error);
    resolve(h, "cublasLtMatmulDescCreate", functions.matmulDescCreate, error);
    resolve(h, "cublasLtMatmulDescDestroy", functions.matmulDescDestroy, error);
    resolve(h, "cublasLtMatmulDescSetAttribute", functions.matmulDescSetAttribute, error);
    resolve(h, "cublasLtMatrixLayoutCreate", functions.matrixLayoutCreate, error);
    resolve(h, "cublasLtMatrixLayoutDestroy", functions.matrixLayoutDestroy, error);
    resolve(h, "cublasLtMatrixLayoutSetAttribute", functions.matrixLayoutSetAttribute, error);
    resolve(h, "cublasLtMatmulPreferenceCreate", functions.matmulPreferenceCreate, error);
    resolve(h, "cublasLtMatmulPreferenceDestroy", functions.matmulPreferenceDestroy, error);
    resolve(h, "cublasLtMatmulPreferenceSetAttribute", functions.matmulPreferenceSetAttribute, error);
    resolve(h, "cublasLtMatmulAlgoGetHeuristic", functions.matmulAlgoGetHeuristic, error);
    resolve(h, "cublasLtGetStatusString", functions.getStatusString, error);
  });
  if (!error.empty()) return makeError("device", error);
  return &functions;
}

}  // namespace ferry::cuda
