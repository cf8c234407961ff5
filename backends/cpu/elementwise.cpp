// backends/cpu/elementwise.cpp — unary and binary elementwise ops, where and cast on the CPU.
//
// Blocks of kBlock output elements: each operand is gathered (following broadcasting) into a
// buffer of the type the op computes in — float for f16, bf16 and f32, double for f64, int64
// for bool and the integers — the op runs over the buffers (Eigen arrays for floats, so exp,
// tanh and the like are vectorised; plain loops the compiler vectorises where Eigen 3.4 would
// run one scalar at a time: select and comparisons), and the block is stored in the result's
// dtype, or is computed in the result itself when that holds the compute type. The dtype
// switches sit outside the element loops, and templates are per storage type and per compute
// type, not per (op, dtype) pair. Large tensors are split with parallelFor into chunks of whole
// blocks, each with its own buffers and cursors; blocks start at multiples of kBlock however the
// work is split, so results are bit-identical to a serial run.
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
#include "backends/cpu/math_impl.h"
#include "backends/cpu/parallel.h"

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

// The element type an op computing in `dtype` works in.
template <class F> decltype(auto) withCompute(DType dtype, F &&f) {
  switch (dtype) {
    case DType::F16:
    case DType::BF16:
    case DType::F32: return f(float{});
    case DType::F64: return f(double{});
    default: return f(int64_t{});
  }
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

// Walks an operand of shape `in` broadcast to `out` in the output's row-major order, one run of
// the innermost dimension at a time, from output element `start`.
class Cursor {
 public:
  Cursor(std::span<const int64_t> out, std::span<const int64_t> in, int64_t start) {
    const size_t rank = std::max<size_t>(out.size(), 1);
    std::vector<int64_t> dims(rank, 1), strides(rank, 0);
    std::copy(out.begin(), out.end(), dims.end() - static_cast<ptrdiff_t>(out.size()));
    int64_t stride = 1;
    for (size_t k = 0; k < in.size(); ++k) {  // from the innermost dimension outwards
      const size_t d = rank - 1 - k;
      const int64_t n = in[in.size() - 1 - k];
      strides[d] = n == 1 ? 0 : stride;
      stride *= n;
    }
    // Size-1 dims drop out and adjacent dims that the operand walks as one (both contiguous, or
    // both broadcast) merge, so a dense operand is one long run and a broadcast bias a few.
    for (size_t d = 0; d < rank; ++d) {
      if (dims[d] == 1) continue;
      if (!dims_.empty() && strides_.back() == strides[d] * dims[d]) {
        dims_.back() *= dims[d];
        strides_.back() = strides[d];
        continue;
      }
      dims_.push_back(dims[d]);
      strides_.push_back(strides[d]);
    }
    if (dims_.empty()) {
      dims_.push_back(1);
      strides_.push_back(0);
    }
    index_.assign(dims_.size(), 0);
    // start > 0 only in a tensor with elements: no dim is 0.
    for (size_t d = dims_.size(), rest = static_cast<size_t>(start); rest > 0 && d-- > 0;) {
      index_[d] = static_cast<int64_t>(rest % static_cast<size_t>(dims_[d]));
      rest /= static_cast<size_t>(dims_[d]);
      offset_ += index_[d] * strides_[d];
    }
  }
  int64_t offset() const { return offset_; }
  int64_t innerStride() const { return strides_.back(); }
  int64_t rowLeft() const { return dims_.back() - index_.back(); }
  void advance(int64_t run) {
    const size_t last = dims_.size() - 1;
    index_[last] += run;
    offset_ += run * strides_[last];
    if (index_[last] < dims_[last]) return;
    offset_ -= dims_[last] * strides_[last];
    index_[last] = 0;
    for (size_t d = last; d-- > 0;) {
      offset_ += strides_[d];
      if (++index_[d] < dims_[d]) return;
      offset_ -= dims_[d] * strides_[d];
      index_[d] = 0;
    }
  }

 private:
  std::vector<int64_t> dims_, strides_, index_;
  int64_t offset_ = 0;
};

template <class S> constexpr bool kIsHalf = std::is_same_v<S, half> || std::is_same_v<S, bfloat16>;

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

template <class C> void gatherAny(const TensorView &v, Cursor &cursor, C *out, int64_t n) {
  withStorage(v.type->dtype, [&](auto s) { gather<decltype(s), C>(v, cursor, out, n); });
}

template <class C> void storeBlock(const C *in, const TensorView &r, int64_t at, int64_t n) {
  const bool isBool = r.type->dtype == DType::Bool;
  withStorage(r.type->dtype, [&](auto s) {
    using S = decltype(s);
    S *out = reinterpret_cast<S *>(r.data) + at;
    if constexpr (kIsHalf<S> && std::is_same_v<C, float>)  // vectorised conversion
      convertElements(DType::F32, reinterpret_cast<const std::byte *>(in), r.type->dtype,
                      reinterpret_cast<std::byte *>(out), static_cast<size_t>(n));
    else
      for (int64_t j = 0; j < n; ++j) out[j] = fromCompute<S>(in[j], isBool);
  });
}

// Where a block of results is computed: in the result itself when it is stored as C (no copy
// afterwards), else in `buffer`, stored with storeBlock.
template <class C> C *resultBlock(const TensorView &r, int64_t at, C *buffer) {
  if constexpr (std::is_floating_point_v<C>)
    return outAs(r, at, buffer);
  else
    return r.type->dtype == DType::I64 ? reinterpret_cast<int64_t *>(r.data) + at : buffer;
}

template <class C> using Array = Eigen::Map<Eigen::Array<C, Eigen::Dynamic, 1>>;

template <class C> void unaryFloat(OpKind k, bool tanhGelu, C *x, int64_t n) {
  Array<C> a(x, n);
  const C half_ = C(0.5), one = C(1);
  switch (k) {
    case OpKind::Neg: a = -a; return;
    case OpKind::Abs: a = a.abs(); return;
    case OpKind::Exp: a = exactExp(a); return;
    case OpKind::Log: a = a.log(); return;
    case OpKind::Sqrt: a = a.sqrt(); return;
    case OpKind::Rsqrt: a = a.rsqrt(); return;
    case OpKind::Tanh: a = a.tanh(); return;
    case OpKind::Sigmoid: a = one / (one + (-a).exp()); return;
    case OpKind::Relu:  // NaN stays; `|`, not `||`, and no Eigen select: this vectorises
      for (int64_t i = 0; i < n; ++i) x[i] = (x[i] > C(0)) | (x[i] != x[i]) ? x[i] : C(0);
      return;
    case OpKind::Erf: a = a.erf(); return;
    case OpKind::Silu: a = a / (one + (-a).exp()); return;
    case OpKind::Gelu:
      if (tanhGelu) {
        const C k0 = C(std::sqrt(2.0 / std::numbers::pi));
        a = half_ * a * (one + (k0 * (a + C(0.044715) * a * a * a)).tanh());
      } else {
        a = half_ * a * (one + (a * C(1.0 / std::numbers::sqrt2)).erf());
      }
      return;
    default: FERRY_CHECK(false) << "not a unary op";
  }
}

void unaryInt(OpKind k, int64_t *x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const auto u = static_cast<uint64_t>(x[i]);
    switch (k) {
      case OpKind::Neg: x[i] = static_cast<int64_t>(0 - u); break;
      case OpKind::Abs: x[i] = x[i] < 0 ? static_cast<int64_t>(0 - u) : x[i]; break;
      case OpKind::Relu: x[i] = x[i] > 0 ? x[i] : 0; break;
      default: FERRY_CHECK(false) << "no integer form of this unary op";
    }
  }
}

template <class C> void binaryFloat(OpKind k, C *x, const C *y, int64_t n) {
  Array<C> a(x, n);
  Eigen::Map<const Eigen::Array<C, Eigen::Dynamic, 1>> b(y, n);
  const C nan = std::numeric_limits<C>::quiet_NaN();
  switch (k) {
    case OpKind::Add: a += b; return;
    case OpKind::Sub: a -= b; return;
    case OpKind::Mul: a *= b; return;
    case OpKind::Div: a /= b; return;
    case OpKind::Pow:
      for (int64_t i = 0; i < n; ++i) x[i] = std::pow(x[i], y[i]);
      return;
    // NaN propagates, as torch.maximum/minimum. Plain loops with `|`: they vectorise, where
    // Eigen 3.4's select does not.
    case OpKind::Maximum:
      for (int64_t i = 0; i < n; ++i)
        x[i] = (x[i] != x[i]) | (y[i] != y[i]) ? nan : x[i] > y[i] ? x[i] : y[i];
      return;
    case OpKind::Minimum:
      for (int64_t i = 0; i < n; ++i)
        x[i] = (x[i] != x[i]) | (y[i] != y[i]) ? nan : x[i] < y[i] ? x[i] : y[i];
      return;
    default: FERRY_CHECK(false) << "not an arithmetic binary op";
  }
}

// Integer arithmetic wraps (through uint64: no signed overflow); pow goes through double,
// saturated into int64, as the reference does.
int64_t powInt(int64_t x, int64_t y) {
  const double p = std::pow(static_cast<double>(x), static_cast<double>(y));
  if (std::isnan(p)) return 0;
  if (p <= -0x1p63) return std::numeric_limits<int64_t>::min();
  if (p >= 0x1p63) return std::numeric_limits<int64_t>::max();
  return static_cast<int64_t>(std::trunc(p));
}

void binaryInt(OpKind k, int64_t *x, const int64_t *y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const auto u = static_cast<uint64_t>(x[i]), v = static_cast<uint64_t>(y[i]);
    switch (k) {
      case OpKind::Add: x[i] = static_cast<int64_t>(u + v); break;
      case OpKind::Sub: x[i] = static_cast<int64_t>(u - v); break;
      case OpKind::Mul: x[i] = static_cast<int64_t>(u * v); break;
      case OpKind::Maximum: x[i] = std::max(x[i], y[i]); break;
      case OpKind::Minimum: x[i] = std::min(x[i], y[i]); break;
      case OpKind::Pow: x[i] = powInt(x[i], y[i]); break;
      default: FERRY_CHECK(false) << "no integer form of this binary op";
    }
  }
}

template <class C> void compare(OpKind k, const C *x, const C *y, int64_t *out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    switch (k) {
      case OpKind::Equal: out[i] = x[i] == y[i]; break;
      case OpKind::Less: out[i] = x[i] < y[i]; break;
      case OpKind::Greater: out[i] = x[i] > y[i]; break;
      default: FERRY_CHECK(false) << "not a comparison";
    }
  }
}

bool isCompare(OpKind k) { return k == OpKind::Equal || k == OpKind::Less || k == OpKind::Greater; }

Status checkOperandDType(const KernelCall &call, size_t i, DType want) {
  if (call.operands[i].type->dtype == want) return Status();
  return contractError(call, "operand " + std::to_string(i) + " is " +
                                 call.operands[i].type->str() + ", expected " +
                                 std::string(dtypeName(want)) + " (a cast is missing)");
}

}  // namespace

Status unary(const KernelCall &call) {
  const TensorView &x = call.operands[0], &r = call.result;
  FERRY_TRY(checkOperandDType(call, 0, r.type->dtype));
  if (x.type->shape != r.type->shape)
    return contractError(call, "operand " + x.type->str() + " and result " + r.type->str() +
                                   " differ in shape");
  bool tanhGelu = false;
  if (call.op.kind == OpKind::Gelu) {
    const std::string &mode = attrString(call.op, call.attrs, "approximate");
    if (mode != "none" && mode != "tanh")
      return makeError("attr",
                       "'gelu' approximate must be \"none\" or \"tanh\", got \"" + mode + "\"",
                       call.loc);
    tanhGelu = mode == "tanh";
  }
  const int64_t n = r.type->numel();
  withCompute(r.type->dtype, [&](auto c) {
    using C = decltype(c);
    forChunks(n, [&](int64_t begin, int64_t end) {
      C buffer[kBlock];
      Cursor cursor(r.type->shape, x.type->shape, begin);
      for (int64_t at = begin; at < end; at += kBlock) {
        const int64_t m = std::min(kBlock, end - at);
        C *a = resultBlock(r, at, buffer);
        gatherAny(x, cursor, a, m);
        if constexpr (std::is_same_v<C, int64_t>)
          unaryInt(call.op.kind, a, m);
        else
          unaryFloat(call.op.kind, tanhGelu, a, m);
        if (a == buffer) storeBlock(buffer, r, at, m);
      }
    });
  });
  return Status();
}

Status binary(const KernelCall &call) {
  const TensorView &x = call.operands[0], &y = call.operands[1], &r = call.result;
  const OpKind k = call.op.kind;
  const DType compute = isCompare(k) ? x.type->dtype : r.type->dtype;
  FERRY_TRY(checkOperandDType(call, 0, compute));
  FERRY_TRY(checkOperandDType(call, 1, compute));
  const int64_t n = r.type->numel();
  withCompute(compute, [&](auto c) {
    using C = decltype(c);
    forChunks(n, [&](int64_t begin, int64_t end) {
      C buffer[kBlock], b[kBlock];
      int64_t flags[kBlock];
      Cursor cx(r.type->shape, x.type->shape, begin), cy(r.type->shape, y.type->shape, begin);
      for (int64_t at = begin; at < end; at += kBlock) {
        const int64_t m = std::min(kBlock, end - at);
        C *a = isCompare(k) ? buffer : resultBlock(r, at, buffer);
        gatherAny(x, cx, a, m);
        gatherAny(y, cy, b, m);
        if (isCompare(k)) {
          compare(k, a, b, flags, m);
          storeBlock(flags, r, at, m);
          continue;
        }
        if constexpr (std::is_same_v<C, int64_t>)
          binaryInt(k, a, b, m);
        else
          binaryFloat(k, a, b, m);
        if (a == buffer) storeBlock(buffer, r, at, m);
      }
    });
  });
  return Status();
}

Status where(const KernelCall &call) {
  const TensorView &cond = call.operands[0], &r = call.result;
  FERRY_TRY(checkOperandDType(call, 0, DType::Bool));
  FERRY_TRY(checkOperandDType(call, 1, r.type->dtype));
  FERRY_TRY(checkOperandDType(call, 2, r.type->dtype));
  const int64_t n = r.type->numel();
  withStorage(r.type->dtype, [&](auto s) {
    using S = decltype(s);
    S *out = reinterpret_cast<S *>(r.data);
    forChunks(n, [&](int64_t begin, int64_t end) {
      uint8_t c[kBlock];
      S a[kBlock], b[kBlock];
      Cursor cc(r.type->shape, cond.type->shape, begin),
          ca(r.type->shape, call.operands[1].type->shape, begin),
          cb(r.type->shape, call.operands[2].type->shape, begin);
      for (int64_t at = begin; at < end; at += kBlock) {
        const int64_t m = std::min(kBlock, end - at);
        gather<uint8_t, uint8_t>(cond, cc, c, m);
        gather<S, S>(call.operands[1], ca, a, m);
        gather<S, S>(call.operands[2], cb, b, m);
        for (int64_t j = 0; j < m; ++j) out[at + j] = c[j] ? a[j] : b[j];
      }
    });
  });
  return Status();
}

Status cast(const KernelCall &call) {
  const TensorView &x = call.operands[0], &r = call.result;
  if (x.type->shape != r.type->shape)
    return contractError(call, "operand " + x.type->str() + " and result " + r.type->str() +
                                   " differ in shape");
  const DType from = x.type->dtype, to = r.type->dtype;
  const auto inSize = static_cast<int64_t>(dtypeSize(from)),
             outSize = static_cast<int64_t>(dtypeSize(to));
  // Each element converts on its own, so any split gives the same bytes.
  parallelFor(r.type->numel(), kChunkBlocks * kBlock, [&](int64_t begin, int64_t end) {
    convertElements(from, x.data + begin * inSize, to, r.data + begin * outSize,
                    static_cast<size_t>(end - begin));
  });
  return Status();
}

Expected<std::unique_ptr<Kernel>> prepareUnary(const StepSpec &step) { return stepKernel(step, unary); }
Expected<std::unique_ptr<Kernel>> prepareBinary(const StepSpec &step) { return stepKernel(step, binary); }
Expected<std::unique_ptr<Kernel>> prepareWhere(const StepSpec &step) { return stepKernel(step, where); }
Expected<std::unique_ptr<Kernel>> prepareCast(const StepSpec &step) { return stepKernel(step, cast); }

}  // namespace ferry::cpu
