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
// Prepare and launch. prepareNormalize checks the step against the contract, reads its
// attributes and works out its geometry once (a ...Geometry struct that the kernel holds), then
// picks the loop for the op and dtype: a function template instantiated for the compute type
// (softmax: also for log or not, rows or columns; reductions: for the reducer and the split),
// held as a function pointer. A launch only runs that loop: it reads no attribute, does not look
// at the op, and allocates nothing. Its temporaries are blocks of kBlock elements on the stack
// (each thread its own) and the step's planned scratch, whose bytes normalizeScratchBytes counts
// from the same geometry: batch_norm's per-channel parameters, layer_norm's weight and bias
// converted to f32 (f16/bf16 only), and the partial results of a reduction split into pieces.
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
//     reduces each row to a scalar, a kept one accumulates whole rows. The work is split over
//     items with outputs of their own (a group when the run is reduced, a block of kBlock
//     columns of a group when it is kept); when there are fewer items than the work is worth
//     pieces, every group's reduced units are split instead into a number of pieces fixed at
//     prepare (at most kMaxPieces), each folding into its own partial results in scratch,
//     combined in piece order. Either way every output is computed in an order that depends on
//     the shapes alone, so results are the same bits whatever the pool's thread count.
#include <Eigen/Core>
#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <type_traits>
#include <variant>
#include <vector>

#include "backends/cpu/kernels.h"
#include "backends/cpu/math_impl.h"
#include "backends/cpu/parallel.h"

namespace ferry::cpu {

namespace {

constexpr int64_t kBlock = 1024;     // elements converted, or reduced into one float, at a time
constexpr int64_t kGrain = 1 << 15;  // elements of work below which a chunk is not worth a thread
// Stack blocks are aligned as the scratch arena's pieces are: Eigen computes the elements before
// the first aligned address one at a time (a sum then adds in another order, exp and log take
// their scalar versions), so a block's alignment must not depend on where a thread's stack is.
constexpr size_t kAlign = 64;
// The most pieces a reduction's rows are split into when it has too few items to share. A
// constant, not the pool's size: the pieces' partial results are planned scratch, and a compiled
// executable may run on a machine with another thread count.
constexpr int64_t kMaxPieces = 16;

template <class C> using Array = Eigen::Array<C, Eigen::Dynamic, 1>;
template <class C> using ArrayMap = Eigen::Map<Array<C>>;
template <class C> using ConstMap = Eigen::Map<const Array<C>>;

// A launch's loop: what prepare worked out (G), applied to one call's tensors.
template <class G> using Loop = Status (*)(const G &, const KernelCall &);

// The kernel whose launches run `loop` on `g`, which it holds.
template <class G>
Expected<std::unique_ptr<Kernel>> launching(const StepSpec &step, G g,
                                            std::type_identity_t<Loop<G>> loop) {
  return stepKernel(step,
                    [g = std::move(g), loop](const KernelCall &call) { return loop(g, call); });
}

// The loop of a step with nothing to compute (an empty tensor).
template <class G> Status nothing(const G &, const KernelCall &) { return Status(); }

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

// ---- checks at prepare ---------------------------------------------------------------------

Status sameDType(const StepSpec &step, size_t i) {
  if (step.operands[i].dtype == step.result.dtype) return Status();
  return contractError(step, "operand " + std::to_string(i) + " is " + step.operands[i].str() +
                                 ", expected " + std::string(dtypeName(step.result.dtype)) +
                                 " (a cast is missing)");
}

Status sameShape(const StepSpec &step) {
  if (step.result.shape == step.operands[0].shape) return Status();
  return contractError(step,
                       "result " + step.result.str() + " for operand " + step.operands[0].str());
}

// The `axis` attribute, normalised for the rank of operand 0.
Expected<int64_t> axisOf(const StepSpec &step) {
  const TensorType &x = step.operands[0];
  const int64_t axis = attrInt(step.op, step.attrs, "axis");
  std::optional<int64_t> n = normalizeAxis(axis, x.rank());
  if (!n) return contractError(step, "axis " + std::to_string(axis) + " of " + x.str());
  return *n;
}

// ---- batch_norm ----------------------------------------------------------------------------

struct BatchNormGeometry {
  DType dtype;
  int64_t channels;
  int64_t inner;  // elements of a plane (n, c): the trailing dims; 1 when there are none
  int64_t numel;
  double eps;
};

// Scratch: scale, bias, mean and var converted to double, then mean, k and bias as C.
template <class C> uint64_t batchNormScratch(int64_t channels) {
  return ScratchArena::bytes<double>(4 * channels) + 3 * ScratchArena::bytes<C>(channels);
}

// Per channel: y = (x - mean) * k + bias.
template <class C> struct ChannelParams { const C *mean, *k, *bias; };

// [N, C]: rows of C against the parameter vectors.
template <class C>
void batchNormRows(const BatchNormGeometry &g, const TensorView &x, const TensorView &r,
                   ChannelParams<C> p) {
  const int64_t channels = g.channels, rows = channels == 0 ? 0 : g.numel / channels;
  parallelFor(rows, std::max<int64_t>(1, kGrain / std::max<int64_t>(channels, 1)),
              [&](int64_t begin, int64_t end) {
                alignas(kAlign) C in[kBlock], out[kBlock];
                for (int64_t row = begin; row < end; ++row) {
                  for (int64_t c0 = 0; c0 < channels; c0 += kBlock) {
                    const int64_t m = std::min(kBlock, channels - c0), at = row * channels + c0;
                    ConstMap<C> v(loadAs(x, at, m, in), m);
                    C *y = outAs(r, at, out);
                    ArrayMap<C>(y, m) =
                        (v - ConstMap<C>(p.mean + c0, m)) * ConstMap<C>(p.k + c0, m) +
                        ConstMap<C>(p.bias + c0, m);
                    storeAs(r, at, m, y);
                  }
                }
              });
}

// Planes (n, c) of the trailing dims, each against its channel's scalars.
template <class C>
void batchNormPlanes(const BatchNormGeometry &g, const TensorView &x, const TensorView &r,
                     ChannelParams<C> p) {
  const int64_t inner = g.inner, planes = g.numel / inner;
  parallelFor(planes, std::max<int64_t>(1, kGrain / inner), [&](int64_t begin, int64_t end) {
    alignas(kAlign) C in[kBlock], out[kBlock];
    for (int64_t plane = begin; plane < end; ++plane) {
      const int64_t c = plane % g.channels;
      for (int64_t b = 0; b < inner; b += kBlock) {
        const int64_t m = std::min(kBlock, inner - b), at = plane * inner + b;
        C *y = outAs(r, at, out);
        ArrayMap<C>(y, m) = (ConstMap<C>(loadAs(x, at, m, in), m) - p.mean[c]) * p.k[c] + p.bias[c];
        storeAs(r, at, m, y);
      }
    }
  });
}

template <class C> Status batchNorm(const BatchNormGeometry &g, const KernelCall &call) {
  const int64_t channels = g.channels;
  ScratchArena scratch(call.scratch);
  // k = scale / sqrt(var + eps) in double first, then as C.
  double *p = scratch.take<double>(4 * channels);
  for (size_t i = 0; i < 4; ++i)
    convertElements(call.operands[i + 1].type->dtype, call.operands[i + 1].data, DType::F64,
                    reinterpret_cast<std::byte *>(p + static_cast<int64_t>(i) * channels),
                    static_cast<size_t>(channels));
  C *mean = scratch.take<C>(channels), *k = scratch.take<C>(channels),
    *bias = scratch.take<C>(channels);
  for (int64_t c = 0; c < channels; ++c) {
    k[c] = static_cast<C>(p[c] / std::sqrt(p[3 * channels + c] + g.eps));
    bias[c] = static_cast<C>(p[channels + c]);
    mean[c] = static_cast<C>(p[2 * channels + c]);
  }
  const ChannelParams<C> params{mean, k, bias};
  if (g.inner == 1)
    batchNormRows<C>(g, call.operands[0], call.result, params);
  else
    batchNormPlanes<C>(g, call.operands[0], call.result, params);
  return Status();
}

Expected<BatchNormGeometry> batchNormGeometry(const StepSpec &step) {
  const TensorType &x = step.operands[0];
  if (x.shape.size() < 2) return contractError(step, "operand " + x.str());
  FERRY_TRY(sameShape(step));
  for (size_t i = 0; i < step.operands.size(); ++i) {
    FERRY_TRY(sameDType(step, i));
    if (i > 0 && step.operands[i].numel() != x.shape[1])
      return contractError(step, "operand " + std::to_string(i) + " " + step.operands[i].str() +
                                     " for " + x.str());
  }
  const int64_t inner = numel(std::span(x.shape).subspan(2));
  return BatchNormGeometry{step.result.dtype, x.shape[1], inner, x.numel(),
                           attrFloat(step.op, step.attrs, "eps")};
}

uint64_t scratchBytes(const BatchNormGeometry &g) {
  return withFloat(g.dtype, [&](auto c) { return batchNormScratch<decltype(c)>(g.channels); });
}

Expected<std::unique_ptr<Kernel>> kernelFor(const StepSpec &step, const BatchNormGeometry &g) {
  if (g.numel == 0) return launching(step, g, nothing<BatchNormGeometry>);
  return withFloat(g.dtype, [&](auto c) { return launching(step, g, batchNorm<decltype(c)>); });
}

// ---- layer_norm ----------------------------------------------------------------------------

struct LayerNormGeometry {
  DType dtype;
  int64_t inner;  // elements normalised together: the dims from `axis`
  int64_t rows;   // rows of `inner` elements
  size_t params;  // 0, 1 (weight) or 2 (weight, bias)
  double eps;
};

// Whether the weight and bias are converted into scratch: when they are not stored as C.
template <class C> bool convertsParams(const LayerNormGeometry &g) { return g.dtype != kDType<C>; }

// Scratch: the weight and bias as C, when convertsParams.
template <class C> uint64_t layerNormScratch(const LayerNormGeometry &g) {
  return convertsParams<C>(g) ? g.params * ScratchArena::bytes<C>(g.inner) : 0;
}

template <class C> Status layerNorm(const LayerNormGeometry &g, const KernelCall &call) {
  const TensorView &x = call.operands[0], &r = call.result;
  const int64_t inner = g.inner;
  // weight and bias as C once: every row reads them whole.
  ScratchArena scratch(call.scratch);
  const C *params[2] = {nullptr, nullptr};
  for (size_t i = 0; i < g.params; ++i)
    params[i] = loadAs(call.operands[i + 1], 0, inner,
                       convertsParams<C>(g) ? scratch.take<C>(inner) : nullptr);
  const C *weight = params[0], *bias = params[1];
  parallelFor(g.rows, std::max<int64_t>(1, kGrain / (3 * inner)), [&](int64_t begin, int64_t end) {
    alignas(kAlign) C in[kBlock], out[kBlock];
    for (int64_t row = begin; row < end; ++row) {
      const int64_t base = row * inner;
      const double mean = sumOf(x, base, inner, in) / static_cast<double>(inner);
      const C m = static_cast<C>(mean);
      double sq = 0;  // two passes: no cancellation in the variance
      for (int64_t b = 0; b < inner; b += kBlock) {
        const int64_t n = std::min(kBlock, inner - b);
        sq += static_cast<double>((ConstMap<C>(loadAs(x, base + b, n, in), n) - m).square().sum());
      }
      const C inv = static_cast<C>(1 / std::sqrt(sq / static_cast<double>(inner) + g.eps));
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
  return Status();
}

Expected<LayerNormGeometry> layerNormGeometry(const StepSpec &step) {
  const TensorType &x = step.operands[0];
  FERRY_TRY(sameShape(step));
  Expected<int64_t> axis = axisOf(step);
  if (!axis) return std::move(axis).takeStatus();
  const int64_t inner = numel(std::span(x.shape).subspan(static_cast<size_t>(*axis)));
  for (size_t i = 0; i < step.operands.size(); ++i) {
    FERRY_TRY(sameDType(step, i));
    if (i > 0 && step.operands[i].numel() != inner)
      return contractError(step, "operand " + std::to_string(i) + " " + step.operands[i].str() +
                                     " for " + x.str() + " from axis " + std::to_string(*axis));
  }
  return LayerNormGeometry{step.result.dtype, inner, inner == 0 ? 0 : x.numel() / inner,
                           step.operands.size() - 1, attrFloat(step.op, step.attrs, "eps")};
}

uint64_t scratchBytes(const LayerNormGeometry &g) {
  return withFloat(g.dtype, [&](auto c) { return layerNormScratch<decltype(c)>(g); });
}

Expected<std::unique_ptr<Kernel>> kernelFor(const StepSpec &step, const LayerNormGeometry &g) {
  if (g.rows == 0) return launching(step, g, nothing<LayerNormGeometry>);
  return withFloat(g.dtype, [&](auto c) { return launching(step, g, layerNorm<decltype(c)>); });
}

// ---- softmax, log_softmax ------------------------------------------------------------------

// x as [outer, dim, inner], the softmax over dim.
struct SoftmaxGeometry {
  DType dtype;
  int64_t outer = 1, dim = 1, inner = 1;
};

// Softmax over contiguous rows of `dim` elements.
template <class C, bool Log> Status softmaxRows(const SoftmaxGeometry &g, const KernelCall &call) {
  const TensorView &x = call.operands[0], &r = call.result;
  const int64_t dim = g.dim;
  const bool expInResult = !Log && r.type->dtype == kDType<C>;  // exp once, scaled after the sum
  parallelFor(g.outer, std::max<int64_t>(1, kGrain / (3 * dim)), [&](int64_t begin, int64_t end) {
    alignas(kAlign) C in[kBlock], out[kBlock];
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
        if (expInResult) {
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
        if (expInResult) {
          a *= scale;
          continue;
        }
        ConstMap<C> v(loadAs(x, base + b, n, in), n);
        if constexpr (Log)
          a = v - max - logSum;
        else
          a = exactExp(v - max) * scale;
        storeAs(r, base + b, n, y);
      }
    }
  });
  return Status();
}

// Softmax over the middle dim of [outer, dim, inner] (inner > 1): column blocks of the slab.
template <class C, bool Log>
Status softmaxColumns(const SoftmaxGeometry &g, const KernelCall &call) {
  const TensorView &x = call.operands[0], &r = call.result;
  const int64_t dim = g.dim, inner = g.inner;
  constexpr int64_t kColumns = 256;
  const int64_t blocks = (inner + kColumns - 1) / kColumns;
  const int64_t work = 3 * dim * std::min(inner, kColumns);
  const bool expInResult = !Log && r.type->dtype == kDType<C>;  // exp once, scaled after the sum
  parallelFor(g.outer * blocks, std::max<int64_t>(1, kGrain / work),
              [&](int64_t begin, int64_t end) {
                alignas(kAlign) C in[kColumns], out[kColumns], maxes[kColumns], sums[kColumns];
                for (int64_t item = begin; item < end; ++item) {
                  const int64_t o = item / blocks, j0 = (item % blocks) * kColumns;
                  const int64_t n = std::min(kColumns, inner - j0);
                  ArrayMap<C> mx(maxes, n), sm(sums, n);
                  auto at = [&](int64_t d) { return (o * dim + d) * inner + j0; };
                  mx.setConstant(-std::numeric_limits<C>::infinity());
                  for (int64_t d = 0; d < dim; ++d) {
                    const C *v = loadAs(x, at(d), n, in);
                    for (int64_t j = 0; j < n; ++j)  // NaN ignored, as fmax; no select: vectorises
                      maxes[j] = v[j] > maxes[j] ? v[j] : maxes[j];
                  }
                  sm.setZero();
                  for (int64_t d = 0; d < dim; ++d) {
                    ConstMap<C> v(loadAs(x, at(d), n, in), n);
                    if (expInResult) {
                      ArrayMap<C> y(outAs(r, at(d), out), n);
                      y = exactExp(v - mx);
                      sm += y;
                    } else {
                      sm += exactExp(v - mx);
                    }
                  }
                  if constexpr (Log)
                    sm = sm.log();
                  else
                    sm = sm.inverse();
                  for (int64_t d = 0; d < dim; ++d) {
                    C *y = outAs(r, at(d), out);
                    if (expInResult) {
                      ArrayMap<C>(y, n) *= sm;
                      continue;
                    }
                    ConstMap<C> v(loadAs(x, at(d), n, in), n);
                    if constexpr (Log)
                      ArrayMap<C>(y, n) = v - mx - sm;
                    else
                      ArrayMap<C>(y, n) = exactExp(v - mx) * sm;
                    storeAs(r, at(d), n, y);
                  }
                }
              });
  return Status();
}

Expected<SoftmaxGeometry> softmaxGeometry(const StepSpec &step) {
  const Shape &xs = step.operands[0].shape;
  FERRY_TRY(sameDType(step, 0));
  FERRY_TRY(sameShape(step));
  // A scalar is a softmax over one element, as the reference has it.
  SoftmaxGeometry g{step.result.dtype};
  if (!xs.empty()) {
    Expected<int64_t> axis = axisOf(step);
    if (!axis) return std::move(axis).takeStatus();
    const auto a = static_cast<size_t>(*axis);
    g.outer = numel(std::span(xs).first(a));
    g.dim = xs[a];
    g.inner = numel(std::span(xs).subspan(a + 1));
  }
  return g;
}

uint64_t scratchBytes(const SoftmaxGeometry &) { return 0; }

Expected<std::unique_ptr<Kernel>> kernelFor(const StepSpec &step, const SoftmaxGeometry &g) {
  if (g.outer == 0 || g.dim == 0 || g.inner == 0)
    return launching(step, g, nothing<SoftmaxGeometry>);
  const bool log = step.op.kind == OpKind::LogSoftmax, rows = g.inner == 1;
  return withFloat(g.dtype, [&](auto c) {
    using C = decltype(c);
    const Loop<SoftmaxGeometry> loop =
        rows ? (log ? softmaxRows<C, true> : softmaxRows<C, false>)
             : (log ? softmaxColumns<C, true> : softmaxColumns<C, false>);
    return launching(step, g, loop);
  });
}

// ---- reductions ----------------------------------------------------------------------------

// Coalesced dims have size >= 2 and kept and reduced ones alternate, so a tensor of fewer than
// 2^63 elements has at most 31 of each besides its innermost run.
constexpr int kMaxDims = 32;

// Sizes and strides (in elements) of coalesced dims, outermost first.
struct Dims {
  std::array<int64_t, kMaxDims> sizes{}, strides{};
  int rank = 0;

  // Adds a dim outside the others; false when there are kMaxDims already.
  bool addOuter(int64_t size, int64_t stride) {
    if (rank == kMaxDims) return false;
    std::copy_backward(sizes.begin(), sizes.begin() + rank, sizes.begin() + rank + 1);
    std::copy_backward(strides.begin(), strides.begin() + rank, strides.begin() + rank + 1);
    sizes[0] = size, strides[0] = stride, ++rank;
    return true;
  }
  int64_t count() const {
    int64_t n = 1;
    for (int d = 0; d < rank; ++d) n *= sizes[static_cast<size_t>(d)];
    return n;
  }
};

// Offsets of a row-major walk over `dims`, from linear index `start`. Its state is on the stack.
class Odometer {
 public:
  Odometer(const Dims &dims, int64_t start) : dims_(dims) {
    for (size_t d = static_cast<size_t>(dims.rank); d-- > 0;) {
      index_[d] = start % dims.sizes[d];
      start /= dims.sizes[d];
      offset_ += index_[d] * dims.strides[d];
    }
  }
  int64_t offset() const { return offset_; }
  void next() {
    for (size_t d = static_cast<size_t>(dims_.rank); d-- > 0;) {
      offset_ += dims_.strides[d];
      if (++index_[d] < dims_.sizes[d]) return;
      offset_ -= dims_.sizes[d] * dims_.strides[d];
      index_[d] = 0;
    }
  }

 private:
  const Dims &dims_;
  std::array<int64_t, kMaxDims> index_;  // the first dims_.rank are used
  int64_t offset_ = 0;
};

struct ReduceGeometry {
  OpKind op;
  DType in;               // the operand's dtype: with `op`, it picks the reducer
  int64_t outs = 0;       // outputs
  int64_t count = 1;      // elements per output
  double divisor = 0;     // mean: count; sum and max store their accumulators as they are
  double emptyValue = 0;  // the outputs of a sum (0) or mean (NaN) over nothing
  std::string emptyMax;   // max over nothing: the "runtime" error's message
  // The input's dims coalesced: outer kept dims, outer reduced dims, and the innermost run.
  Dims kept, reduced;
  int64_t run = 1;          // innermost run length
  bool runReduced = false;  // whether the run is reduced (to one value per row)
  int64_t groups = 1;       // kept.count()
  int64_t rows = 1;         // reduced.count()
  // The split (see the file comment).
  int64_t blocks = 1;     // items per group: column blocks of kBlock when the run is kept, else 1
  int64_t itemGrain = 1;  // items per chunk at least
  int64_t pieces = 1;     // > 1: the units are split into this many pieces, no longer items

  int64_t outPerGroup() const { return runReduced ? 1 : run; }
  int64_t items() const { return groups * blocks; }
  // What a group's work is split at: an element of its rows when the run is reduced, else a row.
  int64_t units() const { return runReduced ? rows * run : rows; }
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

// Calls f(R{}) with R the reducer of `op` (sum, mean or max) reading `in`.
template <class F> decltype(auto) withReducer(OpKind op, DType in, F &&f) {
  const bool max = op == OpKind::Max;
  if (isFloating(in))
    return withFloat(in, [&](auto c) {
      using C = decltype(c);
      return max ? f(MaxFloat<C>{}) : f(SumFloat<C>{});
    });
  return withIntegral(in, [&](auto s) {
    using S = decltype(s);
    return max ? f(MaxInt<S>{}) : f(SumInt<S>{});
  });
}

// Rows as In: floats through loadAs, integers in place.
template <class In> const In *loadRow(const TensorView &v, int64_t at, int64_t n, In *buf) {
  if constexpr (std::is_floating_point_v<In>)
    return loadAs(v, at, n, buf);
  else
    return reinterpret_cast<const In *>(v.data) + at;
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

// Stores n finished outputs from output `at`: floats as the result's dtype, integers (the
// result's own type, i64 for sums) as they are.
template <class R>
void storeOutputs(const ReduceGeometry &g, const TensorView &r, const typename R::Acc *acc,
                  int64_t at, int64_t n) {
  if constexpr (std::is_floating_point_v<typename R::In>)
    storeFloats<typename R::In>(r, acc, at, n, g.divisor);
  else
    std::copy_n(acc, n, reinterpret_cast<typename R::Acc *>(r.data) + at);
}

// Folds units [begin, end) of column block `block` of one group (at input offset `base`) into
// `acc`, the block's accumulators (one when the run is reduced).
template <class R>
void reduceBlock(const ReduceGeometry &g, const TensorView &x, int64_t base, int64_t block,
                 int64_t begin, int64_t end, typename R::Acc *acc, typename R::In *buf) {
  if (g.runReduced) {
    typename R::Acc a = acc[0];
    Odometer rows(g.reduced, begin / g.run);
    for (int64_t e = begin; e < end;) {
      const int64_t j = e % g.run, n = std::min(g.run - j, end - e);
      for (int64_t b = 0; b < n; b += kBlock) {
        const int64_t m = std::min(kBlock, n - b);
        R::combine(a, R::reduce(loadRow(x, base + rows.offset() + j + b, m, buf), m));
      }
      e += n;
      if (j + n == g.run) rows.next();
    }
    acc[0] = a;
    return;
  }
  // One block of columns over the rows: its accumulators stay in cache.
  const int64_t b = block * kBlock, m = std::min(kBlock, g.run - b);
  Odometer rows(g.reduced, begin);
  for (int64_t row = begin; row < end; ++row, rows.next())
    R::fold(acc, loadRow(x, base + rows.offset() + b, m, buf), m);
}

// Over the items: each reduces its outputs whole. A chunk's items hold consecutive outputs,
// gathered on its stack up to kBlock at a time and stored.
template <class R> Status reduceItems(const ReduceGeometry &g, const KernelCall &call) {
  using Acc = typename R::Acc;
  const TensorView &x = call.operands[0], &r = call.result;
  parallelFor(g.items(), g.itemGrain, [&](int64_t begin, int64_t end) {
    alignas(kAlign) Acc acc[kBlock];
    alignas(kAlign) typename R::In buf[kBlock];
    int64_t at = begin / g.blocks * g.outPerGroup() + begin % g.blocks * kBlock, held = 0;
    Odometer groups(g.kept, begin / g.blocks);
    for (int64_t item = begin; item < end; ++item) {
      const int64_t block = item % g.blocks;
      if (item > begin && block == 0) groups.next();
      const int64_t m = g.runReduced ? 1 : std::min(kBlock, g.run - block * kBlock);
      if (held + m > kBlock) {
        storeOutputs<R>(g, r, acc, at, held);
        at += held, held = 0;
      }
      std::fill_n(acc + held, m, R::identity());
      reduceBlock<R>(g, x, groups.offset(), block, 0, g.units(), acc + held, buf);
      held += m;
    }
    storeOutputs<R>(g, r, acc, at, held);
  });
  return Status();
}

// Fewer items than pieces: each piece folds its share of every group's units into its own
// partial results (scratch), combined in piece order (so max keeps the first NaN).
template <class R> Status reducePieces(const ReduceGeometry &g, const KernelCall &call) {
  using Acc = typename R::Acc;
  const TensorView &x = call.operands[0];
  ScratchArena scratch(call.scratch);
  Acc *const partial = scratch.take<Acc>(g.pieces * g.outs);
  const int64_t units = g.units();
  parallelFor(g.pieces, 1, [&](int64_t pBegin, int64_t pEnd) {
    alignas(kAlign) typename R::In buf[kBlock];
    for (int64_t p = pBegin; p < pEnd; ++p) {
      Acc *acc = partial + p * g.outs;
      std::fill_n(acc, g.outs, R::identity());
      const int64_t begin = units * p / g.pieces, end = units * (p + 1) / g.pieces;
      Odometer groups(g.kept, 0);
      for (int64_t group = 0; group < g.groups; ++group, groups.next())
        for (int64_t block = 0; block < g.blocks; ++block)
          reduceBlock<R>(g, x, groups.offset(), block, begin, end,
                         acc + group * g.outPerGroup() + block * kBlock, buf);
    }
  });
  for (int64_t p = 1; p < g.pieces; ++p)
    for (int64_t o = 0; o < g.outs; ++o) R::combine(partial[o], partial[p * g.outs + o]);
  storeOutputs<R>(g, call.result, partial, 0, g.outs);
  return Status();
}

// Scratch: the pieces' partial results, when the work is split into pieces.
template <class R> uint64_t reduceScratch(const ReduceGeometry &g) {
  return g.pieces > 1 ? ScratchArena::bytes<typename R::Acc>(g.pieces * g.outs) : 0;
}

// sum (0) and mean (NaN) over nothing.
Status fillEmpty(const ReduceGeometry &g, const KernelCall &call) {
  const TensorView &r = call.result;
  double values[kBlock];
  std::fill_n(values, kBlock, g.emptyValue);
  const auto size = static_cast<int64_t>(dtypeSize(r.type->dtype));
  for (int64_t at = 0; at < g.outs; at += kBlock)
    convertElements(DType::F64, reinterpret_cast<const std::byte *>(values), r.type->dtype,
                    r.data + at * size, static_cast<size_t>(std::min(kBlock, g.outs - at)));
  return Status();
}

Status emptyMax(const ReduceGeometry &g, const KernelCall &call) {
  return makeError("runtime", g.emptyMax, call.loc);
}

// g's dims: the input's coalesced (size-1 dims dropped, neighbours of the same kind merged).
Status coalesce(const StepSpec &step, const std::vector<bool> &reduced, ReduceGeometry &g) {
  const Shape &xs = step.operands[0].shape;
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
  if (sizes.empty()) return Status();  // one element
  g.run = sizes.back();
  g.runReduced = kinds.back();
  int64_t stride = g.run;
  for (size_t d = sizes.size() - 1; d-- > 0;) {
    if (!(kinds[d] ? g.reduced : g.kept).addOuter(sizes[d], stride))
      return contractError(step, "more than " + std::to_string(kMaxDims) + " coalesced dims in " +
                                     step.operands[0].str());
    stride *= sizes[d];
  }
  g.groups = g.kept.count();
  g.rows = g.reduced.count();
  return Status();
}

// Items when they give the pool enough work to share, else pieces of the units.
void planSplit(ReduceGeometry &g) {
  g.blocks = g.runReduced ? 1 : (g.run + kBlock - 1) / kBlock;
  const int64_t itemWork = g.rows * (g.runReduced ? g.run : std::min(g.run, kBlock));
  g.itemGrain = std::max<int64_t>(1, kGrain / itemWork);
  const int64_t work = g.groups * g.rows * g.run;
  const int64_t pieces = std::min({kMaxPieces, g.units(), std::max<int64_t>(1, work / kGrain)});
  g.pieces = g.items() < pieces ? pieces : 1;
}

Expected<ReduceGeometry> reduceGeometry(const StepSpec &step) {
  const TensorType &x = step.operands[0], &r = step.result;
  const OpKind k = step.op.kind;
  // sum of bool/integers gives i64; everything else computes in its operand's dtype.
  const bool intSum = k == OpKind::Sum && !isFloating(x.dtype);
  if (intSum ? r.dtype != DType::I64 : x.dtype != r.dtype)
    return contractError(step, "operand " + x.str() + " with result " + r.str());
  const Shape &xs = x.shape;
  const std::vector<int64_t> &axes = attrInts(step.op, step.attrs, "axes");
  std::vector<bool> reduced(xs.size(), axes.empty());
  if (x.rank() > 0) {
    for (int64_t axis : axes) {
      std::optional<int64_t> n = normalizeAxis(axis, x.rank());
      if (!n) return contractError(step, "axis " + std::to_string(axis) + " of " + x.str());
      reduced[static_cast<size_t>(*n)] = true;
    }
  }
  const bool keepdims = attrBool(step.op, step.attrs, "keepdims");
  Shape want;
  ReduceGeometry g{k, x.dtype};
  for (size_t d = 0; d < xs.size(); ++d) {
    if (reduced[d]) g.count *= xs[d];
    if (!reduced[d] || keepdims) want.push_back(reduced[d] ? 1 : xs[d]);
  }
  if (r.shape != want)
    return contractError(step, "result " + r.str() + " for operand " + x.str() +
                                   " (expected shape " + shapeStr(want) + ")");
  g.outs = r.numel();
  if (k == OpKind::Mean) g.divisor = static_cast<double>(g.count);
  if (g.outs == 0) return g;
  if (g.count == 0) {
    g.emptyValue = k == OpKind::Mean ? std::numeric_limits<double>::quiet_NaN() : 0.0;
    std::string dims;
    for (size_t d = 0; d < xs.size(); ++d)
      if (reduced[d] && xs[d] == 0) dims += (dims.empty() ? "" : ", ") + std::to_string(d);
    g.emptyMax = "'max' over an empty set: " + x.str() + " has size 0 in reduced dim " + dims;
    return g;
  }
  FERRY_TRY(coalesce(step, reduced, g));
  planSplit(g);
  return g;
}

uint64_t scratchBytes(const ReduceGeometry &g) {
  return withReducer(g.op, g.in, [&](auto r) { return reduceScratch<decltype(r)>(g); });
}

Expected<std::unique_ptr<Kernel>> kernelFor(const StepSpec &step, const ReduceGeometry &g) {
  if (g.outs == 0) return launching(step, g, nothing<ReduceGeometry>);
  if (g.count == 0) return launching(step, g, g.op == OpKind::Max ? emptyMax : fillEmpty);
  return launching(step, g, withReducer(g.op, g.in, [&](auto r) -> Loop<ReduceGeometry> {
                     using R = decltype(r);
                     return g.pieces > 1 ? reducePieces<R> : reduceItems<R>;
                   }));
}

// ---- the family ----------------------------------------------------------------------------

using Geometry =
    std::variant<BatchNormGeometry, LayerNormGeometry, SoftmaxGeometry, ReduceGeometry>;

// `step`'s geometry, or why the step is outside the family's contract.
Expected<Geometry> geometryOf(const StepSpec &step) {
  const auto n = static_cast<int>(step.operands.size());
  if (n < std::max(step.op.minOperands, 1) || (step.op.maxOperands >= 0 && n > step.op.maxOperands))
    return contractError(step, std::to_string(n) + " operands");
  // Each geometry as the variant, or the status that says why there is none.
  auto as = [](auto &&g) -> Expected<Geometry> {
    if (!g) return std::move(g).takeStatus();
    return Geometry(std::move(*g));
  };
  switch (step.op.kind) {
    case OpKind::BatchNorm: return as(batchNormGeometry(step));
    case OpKind::LayerNorm: return as(layerNormGeometry(step));
    case OpKind::Softmax:
    case OpKind::LogSoftmax: return as(softmaxGeometry(step));
    case OpKind::Sum:
    case OpKind::Mean:
    case OpKind::Max: return as(reduceGeometry(step));
    default: return contractError(step, "not a normalisation or reduction");
  }
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

uint64_t normalizeScratchBytes(const StepSpec &step) {
  // A step outside the contract takes none: prepareNormalize refuses it.
  const Expected<Geometry> g = geometryOf(step);
  return g ? std::visit([](const auto &geometry) { return scratchBytes(geometry); }, *g) : 0;
}

Expected<std::unique_ptr<Kernel>> prepareNormalize(const StepSpec &step) {
  Expected<Geometry> g = geometryOf(step);
  if (!g) return std::move(g).takeStatus();
  return std::visit([&](const auto &geometry) { return kernelFor(step, geometry); }, *g);
}

}  // namespace ferry::cpu
