// backends/cpu/vmath_avx512.cpp — vmath's AVX-512 table: SLEEF's 16 x f32 and 8 x f64 kernels.
// Built with -mavx512f whatever the target CPU (CMakeLists.txt); vmath.cpp calls it only when
// the CPU and OS have AVX-512F. Includes nothing but intrinsics and SLEEF (vmath_kernels_impl.h).
#include <immintrin.h>
#include <sleef.h>

#include "backends/cpu/vmath_kernels_impl.h"

namespace ferry::cpu {
namespace {

struct F64x8 {
  using S = double;
  using V = __m512d;
  static constexpr int64_t kWidth = 8;
  static V splat(S s) { return _mm512_set1_pd(s); }
  static V load(const S *p) { return _mm512_loadu_pd(p); }
  static void store(S *p, V v) { _mm512_storeu_pd(p, v); }
  static V abs(V x) { return _mm512_abs_pd(x); }
  static V sqrt(V x) { return _mm512_sqrt_pd(x); }
  static V fma(V a, V b, V c) { return _mm512_fmadd_pd(a, b, c); }
  static V exp(V x) { return Sleef_expd8_u10avx512f(x); }
  static V log(V x) { return Sleef_logd8_u10avx512f(x); }
  static V tanh(V x) { return Sleef_tanhd8_u10avx512f(x); }
  static V erf(V x) { return Sleef_erfd8_u10avx512f(x); }
  static V erfc(V x) { return Sleef_erfcd8_u15avx512f(x); }
};

struct F32x16 {
  using S = float;
  using V = __m512;
  static constexpr int64_t kWidth = 16;
  static V splat(S s) { return _mm512_set1_ps(s); }
  static V load(const S *p) { return _mm512_loadu_ps(p); }
  static void store(S *p, V v) { _mm512_storeu_ps(p, v); }
  static V abs(V x) { return _mm512_abs_ps(x); }
  static V copySign(V mag, V sign) {
    const __m512i m = _mm512_set1_epi32(0x7fffffff);
    return _mm512_castsi512_ps(_mm512_or_si512(_mm512_and_si512(_mm512_castps_si512(mag), m),
                                               _mm512_andnot_si512(m, _mm512_castps_si512(sign))));
  }
  static V sqrt(V x) { return _mm512_sqrt_ps(x); }
  static V fma(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }
  static V exp(V x) { return Sleef_expf16_u10avx512f(x); }
  static V log(V x) { return Sleef_logf16_u10avx512f(x); }
  static V tanh(V x) { return Sleef_tanhf16_u10avx512f(x); }
  static V erf(V x) { return Sleef_erff16_u10avx512f(x); }
  static V erfc(V x) { return Sleef_erfcf16_u15avx512f(x); }
  using F64 = F64x8;
  static void widen(V x, __m512d &lo, __m512d &hi) {
    lo = _mm512_cvtps_pd(_mm512_castps512_ps256(x));
    hi = _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(x), 1)));
  }
  static V narrow(__m512d lo, __m512d hi) {
    return _mm512_castpd_ps(
        _mm512_insertf64x4(_mm512_castps_pd(_mm512_castps256_ps512(_mm512_cvtpd_ps(lo))),
                           _mm256_castps_pd(_mm512_cvtpd_ps(hi)), 1));
  }
};

constexpr VmathTable kTable = makeTable<F32x16, F64x8>();

}  // namespace

const VmathTable &vmathTableAvx512() { return kTable; }

}  // namespace ferry::cpu
