// backends/cpu/vmath_avx2.cpp — vmath's AVX2 table: SLEEF's 8 x f32 and 4 x f64 kernels.
// Built with -mavx2 -mfma whatever the target CPU (CMakeLists.txt); vmath.cpp calls it only when
// the CPU and OS have AVX2 and FMA. Includes nothing but intrinsics and SLEEF
// (vmath_kernels_impl.h).
#include <immintrin.h>
#include <sleef.h>

#include "backends/cpu/vmath_kernels_impl.h"

namespace ferry::cpu {
namespace {

struct F64x4 {
  using S = double;
  using V = __m256d;
  static constexpr int64_t kWidth = 4;
  static V splat(S s) { return _mm256_set1_pd(s); }
  static V load(const S *p) { return _mm256_loadu_pd(p); }
  static void store(S *p, V v) { _mm256_storeu_pd(p, v); }
  static V abs(V x) { return _mm256_andnot_pd(_mm256_set1_pd(-0.0), x); }
  static V sqrt(V x) { return _mm256_sqrt_pd(x); }
  static V fma(V a, V b, V c) { return _mm256_fmadd_pd(a, b, c); }
  static V exp(V x) { return Sleef_expd4_u10avx2(x); }
  static V log(V x) { return Sleef_logd4_u10avx2(x); }
  static V tanh(V x) { return Sleef_tanhd4_u10avx2(x); }
  static V erf(V x) { return Sleef_erfd4_u10avx2(x); }
  static V erfc(V x) { return Sleef_erfcd4_u15avx2(x); }
};

struct F32x8 {
  using S = float;
  using V = __m256;
  static constexpr int64_t kWidth = 8;
  static V splat(S s) { return _mm256_set1_ps(s); }
  static V load(const S *p) { return _mm256_loadu_ps(p); }
  static void store(S *p, V v) { _mm256_storeu_ps(p, v); }
  static V abs(V x) { return _mm256_andnot_ps(_mm256_set1_ps(-0.0f), x); }
  static V copySign(V mag, V sign) {
    const __m256 m = _mm256_set1_ps(-0.0f);
    return _mm256_or_ps(_mm256_andnot_ps(m, mag), _mm256_and_ps(m, sign));
  }
  static V sqrt(V x) { return _mm256_sqrt_ps(x); }
  static V fma(V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); }
  static V exp(V x) { return Sleef_expf8_u10avx2(x); }
  static V log(V x) { return Sleef_logf8_u10avx2(x); }
  static V tanh(V x) { return Sleef_tanhf8_u10avx2(x); }
  static V erf(V x) { return Sleef_erff8_u10avx2(x); }
  static V erfc(V x) { return Sleef_erfcf8_u15avx2(x); }
  using F64 = F64x4;
  static void widen(V x, __m256d &lo, __m256d &hi) {
    lo = _mm256_cvtps_pd(_mm256_castps256_ps128(x));
    hi = _mm256_cvtps_pd(_mm256_extractf128_ps(x, 1));
  }
  static V narrow(__m256d lo, __m256d hi) {
    return _mm256_set_m128(_mm256_cvtpd_ps(hi), _mm256_cvtpd_ps(lo));
  }
};

constexpr VmathTable kTable = makeTable<F32x8, F64x4>();

}  // namespace

const VmathTable &vmathTableAvx2() { return kTable; }

}  // namespace ferry::cpu
