// backends/cpu/normalize.cpp — batch_norm, layer_norm and softmax/log_softmax on the CPU (the
// reductions sum, mean and max are reduce.cpp).
//
// Semantics are the reference's (backends/reference/normalize.cpp): batch_norm is inference
// with ONNX's operand order (x scale bias mean var) over dim 1; layer_norm normalises the dims
// from `axis` with the population variance; softmax subtracts the max (NaN ignored, as fmax)
// before exp.
//
// Prepare and launch. prepareNormalize checks the step against the contract, reads its
// attributes and works out its geometry once (a ...Geometry struct that the kernel holds), then
// picks the loop for the op and dtype: a function template instantiated for the compute type
// (softmax: also for log or not, rows or columns), held as a function pointer. A launch only
// runs that loop: it reads no attribute, does not look at the op, and allocates nothing. Its
// temporaries are blocks of kBlock elements on the stack (each thread its own) and the step's
// planned scratch, whose bytes normalizeScratchBytes counts from the same geometry:
// batch_norm's per-channel parameters and layer_norm's weight and bias converted to f32
// (f16/bf16 only).
//
// Floating dtypes compute in f32 (f16, bf16, f32) or double (f64); f16/bf16 are converted in
// blocks of kBlock elements, f32/f64 are read and written in place. The statistics of
// layer_norm and softmax add vectorised blocks in the compute type and the blocks in double.
//
// Layout of the work, always walking memory contiguously:
//   - batch_norm: planes (n, c) of the trailing dims, or rows of C when there are none;
//   - layer_norm: rows of the normalised dims, three passes (mean, variance, output);
//   - softmax: contiguous rows when the axis is innermost; otherwise column blocks of the
//     [dim, inner] slab, whose rows fold into per-column max and sum.
// Every output is computed in an order that depends on the shapes alone, so results are the same
// bits whatever the pool's thread count.
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
#include "backends/cpu/normalize_impl.h"
#include "backends/cpu/parallel.h"

namespace ferry::cpu {

namespace {

using namespace norm;

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
        C *y = expInResult ? outAs(r, base + b, out) : out;
        ArrayMap<C>(y, n) = v - max;
        expInPlace(y, n);
        sum += static_cast<double>(ArrayMap<C>(y, n).sum());
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
        if constexpr (Log) {
          a = v - max - logSum;
        } else {
          a = v - max;
          expInPlace(y, n);
          a *= scale;
        }
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
                    C *y = expInResult ? outAs(r, at(d), out) : out;
                    ArrayMap<C>(y, n) = v - mx;
                    expInPlace(y, n);
                    sm += ArrayMap<C>(y, n);
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
                    if constexpr (Log) {
                      ArrayMap<C>(y, n) = v - mx - sm;
                    } else {
                      ArrayMap<C>(y, n) = v - mx;
                      expInPlace(y, n);
                      ArrayMap<C>(y, n) *= sm;
                    }
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

// ---- the family ----------------------------------------------------------------------------

using Geometry = std::variant<BatchNormGeometry, LayerNormGeometry, SoftmaxGeometry>;

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
    default: return contractError(step, "not a normalisation");
  }
}

}  // namespace


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
