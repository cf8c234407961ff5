// backends/cpu/vmath.h — transcendental functions over contiguous arrays, vectorised with SLEEF
// for the widest ISA the running CPU has (AVX-512, AVX2+FMA, else a scalar loop).
//
// Every function reads x[0..n) and writes y[0..n); y may be x (in place) but must not overlap it
// otherwise. n may be 0. Accuracy, in ulp of the true value (tests/backends/vmath_test.cpp
// measures it over every f32 of a range, f64 on samples): exp, log, erf (SLEEF u10) and f64 tanh
// within 1 ulp (erf: 2 near the smallest normals), f32 tanh (our polynomial) 2, sqrt exact,
// rsqrt 1.5, sigmoid and silu 3 to 4, both gelus 5 — also where the result is tiny: gelu, silu
// and sigmoid of large negative x avoid 1 + erf and 1 + tanh, which cancel, and e^x products
// that would lose bits as subnormals.
// Special values are those of the std:: formulas the reference interpreter computes: NaN stays
// NaN, exp(-inf) = 0, exp overflows to +inf and underflows through the subnormals to 0,
// sigmoid(±inf) = 1 and 0, gelu(+inf) = +inf, gelu(-inf) and silu(-inf) are NaN (-inf * 0), -0
// keeps its sign where std:: keeps it.
//
// Meant for blocks of a few hundred elements as for whole tensors: a call costs one indirect
// jump (the ISA is chosen once) and n % width elements take one padded vector. Single-threaded:
// the callers split work across the pool.
#pragma once

#include <cstdint>

namespace ferry::cpu {

/// y = e^x.
void expF32(const float *x, float *y, int64_t n);
void expF64(const double *x, double *y, int64_t n);
/// y = ln x (NaN below 0, -inf at ±0).
void logF32(const float *x, float *y, int64_t n);
void logF64(const double *x, double *y, int64_t n);
/// y = tanh x.
void tanhF32(const float *x, float *y, int64_t n);
void tanhF64(const double *x, double *y, int64_t n);
/// y = 1 / (1 + e^-x).
void sigmoidF32(const float *x, float *y, int64_t n);
void sigmoidF64(const double *x, double *y, int64_t n);
/// y = x / (1 + e^-x).
void siluF32(const float *x, float *y, int64_t n);
void siluF64(const double *x, double *y, int64_t n);
/// y = erf x.
void erfF32(const float *x, float *y, int64_t n);
void erfF64(const double *x, double *y, int64_t n);
/// y = x/2 (1 + erf(x / sqrt 2)): gelu, approximate="none".
void geluErfF32(const float *x, float *y, int64_t n);
void geluErfF64(const double *x, double *y, int64_t n);
/// y = x/2 (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))): gelu, approximate="tanh".
void geluTanhF32(const float *x, float *y, int64_t n);
void geluTanhF64(const double *x, double *y, int64_t n);
/// y = sqrt x, correctly rounded (sqrt(-0) = -0, NaN below 0).
void sqrtF32(const float *x, float *y, int64_t n);
void sqrtF64(const double *x, double *y, int64_t n);
/// y = 1 / sqrt x.
void rsqrtF32(const float *x, float *y, int64_t n);
void rsqrtF64(const double *x, double *y, int64_t n);

/// The instruction sets vmath has code for, narrowest first.
enum class VmathIsa { Scalar, Avx2, Avx512 };

/// Its name: "scalar", "avx2", "avx512".
const char *vmathIsaName(VmathIsa isa);

/// The ISA the functions above run: the widest this CPU (and OS) supports, picked at the first
/// call. FERRY_VMATH_ISA=scalar|avx2|avx512 narrows it (for comparisons); another value, or an
/// ISA the CPU lacks, is ignored with one warning on stderr.
VmathIsa vmathIsa();

/// One ISA's functions, for tests and benchmarks that compare the ISAs on one machine.
struct VmathTable {
  using F32 = void (*)(const float *, float *, int64_t);
  using F64 = void (*)(const double *, double *, int64_t);
  F32 expF32, logF32, tanhF32, sigmoidF32, siluF32, erfF32, geluErfF32, geluTanhF32, sqrtF32,
      rsqrtF32;
  F64 expF64, logF64, tanhF64, sigmoidF64, siluF64, erfF64, geluErfF64, geluTanhF64, sqrtF64,
      rsqrtF64;
};

/// The functions of `isa`; nullptr when this CPU cannot run it.
const VmathTable *vmathTable(VmathIsa isa);

}  // namespace ferry::cpu
