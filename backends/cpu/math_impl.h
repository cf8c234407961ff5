// backends/cpu/math_impl.h — internal: what the float kernels share: the compute type of a
// floating dtype, block conversions between a tensor and a buffer of that type, vectorised exp.
#pragma once

#include <Eigen/Core>
#include <cmath>
#include <type_traits>

#include "backends/cpu/kernels.h"
#include "ir/tensor_data.h"

namespace ferry::cpu {

/// The dtype of a compute type: f64 for double, f32 for float.
template <class C> constexpr DType kDType = std::is_same_v<C, double> ? DType::F64 : DType::F32;

/// Calls f(C{}) with C the type a floating `dtype` computes in: double for f64, else float.
template <class F> decltype(auto) withFloat(DType dtype, F &&f) {
  return dtype == DType::F64 ? f(double{}) : f(float{});
}

/// `n` elements of `v` from element `at` as C: in place when `v` holds C, else converted into
/// buf.
template <class C> const C *loadAs(const TensorView &v, int64_t at, int64_t n, C *buf) {
  if (v.type->dtype == kDType<C>) return reinterpret_cast<const C *>(v.data) + at;
  convertElements(v.type->dtype, v.data + at * static_cast<int64_t>(dtypeSize(v.type->dtype)),
                  kDType<C>, reinterpret_cast<std::byte *>(buf), static_cast<size_t>(n));
  return buf;
}

/// Where `n` result elements from `at` are computed: the result itself when it holds C, else
/// buf.
template <class C> C *outAs(const TensorView &r, int64_t at, C *buf) {
  return r.type->dtype == kDType<C> ? reinterpret_cast<C *>(r.data) + at : buf;
}

/// Stores what outAs handed out (nothing to do when that was the result itself).
template <class C> void storeAs(const TensorView &r, int64_t at, int64_t n, const C *from) {
  if (r.type->dtype == kDType<C>) return;
  convertElements(kDType<C>, reinterpret_cast<const std::byte *>(from), r.type->dtype,
                  r.data + at * static_cast<int64_t>(dtypeSize(r.type->dtype)),
                  static_cast<size_t>(n));
}

/// exp of an Eigen float or double array expression, vectorised and correct down to 0. Eigen's
/// exp clamps its argument (float below -88.7 gives 2.9e-39, double below -708.4 gives
/// 5.6e-309) where the true result is a smaller subnormal or 0; such lanes are computed as
/// exp(x + k) * exp(-k), which underflows as the true value does.
///
/// The lane mask is built from min/max, not a comparison: Eigen 3.4 evaluates comparisons and
/// select() one scalar at a time, which made this 4× slower than the exp itself.
template <class A> auto exactExp(const Eigen::ArrayBase<A> &x) {
  using C = typename A::Scalar;
  static_assert(std::is_floating_point_v<C>);
  constexpr bool single = std::is_same_v<C, float>;
  const C lo = single ? C(-80) : C(-700), k = single ? C(32) : C(64);
  const C shrink = std::exp(-k);
  // 1 where the argument is below lo, else 0: lo - x is then at least one ulp of lo (> 1e-13),
  // which the scale takes past 1. NaN and infinities come out right: NaN stays NaN through
  // x + low * k, -inf gives exp(-inf) = 0 and +inf gives low = 0.
  const auto low = ((lo - x) * C(1e30)).min(C(1)).max(C(0));
  // low * shrink + (1 - low) is exactly shrink or 1 (one term is 0).
  return (x + low * k).exp() * (low * shrink + (C(1) - low));
}

}  // namespace ferry::cpu
