// backends/cpu/parallel.cpp — parallelFor over Eigen's ThreadPool.
#define EIGEN_USE_THREADS
#include "backends/cpu/parallel.h"

#include <algorithm>
#include <atomic>
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
    void run(int64_t c) noexcept {
      try {
        body(c * chunk, std::min(n, (c + 1) * chunk));
      } catch (...) {
        if (!failed.exchange(true)) error = std::current_exception();
      }
    }
  } shared{body, n, chunk, &done};
  for (int64_t c = 1; c < chunks; ++c) {
    p.Schedule([s = &shared, c] {
      s->run(c);
      s->done->Notify();
    });
  }
  shared.run(0);
  done.Wait();
  if (shared.error) std::rethrow_exception(shared.error);
}

}  // namespace ferry::cpu
