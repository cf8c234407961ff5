// backends/cpu/math_impl.h — internal: vectorised maths the CPU kernels share.
#pragma once

#include <Eigen/Core>
#include <cmath>
#include <type_traits>

namespace ferry::cpu {

/// exp of an Eigen float or double array expression, vectorised and correct down to 0. Eigen's
/// exp clamps its argument (float below -88.7 gives 2.9e-39, double below -708.4 gives
/// 5.6e-309) where the true result is a smaller subnormal or 0; such lanes are computed as
/// exp(x + k) * exp(-k), which underflows as the true value does.
template <class A> auto exactExp(const Eigen::ArrayBase<A> &x) {
  using C = typename A::Scalar;
  static_assert(std::is_floating_point_v<C>);
  constexpr bool single = std::is_same_v<C, float>;
  const C lo = single ? C(-80) : C(-700), k = single ? C(32) : C(64);
  const C shrink = std::exp(-k);
  const auto low = (x < lo).template cast<C>();  // 1 where the argument is below lo, else 0
  // low * shrink + (1 - low) is exactly shrink or 1 (one term is 0).
  return (x + low * k).exp() * (low * shrink + (C(1) - low));
}

}  // namespace ferry::cpu
