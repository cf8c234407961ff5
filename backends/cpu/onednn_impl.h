// backends/cpu/onednn_impl.h — internal to onednn_gemm.cpp and onednn_conv.cpp (built with
// FERRY_ONEDNN only): the engine, the one-OpenMP-thread rule, statuses, per-thread streams and
// scratch, and memory handles for one launch.
#pragma once

#include <array>
#include <cstddef>
#include <memory>
#include <new>
#include <stdexcept>
#include <string>
#include <oneapi/dnnl/dnnl.hpp>

#include "backends/cpu/parallel.h"
#include "ir/status.h"

// libgomp's (libdnnl's own OpenMP runtime), declared here rather than through omp.h, which
// only GCC ships.
extern "C" int omp_get_max_threads(void);
extern "C" void omp_set_num_threads(int);

namespace ferry::cpu::onednn {

// oneDNN threads with OpenMP: one OpenMP thread on this thread while it calls oneDNN, so no team
// starts (see onednn_gemm.h). The thread's own setting comes back when the guard goes: the
// calling thread may be the app's, and its OpenMP regions are its own business.
class OneOmpThread {
 public:
  OneOmpThread() : before_(omp_get_max_threads()) {
    if (before_ != 1) omp_set_num_threads(1);
  }
  ~OneOmpThread() {
    if (before_ != 1) omp_set_num_threads(before_);
  }
  OneOmpThread(const OneOmpThread &) = delete;
  OneOmpThread &operator=(const OneOmpThread &) = delete;

 private:
  int before_;
};

inline const dnnl::engine &cpuEngine() {
  static const dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

// The C API's view of a memory descriptor (a struct in 2.x, a handle from 3.0 on).
#if DNNL_VERSION_MAJOR >= 3
inline const_dnnl_memory_desc_t cDesc(const dnnl::memory::desc &d) { return d.get(); }
#else
inline const dnnl_memory_desc_t *cDesc(const dnnl::memory::desc &d) { return &d.data; }
#endif

// A oneDNN call that failed for another reason than memory: thrown by check() (from a pool thread
// too: parallelFor rethrows it), turned into an "internal" error by the kernel's run().
class OnednnFailure : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A status that is not success: out of memory as std::bad_alloc (what the runtime turns into a
// "memory" error), anything else as OnednnFailure.
inline void check(dnnl_status_t status, const char *what) {
  if (status == dnnl_success) return;
  if (status == dnnl_out_of_memory) throw std::bad_alloc();
  throw OnednnFailure(std::string("oneDNN: ") + what + " failed (dnnl_status_t " +
                      std::to_string(static_cast<int>(status)) + ")");
}

// This thread's oneDNN stream and scratchpad (user-managed: made once per thread, grown when a
// larger kernel first needs more).
struct ThreadState {
  dnnl::stream stream{cpuEngine()};
  std::unique_ptr<std::byte[]> scratch;
  size_t scratchBytes = 0;

  std::byte *scratchOf(size_t bytes) {
    if (bytes > scratchBytes) {
      scratch.reset();
      scratchBytes = 0;
      scratch.reset(new std::byte[bytes]);
      scratchBytes = bytes;
    }
    return scratch.get();
  }
};

inline ThreadState &threadState() {
  thread_local ThreadState state;
  return state;
}

// Memory handles for one launch, destroyed on every way out.
class Handles {
 public:
  Handles() = default;
  Handles(const Handles &) = delete;
  Handles &operator=(const Handles &) = delete;
  ~Handles() {
    for (size_t i = 0; i < count_; ++i) dnnl_memory_destroy(args_[i].memory);
  }
  void add(int arg, const dnnl::memory::desc &desc, const void *data) {
    dnnl_memory_t memory = nullptr;
    check(dnnl_memory_create(&memory, cDesc(desc), cpuEngine().get(), const_cast<void *>(data)),
          "dnnl_memory_create");
    args_[count_++] = {arg, memory};
  }
  const dnnl_exec_arg_t *args() const { return args_.data(); }
  int count() const { return static_cast<int>(count_); }

 private:
  std::array<dnnl_exec_arg_t, 5> args_{};
  size_t count_ = 0;
};


// The bytes at `from`, in the layout `plain`, copied into a new memory of the layout `packed`;
// null when oneDNN cannot (std::bad_alloc when memory runs out), by a oneDNN reorder on this
// thread.
inline std::shared_ptr<const dnnl::memory> pack(const dnnl::memory::desc &plain, const void *from,
                                                const dnnl::memory::desc &packed) {
  try {
    dnnl::memory source(plain, cpuEngine(), const_cast<void *>(from));
    auto copy = std::make_shared<dnnl::memory>(packed, cpuEngine());
    dnnl::stream stream(cpuEngine());
    dnnl::reorder(source, *copy).execute(stream, source, *copy);
    stream.wait();
    return copy;
  } catch (const dnnl::error &e) {
    if (e.status == dnnl_out_of_memory) throw std::bad_alloc();
    return nullptr;  // the caller keeps the weight as it lies
  }
}

// Runs `panel(i)` for every panel i of `count`: on this thread when there is one, else one
// per chunk of the pool. A oneDNN failure is an "internal" error (out of memory stays
// std::bad_alloc).
template <class F> Status forEachPanel(size_t count, const F &panel) {
  try {
    if (count == 1) {
      panel(size_t{0});
      return Status();
    }
    parallelFor(static_cast<int64_t>(count), 1, [&](int64_t from, int64_t to) {
      for (int64_t i = from; i < to; ++i) panel(static_cast<size_t>(i));
    });
  } catch (const OnednnFailure &e) {
    return makeError("internal", e.what());
  }
  return Status();
}

// The error of a launch given another weight than the one its kernel packed (`what`: "GEMM").
inline Status movedWeight(const char *what) {
  return makeError("internal", std::string("a oneDNN ") + what +
                                   " packed its weight from another address than the one it is "
                                   "given (StepSpec::constants: a weight must not move)");
}

}  // namespace ferry::cpu::onednn
