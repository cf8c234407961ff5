// backends/cpu/normalize_impl.h — internal: what the normalisation (normalize.cpp) and
// reduction (reduce.cpp) kernels share: block sizes, the loop a prepared kernel runs, blockwise
// sums.
#pragma once

#include <Eigen/Core>
#include <algorithm>
#include <type_traits>

#include "backends/cpu/kernels.h"
#include "backends/cpu/math_impl.h"

namespace ferry::cpu::norm {

constexpr int64_t kBlock = 1024;     // elements converted, or reduced into one float, at a time
constexpr int64_t kGrain = 1 << 15;  // elements of work below which a chunk is not worth a thread
// Stack blocks are aligned as the scratch arena's pieces are: Eigen computes the elements before
// the first aligned address one at a time (a sum then adds in another order, exp and log take
// their scalar versions), so a block's alignment must not depend on where a thread's stack is.
constexpr size_t kAlign = 64;

template <class C> using Array = Eigen::Array<C, Eigen::Dynamic, 1>;
template <class C> using ArrayMap = Eigen::Map<Array<C>>;
template <class C> using ConstMap = Eigen::Map<const Array<C>>;

// A launch's loop: what prepare worked out (G), applied to one call's tensors.
template <class G> using Loop = Status (*)(const G &, const KernelCall &);

// The kernel whose launches run `loop` on `g`, which it holds.
template <class G>
Expected<std::unique_ptr<Kernel>> launching(const StepSpec &step, G g,
                                            std::type_identity_t<Loop<G>> loop) {
  return stepKernel(step,
                    [g = std::move(g), loop](const KernelCall &call) { return loop(g, call); });
}

// The loop of a step with nothing to compute (an empty tensor).
template <class G> Status nothing(const G &, const KernelCall &) { return Status(); }

// Calls f(S{}) with S the C++ type storing a bool or integer `dtype` (bool as uint8_t).
template <class F> decltype(auto) withIntegral(DType dtype, F &&f) {
  switch (dtype) {
    case DType::I8: return f(int8_t{});
    case DType::I32: return f(int32_t{});
    case DType::I64: return f(int64_t{});
    default: return f(uint8_t{});  // bool, u8
  }
}

// Sum of `n` elements of `v` from `at`: blocks in C, vectorised, added up in double.
template <class C> double sumOf(const TensorView &v, int64_t at, int64_t n, C *buf) {
  double s = 0;
  for (int64_t b = 0; b < n; b += kBlock) {
    const int64_t m = std::min(kBlock, n - b);
    s += static_cast<double>(ConstMap<C>(loadAs(v, at + b, m, buf), m).sum());
  }
  return s;
}

}  // namespace ferry::cpu::norm
