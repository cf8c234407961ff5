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
  static V sqrt(V x) { return _mm512_sqrt_ps(x); }
  static V fma(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }
  static V exp(V x) { return Sleef_expf16_u10avx512f(x); }
  static V log(V x) { return Sleef_logf16_u10avx512f(x); }
  static V tanh(V x) { return Sleef_tanhf16_u10avx512f(x); }
  static V erf(V x) { return Sleef_erff16_u10avx512f(x); }
  static V erfc(V x) { return Sleef_erfcf16_u15avx512f(x); }
  static bool any(V v) { return _mm512_cmp_ps_mask(v, _mm512_setzero_ps(), _CMP_NEQ_UQ) != 0; }
  static V geluErfWide(V x) {
    const __m256 lo = _mm512_castps512_ps256(x);
    const __m256 hi = _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(x), 1));
    const __m256 glo = _mm512_cvtpd_ps(Kernels<F64x8>::geluErfNear(_mm512_cvtps_pd(lo)));
    const __m256 ghi = _mm512_cvtpd_ps(Kernels<F64x8>::geluErfNear(_mm512_cvtps_pd(hi)));
    return _mm512_castpd_ps(_mm512_insertf64x4(_mm512_castps_pd(_mm512_castps256_ps512(glo)),
                                               _mm256_castps_pd(ghi), 1));
  }
};

constexpr VmathTable kTable = makeTable<F32x16, F64x8>();

}  // namespace

const VmathTable &vmathTableAvx512() { return kTable; }

}  // namespace ferry::cpu
