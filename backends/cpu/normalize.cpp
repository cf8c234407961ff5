// backends/cpu/normalize.cpp — batch_norm, layer_norm, softmax/log_softmax and the reductions
// sum, mean and max on the CPU.
//
// Semantics are the reference's (backends/reference/normalize.cpp): batch_norm is inference
// with ONNX's operand order (x scale bias mean var) over dim 1; layer_norm normalises the dims
// from `axis` with the population variance; softmax subtracts the max (NaN ignored, as fmax)
// before exp; reductions run over `axes` (empty: all dims; a scalar reduces nothing). sum of
// bool/integers is exact in i64, wrapping as torch.sum; sum over nothing is 0, mean NaN, and max
// over nothing a "runtime" error. max is exact for every dtype and NaN wins.
//
// Floating dtypes compute in f32 (f16, bf16, f32) or double (f64); f16/bf16 are converted in
// blocks of kBlock elements, f32/f64 are read and written in place. sum and mean accumulate in
// double; the statistics of layer_norm and softmax add vectorised blocks in the compute type and
// the blocks in double.
//
// Layout of the work, always walking memory contiguously:
//   - batch_norm: planes (n, c) of the trailing dims, or rows of C when there are none;
//   - layer_norm: rows of the normalised dims, three passes (mean, variance, output);
//   - softmax: contiguous rows when the axis is innermost; otherwise column blocks of the
//     [dim, inner] slab, whose rows fold into per-column max and sum;
//   - reductions: the dims are coalesced (size-1 dims dropped, neighbours of the same kind
//     merged) into kept and reduced dims around the innermost run; a reduced innermost run
//     reduces each row to a scalar, a kept one accumulates whole rows. Work is split over the
//     outputs, or when there are fewer outputs than threads over the reduced rows, each chunk
//     into its own partial results, combined in order.
#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "backends/cpu/kernels.h"
#include "backends/cpu/math_impl.h"
#include "backends/cpu/parallel.h"

namespace ferry::cpu {

namespace {

constexpr int64_t kBlock = 1024;     // elements converted, or reduced into one float, at a time
constexpr int64_t kGrain = 1 << 15;  // elements of work below which a chunk is not worth a thread

template <class C> using Array = Eigen::Array<C, Eigen::Dynamic, 1>;
template <class C> using ArrayMap = Eigen::Map<Array<C>>;
template <class C> using ConstMap = Eigen::Map<const Array<C>>;

// Calls f(S{}) with S the C++ type storing a bool or integer `dtype` (bool as uint8_t).
template <class F> decltype(auto) withIntegral(DType dtype, F &&f) {
  switch (dtype) {
    case DType::I8: return f(int8_t{});
    case DType::I32: return f(int32_t{});
    case DType::I64: return f(int64_t{});
    default: return f(uint8_t{});  // bool, u8
  }
}

// Sum of `n` elements of `v` from `at`: blocks in C, vectorised, added up in double.
template <class C> double sumOf(const TensorView &v, int64_t at, int64_t n, C *buf) {
  double s = 0;
  for (int64_t b = 0; b < n; b += kBlock) {
    const int64_t m = std::min(kBlock, n - b);
    s += static_cast<double>(ConstMap<C>(loadAs(v, at + b, m, buf), m).sum());
  }
  return s;
}

int64_t numelOf(std::span<const int64_t> dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

Status sameDType(const KernelCall &call, size_t i) {
  if (call.operands[i].type->dtype == call.result.type->dtype) return Status();
  return contractError(
      call, "operand " + std::to_string(i) + " is " + call.operands[i].type->str() + ", expected " +
                std::string(dtypeName(call.result.type->dtype)) + " (a cast is missing)");
}

Status sameShape(const KernelCall &call) {
  if (call.result.type->shape == call.operands[0].type->shape) return Status();
  return contractError(call, "result " + call.result.type->str() + " for operand " +
                                 call.operands[0].type->str());
}

Expected<int64_t> axisOf(const KernelCall &call, int64_t rank) {
  const int64_t axis = attrInt(call.op, call.attrs, "axis");
  std::optional<int64_t> n = normalizeAxis(axis, rank);
  if (!n)
    return contractError(call,
                         "axis " + std::to_string(axis) + " of " + call.operands[0].type->str());
  return *n;
}

// ---- batch_norm ----------------------------------------------------------------------------

template <class C> void batchNorm(const KernelCall &call, int64_t channels, int64_t inner) {
  const TensorView &x = call.operands[0], &r = call.result;
  // y = (x - mean) * k + bias with k = scale / sqrt(var + eps), per channel, k in double first.
  std::vector<double> p(static_cast<size_t>(4 * channels));
  for (int64_t i = 0; i < 4; ++i)
    convertElements(call.operands[static_cast<size_t>(i + 1)].type->dtype,
                    call.operands[static_cast<size_t>(i + 1)].data, DType::F64,
                    reinterpret_cast<std::byte *>(p.data() + i * channels),
                    static_cast<size_t>(channels));
  const double eps = attrFloat(call.op, call.attrs, "eps");
  std::vector<C> mean(static_cast<size_t>(channels)), k(mean.size()), bias(mean.size());
  for (int64_t c = 0; c < channels; ++c) {
    k[c] = static_cast<C>(p[c] / std::sqrt(p[3 * channels + c] + eps));
    bias[c] = static_cast<C>(p[channels + c]);
    mean[c] = static_cast<C>(p[2 * channels + c]);
  }
  const int64_t n = x.type->numel();
  if (inner == 1) {  // [N, C]: rows of C against the parameter vectors
    const int64_t rows = channels == 0 ? 0 : n / channels;
    parallelFor(rows, std::max<int64_t>(1, kGrain / std::max<int64_t>(channels, 1)),
                [&](int64_t begin, int64_t end) {
                  std::vector<C> in(static_cast<size_t>(std::min(channels, kBlock))),
                      out(in.size());
                  for (int64_t row = begin; row < end; ++row) {
                    for (int64_t c0 = 0; c0 < channels; c0 += kBlock) {
                      const int64_t m = std::min(kBlock, channels - c0), at = row * channels + c0;
                      ConstMap<C> v(loadAs(x, at, m, in.data()), m);
                      C *y = outAs(r, at, out.data());
                      ArrayMap<C>(y, m) =
                          (v - ConstMap<C>(mean.data() + c0, m)) * ConstMap<C>(k.data() + c0, m) +
                          ConstMap<C>(bias.data() + c0, m);
                      storeAs(r, at, m, y);
                    }
                  }
                });
    return;
  }
  const int64_t planes = inner == 0 ? 0 : n / inner;
  parallelFor(planes, std::max<int64_t>(1, kGrain / std::max<int64_t>(inner, 1)),
              [&](int64_t begin, int64_t end) {
                std::vector<C> in(static_cast<size_t>(std::min(inner, kBlock))), out(in.size());
                for (int64_t plane = begin; plane < end; ++plane) {
                  const int64_t c = plane % channels;
                  for (int64_t b = 0; b < inner; b += kBlock) {
                    const int64_t m = std::min(kBlock, inner - b), at = plane * inner + b;
                    C *y = outAs(r, at, out.data());
                    ArrayMap<C>(y, m) =
                        (ConstMap<C>(loadAs(x, at, m, in.data()), m) - mean[c]) * k[c] + bias[c];
                    storeAs(r, at, m, y);
                  }
                }
              });
}

Status batchNorm(const KernelCall &call) {
  const Shape &xs = call.operands[0].type->shape;
  if (xs.size() < 2) return contractError(call, "operand " + call.operands[0].type->str());
  FERRY_TRY(sameShape(call));
  for (size_t i = 0; i < 5; ++i) {
    FERRY_TRY(sameDType(call, i));
    if (i > 0 && call.operands[i].type->numel() != xs[1])
      return contractError(call, "operand " + std::to_string(i) + " " +
                                     call.operands[i].type->str() + " for " +
                                     call.operands[0].type->str());
  }
  const int64_t inner = numelOf(std::span(xs).subspan(2));
  withFloat(call.result.type->dtype, [&](auto c) { batchNorm<decltype(c)>(call, xs[1], inner); });
  return Status();
}

// ---- layer_norm ----------------------------------------------------------------------------

template <class C> void layerNorm(const KernelCall &call, int64_t inner) {
  const TensorView &x = call.operands[0], &r = call.result;
  const double eps = attrFloat(call.op, call.attrs, "eps");
  // weight and bias as C once: every row reads them whole.
  std::vector<C> params[2];
  for (size_t i = 1; i < call.operands.size(); ++i) {
    params[i - 1].resize(static_cast<size_t>(inner));
    const C *p = loadAs(call.operands[i], 0, inner, params[i - 1].data());
    if (p != params[i - 1].data()) std::copy_n(p, inner, params[i - 1].data());
  }
  const C *weight = params[0].empty() ? nullptr : params[0].data();
  const C *bias = params[1].empty() ? nullptr : params[1].data();
  const int64_t rows = inner == 0 ? 0 : x.type->numel() / inner;
  parallelFor(rows, std::max<int64_t>(1, kGrain / std::max<int64_t>(3 * inner, 1)),
              [&](int64_t begin, int64_t end) {
                std::vector<C> buffers(static_cast<size_t>(2 * kBlock));
                C *in = buffers.data(), *out = in + kBlock;
                for (int64_t row = begin; row < end; ++row) {
                  const int64_t base = row * inner;
                  const double mean = sumOf(x, base, inner, in) / static_cast<double>(inner);
                  const C m = static_cast<C>(mean);
                  double sq = 0;  // two passes: no cancellation in the variance
                  for (int64_t b = 0; b < inner; b += kBlock) {
                    const int64_t n = std::min(kBlock, inner - b);
                    sq += static_cast<double>(
                        (ConstMap<C>(loadAs(x, base + b, n, in), n) - m).square().sum());
                  }
                  const C inv =
                      static_cast<C>(1 / std::sqrt(sq / static_cast<double>(inner) + eps));
                  for (int64_t b = 0; b < inner; b += kBlock) {
                    const int64_t n = std::min(kBlock, inner - b);
                    C *y = outAs(r, base + b, out);
                    ArrayMap<C> a(y, n);
                    a = (ConstMap<C>(loadAs(x, base + b, n, in), n) - m) * inv;
                    if (weight) a *= ConstMap<C>(weight + b, n);
                    if (bias) a += ConstMap<C>(bias + b, n);
                    storeAs(r, base + b, n, y);
                  }
                }
              });
}

Status layerNorm(const KernelCall &call) {
  const Shape &xs = call.operands[0].type->shape;
  FERRY_TRY(sameShape(call));
  Expected<int64_t> axis = axisOf(call, static_cast<int64_t>(xs.size()));
  if (!axis) return std::move(axis).takeStatus();
  const int64_t inner = numelOf(std::span(xs).subspan(static_cast<size_t>(*axis)));
  for (size_t i = 0; i < call.operands.size(); ++i) {
    FERRY_TRY(sameDType(call, i));
    if (i > 0 && call.operands[i].type->numel() != inner)
      return contractError(
          call, "operand " + std::to_string(i) + " " + call.operands[i].type->str() + " for " +
                    call.operands[0].type->str() + " from axis " + std::to_string(*axis));
  }
  withFloat(call.result.type->dtype, [&](auto c) { layerNorm<decltype(c)>(call, inner); });
  return Status();
}

// ---- softmax, log_softmax ------------------------------------------------------------------

// Softmax over contiguous rows of `dim` elements.
template <class C> void softmaxRows(const KernelCall &call, int64_t rows, int64_t dim, bool log) {
  const TensorView &x = call.operands[0], &r = call.result;
  const bool inPlace = r.type->dtype == kDType<C>;
  parallelFor(rows, std::max<int64_t>(1, kGrain / (3 * dim)), [&](int64_t begin, int64_t end) {
    std::vector<C> buffers(static_cast<size_t>(2 * kBlock));
    C *in = buffers.data(), *out = in + kBlock;
    for (int64_t row = begin; row < end; ++row) {
      const int64_t base = row * dim;
      // max ignoring NaN, as fmax from -inf: a NaN then spreads through the sum.
      C max = -std::numeric_limits<C>::infinity();
      for (int64_t b = 0; b < dim; b += kBlock) {
        const int64_t n = std::min(kBlock, dim - b);
        const C m =
            ConstMap<C>(loadAs(x, base + b, n, in), n).template maxCoeff<Eigen::PropagateNumbers>();
        if (m > max) max = m;
      }
      double sum = 0;
      for (int64_t b = 0; b < dim; b += kBlock) {
        const int64_t n = std::min(kBlock, dim - b);
        ConstMap<C> v(loadAs(x, base + b, n, in), n);
        if (inPlace && !log) {  // exp once, into the result, scaled below
          ArrayMap<C> y(outAs(r, base + b, out), n);
          y = exactExp(v - max);
          sum += static_cast<double>(y.sum());
        } else {
          sum += static_cast<double>(exactExp(v - max).sum());
        }
      }
      const C scale = static_cast<C>(1 / sum), logSum = static_cast<C>(std::log(sum));
      for (int64_t b = 0; b < dim; b += kBlock) {
        const int64_t n = std::min(kBlock, dim - b);
        C *y = outAs(r, base + b, out);
        ArrayMap<C> a(y, n);
        if (inPlace && !log) {
          a *= scale;
          continue;
        }
        ConstMap<C> v(loadAs(x, base + b, n, in), n);
        if (log)
          a = v - max - logSum;
        else
          a = exactExp(v - max) * scale;
        storeAs(r, base + b, n, y);
      }
    }
  });
}

// Softmax over the middle dim of [outer, dim, inner] (inner > 1): column blocks of the slab.
template <class C>
void softmaxColumns(const KernelCall &call, int64_t outer, int64_t dim, int64_t inner, bool log) {
  const TensorView &x = call.operands[0], &r = call.result;
  constexpr int64_t kColumns = 256;
  const int64_t blocks = (inner + kColumns - 1) / kColumns;
  const int64_t work = 3 * dim * std::min(inner, kColumns);
  const bool inPlace = r.type->dtype == kDType<C>;
  parallelFor(outer * blocks, std::max<int64_t>(1, kGrain / std::max<int64_t>(work, 1)),
              [&](int64_t begin, int64_t end) {
                std::vector<C> buffers(static_cast<size_t>(4 * kColumns));
                C *in = buffers.data(), *out = in + kColumns;
                ArrayMap<C> colMax(out + kColumns, kColumns), colSum(out + 2 * kColumns, kColumns);
                for (int64_t item = begin; item < end; ++item) {
                  const int64_t o = item / blocks, j0 = (item % blocks) * kColumns;
                  const int64_t n = std::min(kColumns, inner - j0);
                  auto mx = colMax.head(n);
                  auto sm = colSum.head(n);
                  auto at = [&](int64_t d) { return (o * dim + d) * inner + j0; };
                  mx.setConstant(-std::numeric_limits<C>::infinity());
                  for (int64_t d = 0; d < dim; ++d) {
                    const C *v = loadAs(x, at(d), n, in);
                    C *m = mx.data();
                    for (int64_t j = 0; j < n; ++j)  // NaN ignored, as fmax; no select: vectorises
                      m[j] = v[j] > m[j] ? v[j] : m[j];
                  }
                  sm.setZero();
                  for (int64_t d = 0; d < dim; ++d) {
                    ConstMap<C> v(loadAs(x, at(d), n, in), n);
                    if (inPlace && !log) {  // exp once, into the result, scaled below
                      ArrayMap<C> y(outAs(r, at(d), out), n);
                      y = exactExp(v - mx);
                      sm += y;
                    } else {
                      sm += exactExp(v - mx);
                    }
                  }
                  if (log)
                    sm = sm.log();
                  else
                    sm = sm.inverse();
                  for (int64_t d = 0; d < dim; ++d) {
                    C *y = outAs(r, at(d), out);
                    if (inPlace && !log) {
                      ArrayMap<C>(y, n) *= sm;
                      continue;
                    }
                    ConstMap<C> v(loadAs(x, at(d), n, in), n);
                    if (log)
                      ArrayMap<C>(y, n) = v - mx - sm;
                    else
                      ArrayMap<C>(y, n) = exactExp(v - mx) * sm;
                    storeAs(r, at(d), n, y);
                  }
                }
              });
}

Status softmax(const KernelCall &call) {
  const Shape &xs = call.operands[0].type->shape;
  FERRY_TRY(sameDType(call, 0));
  FERRY_TRY(sameShape(call));
  // A scalar is a softmax over one element, as the reference has it.
  int64_t outer = 1, dim = 1, inner = 1;
  if (!xs.empty()) {
    Expected<int64_t> axis = axisOf(call, static_cast<int64_t>(xs.size()));
    if (!axis) return std::move(axis).takeStatus();
    const auto a = static_cast<size_t>(*axis);
    outer = numelOf(std::span(xs).first(a));
    dim = xs[a];
    inner = numelOf(std::span(xs).subspan(a + 1));
  }
  if (outer == 0 || dim == 0 || inner == 0) return Status();
  const bool log = call.op.kind == OpKind::LogSoftmax;
  withFloat(call.result.type->dtype, [&](auto c) {
    using C = decltype(c);
    if (inner == 1)
      softmaxRows<C>(call, outer, dim, log);
    else
      softmaxColumns<C>(call, outer, dim, inner, log);
  });
  return Status();
}

// ---- reductions ----------------------------------------------------------------------------

// The input's dims coalesced: outer kept dims, outer reduced dims, and the innermost run.
struct ReducePlan {
  std::vector<int64_t> keptSizes, keptStrides, reducedSizes, reducedStrides;
  int64_t run = 1;          // innermost run length
  bool runReduced = false;  // whether the run is reduced (to one value per row)
  int64_t groups = 1;       // products of keptSizes and reducedSizes
  int64_t rows = 1;
  int64_t outPerGroup() const { return runReduced ? 1 : run; }
};

ReducePlan planReduce(std::span<const int64_t> xs, const std::vector<bool> &reduced) {
  std::vector<int64_t> sizes;
  std::vector<bool> kinds;
  for (size_t d = 0; d < xs.size(); ++d) {
    if (xs[d] == 1) continue;
    if (!kinds.empty() && kinds.back() == reduced[d]) {
      sizes.back() *= xs[d];
    } else {
      sizes.push_back(xs[d]);
      kinds.push_back(reduced[d]);
    }
  }
  ReducePlan p;
  if (sizes.empty()) return p;  // one element
  p.run = sizes.back();
  p.runReduced = kinds.back();
  int64_t stride = p.run;
  for (size_t d = sizes.size() - 1; d-- > 0;) {
    auto &s = kinds[d] ? p.reducedSizes : p.keptSizes;
    auto &t = kinds[d] ? p.reducedStrides : p.keptStrides;
    s.insert(s.begin(), sizes[d]);
    t.insert(t.begin(), stride);
    stride *= sizes[d];
  }
  p.groups = numelOf(p.keptSizes);
  p.rows = numelOf(p.reducedSizes);
  return p;
}

// Offsets of a row-major walk over `sizes` (with `strides`), from linear index `start`.
class Odometer {
 public:
  Odometer(const std::vector<int64_t> &sizes, const std::vector<int64_t> &strides, int64_t start)
      : sizes_(sizes), strides_(strides), index_(sizes.size()) {
    for (size_t d = sizes.size(); d-- > 0;) {
      index_[d] = start % sizes[d];
      start /= sizes[d];
      offset_ += index_[d] * strides[d];
    }
  }
  int64_t offset() const { return offset_; }
  void next() {
    for (size_t d = sizes_.size(); d-- > 0;) {
      offset_ += strides_[d];
      if (++index_[d] < sizes_[d]) return;
      offset_ -= sizes_[d] * strides_[d];
      index_[d] = 0;
    }
  }

 private:
  const std::vector<int64_t> &sizes_, &strides_;
  std::vector<int64_t> index_;
  int64_t offset_ = 0;
};

// Reducers: Acc is what a result accumulates in, In what the rows are read as. fold() folds a
// row into as many accumulators, reduce() a row into one value, combine() a later partial result
// into an earlier one (max keeps the first NaN; ties keep the earlier value).
template <class C> struct SumFloat {
  using In = C;
  using Acc = double;
  static Acc identity() { return 0; }
  static void fold(Acc *acc, const In *v, int64_t n) {
    ArrayMap<double>(acc, n) += ConstMap<C>(v, n).template cast<double>();
  }
  // In double, not in C: a sum that cancels to near 0 keeps its absolute accuracy.
  static Acc reduce(const In *v, int64_t n) {
    return ConstMap<C>(v, n).template cast<double>().sum();
  }
  static void combine(Acc &a, Acc b) { a += b; }
};

template <class C> struct MaxFloat {
  using In = C;
  using Acc = C;
  static Acc identity() { return -std::numeric_limits<C>::infinity(); }
  static void fold(Acc *acc, const In *v, int64_t n) {
    for (int64_t i = 0; i < n; ++i)  // `|`, not Eigen's select: it vectorises
      acc[i] = (v[i] > acc[i]) | (v[i] != v[i]) ? v[i] : acc[i];
  }
  static Acc reduce(const In *v, int64_t n) {
    return ConstMap<C>(v, n).template maxCoeff<Eigen::PropagateNaN>();
  }
  static void combine(Acc &a, Acc b) {
    if (b > a || b != b) a = b;
  }
};

// Integer sums wrap at 64 bits (through uint64: no signed overflow), as torch.sum in i64.
template <class S> struct SumInt {
  using In = S;
  using Acc = int64_t;
  static Acc identity() { return 0; }
  static void fold(Acc *acc, const In *v, int64_t n) {
    for (int64_t i = 0; i < n; ++i) combine(acc[i], static_cast<int64_t>(v[i]));
  }
  static Acc reduce(const In *v, int64_t n) {
    uint64_t s = 0;
    for (int64_t i = 0; i < n; ++i) s += static_cast<uint64_t>(static_cast<int64_t>(v[i]));
    return static_cast<int64_t>(s);
  }
  static void combine(Acc &a, Acc b) {
    a = static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
  }
};

template <class S> struct MaxInt {
  using In = S;
  using Acc = S;
  static Acc identity() { return std::numeric_limits<S>::lowest(); }
  static void fold(Acc *acc, const In *v, int64_t n) {
    for (int64_t i = 0; i < n; ++i) acc[i] = std::max(acc[i], v[i]);
  }
  static Acc reduce(const In *v, int64_t n) { return *std::max_element(v, v + n); }
  static void combine(Acc &a, Acc b) { a = std::max(a, b); }
};

// Rows as In: floats through loadAs, integers in place.
template <class In> const In *loadRow(const TensorView &v, int64_t at, int64_t n, In *buf) {
  if constexpr (std::is_floating_point_v<In>)
    return loadAs(v, at, n, buf);
  else
    return reinterpret_cast<const In *>(v.data) + at;
}

// Folds units [begin, end) of one group (at input offset `base`) into its accumulators: a unit is
// an element of the group's rows when the run is reduced, else a row.
template <class R>
void reduceGroup(const TensorView &x, const ReducePlan &p, int64_t base, int64_t begin, int64_t end,
                 typename R::Acc *acc, typename R::In *buf) {
  if (p.runReduced) {
    typename R::Acc a = acc[0];
    Odometer rows(p.reducedSizes, p.reducedStrides, begin / p.run);
    for (int64_t e = begin; e < end;) {
      const int64_t j = e % p.run, n = std::min(p.run - j, end - e);
      for (int64_t b = 0; b < n; b += kBlock) {
        const int64_t m = std::min(kBlock, n - b);
        R::combine(a, R::reduce(loadRow(x, base + rows.offset() + j + b, m, buf), m));
      }
      e += n;
      if (j + n == p.run) rows.next();
    }
    acc[0] = a;
    return;
  }
  // Column blocks outermost: the block of accumulators stays in cache over the rows.
  for (int64_t b = 0; b < p.run; b += kBlock) {
    const int64_t m = std::min(kBlock, p.run - b);
    Odometer rows(p.reducedSizes, p.reducedStrides, begin);
    for (int64_t row = begin; row < end; ++row, rows.next())
      R::fold(acc + b, loadRow(x, base + rows.offset() + b, m, buf), m);
  }
}

// Runs reducer R over the plan; store(acc, at, n) writes n finished outputs from output `at`.
template <class R, class Store>
void runReduce(const TensorView &x, const ReducePlan &p, const Store &store) {
  using Acc = typename R::Acc;
  const int64_t outs = p.groups * p.outPerGroup();
  const int64_t units = p.runReduced ? p.rows * p.run : p.rows;  // per group
  const int64_t perGroup = p.rows * p.run;                       // elements read per group
  const int64_t threads = poolThreads();
  const int64_t chunks =
      std::min({threads, units, std::max<int64_t>(1, p.groups * perGroup / kGrain)});
  if (p.groups >= threads || chunks < 2) {
    // Over the outputs: each chunk owns its groups.
    std::vector<Acc> acc(static_cast<size_t>(outs), R::identity());
    parallelFor(p.groups, std::max<int64_t>(1, kGrain / std::max<int64_t>(perGroup, 1)),
                [&](int64_t begin, int64_t end) {
                  std::vector<typename R::In> buf(static_cast<size_t>(kBlock));
                  Odometer groups(p.keptSizes, p.keptStrides, begin);
                  for (int64_t g = begin; g < end; ++g, groups.next())
                    reduceGroup<R>(x, p, groups.offset(), 0, units,
                                   acc.data() + g * p.outPerGroup(), buf.data());
                  store(acc.data() + begin * p.outPerGroup(), begin * p.outPerGroup(),
                        (end - begin) * p.outPerGroup());
                });
    return;
  }
  // Fewer groups than threads: each chunk folds its share of every group's units into its own
  // partial results, combined in chunk order (so max keeps the first NaN).
  std::vector<std::vector<Acc>> partial(static_cast<size_t>(chunks));
  parallelFor(chunks, 1, [&](int64_t cBegin, int64_t cEnd) {
    std::vector<typename R::In> buf(static_cast<size_t>(kBlock));
    for (int64_t c = cBegin; c < cEnd; ++c) {
      std::vector<Acc> &acc = partial[c];
      acc.assign(static_cast<size_t>(outs), R::identity());
      const int64_t begin = units * c / chunks, end = units * (c + 1) / chunks;
      Odometer groups(p.keptSizes, p.keptStrides, 0);
      for (int64_t g = 0; g < p.groups; ++g, groups.next())
        reduceGroup<R>(x, p, groups.offset(), begin, end, acc.data() + g * p.outPerGroup(),
                       buf.data());
    }
  });
  for (size_t c = 1; c < partial.size(); ++c)
    for (int64_t o = 0; o < outs; ++o) R::combine(partial[0][o], partial[c][o]);
  store(partial[0].data(), 0, outs);
}

// Stores double or C accumulators as the floating result (mean: divided by `count`).
template <class C, class Acc>
void storeFloats(const TensorView &r, const Acc *acc, int64_t at, int64_t n, double count) {
  C buf[kBlock];
  for (int64_t b = 0; b < n; b += kBlock) {
    const int64_t m = std::min(kBlock, n - b);
    C *y = outAs(r, at + b, buf);
    for (int64_t i = 0; i < m; ++i)
      y[i] = count > 0 ? static_cast<C>(static_cast<double>(acc[b + i]) / count)
                       : static_cast<C>(acc[b + i]);
    storeAs(r, at + b, m, y);
  }
}

Status reduce(const KernelCall &call) {
  const TensorView &x = call.operands[0], &r = call.result;
  const OpKind k = call.op.kind;
  const DType in = x.type->dtype, out = r.type->dtype;
  // sum of bool/integers gives i64; everything else computes in its operand's dtype.
  const bool intSum = k == OpKind::Sum && !isFloating(in);
  if (intSum ? out != DType::I64 : in != out)
    return contractError(call, "operand " + x.type->str() + " with result " + r.type->str());
  const Shape &xs = x.type->shape;
  const auto rank = static_cast<int64_t>(xs.size());
  const std::vector<int64_t> &axes = attrInts(call.op, call.attrs, "axes");
  std::vector<bool> reduced(xs.size(), axes.empty());
  if (rank > 0) {
    for (int64_t axis : axes) {
      std::optional<int64_t> n = normalizeAxis(axis, rank);
      if (!n) return contractError(call, "axis " + std::to_string(axis) + " of " + x.type->str());
      reduced[static_cast<size_t>(*n)] = true;
    }
  }
  const bool keepdims = attrBool(call.op, call.attrs, "keepdims");
  Shape want;
  int64_t count = 1;  // elements per output
  for (size_t d = 0; d < xs.size(); ++d) {
    if (reduced[d]) count *= xs[d];
    if (!reduced[d] || keepdims) want.push_back(reduced[d] ? 1 : xs[d]);
  }
  if (r.type->shape != want)
    return contractError(call, "result " + r.type->str() + " for operand " + x.type->str() +
                                   " (expected shape " + shapeStr(want) + ")");
  const int64_t outs = r.type->numel();
  if (outs == 0) return Status();
  if (count == 0) {
    if (k == OpKind::Max) {
      std::string dims;
      for (size_t d = 0; d < xs.size(); ++d)
        if (reduced[d] && xs[d] == 0) dims += (dims.empty() ? "" : ", ") + std::to_string(d);
      return makeError("runtime",
                       "'max' over an empty set: " + x.type->str() + " has size 0 in reduced dim " +
                           dims,
                       call.loc);
    }
    // sum over nothing is 0, mean 0/0 = NaN.
    const double fill = k == OpKind::Mean ? std::numeric_limits<double>::quiet_NaN() : 0.0;
    std::vector<double> values(static_cast<size_t>(outs), fill);
    convertElements(DType::F64, reinterpret_cast<const std::byte *>(values.data()), out, r.data,
                    values.size());
    return Status();
  }

  const ReducePlan plan = planReduce(xs, reduced);
  if (isFloating(in)) {
    withFloat(in, [&](auto c) {
      using C = decltype(c);
      if (k == OpKind::Max) {
        runReduce<MaxFloat<C>>(x, plan, [&](const C *acc, int64_t at, int64_t n) {
          storeFloats<C>(r, acc, at, n, 0);
        });
      } else {
        const double divisor = k == OpKind::Mean ? static_cast<double>(count) : 0;
        runReduce<SumFloat<C>>(x, plan, [&](const double *acc, int64_t at, int64_t n) {
          storeFloats<C>(r, acc, at, n, divisor);
        });
      }
    });
    return Status();
  }
  withIntegral(in, [&](auto s) {
    using S = decltype(s);
    if (intSum) {
      runReduce<SumInt<S>>(x, plan, [&](const int64_t *acc, int64_t at, int64_t n) {
        std::copy_n(acc, n, reinterpret_cast<int64_t *>(r.data) + at);
      });
    } else {
      runReduce<MaxInt<S>>(x, plan, [&](const S *acc, int64_t at, int64_t n) {
        std::copy_n(acc, n, reinterpret_cast<S *>(r.data) + at);
      });
    }
  });
  return Status();
}

}  // namespace

bool normalizeSupports(OpKind op, DType dtype) {
  switch (op) {
    case OpKind::BatchNorm:
    case OpKind::LayerNorm:
    case OpKind::Softmax:
    case OpKind::LogSoftmax:
    case OpKind::Mean: return isFloating(dtype);
    // sum's result is i64 for bool/integer operands, but a pinned sum is placed by its pin (the
    // operand's dtype), so every dtype counts; max keeps its operand's dtype.
    case OpKind::Sum:
    case OpKind::Max: return true;
    default: return false;
  }
}

Status normalize(const KernelCall &call) {
  switch (call.op.kind) {
    case OpKind::BatchNorm: return batchNorm(call);
    case OpKind::LayerNorm: return layerNorm(call);
    case OpKind::Softmax:
    case OpKind::LogSoftmax: return softmax(call);
    case OpKind::Sum:
    case OpKind::Mean:
    case OpKind::Max: return reduce(call);
    default: return contractError(call, "not a normalisation or reduction");
  }
}

uint64_t normalizeScratchBytes(const StepSpec &) { return 0; }

Expected<std::unique_ptr<Kernel>> prepareNormalize(const StepSpec &step) { return stepKernel(step, normalize); }

}  // namespace ferry::cpu
