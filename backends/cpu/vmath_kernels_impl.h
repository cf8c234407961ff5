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
// load, store, abs, copySign, sqrt, fma (fused: the error-free products below rely on it) and
// SLEEF's exp/log/tanh/erf (u10) and erfc (u15); f32 traits also F64 (the same ISA's f64 traits),
// widen (a vector to two of f64; the scalar's second is unused) and narrow (back, rounded).
// Compares and `?:` on V are GCC's vector extensions (plain bool and ?: for the scalar traits).
// These TUs build with -ffp-contract=off: the two-sum and two-product steps must not be fused
// behind our back.
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
  constexpr explicit Split(long double v)
      : hi(static_cast<S>(v)), lo(static_cast<S>(v - static_cast<long double>(static_cast<S>(v)))) {
  }
};
constexpr long double kInvSqrt2 = 0.707106781186547524400844362104849039L;
constexpr long double kSqrt2OverPi = 0.797884560802865355879892119868763737L;
constexpr long double kGeluCubic = 0.044715L;
// exp's argument is shifted by kShift (exactly: see shiftedExp) and the result scaled by
// e^-kShift where e^x alone would be subnormal.
template <class S> constexpr S kShift = sizeof(S) == 4 ? 64 : 512;
template <class S>
constexpr long double kExpMinusShift = sizeof(S) == 4
                                           ? 1.603810890548637852976087034142335381e-28L
                                           : 4.377491037053051454121472762902187264e-223L;

template <class T> struct Kernels {
  using S = typename T::S;
  using V = typename T::V;

  static V one() { return T::splat(S(1)); }
  static V zero() { return T::splat(S(0)); }
  // v where it is finite, else 0: a correction term that went NaN or infinite on huge input.
  static V finiteOr0(V v) { return v - v == zero() ? v : zero(); }

  static V exp(V x) { return T::exp(x); }
  static V log(V x) { return T::log(x); }
  // f32: |x| < 0.625 by an odd polynomial x + x^3 Q(x^2) (our fit, scripts/fit-vmath.py: degree
  // 5, |error| < 2e-9), else (1 - e) / (1 + e), e = e^-2|x| <= 0.29 (no cancellation), the sign
  // copied from x (tanh(-0) = -0). 2.4x cheaper than SLEEF's tanhf, within 2 ulp. f64: SLEEF.
  static V tanh(V x) {
    if constexpr (requires { typename T::F64; }) {
      static constexpr float q[] = {-3.333333318e-01f, 1.333330428e-01f,  -5.395940591e-02f,
                                    2.176996092e-02f,  -8.346980495e-03f, 2.295841263e-03f};
      const V a = T::abs(x);
      const V z = a * a;
      const V z2 = z * z;
      const V poly = T::fma(T::fma(T::fma(T::splat(q[5]), z, T::splat(q[4])), z2,
                                   T::fma(T::splat(q[3]), z, T::splat(q[2]))),
                            z2, T::fma(T::splat(q[1]), z, T::splat(q[0])));
      const V small = T::fma(a * z, poly, a);
      const V e = T::exp(a * T::splat(S(-2)));
      const V large = (one() - e) / (one() + e);
      return T::copySign(a < T::splat(S(0.625)) ? small : large, x);
    } else {
      return T::tanh(x);
    }
  }
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
  [[gnu::always_inline]] static Shifted shiftedExp(V a) {
    const V k = T::splat(kShift<S>);
    const V shifted = a < -k ? one() : zero();
    return {T::exp(T::fma(shifted, k, a)), shifted};
  }
  // v e^-kShift, rounded once, in the shifted lanes (zeros as they are: c.lo < 0 would turn
  // -0 into +0).
  static V unshift(V v, V shifted) {
    constexpr Split<S> c(kExpMinusShift<S>);
    // Only the shifted lanes multiply: the others' products would be subnormal, which costs
    // microcode assists (a fifth of gelu's time on random inputs).
    const V w = shifted != zero() ? v : zero();
    const V scaled = T::fma(w, T::splat(c.hi), w * T::splat(c.lo));
    return shifted != zero() ? (v != zero() ? scaled : v) : v;
  }

  // x / (1 + e^-x), for x < 0 as x e / (1 + e), e = e^x: computed shifted (x e would be
  // subnormal, and lose its bits, below x = -87 in f32 where the result is not).
  [[gnu::always_inline]] static V silu(V x) {
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
  // For f32's gelu: erfc(y) = t e^(-y^2 + P(t)), y = |x| / sqrt 2, t = 1 / (1 + y/2), with P a fit
  // of ours (scripts/fit-vmath.py: least squares in Chebyshev polynomials, degree 12, |error| <
  // 6e-9 on t in [0, 1]: 0.1 ulp of f32 after e^). This part runs in f64 (S = double, x holding
  // f32 values), where -y^2 + P(t) is exact to f32's needs and the polynomial, Estrin's scheme
  // (a chain of 5 fmas, not Horner's 12), does not round. t comes in as f32's quotient `t0`,
  // refined by one Newton step. Out: t and the exponent a = -y^2 + P(t).
  [[gnu::always_inline]] static void erfcParts(V x, V t0, V &t, V &a) {
    static constexpr S p[] = {-1.2655121177480138, 0.9999980468825707,   0.375109829862553,
                              0.08091932391376182, -0.05860064003284806, -0.32548988921177274,
                              0.6665116791966316,  -2.011027742167977,   3.6426044723987796,
                              -3.505887365641491,  1.853980036251207,    -0.5073753164993416,
                              0.05476967886224981};
    const V y = T::abs(x) * T::splat(S(kInvSqrt2));
    const V d = T::fma(y, T::splat(S(0.5)), one());
    t = T::fma(T::fma(-d, t0, one()), t0, t0);
    t = t == t ? t : t0;  // x infinite: d = inf, t0 = 0, and the step gives inf * 0
    const V t2 = t * t, t4 = t2 * t2, t8 = t4 * t4;
    auto pair = [&](int i) { return T::fma(T::splat(p[i + 1]), t, T::splat(p[i])); };
    const V q0 = T::fma(pair(2), t2, pair(0)), q1 = T::fma(pair(6), t2, pair(4));
    const V q2 = T::fma(pair(10), t2, pair(8));
    const V r0 = T::fma(q1, t4, q0), r1 = T::fma(T::splat(p[12]), t4, q2);
    a = T::fma(-y, y, T::fma(r1, t8, r0));
  }

  // gelu = x erfc(-x / sqrt 2) / 2. f32: erfcParts in f64, then e^ in f32 of a carried as ah + al
  // (e^a = e^ah (1 + al)), shifted as in silu where the result is tiny; erfc(|x| / sqrt 2) / 2 is
  // the result's factor for x < 0, 1 minus it for x >= 0 (no cancellation: it is at most 1/2).
  // f64: SLEEF's erfc (geluErfNear).
  [[gnu::always_inline]] static V geluErf(V x) {
    if constexpr (requires { typename T::F64; }) {
      using W = typename T::F64::V;
      W x0, x1, u0, u1, t0, t1, a0, a1, b0, b1;  // the two f64 halves: x, f32's t, t, a, ah
      T::widen(x, x0, x1);
      T::widen(one() / T::fma(T::abs(x), T::splat(S(0.5 * kInvSqrt2)), one()), u0, u1);
      Kernels<typename T::F64>::erfcParts(x0, u0, t0, a0);
      Kernels<typename T::F64>::erfcParts(x1, u1, t1, a1);
      const V ah = T::narrow(a0, a1);
      T::widen(ah, b0, b1);
      // a - ah is NaN for infinite x (a = -inf): then e^ah = 0 and the correction is dropped.
      const V al = finiteOr0(T::narrow(a0 - b0, a1 - b1));
      const Shifted s = shiftedExp(ah);
      const V half = T::splat(S(0.5)) * T::narrow(t0, t1) * T::fma(s.e, al, s.e);
      const V negative = x < zero() ? one() : zero();
      const V phi = negative != zero() ? half : (s.shifted != zero() ? one() : one() - half);
      return unshift(x * phi, s.shifted * negative);
    } else {
      return geluErfNear(x);
    }
  }

  // 1 + tanh u = 2 sigmoid(2u), so gelu = x sigmoid(2u) with u = k0 x + k1 x^3, computed as
  // sigmoid above (no cancellation for x < 0), with e shifted as in silu. u is carried as uh + ul
  // (error-free products and a two-sum): e^-|2u| = e^-|2uh| (1 -+ 2ul) to first order; the
  // relative condition number of the result in u is ~2|u|, up to 100 where it is not 0.
  [[gnu::always_inline]] static V geluTanh(V x) {
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
