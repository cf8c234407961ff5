// backends/cpu/elementwise.cpp — unary and binary elementwise ops, where and cast on the CPU.
//
// Prepared once per step (prepareUnary, prepareBinary, prepareWhere, prepareCast): the operand
// dtypes and shapes are checked, gelu's mode read, each operand's walk over the result (its
// broadcast dims merged) computed, and the op's block function picked for the storage type;
// a launch runs that loop and nothing else, allocating nothing (buffers and cursor indices live
// on the stack).
//
// Blocks of kBlock output elements: each operand is gathered (following broadcasting) into a
// buffer of the type the op computes in — float for f16, bf16 and f32, double for f64, int64
// for bool and the integers — the op's block function runs over the buffers (vmath for exp, log,
// sigmoid, silu, sqrt and rsqrt; Eigen arrays for arithmetic, tanh, erf and gelu; plain loops
// the compiler vectorises where Eigen 3.4 would run one scalar at a time: select and
// comparisons), and the block is stored in the result's dtype, or is computed in the result
// itself when that holds the compute type.
// Launch loops are templates per storage type, block functions per compute type: not one per
// (op, dtype) pair. Large tensors are split with parallelFor into chunks of whole blocks, each
// with its own buffers and cursors; blocks start at multiples of kBlock however the work is
// split, so results are bit-identical to a serial run.
//
// Semantics are the reference interpreter's (backends/reference/elementwise.cpp): integer
// arithmetic wraps at the result's width, relu/maximum/minimum keep NaN, division is true
// division, f16/bf16 compute in f32 and round to nearest even when stored.
#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <cstring>
#include <numbers>
#include <unsupported/Eigen/SpecialFunctions>

#include "backends/cpu/kernels.h"
#include "backends/cpu/parallel.h"
#include "backends/cpu/vmath.h"

namespace ferry::cpu {

namespace {

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

Expected<Walk> walkOf(const StepSpec &step, std::span<const int64_t> in) {
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

// Where a block of results is computed: in the result itself when it is stored as its compute
// type (no copy afterwards), else in `buffer`, stored with storeBlock.
template <class S> ComputeOf<S> *resultBlock(const TensorView &r, int64_t at, ComputeOf<S> *buffer) {
  if constexpr (std::is_same_v<S, ComputeOf<S>>)
    return reinterpret_cast<S *>(r.data) + at;
  else
    return buffer;
}

// ---- The ops, one block function each: picked when the step is prepared ----------------------

template <class C> using UnaryFn = void (*)(C *x, int64_t n);
template <class C> using BinaryFn = void (*)(C *x, const C *y, int64_t n);
template <class C> using CompareFn = void (*)(const C *x, const C *y, uint8_t *out, int64_t n);
template <class C> using Array = Eigen::Map<Eigen::Array<C, Eigen::Dynamic, 1>>;
template <class C> using ConstArray = Eigen::Map<const Eigen::Array<C, Eigen::Dynamic, 1>>;

// tanh, erf and the gelus stay Eigen 3.4's rational approximations: vmath's are accurate to a few
// ulp everywhere (also where gelu is tiny, which 1 + erf and 1 + tanh round to 0) but slower on
// this AVX-512 machine (16M f32 through this kernel, 2 threads: gelu_erf 3.7x, gelu_tanh 1.2x,
// tanh 1.25x; erf 8x in one thread: bench/README.md), and these kernels are the speed baseline
// of the unfused ops. One line each to switch (vmathBlock below).
template <class C> void geluTanh(C *x, int64_t n) {
  Array<C> a(x, n);
  const C k0 = C(std::sqrt(2.0 / std::numbers::pi));
  a = C(0.5) * a * (C(1) + (k0 * (a + C(0.044715) * a * a * a)).tanh());
}

template <class C> void geluErf(C *x, int64_t n) {
  Array<C> a(x, n);
  a = C(0.5) * a * (C(1) + (a * C(1.0 / std::numbers::sqrt2)).erf());
}

// A vmath function (backends/cpu/vmath.h: SLEEF and our own kernels, vectorised for the CPU's
// widest ISA, a few ulp) over a block in place, for the compute type C: exp, log, sigmoid and
// silu 1.2-3x faster than Eigen's, sqrt and rsqrt exact.
template <class C, auto F32, auto F64> void vmathBlock(C *x, int64_t n) {
  if constexpr (std::is_same_v<C, float>)
    F32(x, x, n);
  else
    F64(x, x, n);
}

// The block function of a float unary op; nullptr for an op that is not one.
template <class C> UnaryFn<C> floatUnary(OpKind k, bool tanhGelu) {
  switch (k) {
    case OpKind::Neg: return [](C *x, int64_t n) { Array<C>(x, n) = -Array<C>(x, n); };
    case OpKind::Abs: return [](C *x, int64_t n) { Array<C>(x, n) = Array<C>(x, n).abs(); };
    case OpKind::Exp: return vmathBlock<C, expF32, expF64>;
    case OpKind::Log: return vmathBlock<C, logF32, logF64>;
    case OpKind::Sqrt: return vmathBlock<C, sqrtF32, sqrtF64>;
    case OpKind::Rsqrt: return vmathBlock<C, rsqrtF32, rsqrtF64>;
    case OpKind::Tanh: return [](C *x, int64_t n) { Array<C>(x, n) = Array<C>(x, n).tanh(); };
    case OpKind::Sigmoid: return vmathBlock<C, sigmoidF32, sigmoidF64>;
    case OpKind::Relu:  // NaN stays; `|`, not `||`, and no Eigen select: this vectorises
      return [](C *x, int64_t n) {
        for (int64_t i = 0; i < n; ++i) x[i] = (x[i] > C(0)) | (x[i] != x[i]) ? x[i] : C(0);
      };
    case OpKind::Erf: return [](C *x, int64_t n) { Array<C>(x, n) = Array<C>(x, n).erf(); };
    case OpKind::Silu: return vmathBlock<C, siluF32, siluF64>;
    case OpKind::Gelu: return tanhGelu ? geluTanh<C> : geluErf<C>;
    default: return nullptr;
  }
}

// Integer arithmetic wraps (through uint64: no signed overflow).
UnaryFn<int64_t> intUnary(OpKind k) {
  switch (k) {
    case OpKind::Neg:
      return [](int64_t *x, int64_t n) {
        for (int64_t i = 0; i < n; ++i) x[i] = static_cast<int64_t>(0 - static_cast<uint64_t>(x[i]));
      };
    case OpKind::Abs:
      return [](int64_t *x, int64_t n) {
        for (int64_t i = 0; i < n; ++i)
          x[i] = x[i] < 0 ? static_cast<int64_t>(0 - static_cast<uint64_t>(x[i])) : x[i];
      };
    case OpKind::Relu:
      return [](int64_t *x, int64_t n) {
        for (int64_t i = 0; i < n; ++i) x[i] = x[i] > 0 ? x[i] : 0;
      };
    default: return nullptr;
  }
}

template <class C> UnaryFn<C> unaryFn(OpKind k, bool tanhGelu) {
  if constexpr (std::is_same_v<C, int64_t>)
    return intUnary(k);
  else
    return floatUnary<C>(k, tanhGelu);
}

// NaN propagates through maximum/minimum, as torch.maximum/minimum. Plain loops with `|`: they
// vectorise, where Eigen 3.4's select does not.
template <class C> BinaryFn<C> floatBinary(OpKind k) {
  switch (k) {
    case OpKind::Add: return [](C *x, const C *y, int64_t n) { Array<C>(x, n) += ConstArray<C>(y, n); };
    case OpKind::Sub: return [](C *x, const C *y, int64_t n) { Array<C>(x, n) -= ConstArray<C>(y, n); };
    case OpKind::Mul: return [](C *x, const C *y, int64_t n) { Array<C>(x, n) *= ConstArray<C>(y, n); };
    case OpKind::Div: return [](C *x, const C *y, int64_t n) { Array<C>(x, n) /= ConstArray<C>(y, n); };
    case OpKind::Pow:
      return [](C *x, const C *y, int64_t n) {
        for (int64_t i = 0; i < n; ++i) x[i] = std::pow(x[i], y[i]);
      };
    case OpKind::Maximum:
      return [](C *x, const C *y, int64_t n) {
        const C nan = std::numeric_limits<C>::quiet_NaN();
        for (int64_t i = 0; i < n; ++i)
          x[i] = (x[i] != x[i]) | (y[i] != y[i]) ? nan : x[i] > y[i] ? x[i] : y[i];
      };
    case OpKind::Minimum:
      return [](C *x, const C *y, int64_t n) {
        const C nan = std::numeric_limits<C>::quiet_NaN();
        for (int64_t i = 0; i < n; ++i)
          x[i] = (x[i] != x[i]) | (y[i] != y[i]) ? nan : x[i] < y[i] ? x[i] : y[i];
      };
    default: return nullptr;
  }
}

// pow goes through double, saturated into int64, as the reference does.
int64_t powInt(int64_t x, int64_t y) {
  const double p = std::pow(static_cast<double>(x), static_cast<double>(y));
  if (std::isnan(p)) return 0;
  if (p <= -0x1p63) return std::numeric_limits<int64_t>::min();
  if (p >= 0x1p63) return std::numeric_limits<int64_t>::max();
  return static_cast<int64_t>(std::trunc(p));
}

// Calls out[i] = f(x[i], y[i]) over a block.
template <class F> void eachPair(int64_t *x, const int64_t *y, int64_t n, F f) {
  for (int64_t i = 0; i < n; ++i) x[i] = f(x[i], y[i]);
}

BinaryFn<int64_t> intBinary(OpKind k) {
  using I = int64_t;
  using U = uint64_t;
  switch (k) {
    case OpKind::Add:
      return [](I *x, const I *y, I n) { eachPair(x, y, n, [](I a, I b) { return I(U(a) + U(b)); }); };
    case OpKind::Sub:
      return [](I *x, const I *y, I n) { eachPair(x, y, n, [](I a, I b) { return I(U(a) - U(b)); }); };
    case OpKind::Mul:
      return [](I *x, const I *y, I n) { eachPair(x, y, n, [](I a, I b) { return I(U(a) * U(b)); }); };
    case OpKind::Maximum:
      return [](I *x, const I *y, I n) { eachPair(x, y, n, [](I a, I b) { return std::max(a, b); }); };
    case OpKind::Minimum:
      return [](I *x, const I *y, I n) { eachPair(x, y, n, [](I a, I b) { return std::min(a, b); }); };
    case OpKind::Pow: return [](I *x, const I *y, I n) { eachPair(x, y, n, powInt); };
    default: return nullptr;
  }
}

template <class C> BinaryFn<C> binaryFn(OpKind k) {
  if constexpr (std::is_same_v<C, int64_t>)
    return intBinary(k);
  else
    return floatBinary<C>(k);
}

template <class C> CompareFn<C> compareFn(OpKind k) {
  switch (k) {
    case OpKind::Equal:
      return [](const C *x, const C *y, uint8_t *out, int64_t n) {
        for (int64_t i = 0; i < n; ++i) out[i] = x[i] == y[i];
      };
    case OpKind::Less:
      return [](const C *x, const C *y, uint8_t *out, int64_t n) {
        for (int64_t i = 0; i < n; ++i) out[i] = x[i] < y[i];
      };
    case OpKind::Greater:
      return [](const C *x, const C *y, uint8_t *out, int64_t n) {
        for (int64_t i = 0; i < n; ++i) out[i] = x[i] > y[i];
      };
    default: return nullptr;
  }
}

// ---- Launches: one per storage type, the op's block function passed in --------------------

template <class S, class Fn>
void unaryLaunch(const KernelCall &call, const Walk &wx, Fn fn, bool isBool) {
  using C = ComputeOf<S>;
  const TensorView &x = call.operands[0], &r = call.result;
  forChunks(r.type->numel(), [&](int64_t begin, int64_t end) {
    C buffer[kBlock];
    Cursor cursor(wx, begin);
    for (int64_t at = begin; at < end; at += kBlock) {
      const int64_t m = std::min(kBlock, end - at);
      C *a = resultBlock<S>(r, at, buffer);
      gather<S, C>(x, cursor, a, m);
      fn(a, m);
      if (a == buffer) storeBlock<S>(buffer, r, at, m, isBool);
    }
  });
}

template <class S>
void binaryLaunch(const KernelCall &call, const Walk &wx, const Walk &wy,
                  BinaryFn<ComputeOf<S>> fn, bool isBool) {
  using C = ComputeOf<S>;
  const TensorView &x = call.operands[0], &y = call.operands[1], &r = call.result;
  forChunks(r.type->numel(), [&](int64_t begin, int64_t end) {
    C buffer[kBlock], b[kBlock];
    Cursor cx(wx, begin), cy(wy, begin);
    for (int64_t at = begin; at < end; at += kBlock) {
      const int64_t m = std::min(kBlock, end - at);
      C *a = resultBlock<S>(r, at, buffer);
      gather<S, C>(x, cx, a, m);
      gather<S, C>(y, cy, b, m);
      fn(a, b, m);
      if (a == buffer) storeBlock<S>(buffer, r, at, m, isBool);
    }
  });
}

// Operands stored as S, the result as bool.
template <class S>
void compareLaunch(const KernelCall &call, const Walk &wx, const Walk &wy, CompareFn<ComputeOf<S>> fn) {
  using C = ComputeOf<S>;
  const TensorView &x = call.operands[0], &y = call.operands[1], &r = call.result;
  auto *out = reinterpret_cast<uint8_t *>(r.data);
  forChunks(r.type->numel(), [&](int64_t begin, int64_t end) {
    C a[kBlock], b[kBlock];
    Cursor cx(wx, begin), cy(wy, begin);
    for (int64_t at = begin; at < end; at += kBlock) {
      const int64_t m = std::min(kBlock, end - at);
      gather<S, C>(x, cx, a, m);
      gather<S, C>(y, cy, b, m);
      fn(a, b, out + at, m);
    }
  });
}

template <class S> void whereLaunch(const KernelCall &call, const std::array<Walk, 3> &w) {
  const TensorView &r = call.result;
  S *out = reinterpret_cast<S *>(r.data);
  forChunks(r.type->numel(), [&](int64_t begin, int64_t end) {
    uint8_t c[kBlock];
    S a[kBlock], b[kBlock];
    Cursor cc(w[0], begin), ca(w[1], begin), cb(w[2], begin);
    for (int64_t at = begin; at < end; at += kBlock) {
      const int64_t m = std::min(kBlock, end - at);
      gather<uint8_t, uint8_t>(call.operands[0], cc, c, m);
      gather<S, S>(call.operands[1], ca, a, m);
      gather<S, S>(call.operands[2], cb, b, m);
      for (int64_t j = 0; j < m; ++j) out[at + j] = c[j] ? a[j] : b[j];
    }
  });
}

// ---- Prepare: the contract checked, attributes read, the loop picked -----------------------

Status checkOperandDType(const StepSpec &step, size_t i, DType want) {
  if (step.operands[i].dtype == want) return Status();
  return contractError(step, "operand " + std::to_string(i) + " is " + step.operands[i].str() +
                                 ", expected " + std::string(dtypeName(want)) + " (a cast is missing)");
}

Status checkSameShape(const StepSpec &step) {
  if (step.operands[0].shape == step.result.shape) return Status();
  return contractError(step, "operand " + step.operands[0].str() + " and result " +
                                 step.result.str() + " differ in shape");
}

Status noKernel(const StepSpec &step, DType t) {
  return contractError(step, "no kernel computes it in " + std::string(dtypeName(t)));
}

Expected<bool> tanhGeluOf(const StepSpec &step) {
  if (step.op.kind != OpKind::Gelu) return false;
  const std::string &mode = attrString(step.op, step.attrs, "approximate");
  if (mode != "none" && mode != "tanh")
    return makeError("attr", "'gelu' approximate must be \"none\" or \"tanh\", got \"" + mode + "\"",
                     step.loc);
  return mode == "tanh";
}

}  // namespace

Expected<std::unique_ptr<Kernel>> prepareUnary(const StepSpec &step) {
  const DType t = step.result.dtype;
  FERRY_TRY(checkOperandDType(step, 0, t));
  FERRY_TRY(checkSameShape(step));
  const Expected<bool> tanhGelu = tanhGeluOf(step);
  if (!tanhGelu) return tanhGelu.status();
  Expected<Walk> wx = walkOf(step, step.operands[0].shape);
  if (!wx) return wx.status();
  if (step.op.kind == OpKind::LeakyRelu) {
    // The one unary op with a number attribute: its block function holds alpha.
    const double alpha = attrFloat(step.op, step.attrs, "alpha");
    return withStorage(t, [&](auto s) -> Expected<std::unique_ptr<Kernel>> {
      using S = decltype(s);
      using C = ComputeOf<S>;
      if constexpr (std::is_same_v<C, int64_t>) {
        return noKernel(step, t);
      } else {
        const auto leaky = [a = static_cast<C>(alpha)](C *x, int64_t n) {
          for (int64_t i = 0; i < n; ++i) x[i] = x[i] < C(0) ? a * x[i] : x[i];
        };
        return stepKernel(step, [wx = std::move(*wx), leaky](const KernelCall &call) {
          unaryLaunch<S>(call, wx, leaky, false);
          return Status();
        });
      }
    });
  }
  return withStorage(t, [&](auto s) -> Expected<std::unique_ptr<Kernel>> {
    using S = decltype(s);
    const UnaryFn<ComputeOf<S>> fn = unaryFn<ComputeOf<S>>(step.op.kind, *tanhGelu);
    if (!fn) return noKernel(step, t);
    return stepKernel(step, [wx = std::move(*wx), fn, isBool = t == DType::Bool](const KernelCall &call) {
      unaryLaunch<S>(call, wx, fn, isBool);
      return Status();
    });
  });
}

Expected<std::unique_ptr<Kernel>> prepareBinary(const StepSpec &step) {
  const bool compare = step.op.dtypeRule == DTypeRule::Compare;
  const DType t = compare ? step.operands[0].dtype : step.result.dtype;
  FERRY_TRY(checkOperandDType(step, 0, t));
  FERRY_TRY(checkOperandDType(step, 1, t));
  if (compare && step.result.dtype != DType::Bool)
    return contractError(step, "the result is " + step.result.str() + ", expected bool");
  Expected<Walk> wx = walkOf(step, step.operands[0].shape), wy = walkOf(step, step.operands[1].shape);
  if (!wx) return wx.status();
  if (!wy) return wy.status();
  return withStorage(t, [&](auto s) -> Expected<std::unique_ptr<Kernel>> {
    using S = decltype(s);
    using C = ComputeOf<S>;
    if (compare) {
      const CompareFn<C> fn = compareFn<C>(step.op.kind);
      if (!fn) return noKernel(step, t);
      return stepKernel(step, [wx = std::move(*wx), wy = std::move(*wy), fn](const KernelCall &call) {
        compareLaunch<S>(call, wx, wy, fn);
        return Status();
      });
    }
    const BinaryFn<C> fn = binaryFn<C>(step.op.kind);
    if (!fn) return noKernel(step, t);
    return stepKernel(step, [wx = std::move(*wx), wy = std::move(*wy), fn, isBool = t == DType::Bool](
                                const KernelCall &call) {
      binaryLaunch<S>(call, wx, wy, fn, isBool);
      return Status();
    });
  });
}

Expected<std::unique_ptr<Kernel>> prepareWhere(const StepSpec &step) {
  const DType t = step.result.dtype;
  FERRY_TRY(checkOperandDType(step, 0, DType::Bool));
  FERRY_TRY(checkOperandDType(step, 1, t));
  FERRY_TRY(checkOperandDType(step, 2, t));
  std::array<Walk, 3> walks;
  for (size_t i = 0; i < 3; ++i) {
    Expected<Walk> w = walkOf(step, step.operands[i].shape);
    if (!w) return w.status();
    walks[i] = std::move(*w);
  }
  return withStorage(t, [&](auto s) -> Expected<std::unique_ptr<Kernel>> {
    using S = decltype(s);
    return stepKernel(step, [walks = std::move(walks)](const KernelCall &call) {
      whereLaunch<S>(call, walks);
      return Status();
    });
  });
}

// Each element converts on its own, so any split gives the same bytes.
Expected<std::unique_ptr<Kernel>> prepareCast(const StepSpec &step) {
  FERRY_TRY(checkSameShape(step));
  const DType from = step.operands[0].dtype, to = step.result.dtype;
  return stepKernel(step, [from, to](const KernelCall &call) {
    const auto inSize = static_cast<int64_t>(dtypeSize(from)), outSize = static_cast<int64_t>(dtypeSize(to));
    std::byte *in = call.operands[0].data, *out = call.result.data;
    parallelFor(call.result.type->numel(), kChunkBlocks * kBlock, [&](int64_t begin, int64_t end) {
      convertElements(from, in + begin * inSize, to, out + begin * outSize,
                      static_cast<size_t>(end - begin));
    });
    return Status();
  });
}

}  // namespace ferry::cpu
