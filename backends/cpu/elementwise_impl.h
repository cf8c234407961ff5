// backends/cpu/elementwise_impl.h — internal: what the elementwise kernels (elementwise.cpp) and
// the fused kernel (fused.cpp) share: blocks of kBlock elements split over the pool, the storage
// and compute types of a dtype, an operand's broadcast walk over the result and its cursor, the
// gather of a block into compute type and its store, and the block function of each op.
//
// Blocks of kBlock output elements: each operand is gathered (following broadcasting) into a
// buffer of the type the op computes in — float for f16, bf16 and f32, double for f64, int64
// for bool and the integers — a block function runs over the buffers, and the block is stored in
// the result's dtype. Blocks start at multiples of kBlock however the work is split, so results
// are bit-identical to a serial run.
#pragma once

#include <Eigen/Core>
#include <algorithm>
#include <array>
#include <cstdint>
#include <span>
#include <type_traits>
#include <vector>

#include "backends/cpu/kernels.h"
#include "backends/cpu/parallel.h"
#include "ir/tensor_data.h"

namespace ferry::cpu::elementwise {

constexpr int64_t kBlock = 512;
constexpr int64_t kChunkBlocks = 32;  // 16K elements per parallel chunk, at least

// Calls chunk(begin, end) over ranges of whole blocks covering [0, n), in parallel when n is
// large.
template <class F> void forChunks(int64_t n, F &&chunk) {
  parallelFor((n + kBlock - 1) / kBlock, kChunkBlocks,
              [&](int64_t b0, int64_t b1) { chunk(b0 * kBlock, std::min(n, b1 * kBlock)); });
}

using Eigen::bfloat16;
using Eigen::half;

// Calls f(T{}) with T the C++ type that stores `dtype` (bool as uint8_t).
template <class F> decltype(auto) withStorage(DType dtype, F &&f) {
  switch (dtype) {
    case DType::Bool:
    case DType::U8: return f(uint8_t{});
    case DType::I8: return f(int8_t{});
    case DType::I32: return f(int32_t{});
    case DType::I64: return f(int64_t{});
    case DType::F16: return f(half{});
    case DType::BF16: return f(bfloat16{});
    case DType::F32: return f(float{});
    case DType::F64: return f(double{});
  }
  FERRY_CHECK(false) << "unknown dtype";
  return f(uint8_t{});
}

template <class C, class S> C toCompute(S v) {
  if constexpr (std::is_same_v<S, half> || std::is_same_v<S, bfloat16>)
    return static_cast<C>(static_cast<float>(v));
  else
    return static_cast<C>(v);
}

// A compute value stored as `dtype` (storage S): integers wrap at the width (bool: nonzero).
template <class S, class C> S fromCompute(C v, bool isBool) {
  if constexpr (std::is_same_v<S, half> || std::is_same_v<S, bfloat16>) {
    return S(static_cast<float>(v));
  } else if constexpr (std::is_integral_v<S>) {
    if (isBool) return static_cast<S>(v != 0);
    return static_cast<S>(static_cast<uint64_t>(static_cast<int64_t>(v)));
  } else {
    return static_cast<S>(v);
  }
}

// The most dimensions an operand walk takes (artifact files hold no more either): the launch
// keeps a cursor's index on the stack.
constexpr size_t kMaxRank = 64;

// How an operand of shape `in`, broadcast to the result's shape, is walked in the result's
// row-major order: size-1 dims dropped, and adjacent dims that the operand walks as one (both
// contiguous, or both broadcast) merged, so a dense operand is one long run and a broadcast bias
// a few. Made when the step is prepared.
struct Walk {
  std::vector<int64_t> dims, strides;
};

inline Expected<Walk> walkOf(const StepSpec &step, std::span<const int64_t> in) {
  const Shape &out = step.result.shape;
  const size_t rank = std::max<size_t>(out.size(), 1);
  std::vector<int64_t> dims(rank, 1), strides(rank, 0);
  std::copy(out.begin(), out.end(), dims.end() - static_cast<ptrdiff_t>(out.size()));
  int64_t stride = 1;
  for (size_t k = 0; k < in.size() && k < rank; ++k) {  // from the innermost dimension outwards
    const size_t d = rank - 1 - k;
    const int64_t n = in[in.size() - 1 - k];
    strides[d] = n == 1 ? 0 : stride;
    stride *= n;
  }
  Walk w;
  for (size_t d = 0; d < rank; ++d) {
    if (dims[d] == 1) continue;
    if (!w.dims.empty() && w.strides.back() == strides[d] * dims[d]) {
      w.dims.back() *= dims[d];
      w.strides.back() = strides[d];
      continue;
    }
    w.dims.push_back(dims[d]);
    w.strides.push_back(strides[d]);
  }
  if (w.dims.empty()) {
    w.dims.push_back(1);
    w.strides.push_back(0);
  }
  if (w.dims.size() > kMaxRank)
    return contractError(step, "an operand walks " + std::to_string(w.dims.size()) +
                                   " dimensions, at most " + std::to_string(kMaxRank));
  return w;
}

// Walks an operand along its Walk from output element `start`, one run of the innermost
// dimension at a time. Holds its index on the stack: a launch allocates nothing.
class Cursor {
 public:
  Cursor(const Walk &w, int64_t start) : dims_(w.dims.data()), strides_(w.strides.data()), last_(w.dims.size() - 1) {
    std::fill_n(index_.begin(), w.dims.size(), 0);
    // start > 0 only in a tensor with elements: no dim is 0.
    for (size_t d = w.dims.size(), rest = static_cast<size_t>(start); rest > 0 && d-- > 0;) {
      index_[d] = static_cast<int64_t>(rest % static_cast<size_t>(dims_[d]));
      rest /= static_cast<size_t>(dims_[d]);
      offset_ += index_[d] * strides_[d];
    }
  }
  int64_t offset() const { return offset_; }
  int64_t innerStride() const { return strides_[last_]; }
  int64_t rowLeft() const { return dims_[last_] - index_[last_]; }
  void advance(int64_t run) {
    index_[last_] += run;
    offset_ += run * strides_[last_];
    if (index_[last_] < dims_[last_]) return;
    offset_ -= dims_[last_] * strides_[last_];
    index_[last_] = 0;
    for (size_t d = last_; d-- > 0;) {
      offset_ += strides_[d];
      if (++index_[d] < dims_[d]) return;
      offset_ -= dims_[d] * strides_[d];
      index_[d] = 0;
    }
  }

 private:
  const int64_t *dims_, *strides_;
  size_t last_;
  std::array<int64_t, kMaxRank> index_;
  int64_t offset_ = 0;
};

template <class S> constexpr bool kIsHalf = std::is_same_v<S, half> || std::is_same_v<S, bfloat16>;

// The type an op whose data is stored as S computes in: float for f16, bf16 and f32, double for
// f64, int64 for bool and the integers.
template <class S>
using ComputeOf = std::conditional_t<
    std::is_same_v<S, double>, double,
    std::conditional_t<kIsHalf<S> || std::is_same_v<S, float>, float, int64_t>>;

// The next n elements of `v` (storage S) along `cursor`, converted to C.
template <class S, class C> void gather(const TensorView &v, Cursor &cursor, C *out, int64_t n) {
  const auto *base = reinterpret_cast<const S *>(v.data);
  for (int64_t done = 0; done < n;) {
    const int64_t run = std::min(n - done, cursor.rowLeft()), stride = cursor.innerStride();
    const S *src = base + cursor.offset();
    if (stride == 0)
      std::fill(out + done, out + done + run, toCompute<C>(*src));
    else if (kIsHalf<S> && std::is_same_v<C, float> && stride == 1)  // vectorised conversion
      convertElements(v.type->dtype, reinterpret_cast<const std::byte *>(src), DType::F32,
                      reinterpret_cast<std::byte *>(out + done), static_cast<size_t>(run));
    else if (stride == 1)
      for (int64_t j = 0; j < run; ++j) out[done + j] = toCompute<C>(src[j]);
    else
      for (int64_t j = 0; j < run; ++j) out[done + j] = toCompute<C>(src[j * stride]);
    cursor.advance(run);
    done += run;
  }
}

// Stores n computed elements at element `at` of `r` (storage S); bool stores nonzero as 1.
template <class S, class C>
void storeBlock(const C *in, const TensorView &r, int64_t at, int64_t n, bool isBool) {
  S *out = reinterpret_cast<S *>(r.data) + at;
  if constexpr (kIsHalf<S> && std::is_same_v<C, float>)  // vectorised conversion
    convertElements(DType::F32, reinterpret_cast<const std::byte *>(in), r.type->dtype,
                    reinterpret_cast<std::byte *>(out), static_cast<size_t>(n));
  else
    for (int64_t j = 0; j < n; ++j) out[j] = fromCompute<S>(in[j], isBool);
}

/// y = op(x), z = x op y over n elements; the result may be an operand's own memory (each
/// element is read before it is written), so a block function runs in place or from where an
/// operand lies into where the result goes, without a copy first.
template <class C> using UnaryFn = void (*)(C *y, const C *x, int64_t n);
template <class C> using BinaryFn = void (*)(C *z, const C *x, const C *y, int64_t n);
template <class C> using CompareFn = void (*)(const C *x, const C *y, uint8_t *out, int64_t n);

/// The block function of op `k` computing in C (float, double or int64_t): unary ops (gelu's
/// tanh form when `tanhGelu`), binary ops, comparisons into bytes; nullptr for an op that has
/// none in C. leaky_relu, which holds a number, has none here. elementwise.cpp.
template <class C> UnaryFn<C> unaryBlockFn(OpKind k, bool tanhGelu);
template <class C> BinaryFn<C> binaryBlockFn(OpKind k);
template <class C> CompareFn<C> compareBlockFn(OpKind k);

}  // namespace ferry::cpu::elementwise
