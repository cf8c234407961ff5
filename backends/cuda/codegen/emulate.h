// backends/cuda/codegen/emulate.h — runs generated CUDA kernels on the host, for tests.
//
// A generated source (kernel_source.h) compiles as host C++ when this header comes first and
// FERRY_EMULATE is defined: the builtin variables (threadIdx, blockIdx, blockDim, gridDim) are
// thread-locals, `__shared__` arrays are statics (blocks run one after another, so a block's
// threads share them), the CUDA math functions are <cmath>'s, and __syncthreads is a barrier of
// the block's threads. A launch runs the grid's blocks in order; a kernel that synchronizes runs
// each block's threads as host threads (KernelSource::blockSync), any other runs them one after
// another on the calling thread. Slow, exact in what it checks: the generated text is the text
// NVRTC compiles.
#pragma once

#ifndef FERRY_EMULATE
#define FERRY_EMULATE 1
#endif

#include <math.h>

#include <barrier>
#include <cstddef>
#include <thread>
#include <utility>
#include <vector>

struct ferry_dim3 {
  unsigned x = 1, y = 1, z = 1;
};
inline thread_local ferry_dim3 threadIdx, blockIdx, blockDim, gridDim;
inline std::barrier<> *ferry_emulate_barrier = nullptr;

#define __shared__ static
#define __global__
#define __device__
#define __forceinline__ inline

inline void __syncthreads() { ferry_emulate_barrier->arrive_and_wait(); }
inline unsigned atomicOr(unsigned *address, unsigned value) {
  return __atomic_fetch_or(address, value, __ATOMIC_RELAXED);
}

namespace ferry_emulate {

template <class... P, size_t... I>
void call(void (*kernel)(P...), void **args, std::index_sequence<I...>) {
  kernel(*static_cast<P *>(args[I])...);
}

/// Runs `kernel` over `blocks` blocks of `threads` threads; args[i] points at parameter i.
template <class... P>
void launch(void (*kernel)(P...), long long blocks, int threads, bool blockSync, void **args) {
  for (long long b = 0; b < blocks; ++b) {
    auto thread = [&](unsigned t) {
      gridDim = {static_cast<unsigned>(blocks), 1, 1};
      blockDim = {static_cast<unsigned>(threads), 1, 1};
      blockIdx = {static_cast<unsigned>(b), 0, 0};
      threadIdx = {t, 0, 0};
      call(kernel, args, std::index_sequence_for<P...>{});
    };
    if (!blockSync) {
      for (int t = 0; t < threads; ++t) thread(static_cast<unsigned>(t));
      continue;
    }
    std::barrier<> barrier(threads);
    ferry_emulate_barrier = &barrier;
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t) pool.emplace_back(thread, static_cast<unsigned>(t));
    for (std::thread &t : pool) t.join();
    ferry_emulate_barrier = nullptr;
  }
}

}  // namespace ferry_emulate
