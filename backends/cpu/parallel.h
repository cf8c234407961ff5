// backends/cpu/parallel.h — internal: the CPU kernels' thread pool.
//
// One pool per process (Eigen's non-blocking ThreadPool), sized to the machine, or to
// FERRY_NUM_THREADS when set. Kernels split their outer loop with parallelFor; a call made from
// inside a pool thread (nested) runs inline, so the pool never waits on itself. It is the only
// pool: OpenBLAS is set to one thread per call and GEMMs are split into panels here
// (backends/cpu/linalg.cpp), so two sets of threads never compete for the cores.
#pragma once

#include <cstdint>
#include <type_traits>
#include <utility>

namespace ferry::cpu {

/// Threads in the pool (at least 1).
int poolThreads();

/// A non-owning reference to a callable `void(int64_t, int64_t)`: unlike std::function it never
/// allocates, so a kernel that splits its loop over the pool allocates nothing.
class RangeFn {
 public:
  template <class F, class = std::enable_if_t<!std::is_same_v<std::decay_t<F>, RangeFn>>>
  RangeFn(F &&f)  // NOLINT: implicit, as std::function is
      : object_(const_cast<void *>(static_cast<const void *>(&f))),
        call_([](void *o, int64_t b, int64_t e) { (*static_cast<std::remove_reference_t<F> *>(o))(b, e); }) {}
  void operator()(int64_t begin, int64_t end) const { call_(object_, begin, end); }

 private:
  void *object_;
  void (*call_)(void *, int64_t, int64_t);
};

/// Calls body(begin, end) over disjoint ranges covering [0, n), each at least `grain` long
/// (except the last), on the pool and the calling thread; returns when all are done (the caller,
/// done with its own range, spins up to 30 us for the others before it sleeps). Small n
/// (n < 2 * grain) runs inline. Allocates nothing. An exception out of `body` on any thread is
/// rethrown here, once every range is done (the first one thrown, if several).
void parallelFor(int64_t n, int64_t grain, RangeFn body);

}  // namespace ferry::cpu
