// backends/cuda/nvrtc.cpp — NVRTC compilation and its cache (nvrtc.h).
#include "backends/cuda/nvrtc.h"

#include <memory>
#include <mutex>
#include <unordered_map>

#include "backends/cuda/libraries.h"

namespace ferry::cuda {

namespace {

struct Cache {
  std::mutex mutex;
  // hash -> (source, ptx): the source is compared too, so a hash collision costs a compile.
  std::unordered_multimap<uint64_t, std::pair<std::string, std::string>> entries;
  PtxCacheStats stats;
};

Cache &cache() {
  static Cache c;
  return c;
}

}  // namespace

Expected<std::string> compileToPtx(const KernelSource &kernel) {
  const uint64_t hash = kernel.hash();
  Cache &c = cache();
  {
    std::lock_guard lock(c.mutex);
    auto [begin, end] = c.entries.equal_range(hash);
    for (auto it = begin; it != end; ++it)
      if (it->second.first == kernel.source) {
        ++c.stats.hits;
        return it->second.second;
      }
  }
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
    size_t size = 0;
    std::string log;
    if (n.getProgramLogSize(program, &size) == NVRTC_SUCCESS && size > 1) {
      log.resize(size);
      n.getProgramLog(program, log.data());
      log.resize(size - 1);
    }
    if (log.size() > 2000) log = log.substr(0, 2000) + "\n...";
    return makeError("internal", std::string("NVRTC rejected a generated kernel (") +
                                     n.getErrorString(r) + "):\n" + log);
  }
  size_t size = 0;
  if (n.getPTXSize(program, &size) != NVRTC_SUCCESS || size == 0)
    return makeError("internal", "NVRTC gave no PTX");
  std::string ptx(size, '\0');
  n.getPTX(program, ptx.data());
  ptx.resize(size - 1);  // the terminating NUL
  std::lock_guard lock(c.mutex);
  ++c.stats.compiled;
  c.entries.emplace(hash, std::make_pair(kernel.source, ptx));
  return ptx;
}

PtxCacheStats ptxCacheStats() {
  std::lock_guard lock(cache().mutex);
  return cache().stats;
}

}  // namespace ferry::cuda
