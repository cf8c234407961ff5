// backends/cpu/parallel.cpp — parallelFor over Eigen's ThreadPool.
#define EIGEN_USE_THREADS
#include "backends/cpu/parallel.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <thread>
#include <unsupported/Eigen/CXX11/ThreadPool>

#include "backends/cpu/num_threads.h"

namespace ferry::cpu {

namespace {

// FERRY_NUM_THREADS or the core count; a bad value is ignored with a warning. The pool is made
// once, so the warning is printed once.
int threadsWanted() {
  std::string warning;
  const int n =
      resolveNumThreads(std::getenv(kNumThreadsEnv), std::thread::hardware_concurrency(), warning);
  if (!warning.empty()) std::fprintf(stderr, "ferry: warning: %s\n", warning.c_str());
  return n;
}

// Read once (the warning too).
int wantedThreads() {
  static const int n = threadsWanted();
  return n;
}

// The calling thread works too, so the pool holds one thread fewer than wanted (Eigen's pool
// needs one: with 1 wanted it is never given work, poolThreads() says 1).
Eigen::ThreadPool &pool() {
  static Eigen::ThreadPool instance(std::max(1, wantedThreads() - 1));
  return instance;
}

// How long parallelFor's caller spins for the pool's chunks before it sleeps on the barrier. A
// chunk ending just after the caller's would otherwise cost a futex wake-up of the caller, tens
// of microseconds on a VM: the MLP at batch 1 took 0.06 or 0.09 ms from one run to the next on
// two threads, and steadily 0.06 with the spin (bench/README.md, "The caller spins").
constexpr auto kSpin = std::chrono::microseconds(30);

inline void spinPause() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#else
  std::this_thread::yield();
#endif
}

}  // namespace

int poolThreads() { return std::min(pool().NumThreads() + 1, wantedThreads()); }

void parallelFor(int64_t n, int64_t grain, RangeFn body) {
  if (n <= 0) return;
  grain = std::max<int64_t>(grain, 1);
  Eigen::ThreadPool &p = pool();
  const int64_t maxChunks = std::min<int64_t>(n / grain, poolThreads());
  if (maxChunks < 2 || p.CurrentThreadId() != -1) {
    body(0, n);
    return;
  }
  const int64_t chunk = (n + maxChunks - 1) / maxChunks;
  const int64_t chunks = (n + chunk - 1) / chunk;
  Eigen::Barrier done(static_cast<unsigned>(chunks - 1));
  // Each task captures one pointer and its chunk index: small enough for std::function's inline
  // storage, so scheduling allocates nothing. An exception (std::bad_alloc out of a body) must
  // not leave a worker, which would terminate the process, nor leave this frame before every
  // chunk is done with `shared`: each chunk catches its own, the first is rethrown here at the end.
  struct Shared {
    RangeFn body;
    int64_t n, chunk;
    Eigen::Barrier *done;
    std::atomic<bool> failed{false};
    std::exception_ptr error;
    std::atomic<int64_t> pending;  // chunks of the pool not done yet
    void run(int64_t c) noexcept {
      try {
        body(c * chunk, std::min(n, (c + 1) * chunk));
      } catch (...) {
        if (!failed.exchange(true)) error = std::current_exception();
      }
    }
  } shared{body, n, chunk, &done, {false}, {}, {chunks - 1}};
  for (int64_t c = 1; c < chunks; ++c) {
    p.Schedule([s = &shared, c] {
      s->run(c);
      s->pending.fetch_sub(1, std::memory_order_release);
      s->done->Notify();
    });
  }
  shared.run(0);
  if (shared.pending.load(std::memory_order_acquire) > 0) {
    const auto until = std::chrono::steady_clock::now() + kSpin;
    do {
      for (int i = 0; i < 16; ++i) spinPause();
    } while (shared.pending.load(std::memory_order_acquire) > 0 && std::chrono::steady_clock::now() < until);
  }
  done.Wait();
  if (shared.error) std::rethrow_exception(shared.error);
}

}  // namespace ferry::cpu
