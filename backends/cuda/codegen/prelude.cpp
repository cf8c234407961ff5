// backends/cuda/codegen/prelude.cpp — the helpers at the top of every generated kernel source,
// and the dtype spellings the generators share.
//
// Values compute in float (f16, bf16, f32), double (f64) or long long (integers and bool), as the
// CPU's fused kernel does, and each micro-op's value is rounded to its own dtype as storing it
// would: f16 and bf16 to nearest even, integers wrapping at their width, bool to 0/1, and a float
// reaching an integer truncated and saturated into 64 bits first (NaN to 0), as
// ir/tensor_data.h's storeDouble. On the GPU the f16 conversions are PTX's cvt; on the host
// (FERRY_EMULATE) the same rounding in integer arithmetic.
#include "backends/cuda/codegen/kernel_source.h"

namespace ferry::cuda {

const std::string &prelude() {
  static const std::string text = R"(// ferry generated kernel
#ifdef FERRY_EMULATE
#define FERRY_FN static inline
#define FERRY_KERNEL static void
#else
#define FERRY_FN static __device__ __forceinline__
#define FERRY_KERNEL extern "C" __global__ void
#endif
typedef long long ferry_i64;
typedef unsigned long long ferry_u64;

#ifdef FERRY_EMULATE
FERRY_FN unsigned ferry_f2u(float f) { unsigned u; __builtin_memcpy(&u, &f, 4); return u; }
FERRY_FN float ferry_u2f(unsigned u) { float f; __builtin_memcpy(&f, &u, 4); return f; }
FERRY_FN float ferry_h2f(unsigned short h) {
  const unsigned sign = (unsigned)(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
  if (e == 0x1f) return ferry_u2f(sign | 0x7f800000u | (m << 13));
  if (e == 0) { const float f = (float)m * 5.9604644775390625e-8f; return sign ? -f : f; }
  return ferry_u2f(sign | ((e + 112u) << 23) | (m << 13));
}
FERRY_FN unsigned short ferry_f2h(float f) {
  const unsigned x = ferry_f2u(f), sign = (x >> 16) & 0x8000u, ax = x & 0x7fffffffu;
  if (ax > 0x7f800000u) return (unsigned short)(sign | 0x7e00u);
  if (ax >= 0x477ff000u) return (unsigned short)(sign | 0x7c00u);
  if (ax < 0x38800000u) {
    const float r = (ferry_u2f(ax) * 16777216.0f + 8388608.0f) - 8388608.0f;
    return (unsigned short)(sign | (unsigned)r);
  }
  return (unsigned short)(sign | ((ax + 0xc8000fffu + ((ax >> 13) & 1u)) >> 13));
}
#else
FERRY_FN unsigned ferry_f2u(float f) { return __float_as_uint(f); }
FERRY_FN float ferry_u2f(unsigned u) { return __uint_as_float(u); }
FERRY_FN float ferry_h2f(unsigned short h) {
  float f; asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h)); return f;
}
FERRY_FN unsigned short ferry_f2h(float f) {
  unsigned short h; asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f)); return h;
}
#endif
FERRY_FN float ferry_bf2f(unsigned short b) { return ferry_u2f((unsigned)b << 16); }
FERRY_FN unsigned short ferry_f2bf(float f) {
  const unsigned x = ferry_f2u(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return (unsigned short)((x >> 16) | 0x40u);
  return (unsigned short)((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}
FERRY_FN float ferry_nanf() { return ferry_u2f(0x7fc00000u); }
FERRY_FN double ferry_nan() { return (double)ferry_nanf(); }
// A float into 64 bits: truncated, saturated, NaN to 0.
FERRY_FN ferry_i64 ferry_f2i(double v) {
  if (v != v) return 0;
  if (v >= 9223372036854775807.0) return (ferry_i64)0x7fffffffffffffffull;
  if (v <= -9223372036854775808.0) return (ferry_i64)0x8000000000000000ull;
  return (ferry_i64)v;
}
FERRY_FN ferry_i64 ferry_wrap8(ferry_i64 v) { return (ferry_i64)(signed char)(unsigned char)(ferry_u64)v; }
FERRY_FN ferry_i64 ferry_wrapu8(ferry_i64 v) { return (ferry_i64)(unsigned char)(ferry_u64)v; }
FERRY_FN ferry_i64 ferry_wrap32(ferry_i64 v) { return (ferry_i64)(int)(unsigned)(ferry_u64)v; }

// Loads: storage -> compute type. Stores: compute type -> storage (rounded as above).
FERRY_FN float ferry_ld_f32(float s) { return s; }
FERRY_FN double ferry_ld_f64(double s) { return s; }
FERRY_FN float ferry_ld_f16(unsigned short s) { return ferry_h2f(s); }
FERRY_FN float ferry_ld_bf16(unsigned short s) { return ferry_bf2f(s); }
FERRY_FN ferry_i64 ferry_ld_i8(signed char s) { return s; }
FERRY_FN ferry_i64 ferry_ld_u8(unsigned char s) { return s; }
FERRY_FN ferry_i64 ferry_ld_i32(int s) { return s; }
FERRY_FN ferry_i64 ferry_ld_i64(ferry_i64 s) { return s; }
FERRY_FN ferry_i64 ferry_ld_bool(unsigned char s) { return s != 0; }
FERRY_FN float ferry_st_f32(float v) { return v; }
FERRY_FN double ferry_st_f64(double v) { return v; }
FERRY_FN unsigned short ferry_st_f16(float v) { return ferry_f2h(v); }
FERRY_FN unsigned short ferry_st_bf16(float v) { return ferry_f2bf(v); }
FERRY_FN signed char ferry_st_i8(ferry_i64 v) { return (signed char)ferry_wrap8(v); }
FERRY_FN unsigned char ferry_st_u8(ferry_i64 v) { return (unsigned char)ferry_wrapu8(v); }
FERRY_FN int ferry_st_i32(ferry_i64 v) { return (int)ferry_wrap32(v); }
FERRY_FN ferry_i64 ferry_st_i64(ferry_i64 v) { return v; }
FERRY_FN unsigned char ferry_st_bool(ferry_i64 v) { return v != 0; }
// A value rounded to its dtype, kept in the compute type.
FERRY_FN float ferry_rnd_f32(float v) { return v; }
FERRY_FN double ferry_rnd_f64(double v) { return v; }
FERRY_FN float ferry_rnd_f16(float v) { return ferry_h2f(ferry_f2h(v)); }
FERRY_FN float ferry_rnd_bf16(float v) { return ferry_bf2f(ferry_f2bf(v)); }
FERRY_FN ferry_i64 ferry_rnd_i8(ferry_i64 v) { return ferry_wrap8(v); }
FERRY_FN ferry_i64 ferry_rnd_u8(ferry_i64 v) { return ferry_wrapu8(v); }
FERRY_FN ferry_i64 ferry_rnd_i32(ferry_i64 v) { return ferry_wrap32(v); }
FERRY_FN ferry_i64 ferry_rnd_i64(ferry_i64 v) { return v; }
FERRY_FN ferry_i64 ferry_rnd_bool(ferry_i64 v) { return v != 0; }

// Integer arithmetic wraps (through unsigned: no signed overflow).
FERRY_FN ferry_i64 ferry_iadd(ferry_i64 a, ferry_i64 b) { return (ferry_i64)((ferry_u64)a + (ferry_u64)b); }
FERRY_FN ferry_i64 ferry_isub(ferry_i64 a, ferry_i64 b) { return (ferry_i64)((ferry_u64)a - (ferry_u64)b); }
FERRY_FN ferry_i64 ferry_imul(ferry_i64 a, ferry_i64 b) { return (ferry_i64)((ferry_u64)a * (ferry_u64)b); }
FERRY_FN ferry_i64 ferry_ineg(ferry_i64 a) { return (ferry_i64)(0ull - (ferry_u64)a); }
FERRY_FN ferry_i64 ferry_iabs(ferry_i64 a) { return a < 0 ? ferry_ineg(a) : a; }
// max/min propagate NaN, as torch.maximum.
FERRY_FN float ferry_fmaxf(float a, float b) { return a != a || b != b ? ferry_nanf() : a > b ? a : b; }
FERRY_FN float ferry_fminf(float a, float b) { return a != a || b != b ? ferry_nanf() : a < b ? a : b; }
FERRY_FN double ferry_fmax(double a, double b) { return a != a || b != b ? ferry_nan() : a > b ? a : b; }
FERRY_FN double ferry_fmin(double a, double b) { return a != a || b != b ? ferry_nan() : a < b ? a : b; }

// Vectors of four stored elements, for 4-element loads and stores of dense operands.
template <class T> struct alignas(4 * sizeof(T)) ferry_vec4 { T v[4]; };

#ifdef FERRY_EMULATE
#define ferry_rsqrtf(x) (1.0f / sqrtf(x))
#else
#define ferry_rsqrtf(x) rsqrtf(x)
#endif
#define ferry_rsqrt(x) (1.0 / sqrt(x))
// The thread's first element and the grid's stride (one-dimensional launches).
#define FERRY_TID ((ferry_i64)blockIdx.x * blockDim.x + threadIdx.x)
#define FERRY_STRIDE ((ferry_i64)gridDim.x * blockDim.x)
)";
  return text;
}

const char *storageType(DType t) {
  switch (t) {
    case DType::Bool: return "unsigned char";
    case DType::U8: return "unsigned char";
    case DType::I8: return "signed char";
    case DType::I32: return "int";
    case DType::I64: return "ferry_i64";
    case DType::F16: return "unsigned short";
    case DType::BF16: return "unsigned short";
    case DType::F32: return "float";
    case DType::F64: return "double";
  }
  return "?";
}

const char *computeType(DType t) {
  switch (t) {
    case DType::F16:
    case DType::BF16:
    case DType::F32: return "float";
    case DType::F64: return "double";
    default: return "ferry_i64";
  }
}

const char *dtypeSuffix(DType t) {
  switch (t) {
    case DType::Bool: return "bool";
    case DType::U8: return "u8";
    case DType::I8: return "i8";
    case DType::I32: return "i32";
    case DType::I64: return "i64";
    case DType::F16: return "f16";
    case DType::BF16: return "bf16";
    case DType::F32: return "f32";
    case DType::F64: return "f64";
  }
  return "?";
}

uint64_t KernelSource::hash() const {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : source) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

}  // namespace ferry::cuda
