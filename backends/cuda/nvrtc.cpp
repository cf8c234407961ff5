// backends/cuda/nvrtc.cpp — NVRTC and nvJitLink compilation and their cache (nvrtc.h).
#include "backends/cuda/nvrtc.h"

#include <memory>
#include <mutex>
#include <unordered_map>

#include "backends/cuda/libraries.h"

namespace ferry::cuda {

namespace {

struct Cache {
  std::mutex mutex;
  // hash -> (source, what it compiled to): the source is compared too, so a hash collision
  // costs a compile. The cubins are empty until a compilation asks for them.
  std::unordered_multimap<uint64_t, std::pair<std::string, CompiledKernel>> entries;
  CompileCacheStats stats;

  // The entry of `source`, or null. Under `mutex`.
  CompiledKernel *find(uint64_t hash, const std::string &source) {
    auto [begin, end] = entries.equal_range(hash);
    for (auto it = begin; it != end; ++it)
      if (it->second.first == source) return &it->second.second;
    return nullptr;
  }
};

Cache &cache() {
  static Cache c;
  return c;
}

// A text a library hands out as its size, NUL included (`size`, false on failure), and a copy
// into memory of that size (`get`): without the NUL; "" when there is none.
template <class Size, class Get> std::string text(Size size, Get get) {
  size_t n = 0;
  if (!size(&n) || n <= 1) return "";
  std::string s(n, '\0');
  get(s.data());
  s.resize(n - 1);
  return s;
}

// A compiler's log for an error: its first 2,000 characters.
std::string shortLog(std::string log) {
  if (log.size() > 2000) log = log.substr(0, 2000) + "\n...";
  return log;
}

// NVRTC: the source to PTX for kPtxArchitecture.
Expected<std::string> compilePtx(const KernelSource &kernel) {
  Expected<const Nvrtc *> api = nvrtc();
  if (!api) return api.status();
  const Nvrtc &n = **api;
  nvrtcProgram program = nullptr;
  nvrtcResult r = n.createProgram(&program, kernel.source.c_str(), "ferry_kernel.cu", 0, nullptr, nullptr);
  if (r != NVRTC_SUCCESS)
    return makeError("internal", std::string("NVRTC cannot create a program: ") + n.getErrorString(r));
  std::unique_ptr<nvrtcProgram, void (*)(nvrtcProgram *)> guard(&program, [](nvrtcProgram *p) {
    if (Expected<const Nvrtc *> a = nvrtc(); a) (*a)->destroyProgram(p);
  });
  const std::string arch = std::string("--gpu-architecture=") + kPtxArchitecture;
  const char *options[] = {arch.c_str(), "-std=c++17"};
  r = n.compileProgram(program, 2, options);
  if (r != NVRTC_SUCCESS) {
    std::string log =
        text([&](size_t *size) { return n.getProgramLogSize(program, size) == NVRTC_SUCCESS; },
             [&](char *to) { n.getProgramLog(program, to); });
    return makeError("internal", std::string("NVRTC rejected a generated kernel (") +
                                     n.getErrorString(r) + "):\n" + shortLog(std::move(log)));
  }
  std::string ptx = text([&](size_t *size) { return n.getPTXSize(program, size) == NVRTC_SUCCESS; },
                         [&](char *to) { n.getPTX(program, to); });
  if (ptx.empty()) return makeError("internal", "NVRTC gave no PTX");
  return ptx;
}

// nvJitLink: `ptx` to a cubin for `arch` ("sm_80").
Expected<std::string> compileCubin(const std::string &ptx, const std::string &arch) {
  Expected<const NvJitLink *> api = nvJitLink();
  if (!api) return api.status();
  const NvJitLink &l = **api;
  const std::string option = "-arch=" + arch;
  const char *options[] = {option.c_str()};
  nvJitLinkHandle handle = nullptr;
  nvJitLinkResult r = l.create(&handle, 1, options);
  if (r != NVJITLINK_SUCCESS)
    return makeError("internal", "nvJitLink cannot start a link for " + arch + " (error " +
                                     std::to_string(static_cast<int>(r)) + ")");
  std::unique_ptr<nvJitLinkHandle, void (*)(nvJitLinkHandle *)> guard(
      &handle, [](nvJitLinkHandle *h) {
        if (Expected<const NvJitLink *> a = nvJitLink(); a) (*a)->destroy(h);
      });
  r = l.addData(handle, NVJITLINK_INPUT_PTX, ptx.data(), ptx.size(), "ferry_kernel.ptx");
  if (r == NVJITLINK_SUCCESS) r = l.complete(handle);
  if (r != NVJITLINK_SUCCESS) {
    std::string log =
        text([&](size_t *size) { return l.getErrorLogSize(handle, size) == NVJITLINK_SUCCESS; },
             [&](char *to) { l.getErrorLog(handle, to); });
    return makeError("internal", "nvJitLink cannot compile a generated kernel's PTX for " + arch +
                                     " (error " + std::to_string(static_cast<int>(r)) + "):\n" +
                                     shortLog(std::move(log)));
  }
  size_t size = 0;
  if (l.getLinkedCubinSize(handle, &size) != NVJITLINK_SUCCESS || size == 0)
    return makeError("internal", "nvJitLink gave no cubin for " + arch);
  std::string cubin(size, '\0');
  l.getLinkedCubin(handle, cubin.data());
  return cubin;
}

}  // namespace

Expected<CompiledKernel> compileKernel(const KernelSource &kernel, bool cubins) {
  const uint64_t hash = kernel.hash();
  Cache &c = cache();
  CompiledKernel made;
  bool cachedPtx = false;
  {
    std::lock_guard lock(c.mutex);
    if (const CompiledKernel *e = c.find(hash, kernel.source)) {
      if (!cubins || !e->cubinSm80.empty()) {
        ++c.stats.hits;
        return cubins ? *e : CompiledKernel{e->ptx, {}, {}};
      }
      made.ptx = e->ptx;
      cachedPtx = true;
    }
  }
  if (!cachedPtx) {
    Expected<std::string> ptx = compilePtx(kernel);
    if (!ptx) return ptx.status();
    made.ptx = std::move(*ptx);
  }
  if (cubins) {
    for (auto [arch, cubin] :
         {std::pair{"sm_80", &made.cubinSm80}, std::pair{"sm_90", &made.cubinSm90}}) {
      Expected<std::string> image = compileCubin(made.ptx, arch);
      if (!image) return image.status();
      *cubin = std::move(*image);
    }
  }
  std::lock_guard lock(c.mutex);
  ++(cachedPtx ? c.stats.hits : c.stats.compiled);
  if (cubins) ++c.stats.cubins;
  // Another thread may have compiled the same source meanwhile: one entry, with the cubins.
  if (CompiledKernel *e = c.find(hash, kernel.source)) {
    if (cubins && e->cubinSm80.empty()) *e = made;
  } else {
    c.entries.emplace(hash, std::make_pair(kernel.source, made));
  }
  return made;
}

Expected<std::string> compileToPtx(const KernelSource &kernel) {
  Expected<CompiledKernel> compiled = compileKernel(kernel, false);
  if (!compiled) return compiled.status();
  return std::move(compiled->ptx);
}

CompileCacheStats compileCacheStats() {
  std::lock_guard lock(cache().mutex);
  return cache().stats;
}

}  // namespace ferry::cuda
