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

#include "backends/cpu/elementwise_impl.h"
#include "backends/cpu/kernels.h"
#include "backends/cpu/parallel.h"
#include "backends/cpu/vmath.h"

namespace ferry::cpu {

using namespace elementwise;

namespace {

// Where a block of results is computed: in the result itself when it is stored as its compute
// type (no copy afterwards), else in `buffer`, stored with storeBlock.
template <class S> ComputeOf<S> *resultBlock(const TensorView &r, int64_t at, ComputeOf<S> *buffer) {
  if constexpr (std::is_same_v<S, ComputeOf<S>>)
    return reinterpret_cast<S *>(r.data) + at;
  else
    return buffer;
}

// ---- The ops, one block function each: picked when the step is prepared ----------------------

template <class C> using Array = Eigen::Map<Eigen::Array<C, Eigen::Dynamic, 1>>;
template <class C> using ConstArray = Eigen::Map<const Eigen::Array<C, Eigen::Dynamic, 1>>;

// tanh, erf and the gelus stay Eigen 3.4's rational approximations: vmath's are accurate to a few
// ulp everywhere (also where gelu is tiny, which 1 + erf and 1 + tanh round to 0) but slower on
// this AVX-512 machine (16M f32 through this kernel, 2 threads: gelu_erf 3.7x, gelu_tanh 1.2x,
// tanh 1.25x; erf 8x in one thread: bench/README.md), and these kernels are the speed baseline
// of the unfused ops. One line each to switch (vmathBlock below).
template <class C> void geluTanh(C *y, const C *x, int64_t n) {
  ConstArray<C> a(x, n);
  const C k0 = C(std::sqrt(2.0 / std::numbers::pi));
  Array<C>(y, n) = C(0.5) * a * (C(1) + (k0 * (a + C(0.044715) * a * a * a)).tanh());
}

template <class C> void geluErf(C *y, const C *x, int64_t n) {
  ConstArray<C> a(x, n);
  Array<C>(y, n) = C(0.5) * a * (C(1) + (a * C(1.0 / std::numbers::sqrt2)).erf());
}

// A vmath function (backends/cpu/vmath.h: SLEEF and our own kernels, vectorised for the CPU's
// widest ISA, a few ulp) over a block, for the compute type C: exp, log, sigmoid and silu
// 1.2-3x faster than Eigen's, sqrt and rsqrt exact.
template <class C, auto F32, auto F64> void vmathBlock(C *y, const C *x, int64_t n) {
  if constexpr (std::is_same_v<C, float>)
    F32(x, y, n);
  else
    F64(x, y, n);
}

// The block function of a float unary op; nullptr for an op that is not one.
template <class C> UnaryFn<C> floatUnary(OpKind k, bool tanhGelu) {
  switch (k) {
    // A loop, not Eigen's `-x`: Eigen 3.4's AVX negation is 0 - x, which gives +0 for +0 (the
    // compiler vectorises this loop as a sign flip).
    case OpKind::Neg:
      return [](C *y, const C *x, int64_t n) {
        for (int64_t i = 0; i < n; ++i) y[i] = -x[i];
      };
    case OpKind::Abs: return [](C *y, const C *x, int64_t n) { Array<C>(y, n) = ConstArray<C>(x, n).abs(); };
    case OpKind::Exp: return vmathBlock<C, expF32, expF64>;
    case OpKind::Log: return vmathBlock<C, logF32, logF64>;
    case OpKind::Sqrt: return vmathBlock<C, sqrtF32, sqrtF64>;
    case OpKind::Rsqrt: return vmathBlock<C, rsqrtF32, rsqrtF64>;
    case OpKind::Tanh: return [](C *y, const C *x, int64_t n) { Array<C>(y, n) = ConstArray<C>(x, n).tanh(); };
    case OpKind::Sigmoid: return vmathBlock<C, sigmoidF32, sigmoidF64>;
    case OpKind::Relu:  // NaN stays; `|`, not `||`, and no Eigen select: this vectorises
      return [](C *y, const C *x, int64_t n) {
        for (int64_t i = 0; i < n; ++i) y[i] = (x[i] > C(0)) | (x[i] != x[i]) ? x[i] : C(0);
      };
    case OpKind::Erf: return [](C *y, const C *x, int64_t n) { Array<C>(y, n) = ConstArray<C>(x, n).erf(); };
    case OpKind::Silu: return vmathBlock<C, siluF32, siluF64>;
    case OpKind::Gelu: return tanhGelu ? geluTanh<C> : geluErf<C>;
    default: return nullptr;
  }
}

// Integer arithmetic wraps (through uint64: no signed overflow).
UnaryFn<int64_t> intUnary(OpKind k) {
  switch (k) {
    case OpKind::Neg:
      return [](int64_t *y, const int64_t *x, int64_t n) {
        for (int64_t i = 0; i < n; ++i) y[i] = static_cast<int64_t>(0 - static_cast<uint64_t>(x[i]));
      };
    case OpKind::Abs:
      return [](int64_t *y, const int64_t *x, int64_t n) {
        for (int64_t i = 0; i < n; ++i)
          y[i] = x[i] < 0 ? static_cast<int64_t>(0 - static_cast<uint64_t>(x[i])) : x[i];
      };
    case OpKind::Relu:
      return [](int64_t *y, const int64_t *x, int64_t n) {
        for (int64_t i = 0; i < n; ++i) y[i] = x[i] > 0 ? x[i] : 0;
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
    case OpKind::Add:
      return [](C *z, const C *x, const C *y, int64_t n) {
        Array<C>(z, n) = ConstArray<C>(x, n) + ConstArray<C>(y, n);
      };
    case OpKind::Sub:
      return [](C *z, const C *x, const C *y, int64_t n) {
        Array<C>(z, n) = ConstArray<C>(x, n) - ConstArray<C>(y, n);
      };
    case OpKind::Mul:
      return [](C *z, const C *x, const C *y, int64_t n) {
        Array<C>(z, n) = ConstArray<C>(x, n) * ConstArray<C>(y, n);
      };
    case OpKind::Div:
      return [](C *z, const C *x, const C *y, int64_t n) {
        Array<C>(z, n) = ConstArray<C>(x, n) / ConstArray<C>(y, n);
      };
    case OpKind::Pow:
      // An exponent of 2 throughout the block (a constant: the squares of a layer norm or a
      // variance written out, as exporters do) is one multiply each, correctly rounded as the
      // reference's double product rounded once is, where pow takes ~20 times longer.
      return [](C *z, const C *x, const C *y, int64_t n) {
        bool squares = true;
        for (int64_t i = 0; i < n; ++i) squares &= y[i] == C(2);
        if (squares)
          for (int64_t i = 0; i < n; ++i) z[i] = x[i] * x[i];
        else
          for (int64_t i = 0; i < n; ++i) z[i] = std::pow(x[i], y[i]);
      };
    case OpKind::Maximum:
      return [](C *z, const C *x, const C *y, int64_t n) {
        const C nan = std::numeric_limits<C>::quiet_NaN();
        for (int64_t i = 0; i < n; ++i)
          z[i] = (x[i] != x[i]) | (y[i] != y[i]) ? nan : x[i] > y[i] ? x[i] : y[i];
      };
    case OpKind::Minimum:
      return [](C *z, const C *x, const C *y, int64_t n) {
        const C nan = std::numeric_limits<C>::quiet_NaN();
        for (int64_t i = 0; i < n; ++i)
          z[i] = (x[i] != x[i]) | (y[i] != y[i]) ? nan : x[i] < y[i] ? x[i] : y[i];
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

// Calls z[i] = f(x[i], y[i]) over a block.
template <class F> void eachPair(int64_t *z, const int64_t *x, const int64_t *y, int64_t n, F f) {
  for (int64_t i = 0; i < n; ++i) z[i] = f(x[i], y[i]);
}

BinaryFn<int64_t> intBinary(OpKind k) {
  using I = int64_t;
  using U = uint64_t;
  switch (k) {
    case OpKind::Add:
      return [](I *z, const I *x, const I *y, I n) { eachPair(z, x, y, n, [](I a, I b) { return I(U(a) + U(b)); }); };
    case OpKind::Sub:
      return [](I *z, const I *x, const I *y, I n) { eachPair(z, x, y, n, [](I a, I b) { return I(U(a) - U(b)); }); };
    case OpKind::Mul:
      return [](I *z, const I *x, const I *y, I n) { eachPair(z, x, y, n, [](I a, I b) { return I(U(a) * U(b)); }); };
    case OpKind::Maximum:
      return [](I *z, const I *x, const I *y, I n) { eachPair(z, x, y, n, [](I a, I b) { return std::max(a, b); }); };
    case OpKind::Minimum:
      return [](I *z, const I *x, const I *y, I n) { eachPair(z, x, y, n, [](I a, I b) { return std::min(a, b); }); };
    case OpKind::Pow: return [](I *z, const I *x, const I *y, I n) { eachPair(z, x, y, n, powInt); };
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

// An operand's next block in compute type: where it lies when it is stored as computed and has
// the result's shape (`dense`), else gathered into `buffer`.
template <class S, class C>
const C *operandBlock(const TensorView &v, bool dense, Cursor &cursor, int64_t at, int64_t m,
                      C *buffer) {
  if constexpr (std::is_same_v<S, C>)
    if (dense) return reinterpret_cast<const C *>(v.data) + at;
  gather<S, C>(v, cursor, buffer, m);
  return buffer;
}

// Unary ops keep the shape: the operand is dense.
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
      fn(a, operandBlock<S, C>(x, true, cursor, at, m, buffer), m);
      if (a == buffer) storeBlock<S>(buffer, r, at, m, isBool);
    }
  });
}

template <class S>
void binaryLaunch(const KernelCall &call, const Walk &wx, const Walk &wy,
                  BinaryFn<ComputeOf<S>> fn, bool isBool) {
  using C = ComputeOf<S>;
  const TensorView &x = call.operands[0], &y = call.operands[1], &r = call.result;
  const bool denseX = x.type->shape == r.type->shape, denseY = y.type->shape == r.type->shape;
  forChunks(r.type->numel(), [&](int64_t begin, int64_t end) {
    C buffer[kBlock], b[kBlock];
    Cursor cx(wx, begin), cy(wy, begin);
    for (int64_t at = begin; at < end; at += kBlock) {
      const int64_t m = std::min(kBlock, end - at);
      C *a = resultBlock<S>(r, at, buffer);
      fn(a, operandBlock<S, C>(x, denseX, cx, at, m, buffer),
         operandBlock<S, C>(y, denseY, cy, at, m, b), m);
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
        const auto leaky = [a = static_cast<C>(alpha)](C *y, const C *x, int64_t n) {
          for (int64_t i = 0; i < n; ++i) y[i] = x[i] < C(0) ? a * x[i] : x[i];
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

// The block functions, for the fused kernel (elementwise_impl.h).
namespace elementwise {
template <class C> UnaryFn<C> unaryBlockFn(OpKind k, bool tanhGelu) { return unaryFn<C>(k, tanhGelu); }
template <class C> BinaryFn<C> binaryBlockFn(OpKind k) { return binaryFn<C>(k); }
template <class C> CompareFn<C> compareBlockFn(OpKind k) { return compareFn<C>(k); }
template UnaryFn<float> unaryBlockFn<float>(OpKind, bool);
template UnaryFn<double> unaryBlockFn<double>(OpKind, bool);
template UnaryFn<int64_t> unaryBlockFn<int64_t>(OpKind, bool);
template BinaryFn<float> binaryBlockFn<float>(OpKind);
template BinaryFn<double> binaryBlockFn<double>(OpKind);
template BinaryFn<int64_t> binaryBlockFn<int64_t>(OpKind);
template CompareFn<float> compareBlockFn<float>(OpKind);
template CompareFn<double> compareBlockFn<double>(OpKind);
template CompareFn<int64_t> compareBlockFn<int64_t>(OpKind);
}  // namespace elementwise

}  // namespace ferry::cpu
