// backends/cpu/math_impl.h — internal: what the float kernels share: the compute type of a
// floating dtype, block conversions between a tensor and a buffer of that type, vectorised exp.
#pragma once

#include <Eigen/Core>
#include <cmath>
#include <type_traits>

#include "backends/cpu/kernels.h"
#include "backends/cpu/vmath.h"
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

/// x[i] = e^x[i] for i < n, in place: vmath's SLEEF exp (1 ulp, vectorised for the CPU's widest
/// ISA, down through the subnormals to 0).
template <class C> void expInPlace(C *x, int64_t n) {
  static_assert(std::is_floating_point_v<C>);
  if constexpr (std::is_same_v<C, float>)
    expF32(x, x, n);
  else
    expF64(x, x, n);
}

}  // namespace ferry::cpu
