// backends/cpu/parallel.h — internal: the CPU kernels' thread pool.
//
// One pool per process (Eigen's non-blocking ThreadPool), sized to the machine, or to
// FERRY_NUM_THREADS when set. Kernels split their outer loop with parallelFor; a call made from
// inside a pool thread (nested) runs inline, so the pool never waits on itself. It is the only
// pool: OpenBLAS is set to one thread per call and GEMMs are split into panels here
// (backends/cpu/linalg.cpp), so two sets of threads never compete for the cores.
#pragma once

#include <cstdint>
#include <functional>

namespace ferry::cpu {

/// Threads in the pool (at least 1).
int poolThreads();

/// Calls body(begin, end) over disjoint ranges covering [0, n), each at least `grain` long
/// (except the last), on the pool and the calling thread; returns when all are done. Small n
/// (n < 2 * grain) runs inline.
void parallelFor(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)> &body);

}  // namespace ferry::cpu
