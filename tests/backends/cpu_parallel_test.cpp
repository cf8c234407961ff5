// tests/backends/cpu_parallel_test.cpp — parallelFor under an exception: a body that throws
// (std::bad_alloc out of a kernel that allocates) on a pool worker or on the calling thread.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <new>
#include <thread>

#include "backends/cpu/parallel.h"

namespace ferry::cpu {
namespace {

// A throw on a worker reaches the caller instead of terminating the process; a throw on the
// calling thread comes back only once the workers' ranges have run (they use its frame). The
// pool works afterwards.
TEST(ParallelFor, AnExceptionOnAnyThreadReachesTheCallerOnceAllRangesAreDone) {
  if (poolThreads() < 2) GTEST_SKIP() << "the pool has no worker thread (FERRY_NUM_THREADS=1)";
  constexpr int64_t n = 1 << 16;
  const std::thread::id caller = std::this_thread::get_id();
  for (bool throwOnWorker : {true, false}) {
    std::atomic<int64_t> covered{0};
    try {
      parallelFor(n, 1, [&](int64_t begin, int64_t end) {
        const bool onWorker = std::this_thread::get_id() != caller;
        if (onWorker && !throwOnWorker) std::this_thread::sleep_for(std::chrono::milliseconds(50));
        covered += end - begin;
        if (onWorker == throwOnWorker) throw std::bad_alloc();
      });
      ADD_FAILURE() << "no exception came back (thrown on "
                    << (throwOnWorker ? "a worker" : "the caller") << ")";
    } catch (const std::bad_alloc &) {
      EXPECT_EQ(covered.load(), n) << "parallelFor returned before every range ran (thrown on "
                                   << (throwOnWorker ? "a worker" : "the caller") << ")";
    }
  }
  std::atomic<int64_t> sum{0};
  parallelFor(1000, 1, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) sum += i;
  });
  EXPECT_EQ(sum.load(), 999 * 1000 / 2);
}

}  // namespace
}  // namespace ferry::cpu
