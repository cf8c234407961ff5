// backends/cpu/vmath.cpp — vmath's dispatch (the widest ISA the CPU has, picked once) and its
// scalar table, SLEEF's portable scalar functions in the same kernels as the vector ISAs.
#include "backends/cpu/vmath.h"

#include <sleef.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <initializer_list>

#include "backends/cpu/vmath_kernels_impl.h"

namespace ferry::cpu {
namespace {

// The parts of a scalar traits type that do not depend on the SLEEF functions.
template <class Scalar> struct ScalarBase {
  using S = Scalar;
  using V = Scalar;
  static constexpr int64_t kWidth = 1;
  static V splat(S s) { return s; }
  static V load(const S *p) { return *p; }
  static void store(S *p, V v) { *p = v; }
  static V abs(V x) { return std::fabs(x); }
  static V copySign(V mag, V sign) { return std::copysign(mag, sign); }
  static V sqrt(V x) { return std::sqrt(x); }
  static V fma(V a, V b, V c) { return std::fma(a, b, c); }
};

struct F64x1 : ScalarBase<double> {
  static V exp(V x) { return Sleef_exp_u10(x); }
  static V log(V x) { return Sleef_log_u10(x); }
  static V tanh(V x) { return Sleef_tanh_u10(x); }
  static V erf(V x) { return Sleef_erf_u10(x); }
  static V erfc(V x) { return Sleef_erfc_u15(x); }
};

struct F32x1 : ScalarBase<float> {
  static V exp(V x) { return Sleef_expf_u10(x); }
  static V log(V x) { return Sleef_logf_u10(x); }
  static V tanh(V x) { return Sleef_tanhf_u10(x); }
  static V erf(V x) { return Sleef_erff_u10(x); }
  static V erfc(V x) { return Sleef_erfcf_u15(x); }
  using F64 = F64x1;
  static void widen(V x, double &lo, double &hi) { lo = hi = x; }
  static V narrow(double lo, double) { return static_cast<float>(lo); }
};

constexpr VmathTable kScalar = makeTable<F32x1, F64x1>();

// Whether this CPU and its OS (saved vector state, which libgcc's check includes) run `isa`.
bool supported(VmathIsa isa) {
  switch (isa) {
    case VmathIsa::Scalar: return true;
    case VmathIsa::Avx2: return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    case VmathIsa::Avx512: return __builtin_cpu_supports("avx512f");
  }
  return false;
}

// The widest ISA the CPU runs, or FERRY_VMATH_ISA's if narrower. A value that names no ISA, or
// one this CPU lacks, never stops the program: one warning on stderr, and the widest is used.
VmathIsa pickIsa() {
  VmathIsa isa = VmathIsa::Scalar;
  for (VmathIsa wider : {VmathIsa::Avx2, VmathIsa::Avx512})
    if (supported(wider)) isa = wider;
  const char *want = std::getenv("FERRY_VMATH_ISA");
  if (!want || !*want) return isa;
  for (VmathIsa named : {VmathIsa::Scalar, VmathIsa::Avx2, VmathIsa::Avx512}) {
    if (std::strcmp(want, vmathIsaName(named)) != 0) continue;
    if (named <= isa) return named;
    std::fprintf(stderr, "ferry: FERRY_VMATH_ISA: this CPU does not run %s; ignored, using %s\n",
                 want, vmathIsaName(isa));
    return isa;
  }
  std::fprintf(stderr,
               "ferry: FERRY_VMATH_ISA: expected scalar, avx2 or avx512, got '%s'; ignored, "
               "using %s\n",
               want, vmathIsaName(isa));
  return isa;
}

const VmathTable &active() {
  static const VmathTable &table = *vmathTable(vmathIsa());
  return table;
}

}  // namespace

const char *vmathIsaName(VmathIsa isa) {
  switch (isa) {
    case VmathIsa::Scalar: return "scalar";
    case VmathIsa::Avx2: return "avx2";
    case VmathIsa::Avx512: return "avx512";
  }
  return "unknown";
}

VmathIsa vmathIsa() {
  static const VmathIsa isa = pickIsa();
  return isa;
}

const VmathTable *vmathTable(VmathIsa isa) {
  if (!supported(isa)) return nullptr;
  switch (isa) {
    case VmathIsa::Scalar: return &kScalar;
    case VmathIsa::Avx2: return &vmathTableAvx2();
    case VmathIsa::Avx512: return &vmathTableAvx512();
  }
  return nullptr;
}

#define FERRY_VMATH_ENTRY(name, S)                                                                 \
  void name(const S *x, S *y, int64_t n) { active().name(x, y, n); }
FERRY_VMATH_ENTRY(expF32, float)
FERRY_VMATH_ENTRY(logF32, float)
FERRY_VMATH_ENTRY(tanhF32, float)
FERRY_VMATH_ENTRY(sigmoidF32, float)
FERRY_VMATH_ENTRY(siluF32, float)
FERRY_VMATH_ENTRY(erfF32, float)
FERRY_VMATH_ENTRY(geluErfF32, float)
FERRY_VMATH_ENTRY(geluTanhF32, float)
FERRY_VMATH_ENTRY(sqrtF32, float)
FERRY_VMATH_ENTRY(rsqrtF32, float)
FERRY_VMATH_ENTRY(expF64, double)
FERRY_VMATH_ENTRY(logF64, double)
FERRY_VMATH_ENTRY(tanhF64, double)
FERRY_VMATH_ENTRY(sigmoidF64, double)
FERRY_VMATH_ENTRY(siluF64, double)
FERRY_VMATH_ENTRY(erfF64, double)
FERRY_VMATH_ENTRY(geluErfF64, double)
FERRY_VMATH_ENTRY(geluTanhF64, double)
FERRY_VMATH_ENTRY(sqrtF64, double)
FERRY_VMATH_ENTRY(rsqrtF64, double)
#undef FERRY_VMATH_ENTRY

}  // namespace ferry::cpu
