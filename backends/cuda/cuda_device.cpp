// backends/cuda/cuda_device.cpp — the CUDA device runtime (cuda_device.h).
//
// Written against the CUDA runtime API only (cudart, linked statically: no libcuda at link
// time): a kernel's cubin or PTX is loaded with cudaLibraryLoadData, which is
// context-independent, and launched with cudaLaunchKernel on the kernel handle. A null Stream
// means "finished on return" (backends/device.h): the legacy default stream, synchronized.
#include "backends/cuda/cuda_device.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <map>
#include <mutex>
#include <vector>

#include "backends/cuda/codegen/caching_allocator.h"
#include "backends/cuda/codegen/gemm_shape.h"
#include "backends/cuda/codegen/launch.h"
#include "backends/cuda/codegen/kernel_source.h"
#include "backends/cuda/codegen/plan.h"
#include "backends/cuda/libraries.h"

namespace ferry {

namespace {

Status cudaError(cudaError_t e, const std::string &what, const Location &loc = {}) {
  return makeError(e == cudaErrorMemoryAllocation ? "memory" : "device",
                   what + ": " + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")", loc);
}

#define FERRY_CUDA_TRY(call, what)                  \
  do {                                              \
    const cudaError_t e_ = (call);                  \
    if (e_ != cudaSuccess) return cudaError(e_, what); \
  } while (0)

// cudaMalloc and cudaFree on one GPU, under the caching allocator.
class GpuMemory final : public cuda::RawMemory {
 public:
  explicit GpuMemory(int device) : device_(device) {}
  Expected<std::byte *> allocate(size_t bytes) override {
    void *p = nullptr;
    cudaSetDevice(device_);
    const cudaError_t e = cudaMalloc(&p, bytes);
    if (e != cudaSuccess) {
      cudaGetLastError();  // out of memory is not sticky: clear it
      return cudaError(e, "cudaMalloc of " + std::to_string(bytes) + " bytes on cuda:" + std::to_string(device_));
    }
    return static_cast<std::byte *>(p);
  }
  void free(std::byte *p) override {
    cudaSetDevice(device_);
    cudaFree(p);
  }

 private:
  int device_;
};

cudaDataType_t cudaType(DType t) {
  switch (t) {
    case DType::F16: return CUDA_R_16F;
    case DType::BF16: return CUDA_R_16BF;
    case DType::F64: return CUDA_R_64F;
    default: return CUDA_R_32F;
  }
}

// A generated kernel loaded from PTX, or a cuBLASLt matmul followed by an optional one.
struct CudaKernel final : public PreparedKernel {
  cuda::CudaPlan plan;
  bool gemm = false;
  Device device;
  Location loc;
  std::string what;  // "'gather' %idx", for errors
  // The generated kernel, and an anchored plan's anchor kernel.
  cudaLibrary_t library = nullptr, anchorLibrary = nullptr;
  cudaKernel_t kernel = nullptr, anchorKernel = nullptr;
  bool anchored = false;
  unsigned *flag = nullptr;  // device pointer of this kernel's index-error flag
  // The GEMM.
  std::vector<int32_t> gemmOperands;  // step operand per anchor operand
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, d = nullptr;
  cublasLtMatmulAlgo_t algo{};
  cuda::GemmShape shape;
  size_t elementSize = 4;
  bool f64 = false;
  mutable std::mutex descMutex;  // the bias pointer is set on the descriptor per launch
  const cuda::CublasLt *lt = nullptr;

  ~CudaKernel() override {
    if (lt) {
      if (a) lt->matrixLayoutDestroy(a);
      if (b) lt->matrixLayoutDestroy(b);
      if (d) lt->matrixLayoutDestroy(d);
      if (desc) lt->matmulDescDestroy(desc);
    }
    if (library) cudaLibraryUnload(library);
    if (anchorLibrary) cudaLibraryUnload(anchorLibrary);
  }
};

class CudaDevice final : public DeviceRuntime {
 public:
  static constexpr size_t kFlags = 4096;

  Status init(int count) {
    for (int i = 0; i < count; ++i) {
      devices_.push_back(Device::cuda(i));
      memory_.push_back(std::make_unique<GpuMemory>(i));
      allocators_.push_back(std::make_unique<cuda::CachingAllocator>(*memory_.back(), Device::cuda(i).str()));
    }
    // Peer access where the GPUs allow it; cudaMemcpyPeerAsync stages through the host where not.
    for (int i = 0; i < count; ++i)
      for (int j = 0; j < count; ++j) {
        int can = 0;
        if (i != j && cudaDeviceCanAccessPeer(&can, i, j) == cudaSuccess && can) {
          cudaSetDevice(i);
          if (cudaDeviceEnablePeerAccess(j, 0) != cudaSuccess) cudaGetLastError();
        }
      }
    FERRY_CUDA_TRY(cudaHostAlloc(reinterpret_cast<void **>(&flags_), kFlags * sizeof(unsigned),
                                 cudaHostAllocMapped | cudaHostAllocPortable),
                   "allocating the index-error flags");
    for (size_t i = 0; i < kFlags; ++i) flags_[i] = 0;
    flagOwners_.resize(kFlags);
    return Status();
  }

  ~CudaDevice() override {
    for (auto &[index, st] : staging_)
      for (int i = 0; i < 2; ++i) {
        if (st->buffer[i]) cudaFreeHost(st->buffer[i]);
        if (st->done[i]) cudaEventDestroy(st->done[i]);
      }
    if (lt_ && ltHandle_) lt_->destroy(ltHandle_);
    allocators_.clear();
    if (flags_) cudaFreeHost(flags_);
  }

  std::span<const Device> devices() const override { return devices_; }

  Expected<std::byte *> allocate(Device device, size_t bytes) override {
    FERRY_TRY(check(device));
    return allocators_[static_cast<size_t>(device.index)]->allocate(bytes);
  }
  void release(Device device, std::byte *data) override {
    FERRY_CHECK(check(device).ok()) << "release on " << device.str() << ", which this runtime does not drive";
    allocators_[static_cast<size_t>(device.index)]->release(data);
  }
  bool owns(Device device, const std::byte *data, size_t bytes) const override {
    return check(device).ok() && allocators_[static_cast<size_t>(device.index)]->owns(data, bytes);
  }

  Expected<std::byte *> allocateHost(size_t bytes) override {
    void *p = nullptr;
    FERRY_CUDA_TRY(cudaMallocHost(&p, bytes == 0 ? 1 : bytes),
                   "pinned host memory of " + std::to_string(bytes) + " bytes");
    return static_cast<std::byte *>(p);
  }
  void releaseHost(std::byte *data) override { cudaFreeHost(data); }
  bool registerHost(std::byte *host, size_t bytes) override {
    if (cudaHostRegister(host, bytes, cudaHostRegisterPortable) == cudaSuccess) return true;
    cudaGetLastError();  // not sticky: the copies take the staged path
    return false;
  }
  void unregisterHost(std::byte *host) override { cudaHostUnregister(host); }

  Status copy(Device from, const std::byte *source, Device to, std::byte *destination, size_t bytes,
              Stream stream) override {
    FERRY_TRY(check(from));
    FERRY_TRY(check(to));
    if (bytes == 0) return Status();
    FERRY_CUDA_TRY(cudaMemcpyPeerAsync(destination, to.index, source, from.index, bytes, native(stream)),
                   "copy of " + std::to_string(bytes) + " bytes from " + from.str() + " to " + to.str());
    return finish(stream);
  }
  Status upload(const std::byte *host, Device to, std::byte *destination, size_t bytes,
                Stream stream) override {
    FERRY_TRY(check(to));
    if (bytes == 0) return Status();
    cudaSetDevice(to.index);
    const std::string what = "upload of " + std::to_string(bytes) + " bytes to " + to.str();
    // Pageable memory through the staging buffers (cudaMemcpyAsync from pageable memory would
    // wait for the stream first), so that the host's bytes are read on return; pinned memory
    // directly, read by the copy engine when the stream gets there (uploadReadsHostOnIssue).
    if (!pinned(host)) {
      FERRY_TRY(stagedUpload(to, host, destination, bytes, native(stream), what));
      return finish(stream);
    }
    FERRY_CUDA_TRY(cudaMemcpyAsync(destination, host, bytes, cudaMemcpyHostToDevice, native(stream)), what);
    return finish(stream);
  }
  bool uploadReadsHostOnIssue(const std::byte *host) const override { return !pinned(host); }
  Status download(Device from, const std::byte *source, std::byte *host, size_t bytes,
                  Stream stream) override {
    FERRY_TRY(check(from));
    if (bytes == 0) return Status();
    cudaSetDevice(from.index);
    const std::string what = "download of " + std::to_string(bytes) + " bytes from " + from.str();
    if (bytes >= kStageThreshold && !pinned(host))
      return stagedDownload(from, source, host, bytes, native(stream), what);
    FERRY_CUDA_TRY(cudaMemcpyAsync(host, source, bytes, cudaMemcpyDeviceToHost, native(stream)), what);
    return finish(stream);
  }

  Expected<std::unique_ptr<PreparedKernel>> prepare(const KernelPlan &plan, const StepSpec &step) override {
    auto mismatch = [&](const std::string &why) {
      return makeError("internal",
                       "the kernel plan '" + plan.kernel + "' of '" + std::string(step.op.name) +
                           "' on " + step.device.str() + " " + why,
                       step.loc);
    };
    if (plan.kernel != cuda::kKernelPlanName && plan.kernel != cuda::kGemmPlanName &&
        plan.kernel != cuda::kAnchoredPlanName)
      return mismatch("is not a CUDA kernel (an executable compiled for another target?)");
    FERRY_TRY(check(step.device));
    const auto [major, minor] = computeCapability(step.device.index);
    Expected<cuda::CudaPlan> decoded = cuda::CudaPlan::decode(plan.payload);
    if (!decoded) return mismatch("cannot be read: " + decoded.status().diagnostics().front().message);
    auto k = std::make_unique<CudaKernel>();
    k->plan = std::move(*decoded);
    k->gemm = plan.kernel == cuda::kGemmPlanName;
    k->anchored = plan.kernel == cuda::kAnchoredPlanName;
    if (k->anchored && (!step.body || k->plan.anchorPtx.empty()))
      return mismatch("is an anchored kernel without a fused body or an anchor kernel");
    k->device = step.device;
    k->loc = step.loc;
    k->what = "'" + std::string(step.op.name) + "'";
    cudaSetDevice(step.device.index);
    if (!k->plan.ptx.empty()) {
      const size_t expected = step.operands.size() + (k->gemm || k->anchored ? 1 : 0);
      if (static_cast<size_t>(k->plan.inputs) != expected)
        return mismatch("takes " + std::to_string(k->plan.inputs) + " inputs, the step has " +
                        std::to_string(expected));
      FERRY_TRY(loadKernel(k->plan, false, major, minor, k->library, k->kernel,
                           "the PTX of " + k->what + " on " + step.device.str(),
                           "the kernel of " + k->what));
      const size_t slot = nextFlag_++ % kFlags;
      {
        std::lock_guard lock(flagMutex_);
        flagOwners_[slot] = {step.loc, k->what + " on " + step.device.str()};
      }
      unsigned *device = nullptr;
      FERRY_CUDA_TRY(cudaHostGetDevicePointer(reinterpret_cast<void **>(&device), flags_ + slot, 0),
                     "mapping the index-error flag");
      k->flag = device;
    } else if (!k->gemm) {
      return mismatch("has no PTX");
    }
    if (k->anchored || !k->plan.anchorPtx.empty()) {  // a conv2d's GEMM has its im2col there
      if (k->anchored)
        for (int32_t arg : (*step.body)[0].args) {
          if (arg < 0 || static_cast<size_t>(arg) >= step.operands.size())
            return mismatch("has an anchor that reads no operand of the step");
          k->gemmOperands.push_back(arg);
        }
      FERRY_TRY(loadKernel(k->plan, true, major, minor, k->anchorLibrary, k->anchorKernel,
                           "the anchor's PTX of " + k->what + " on " + step.device.str(),
                           "the anchor kernel of " + k->what));
    }
    if (k->gemm) FERRY_TRY(prepareGemm(*k, step));
    return std::unique_ptr<PreparedKernel>(std::move(k));
  }

 private:
  // GPU `index`'s compute capability (8, 0 on an A100), read once; 0, 0 when the runtime cannot
  // say (then kernels load their PTX).
  std::pair<int, int> computeCapability(int index) {
    std::lock_guard lock(capabilityMutex_);
    auto [it, added] = capabilities_.try_emplace(index, 0, 0);
    auto &[major, minor] = it->second;
    if (added &&
        (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, index) != cudaSuccess ||
         cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, index) != cudaSuccess)) {
      cudaGetLastError();
      it->second = {0, 0};
    }
    return it->second;
  }

  // Loads the plan's generated kernel (with `anchor`, the anchor's) into `library` and finds its
  // entry: the cubin for this GPU's architecture when the plan has one (CudaPlan::imageFor), else,
  // or when the driver refuses the cubin, the PTX, which the driver compiles.
  static Status loadKernel(const cuda::CudaPlan &plan, bool anchor, int major, int minor,
                           cudaLibrary_t &library, cudaKernel_t &kernel, const std::string &ptxWhat,
                           const std::string &kernelWhat) {
    const cuda::KernelImage image = plan.imageFor(major, minor, anchor);
    if (image != cuda::KernelImage::Ptx) {
      const cudaError_t e = cudaLibraryLoadData(&library, plan.image(image, anchor).data(), nullptr,
                                                nullptr, 0, nullptr, nullptr, 0);
      if (e == cudaSuccess &&
          cudaLibraryGetKernel(&kernel, library, cuda::kKernelName) == cudaSuccess)
        return Status();
      if (e == cudaSuccess) cudaLibraryUnload(library);
      cudaGetLastError();  // a refused image is not a sticky error: clear it, then the PTX
      library = nullptr;
    }
    FERRY_CUDA_TRY(cudaLibraryLoadData(&library, plan.image(cuda::KernelImage::Ptx, anchor).c_str(),
                                       nullptr, nullptr, 0, nullptr, nullptr, 0),
                   "loading " + ptxWhat);
    FERRY_CUDA_TRY(cudaLibraryGetKernel(&kernel, library, cuda::kKernelName),
                   "finding " + kernelWhat);
    return Status();
  }

  std::mutex capabilityMutex_;
  std::map<int, std::pair<int, int>> capabilities_;

 public:
  Status launch(const PreparedKernel &prepared, const KernelArgs &args, Stream stream) override {
    const auto &k = static_cast<const CudaKernel &>(prepared);
    cudaSetDevice(k.device.index);
    const cuda::LaunchSequence seq = cuda::launchSequence(
        k.gemm ? cuda::kGemmPlanName : k.anchored ? cuda::kAnchoredPlanName : cuda::kKernelPlanName,
        k.plan, k.gemmOperands, k.gemm ? &k.shape : nullptr, k.elementSize, args);
    if (!seq.prologue.in.empty())
      FERRY_TRY(run(k, k.anchorKernel, k.plan.anchorBlocks, k.plan.anchorThreads, seq.prologue.out,
                    seq.prologue.scratch, seq.prologue.in, stream));
    if (!seq.gemms.empty()) FERRY_TRY(runGemm(k, seq.gemms, args.scratch, stream));
    if (seq.zeroBytes > 0)
      FERRY_CUDA_TRY(cudaMemsetAsync(seq.zeroFill, 0, seq.zeroBytes, native(stream)),
                     "zeroing the empty GEMM of " + k.what);
    for (const cuda::KernelCall &c : seq.kernels)
      FERRY_TRY(run(k, c.anchor ? k.anchorKernel : k.kernel, c.anchor ? k.plan.anchorBlocks : k.plan.blocks,
                    c.anchor ? k.plan.anchorThreads : k.plan.threads, c.out, c.scratch, c.in, stream));
    return finish(stream);
  }

  // One generated kernel: out, scratch, the error flag, then the `in` pointers.
  Status run(const CudaKernel &k, cudaKernel_t kernel, int64_t blocks, int32_t threads,
             std::byte *result, std::byte *scratchBytes, const std::vector<const std::byte *> &inputs,
             Stream stream) {
    std::vector<const char *> in;
    for (const std::byte *p : inputs) in.push_back(reinterpret_cast<const char *>(p));
    char *out = reinterpret_cast<char *>(result);
    char *scratch = reinterpret_cast<char *>(scratchBytes);
    unsigned *flag = k.flag;
    std::vector<void *> params{&out, &scratch, &flag};
    for (const char *&p : in) params.push_back(&p);
    FERRY_CUDA_TRY(cudaLaunchKernel(reinterpret_cast<const void *>(kernel),
                                    dim3(static_cast<unsigned>(blocks)),
                                    dim3(static_cast<unsigned>(threads)), params.data(), 0,
                                    native(stream)),
                   "launching the kernel of " + k.what + " on " + k.device.str());
    return Status();
  }

  Expected<Stream> createStream(Device device) override {
    FERRY_TRY(check(device));
    cudaSetDevice(device.index);
    cudaStream_t s = nullptr;
    FERRY_CUDA_TRY(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "creating a stream on " + device.str());
    return Stream{s, device};
  }
  // Transfers to and from the host get a stream of their own, so that the copy engines move
  // bytes while the SMs run kernels; the Session orders the two streams with events.
  Expected<Stream> createCopyStream(Device device) override { return createStream(device); }
  void destroyStream(Stream stream) override {
    if (stream.handle) cudaStreamDestroy(static_cast<cudaStream_t>(stream.handle));
  }
  Expected<Event> recordEvent(Stream stream) override {
    cudaSetDevice(stream.device.index);
    cudaEvent_t e = nullptr;
    FERRY_CUDA_TRY(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "creating an event");
    FERRY_CUDA_TRY(cudaEventRecord(e, native(stream)), "recording an event");
    return Event{e};
  }
  Status waitEvent(Stream stream, Event event) override {
    if (!event.handle) return Status();
    FERRY_CUDA_TRY(cudaStreamWaitEvent(native(stream), static_cast<cudaEvent_t>(event.handle), 0),
                   "waiting for an event");
    return Status();
  }
  void destroyEvent(Event event) override {
    if (event.handle) cudaEventDestroy(static_cast<cudaEvent_t>(event.handle));
  }
  Status synchronize(Stream stream) override {
    cudaSetDevice(stream.device.index);
    FERRY_CUDA_TRY(cudaStreamSynchronize(native(stream)), "running on " + stream.device.str());
    return checkFlags();
  }

 private:
  Status check(Device d) const {
    if (d.kind != DeviceKind::Cuda || d.index < 0 || static_cast<size_t>(d.index) >= devices_.size())
      return makeError("device", d.str() + " is not driven by this CUDA runtime (it drives " +
                                     std::to_string(devices_.size()) + " GPUs)");
    return Status();
  }
  static cudaStream_t native(Stream s) { return static_cast<cudaStream_t>(s.handle); }
  // A null stream is synchronous (backends/device.h).
  Status finish(Stream stream) {
    if (stream.handle) return Status();
    return synchronize(stream);
  }

  Status checkFlags() {
    std::lock_guard lock(flagMutex_);
    const size_t used = std::min<size_t>(nextFlag_, kFlags);
    for (size_t i = 0; i < used; ++i) {
      if (__atomic_load_n(&flags_[i], __ATOMIC_ACQUIRE) == 0) continue;
      __atomic_store_n(&flags_[i], 0u, __ATOMIC_RELEASE);
      return makeError("runtime", "an index out of range in " + flagOwners_[i].second +
                                      " (found by the kernel)", flagOwners_[i].first);
    }
    return Status();
  }

  Status prepareGemm(CudaKernel &k, const StepSpec &step) {
    Expected<const cuda::CublasLt *> api = cuda::cublasLt();
    if (!api) return api.status();
    k.lt = *api;
    {
      std::lock_guard lock(ltMutex_);
      if (!ltHandle_) {
        lt_ = *api;
        if (cublasStatus_t s = lt_->create(&ltHandle_); s != CUBLAS_STATUS_SUCCESS)
          return makeError("device", std::string("cublasLtCreate: ") + lt_->getStatusString(s));
      }
    }
    const bool fused = step.body != nullptr;
    const OpKind anchor = fused ? (*step.body)[0].op : step.op.kind;
    std::vector<TensorType> types;
    if (fused) {
      for (int32_t arg : (*step.body)[0].args) {
        k.gemmOperands.push_back(arg);
        types.push_back(step.operands[static_cast<size_t>(arg)]);
      }
    } else {
      for (size_t i = 0; i < step.operands.size(); ++i) {
        k.gemmOperands.push_back(static_cast<int32_t>(i));
        types.push_back(step.operands[i]);
      }
    }
    const TensorType &out = fused ? (*step.body)[static_cast<size_t>(k.plan.gemmMicroOps) - 1].type : step.result;
    auto bad = [&](const std::string &why) {
      return makeError("internal", "cuBLASLt GEMM of " + k.what + " on " + step.device.str() + ": " + why, step.loc);
    };
    if (types.size() < 2) return bad("fewer than two operands");
    Expected<cuda::GemmShape> shape = cuda::gemmShape(anchor, types, out);
    if (!shape) return shape.status();
    k.shape = std::move(*shape);
    const cuda::GemmShape &g = k.shape;
    const cudaDataType_t type = cudaType(out.dtype);
    k.f64 = out.dtype == DType::F64;
    k.elementSize = dtypeSize(out.dtype);
    const cublasComputeType_t compute = k.f64 ? CUBLAS_COMPUTE_64F : CUBLAS_COMPUTE_32F;
    const cudaDataType_t scale = k.f64 ? CUDA_R_64F : CUDA_R_32F;
    const cuda::CublasLt &lt = *k.lt;
    auto ok = [&](cublasStatus_t s, const char *what) -> Status {
      if (s == CUBLAS_STATUS_SUCCESS) return Status();
      return bad(std::string(what) + ": " + lt.getStatusString(s));
    };
    FERRY_TRY(ok(lt.matmulDescCreate(&k.desc, compute, scale), "cublasLtMatmulDescCreate"));
    const cublasOperation_t opT = CUBLAS_OP_T;
    if (g.transposeA)
      FERRY_TRY(ok(lt.matmulDescSetAttribute(k.desc, CUBLASLT_MATMUL_DESC_TRANSA, &opT, sizeof opT), "TRANSA"));
    cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_DEFAULT;
    switch (k.plan.epilogue) {
      case cuda::Epilogue::None: break;
      case cuda::Epilogue::Bias: epilogue = CUBLASLT_EPILOGUE_BIAS; break;
      case cuda::Epilogue::ReluBias: epilogue = CUBLASLT_EPILOGUE_RELU_BIAS; break;
      case cuda::Epilogue::GeluBias: epilogue = CUBLASLT_EPILOGUE_GELU_BIAS; break;
      case cuda::Epilogue::Relu: epilogue = CUBLASLT_EPILOGUE_RELU; break;
      case cuda::Epilogue::Gelu: epilogue = CUBLASLT_EPILOGUE_GELU; break;
    }
    FERRY_TRY(ok(lt.matmulDescSetAttribute(k.desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof epilogue), "EPILOGUE"));
    if (g.m == 0 || g.n == 0 || g.k == 0) return Status();  // launch() writes zeros or nothing
    // The stored matrices (before op): A is k x m when transposed, m x k otherwise.
    const auto u = [](int64_t v) { return static_cast<uint64_t>(v); };
    FERRY_TRY(ok(g.transposeA ? lt.matrixLayoutCreate(&k.a, type, u(g.k), u(g.m), g.lda)
                              : lt.matrixLayoutCreate(&k.a, type, u(g.m), u(g.k), g.lda),
                 "layout A"));
    FERRY_TRY(ok(lt.matrixLayoutCreate(&k.b, type, u(g.k), u(g.n), g.ldb), "layout B"));
    FERRY_TRY(ok(lt.matrixLayoutCreate(&k.d, type, u(g.m), u(g.n), g.ldd), "layout D"));
    if (g.batch > 1) {
      const int32_t count = static_cast<int32_t>(g.batch);
      for (auto [layout, stride] : {std::pair{k.a, g.strideA}, std::pair{k.b, g.strideB}, std::pair{k.d, g.strideD}}) {
        FERRY_TRY(ok(lt.matrixLayoutSetAttribute(layout, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof count), "batch count"));
        FERRY_TRY(ok(lt.matrixLayoutSetAttribute(layout, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof stride), "batch stride"));
      }
    }
    cublasLtMatmulPreference_t preference = nullptr;
    FERRY_TRY(ok(lt.matmulPreferenceCreate(&preference), "preference"));
    const uint64_t workspace = k.plan.gemmWorkspaceBytes;
    lt.matmulPreferenceSetAttribute(preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace, sizeof workspace);
    cublasLtMatmulHeuristicResult_t result{};
    int found = 0;
    const cublasStatus_t s = lt.matmulAlgoGetHeuristic(ltHandle_, k.desc, k.a, k.b, k.d, k.d, preference, 1, &result, &found);
    lt.matmulPreferenceDestroy(preference);
    FERRY_TRY(ok(s, "cublasLtMatmulAlgoGetHeuristic"));
    if (found == 0)
      return bad("cuBLASLt has no algorithm for " + std::to_string(g.m) + "x" + std::to_string(g.n) +
                 "x" + std::to_string(g.k));
    k.algo = result.algo;
    return Status();
  }

  // The launch's cuBLASLt calls (cuda::launchSequence): the bias pointer is set on the shared
  // descriptor per call, under its lock.
  Status runGemm(const CudaKernel &k, const std::vector<cuda::GemmCall> &calls, std::byte *workspace,
                 Stream stream) {
    const float alpha32 = 1, beta32 = 0;
    const double alpha64 = 1, beta64 = 0;
    const void *alpha = k.f64 ? static_cast<const void *>(&alpha64) : &alpha32;
    const void *beta = k.f64 ? static_cast<const void *>(&beta64) : &beta32;
    std::lock_guard lock(k.descMutex);
    for (const cuda::GemmCall &c : calls) {
      if (c.bias)
        k.lt->matmulDescSetAttribute(k.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &c.bias, sizeof c.bias);
      const cublasStatus_t s = k.lt->matmul(ltHandle_, k.desc, alpha, c.a, k.a, c.b, k.b, beta, c.d, k.d,
                                            c.d, k.d, &k.algo, workspace, k.plan.gemmWorkspaceBytes,
                                            native(stream));
      if (s != CUBLAS_STATUS_SUCCESS)
        return makeError("device", "cuBLASLt GEMM of " + k.what + " on " + k.device.str() + ": " +
                                       k.lt->getStatusString(s), k.loc);
    }
    return Status();
  }

  // Copies between pageable host memory (an app's tensors, the CPU's workspace) and a GPU go
  // through two pinned staging buffers per GPU, alternately: the host copies one chunk into a
  // buffer while the copy engine moves the previous one. An upload returns once the host's bytes
  // are in the buffers (no wait for the stream), so the host goes on while the GPU copies and
  // computes. Downloads of less than kStageThreshold, and pinned host memory, go directly.
  static constexpr size_t kStageThreshold = size_t{1} << 20;
  static constexpr size_t kStageBytes = size_t{8} << 20;
  struct Staging {
    std::mutex mutex;
    std::byte *buffer[2] = {nullptr, nullptr};
    cudaEvent_t done[2] = {nullptr, nullptr};
  };

  static bool pinned(const void *host) {
    cudaPointerAttributes a{};
    if (cudaPointerGetAttributes(&a, host) != cudaSuccess) {
      cudaGetLastError();
      return false;
    }
    return a.type == cudaMemoryTypeHost;
  }

  // The staging buffers of `d`, made on first use; locked while a copy uses them.
  Expected<Staging *> staging(Device d) {
    std::lock_guard lock(stagingMutex_);
    auto &st = staging_[d.index];
    if (!st) {
      auto made = std::make_unique<Staging>();
      for (int i = 0; i < 2; ++i) {
        FERRY_CUDA_TRY(cudaHostAlloc(reinterpret_cast<void **>(&made->buffer[i]), kStageBytes,
                                     cudaHostAllocPortable),
                       "pinned staging memory for " + d.str());
        FERRY_CUDA_TRY(cudaEventCreateWithFlags(&made->done[i], cudaEventDisableTiming),
                       "a staging event on " + d.str());
      }
      st = std::move(made);
    }
    return st.get();
  }

  Status stagedUpload(Device to, const std::byte *host, std::byte *destination, size_t bytes,
                      cudaStream_t stream, const std::string &what) {
    Expected<Staging *> st = staging(to);
    if (!st) return st.status();
    std::lock_guard lock((*st)->mutex);
    for (size_t at = 0, i = 0; at < bytes; at += kStageBytes, i ^= 1) {
      const size_t n = std::min(kStageBytes, bytes - at);
      FERRY_CUDA_TRY(cudaEventSynchronize((*st)->done[i]), what);  // the buffer's last copy read it
      std::memcpy((*st)->buffer[i], host + at, n);
      FERRY_CUDA_TRY(cudaMemcpyAsync(destination + at, (*st)->buffer[i], n, cudaMemcpyHostToDevice, stream), what);
      FERRY_CUDA_TRY(cudaEventRecord((*st)->done[i], stream), what);
    }
    return Status();
  }

  Status stagedDownload(Device from, const std::byte *source, std::byte *host, size_t bytes,
                        cudaStream_t stream, const std::string &what) {
    Expected<Staging *> st = staging(from);
    if (!st) return st.status();
    std::lock_guard lock((*st)->mutex);
    // Chunk i is copied into buffer i % 2 while chunk i - 1 is copied out of the other.
    auto drain = [&](size_t at, size_t i) -> Status {
      FERRY_CUDA_TRY(cudaEventSynchronize((*st)->done[i]), what);
      std::memcpy(host + at, (*st)->buffer[i], std::min(kStageBytes, bytes - at));
      return Status();
    };
    size_t i = 0, previous = 0;
    bool pending = false;
    for (size_t at = 0; at < bytes; at += kStageBytes, i ^= 1) {
      const size_t n = std::min(kStageBytes, bytes - at);
      FERRY_CUDA_TRY(cudaMemcpyAsync((*st)->buffer[i], source + at, n, cudaMemcpyDeviceToHost, stream), what);
      FERRY_CUDA_TRY(cudaEventRecord((*st)->done[i], stream), what);
      if (pending) FERRY_TRY(drain(previous, i ^ 1));
      previous = at;
      pending = true;
    }
    if (pending) FERRY_TRY(drain(previous, i ^ 1));
    return Status();
  }

  std::mutex stagingMutex_;
  std::map<int, std::unique_ptr<Staging>> staging_;

  std::vector<Device> devices_;
  std::vector<std::unique_ptr<GpuMemory>> memory_;
  std::vector<std::unique_ptr<cuda::CachingAllocator>> allocators_;
  unsigned *flags_ = nullptr;  // mapped host memory, kFlags words
  std::atomic<size_t> nextFlag_{0};
  std::mutex flagMutex_;
  std::vector<std::pair<Location, std::string>> flagOwners_;
  std::mutex ltMutex_;
  const cuda::CublasLt *lt_ = nullptr;
  cublasLtHandle_t ltHandle_ = nullptr;
};

}  // namespace

int visibleCudaDevices() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return count;
}

Status cudaDevicePresent(int index) {
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess) {
    cudaGetLastError();
    return makeError("device", std::string("the CUDA runtime finds no GPU it can use (") +
                                   cudaGetErrorString(e) +
                                   (e == cudaErrorInsufficientDriver || e == cudaErrorNoDevice
                                        ? "; is an NVIDIA GPU and its driver installed?)"
                                        : ")"));
  }
  if (index < 0 || index >= count)
    return makeError("device", "this machine has " + std::to_string(count) +
                                   (count == 1 ? " GPU (cuda:0)" : " GPUs") +
                                   (count > 1 ? " (cuda:0 to cuda:" + std::to_string(count - 1) + ")" : ""));
  return Status();
}

Expected<std::unique_ptr<DeviceRuntime>> makeCudaDevice(int devices, bool checked) {
  (void)checked;  // the caching allocator tracks every block: owns() is always exact
  const int last = std::max(devices, 1) - 1;
  if (Status s = cudaDevicePresent(last); !s.ok())
    return makeError("device", "cuda:" + std::to_string(last) + " is not on this machine: " + s.diagnostics().front().message);
  auto runtime = std::make_unique<CudaDevice>();
  FERRY_TRY(runtime->init(devices));
  return std::unique_ptr<DeviceRuntime>(std::move(runtime));
}

}  // namespace ferry
