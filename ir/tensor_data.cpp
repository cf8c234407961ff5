// ir/tensor_data.cpp — host tensors, element conversion, and ferry's seeded generator.
#include "ir/tensor_data.h"

#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <cstring>
#ifdef __F16C__
#include <immintrin.h>
#endif
#include <limits>
#include <new>
#include <numbers>
#include <stdexcept>

#include "ir/status.h"

namespace ferry {

namespace {

template <class T> T load(const std::byte *p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

template <class T> void store(std::byte *p, T v) { std::memcpy(p, &v, sizeof v); }

// Stores an integer the caller has range-checked; a value out of range is a bug.
template <class T> void storeInRange(std::byte *p, int64_t v, int64_t lo, int64_t hi) {
  FERRY_CHECK(v >= lo && v <= hi) << v << " is out of range [" << lo << ", " << hi << "]";
  store<T>(p, static_cast<T>(v));
}

// Truncate toward zero, saturate at the range of I, NaN -> 0.
template <class I> I saturate(double v) {
  if (std::isnan(v)) return 0;
  double t = std::trunc(v);
  if (t <= static_cast<double>(std::numeric_limits<I>::min())) return std::numeric_limits<I>::min();
  // For i64 the max is not representable in double; anything >= 2^63 saturates.
  if (t >= std::ldexp(1.0, std::numeric_limits<I>::digits)) return std::numeric_limits<I>::max();
  return static_cast<I>(t);
}

constexpr std::align_val_t kStorageAlignment{64};

// `bytes` zero bytes, 64-byte aligned (as device memory is, so that a Session on the host can
// read a weight or an input in place); std::bad_alloc when the host cannot hold them.
std::shared_ptr<std::byte> allocateZeroed(size_t bytes) {
  auto *p = static_cast<std::byte *>(::operator new(bytes == 0 ? 1 : bytes, kStorageAlignment));
  std::shared_ptr<std::byte> owned(p, [](std::byte *q) { ::operator delete(q, kStorageAlignment); });
  std::memset(p, 0, bytes);
  return owned;
}

// splitmix64: tiny, fast, and fully specified, so seeds mean the same thing everywhere.
uint64_t splitmix64(uint64_t &state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// Uniform in (0, 1]: 53 random bits, never 0 so that log() is finite.
double uniform01(uint64_t &state) {
  return (static_cast<double>(splitmix64(state) >> 11) + 1.0) * 0x1.0p-53;
}

}  // namespace

double loadDouble(DType t, const std::byte *p) {
  switch (t) {
    case DType::Bool: return load<uint8_t>(p) != 0 ? 1.0 : 0.0;
    case DType::U8: return load<uint8_t>(p);
    case DType::I8: return load<int8_t>(p);
    case DType::I32: return load<int32_t>(p);
    case DType::I64: return static_cast<double>(load<int64_t>(p));
    case DType::F16:
      return static_cast<float>(Eigen::numext::bit_cast<Eigen::half>(load<uint16_t>(p)));
    case DType::BF16:
      return static_cast<float>(Eigen::numext::bit_cast<Eigen::bfloat16>(load<uint16_t>(p)));
    case DType::F32: return load<float>(p);
    case DType::F64: return load<double>(p);
  }
  return 0;
}

void storeDouble(DType t, std::byte *p, double v) {
  switch (t) {
    case DType::Bool:
      store<uint8_t>(p, v != 0 ? 1 : 0);
      return;  // NaN != 0: true, as C++/torch
    // Into int64 (truncated, saturated, NaN -> 0), then wrapped like every integer conversion,
    // so that a value reaches an integer dtype the same way from a float or from an integer.
    case DType::U8:
    case DType::I8:
    case DType::I32:
    case DType::I64: storeIntWrapping(t, p, saturate<int64_t>(v)); return;
    // Through f32 first: double -> f32 -> f16 can double-round, but only for values within
    // 2^-24 relative of a tie, which ferry's kernels (computing in f32) produce alike.
    case DType::F16:
      store<uint16_t>(p, Eigen::numext::bit_cast<uint16_t>(Eigen::half(static_cast<float>(v))));
      return;
    case DType::BF16:
      store<uint16_t>(p, Eigen::numext::bit_cast<uint16_t>(Eigen::bfloat16(static_cast<float>(v))));
      return;
    case DType::F32: store<float>(p, static_cast<float>(v)); return;
    case DType::F64: store<double>(p, v); return;
  }
}

int64_t loadInt(DType t, const std::byte *p) {
  switch (t) {
    case DType::Bool: return load<uint8_t>(p) != 0;
    case DType::U8: return load<uint8_t>(p);
    case DType::I8: return load<int8_t>(p);
    case DType::I32: return load<int32_t>(p);
    case DType::I64: return load<int64_t>(p);
    default: FERRY_CHECK(false) << "loadInt on " << dtypeName(t);
  }
  return 0;
}

void storeIntWrapping(DType t, std::byte *p, int64_t v) {
  // Unsigned narrowing is modular by definition; the bit pattern is the two's complement one.
  const auto bits = static_cast<uint64_t>(v);
  switch (t) {
    case DType::Bool: store<uint8_t>(p, v != 0); return;
    case DType::U8:
    case DType::I8: store<uint8_t>(p, static_cast<uint8_t>(bits)); return;
    case DType::I32: store<uint32_t>(p, static_cast<uint32_t>(bits)); return;
    case DType::I64: store<int64_t>(p, v); return;
    default: FERRY_CHECK(false) << "storeIntWrapping on " << dtypeName(t);
  }
}

void convertElement(DType from, const std::byte *in, DType to, std::byte *out) {
  if (from == to) {
    std::memcpy(out, in, dtypeSize(to));
  } else if (!isFloating(from) && !isFloating(to)) {
    storeIntWrapping(to, out, loadInt(from, in));
  } else {
    storeDouble(to, out, loadDouble(from, in));
  }
}

namespace {

// Float to float, as convertElement does it (through double), with the dtype switches outside
// the loops: the simplify pass converts every weight whose cast it folds.
template <class T, class ToDouble>
void loadFloats(const std::byte *in, double *out, size_t n, ToDouble toDouble) {
  for (size_t i = 0; i < n; ++i) out[i] = toDouble(load<T>(in + i * sizeof(T)));
}
template <class T, class FromDouble>
void storeFloats(const double *in, std::byte *out, size_t n, FromDouble fromDouble) {
  for (size_t i = 0; i < n; ++i) store<T>(out + i * sizeof(T), fromDouble(in[i]));
}

void loadFloats(DType t, const std::byte *in, double *out, size_t n) {
  using Eigen::numext::bit_cast;
  switch (t) {
    case DType::F16:
      return loadFloats<uint16_t>(in, out, n, [](uint16_t b) -> double {
        return static_cast<float>(bit_cast<Eigen::half>(b));
      });
    case DType::BF16:
      return loadFloats<uint16_t>(in, out, n, [](uint16_t b) -> double {
        return static_cast<float>(bit_cast<Eigen::bfloat16>(b));
      });
    case DType::F32: return loadFloats<float>(in, out, n, [](float v) -> double { return v; });
    case DType::F64: return loadFloats<double>(in, out, n, [](double v) { return v; });
    default: FERRY_CHECK(false) << "loadFloats on " << dtypeName(t);
  }
}

void storeFloats(DType t, const double *in, std::byte *out, size_t n) {
  using Eigen::numext::bit_cast;
  switch (t) {  // the halves through f32, as storeDouble
    case DType::F16:
      return storeFloats<uint16_t>(in, out, n, [](double v) {
        return bit_cast<uint16_t>(Eigen::half(static_cast<float>(v)));
      });
    case DType::BF16:
      return storeFloats<uint16_t>(in, out, n, [](double v) {
        return bit_cast<uint16_t>(Eigen::bfloat16(static_cast<float>(v)));
      });
    case DType::F32:
      return storeFloats<float>(in, out, n, [](double v) { return static_cast<float>(v); });
    case DType::F64: return storeFloats<double>(in, out, n, [](double v) { return v; });
    default: FERRY_CHECK(false) << "storeFloats on " << dtypeName(t);
  }
}

// f32 <-> f16/bf16, the conversions kernels make around every f16/bf16 op, with the rounding of
// the scalar conversions (Eigen's half and bfloat16). f16 uses the F16C instructions when the
// build has them (Eigen 3.4.0 does not under GCC: its check for them only passes for clang);
// bf16 is integer arithmetic written so the compiler vectorises it.
void f32ToF16(const float *in, uint16_t *out, size_t n) {
  size_t i = 0;
#ifdef __F16C__
  for (; i + 8 <= n; i += 8)
    _mm_storeu_si128(reinterpret_cast<__m128i *>(out + i),
                     _mm256_cvtps_ph(_mm256_loadu_ps(in + i), _MM_FROUND_TO_NEAREST_INT));
#endif
  for (; i < n; ++i) out[i] = Eigen::numext::bit_cast<uint16_t>(Eigen::half(in[i]));
}

void f16ToF32(const uint16_t *in, float *out, size_t n) {
  size_t i = 0;
#ifdef __F16C__
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(out + i,
                     _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i *>(in + i))));
#endif
  for (; i < n; ++i) out[i] = static_cast<float>(Eigen::numext::bit_cast<Eigen::half>(in[i]));
}

void f32ToBF16(const float *in, uint16_t *out, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    uint32_t u;
    std::memcpy(&u, &in[i], 4);
    // Round to nearest even; a NaN becomes the quiet NaN of its sign.
    const uint32_t rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
    const bool nan = (u & 0x7fffffffu) > 0x7f800000u;
    out[i] = static_cast<uint16_t>(nan ? ((u >> 16) & 0x8000u) | 0x7fc0u : rounded);
  }
}

void bf16ToF32(const uint16_t *in, float *out, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    const uint32_t u = static_cast<uint32_t>(in[i]) << 16;
    std::memcpy(&out[i], &u, 4);
  }
}

bool castHalves(DType from, const std::byte *in, DType to, std::byte *out, size_t n) {
  auto aligned = [](const std::byte *p, DType t) {
    return reinterpret_cast<uintptr_t>(p) % dtypeSize(t) == 0;
  };
  if (!aligned(in, from) || !aligned(out, to)) return false;  // the general path below copes
  const auto *f = reinterpret_cast<const float *>(in);
  const auto *h = reinterpret_cast<const uint16_t *>(in);
  auto *fo = reinterpret_cast<float *>(out);
  auto *ho = reinterpret_cast<uint16_t *>(out);
  if (from == DType::F32 && to == DType::F16) return f32ToF16(f, ho, n), true;
  if (from == DType::F32 && to == DType::BF16) return f32ToBF16(f, ho, n), true;
  if (from == DType::F16 && to == DType::F32) return f16ToF32(h, fo, n), true;
  if (from == DType::BF16 && to == DType::F32) return bf16ToF32(h, fo, n), true;
  return false;
}

}  // namespace

void convertElements(DType from, const std::byte *in, DType to, std::byte *out, size_t n) {
  const size_t inSize = dtypeSize(from), outSize = dtypeSize(to);
  if (from == to) {
    if (n > 0) std::memcpy(out, in, n * inSize);
    return;
  }
  if (castHalves(from, in, to, out, n)) return;
  if (isFloating(from) && isFloating(to)) {
    constexpr size_t kBlock = 256;
    double buffer[kBlock];
    for (size_t i = 0; i < n; i += kBlock) {
      const size_t m = std::min(kBlock, n - i);
      loadFloats(from, in + i * inSize, buffer, m);
      storeFloats(to, buffer, out + i * outSize, m);
    }
    return;
  }
  for (size_t i = 0; i < n; ++i, in += inSize, out += outSize) convertElement(from, in, to, out);
}

TensorData castTensor(const TensorData &x, DType to) {
  TensorData out(to, x.shape());
  convertElements(x.dtype(), x.bytes().data(), to, out.mutableBytes().data(),
                  static_cast<size_t>(x.numel()));
  return out;
}

TensorData::TensorData(DType dtype, Shape shape)
    : type_{dtype, std::move(shape)}, data_(allocateZeroed(type_.byteSize())),
      size_(type_.byteSize()) {
  for (int64_t d : type_.shape) FERRY_CHECK(d >= 0) << "negative dim in " << type_.str();
}

TensorData TensorData::fromStorage(TensorType type, std::shared_ptr<std::byte> storage) {
  for (int64_t d : type.shape) FERRY_CHECK(d >= 0) << "negative dim in " << type.str();
  FERRY_CHECK(storage && reinterpret_cast<uintptr_t>(storage.get()) % 64 == 0)
      << "storage for " << type.str() << " is not 64-byte aligned";
  const size_t bytes = type.byteSize();
  return TensorData(std::move(type), std::move(storage), bytes);
}

TensorData TensorData::view(TensorType type, std::span<const std::byte> bytes,
                            std::shared_ptr<const void> owner) {
  FERRY_CHECK(bytes.size() == type.byteSize())
      << "a view of " << bytes.size() << " bytes as " << type.str();
  TensorData t;
  t.type_ = std::move(type);
  // The aliasing constructor: the pointer is the view's, the ownership the owner's.
  t.data_ = std::shared_ptr<std::byte>(std::const_pointer_cast<void>(std::move(owner)),
                                       const_cast<std::byte *>(bytes.data()));
  t.size_ = bytes.size();
  t.view_ = true;
  return t;
}

void TensorData::detach() { *this = clone(); }

TensorData TensorData::full(DType dtype, Shape shape, double value) {
  TensorData t(dtype, std::move(shape));
  for (int64_t i = 0; i < t.numel(); ++i) t.set(i, value);
  return t;
}

TensorData TensorData::fromDoubles(DType dtype, Shape shape, std::span<const double> values) {
  TensorData t(dtype, std::move(shape));
  FERRY_CHECK(static_cast<int64_t>(values.size()) == t.numel())
      << values.size() << " values for " << t.type().str();
  for (int64_t i = 0; i < t.numel(); ++i) t.set(i, values[i]);
  return t;
}

Status TensorData::outOfMemory(const TensorType &type, std::string_view what) {
  return makeError("memory", "out of memory: " + std::string(what) + " (" + type.str() +
                                 ") needs " + std::to_string(type.byteSize()) +
                                 " bytes, which the host could not allocate");
}

Expected<TensorData> TensorData::allocate(DType dtype, Shape shape, std::string_view what) {
  TensorType type{dtype, shape};
  try {
    return TensorData(dtype, std::move(shape));
  } catch (const std::bad_alloc &) {
    return outOfMemory(type, what);
  } catch (const std::length_error &) {
    return outOfMemory(type, what);
  }
}

Expected<TensorData> TensorData::allocateRandn(DType dtype, Shape shape, uint64_t seed,
                                               std::string_view what) {
  TensorType type{dtype, shape};
  try {
    return randn(dtype, std::move(shape), seed);
  } catch (const std::bad_alloc &) {
    return outOfMemory(type, what);
  } catch (const std::length_error &) {
    return outOfMemory(type, what);
  }
}

TensorData TensorData::randn(DType dtype, Shape shape, uint64_t seed) {
  TensorData t(dtype, std::move(shape));
  uint64_t state = seed;
  for (int64_t i = 0; i < t.numel(); i += 2) {
    // Box-Muller: two independent normals from two uniforms.
    double r = std::sqrt(-2.0 * std::log(uniform01(state)));
    double theta = 2.0 * std::numbers::pi * uniform01(state);
    t.set(i, r * std::cos(theta));
    if (i + 1 < t.numel()) t.set(i + 1, r * std::sin(theta));
  }
  return t;
}

TensorData TensorData::clone() const {
  TensorData t(type_.dtype, type_.shape);
  if (size_ > 0) std::memcpy(t.data_.get(), data_.get(), size_);
  return t;
}

double TensorData::at(int64_t i) const {
  FERRY_CHECK(i >= 0 && i < numel()) << "index " << i << " of " << type_.str();
  return loadDouble(type_.dtype, data_.get() + i * dtypeSize(type_.dtype));
}

void TensorData::set(int64_t i, double v) {
  FERRY_CHECK(i >= 0 && i < numel()) << "index " << i << " of " << type_.str();
  storeDouble(type_.dtype, mutableBytes().data() + i * dtypeSize(type_.dtype), v);
}

std::vector<double> TensorData::toDoubles() const {
  std::vector<double> v(static_cast<size_t>(numel()));
  for (int64_t i = 0; i < numel(); ++i) v[i] = at(i);
  return v;
}

int64_t TensorData::atInt(int64_t i) const {
  FERRY_CHECK(i >= 0 && i < numel()) << "index " << i << " of " << type_.str();
  return loadInt(type_.dtype, data_.get() + i * dtypeSize(type_.dtype));
}

void TensorData::setInt(int64_t i, int64_t v) {
  FERRY_CHECK(i >= 0 && i < numel()) << "index " << i << " of " << type_.str();
  std::byte *p = mutableBytes().data() + i * dtypeSize(type_.dtype);
  switch (type_.dtype) {
    case DType::Bool: storeInRange<uint8_t>(p, v, 0, 1); return;
    case DType::U8: storeInRange<uint8_t>(p, v, 0, 255); return;
    case DType::I8: storeInRange<int8_t>(p, v, -128, 127); return;
    case DType::I32:
      storeInRange<int32_t>(p, v, std::numeric_limits<int32_t>::min(),
                            std::numeric_limits<int32_t>::max());
      return;
    case DType::I64: store<int64_t>(p, v); return;
    default: FERRY_CHECK(false) << "setInt on " << dtypeName(type_.dtype);
  }
}

bool TensorData::operator==(const TensorData &other) const {
  return type_ == other.type_ &&
         (size_ == 0 || std::memcmp(data_.get(), other.data_.get(), size_) == 0);
}

}  // namespace ferry
