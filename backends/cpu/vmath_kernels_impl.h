// backends/cpu/vmath_kernels_impl.h — internal to vmath: the functions of vmath.h written once
// over an ISA's traits, and the per-ISA tables vmath.cpp dispatches to.
//
// Included by one translation unit per ISA (vmath.cpp for the scalar loop, vmath_avx2.cpp,
// vmath_avx512.cpp), each compiled with its own -m flags. Everything here is a template in an
// anonymous namespace, and the traits use only intrinsics and SLEEF: no inline function of a
// shared header (std::, Eigen) is instantiated in an AVX TU, where the linker could pick its
// AVX-512 copy for the whole program and crash an AVX2 machine.
//
// A traits type T gives: S (float or double), V (a vector of kWidth S, or S itself), splat,
// load, store, abs, sqrt, fma (fused: the error-free products below rely on it) and SLEEF's
// exp/log/tanh/erf (u10) and erfc (u15); f32 traits also any (a lane nonzero) and geluErfWide
// (gelu computed in f64, for inputs whose erfc is subnormal in f32). Compares and `?:` on V are GCC's vector extensions
// (plain bool and ?: for the scalar traits). These TUs build with -ffp-contract=off: the
// two-sum and two-product steps must not be fused behind our back.
#pragma once

#include <cstdint>

#include "backends/cpu/vmath.h"

namespace ferry::cpu {

/// The tables of the vector ISAs, from their own TUs (only called when the CPU has the ISA).
const VmathTable &vmathTableAvx2();
const VmathTable &vmathTableAvx512();

namespace {

// Constants as an unevaluated sum hi + lo of two S, from long double (11 more bits than double:
// enough for the few ulp of f64 the corrections below need).
template <class S> struct Split {
  S hi, lo;
  constexpr explicit Split(long double v) : hi(static_cast<S>(v)), lo(static_cast<S>(v - static_cast<long double>(static_cast<S>(v)))) {}
};
constexpr long double kInvSqrt2 = 0.707106781186547524400844362104849039L;
constexpr long double kSqrt2OverPi = 0.797884560802865355879892119868763737L;
constexpr long double kGeluCubic = 0.044715L;
// exp's argument is shifted by kShift (exactly: see shiftedExp) and the result scaled by
// e^-kShift where e^x alone would be subnormal.
template <class S> constexpr S kShift = sizeof(S) == 4 ? 64 : 512;
template <class S>
constexpr long double kExpMinusShift =
    sizeof(S) == 4 ? 1.603810890548637852976087034142335381e-28L
                   : 4.377491037053051454121472762902187264e-223L;

template <class T> struct Kernels {
  using S = typename T::S;
  using V = typename T::V;

  static V one() { return T::splat(S(1)); }
  static V zero() { return T::splat(S(0)); }
  // v where it is a number, else 0: a correction term that went NaN on infinite input.
  static V finiteOr0(V v) { return v == v ? v : zero(); }

  static V exp(V x) { return T::exp(x); }
  static V log(V x) { return T::log(x); }
  static V tanh(V x) { return T::tanh(x); }
  static V erf(V x) { return T::erf(x); }
  static V sqrt(V x) { return T::sqrt(x); }
  static V rsqrt(V x) { return one() / T::sqrt(x); }

  // e = e^-|x| never overflows; for x < 0, sigmoid = e / (1 + e), which keeps the tiny results
  // that 1 / (1 + e^-x) loses to e^-x = inf.
  static V sigmoid(V x) {
    const V e = T::exp(-T::abs(x));
    const V num = x >= zero() ? one() : e;
    return num / (one() + e);
  }

  // e^a for a <= 0, or, where it would be subnormal (a < -kShift), e^(a + kShift): that sum is
  // exact for a in [-2 kShift, -kShift) (a multiple of ulp(a) with a smaller magnitude), and
  // below -2 kShift every result underflows anyway. The caller scales by e^-kShift once its
  // result is formed, so a tiny result keeps its bits.
  struct Shifted {
    V e, shifted;  // shifted: 1 in the lanes whose e is e^(a + kShift), else 0
  };
  static Shifted shiftedExp(V a) {
    const V k = T::splat(kShift<S>);
    const V shifted = a < -k ? one() : zero();
    return {T::exp(T::fma(shifted, k, a)), shifted};
  }
  // v e^-kShift, rounded once, in the shifted lanes (zeros as they are: c.lo < 0 would turn
  // -0 into +0).
  static V unshift(V v, V shifted) {
    constexpr Split<S> c(kExpMinusShift<S>);
    const V scaled = T::fma(v, T::splat(c.hi), v * T::splat(c.lo));
    return (shifted != zero()) & (v != zero()) ? scaled : v;
  }

  // x / (1 + e^-x), for x < 0 as x e / (1 + e), e = e^x: computed shifted (x e would be
  // subnormal, and lose its bits, below x = -87 in f32 where the result is not).
  static V silu(V x) {
    const Shifted s = shiftedExp(-T::abs(x));
    const V den = s.shifted != zero() ? one() : one() + s.e;  // e < 1e-28: 1 + e = 1
    const V negative = x < zero() ? one() : zero();
    return unshift(x >= zero() ? x / den : (x * s.e) / den, s.shifted * negative);
  }

  // x/2 * erfc(-x / sqrt 2): no cancellation in 1 + erf for x < 0. y = -x / sqrt 2 is carried as
  // yh + yl; for y > 0 the tail erfc(yh + yl) = erfc(yh) (1 - 2 yh yl) to first order (d/dy ln
  // erfc y -> -2y), which matters where gelu is tiny: its relative condition number is ~x^2/2.
  static V geluErfNear(V x) {
    constexpr Split<S> c(kInvSqrt2);
    const V nx = -x;
    const V yh = nx * T::splat(c.hi);
    const V yl = T::fma(nx, T::splat(c.hi), -yh) + nx * T::splat(c.lo);
    const V r = T::erfc(yh);
    const V corr = finiteOr0(yh > zero() ? yh * yl * T::splat(S(-2)) : zero());
    const V fixed = T::fma(r, corr, r);  // NaN only as 0 * inf, where erfc is 0 for huge yh
    return (x * T::splat(S(0.5))) * (fixed == fixed ? fixed : r);
  }
  // erfc(-x / sqrt 2) is subnormal in f32 below x = -13 and has lost bits that the factor x/2
  // then shows: f32 takes those vectors (rare: activations that far out) through f64.
  static V geluErf(V x) {
    const V near = geluErfNear(x);
    if constexpr (requires { T::geluErfWide(x); }) {
      const V far = x < T::splat(S(-12.5)) ? one() : zero();
      if (T::any(far)) return far != zero() ? T::geluErfWide(x) : near;
    }
    return near;
  }

  // 1 + tanh u = 2 sigmoid(2u), so gelu = x sigmoid(2u) with u = k0 x + k1 x^3, computed as
  // sigmoid above (no cancellation for x < 0), with e shifted as in silu. u is carried as uh + ul
  // (error-free products and a two-sum): e^-|2u| = e^-|2uh| (1 -+ 2ul) to first order; the
  // relative condition number of the result in u is ~2|u|, up to 100 where it is not 0.
  static V geluTanh(V x) {
    constexpr Split<S> k0(kSqrt2OverPi), k1(kSqrt2OverPi * kGeluCubic);
    const V x2 = x * x;
    const V x2l = T::fma(x, x, -x2);
    const V x3 = x2 * x;
    const V x3l = T::fma(x2, x, -x3) + x2l * x;
    const V p = T::splat(k1.hi) * x3;
    const V pl = T::fma(T::splat(k1.hi), x3, -p) + (T::splat(k1.hi) * x3l + T::splat(k1.lo) * x3);
    const V q = T::splat(k0.hi) * x;
    const V ql = T::fma(T::splat(k0.hi), x, -q) + T::splat(k0.lo) * x;
    const V uh = p + q;
    const V bb = uh - p;
    const V ul = ((p - (uh - bb)) + (q - bb)) + (pl + ql);
    const V negative = uh < zero() ? one() : zero();
    // -|2u| = -2|uh| - 2 ul sign(uh): the correction's sign follows uh.
    const V corr = finiteOr0((one() - negative - negative) * ul * T::splat(S(-2)));
    const Shifted s = shiftedExp(T::abs(uh) * T::splat(S(-2)));
    const V e = T::fma(s.e, corr, s.e);
    const V den = s.shifted != zero() ? one() : one() + e;
    return unshift(x * ((negative != zero() ? e : one()) / den), s.shifted * negative);
  }

  // y[i] = F(x[i]) a vector at a time; the last n % kWidth elements through a padded vector
  // (padding 1: in the domain of every function, so no spurious work on NaN or inf).
  template <V (*F)(V)> static void apply(const S *x, S *y, int64_t n) {
    constexpr int64_t w = T::kWidth;
    int64_t i = 0;
    for (; i + 2 * w <= n; i += 2 * w) {  // two vectors in flight: SLEEF's latency overlaps
      const V a = F(T::load(x + i)), b = F(T::load(x + i + w));
      T::store(y + i, a);
      T::store(y + i + w, b);
    }
    for (; i + w <= n; i += w) T::store(y + i, F(T::load(x + i)));
    if (i == n) return;
    S buf[w];
    for (int64_t k = 0; k < w; ++k) buf[k] = i + k < n ? x[i + k] : S(1);
    T::store(buf, F(T::load(buf)));
    for (int64_t k = 0; i + k < n; ++k) y[i + k] = buf[k];
  }
};

// The table of two traits types (f32 and f64) of one ISA.
template <class F, class D> constexpr VmathTable makeTable() {
  using KF = Kernels<F>;
  using KD = Kernels<D>;
  return VmathTable{
      .expF32 = KF::template apply<KF::exp>,
      .logF32 = KF::template apply<KF::log>,
      .tanhF32 = KF::template apply<KF::tanh>,
      .sigmoidF32 = KF::template apply<KF::sigmoid>,
      .siluF32 = KF::template apply<KF::silu>,
      .erfF32 = KF::template apply<KF::erf>,
      .geluErfF32 = KF::template apply<KF::geluErf>,
      .geluTanhF32 = KF::template apply<KF::geluTanh>,
      .sqrtF32 = KF::template apply<KF::sqrt>,
      .rsqrtF32 = KF::template apply<KF::rsqrt>,
      .expF64 = KD::template apply<KD::exp>,
      .logF64 = KD::template apply<KD::log>,
      .tanhF64 = KD::template apply<KD::tanh>,
      .sigmoidF64 = KD::template apply<KD::sigmoid>,
      .siluF64 = KD::template apply<KD::silu>,
      .erfF64 = KD::template apply<KD::erf>,
      .geluErfF64 = KD::template apply<KD::geluErf>,
      .geluTanhF64 = KD::template apply<KD::geluTanh>,
      .sqrtF64 = KD::template apply<KD::sqrt>,
      .rsqrtF64 = KD::template apply<KD::rsqrt>,
  };
}

}  // namespace
}  // namespace ferry::cpu
