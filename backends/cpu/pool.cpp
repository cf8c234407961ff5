// backends/cpu/pool.cpp — max_pool2d, avg_pool2d and global_avg_pool on the CPU.
//
// Semantics are the reference's (backends/reference/pool.cpp), which are PyTorch's: the last two
// dims are H and W and every leading dim indexes an independent plane; an empty stride is the
// kernel; padding is [h, w] or [top, left, bottom, right]; with ceil_mode the last window must
// start inside the input or its leading padding. max skips padding (a window with no input
// element gives -inf) and keeps NaN; avg_pool2d clips the window to the padded input for
// count_include_pad and to the input for the elements summed, and a window with no input element
// gives 0; global_avg_pool over no elements is NaN.
//
// Work: parallelFor over output rows (plane, oh). An output row is an accumulator of Wo
// elements; for each kernel row whose input row lies inside the input, and each kernel column,
// the input row read at the column stride is folded into the output columns whose input column
// lies inside the input (acc[ow] op= in[ow * sW + j * dW - padLeft]): one Eigen array expression
// per (kernel row, kernel column), contiguous when the stride is 1. f16/bf16 rows are converted
// to f32 first and the accumulator stored back once; f32 and f64 accumulate in the result itself.
#include <Eigen/Core>
#include <algorithm>
#include <array>
#include <limits>
#include <vector>

#include "backends/cpu/kernels.h"
#include "backends/cpu/math_impl.h"
#include "backends/cpu/parallel.h"

namespace ferry::cpu {

namespace {

constexpr int64_t kGrain = 1 << 15;  // element operations below which a chunk is not worth a thread

template <class C> using ArrayMap = Eigen::Map<Eigen::Array<C, Eigen::Dynamic, 1>>;
template <class C>
using StridedMap = Eigen::Map<const Eigen::Array<C, Eigen::Dynamic, 1>, 0, Eigen::InnerStride<>>;

int64_t floorDiv(int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }
int64_t ceilDiv(int64_t a, int64_t b) { return -floorDiv(-a, b); }

// PyTorch's pooling output size; a ceil_mode window must start inside the input or its padding.
int64_t outSize(int64_t in, int64_t k, int64_t s, int64_t padBegin, int64_t padEnd, int64_t d,
                bool ceilMode) {
  const int64_t span = in + padBegin + padEnd - d * (k - 1) - 1;
  int64_t out = (ceilMode ? ceilDiv(span, s) : floorDiv(span, s)) + 1;
  if (ceilMode && out > 0 && (out - 1) * s >= in + padBegin) --out;
  return std::max<int64_t>(out, 0);
}

struct Geometry {
  int64_t planes = 0, H = 0, W = 0, Ho = 0, Wo = 0;
  std::array<int64_t, 2> kernel{}, stride{}, dilation{1, 1};
  std::array<int64_t, 4> pad{};  // top, left, bottom, right
  bool ceilMode = false, includePad = false;
};

Status pairAttr(const KernelCall &call, std::string_view name, std::array<int64_t, 2> &out) {
  const std::vector<int64_t> &v = attrInts(call.op, call.attrs, name);
  if (v.size() != 2 || v[0] < 1 || v[1] < 1 || v[0] > (int64_t{1} << 31) ||
      v[1] > (int64_t{1} << 31))
    return contractError(call, std::string(name) + " must be 2 ints in [1, 2^31]");
  out = {v[0], v[1]};
  return Status();
}

// The window geometry from the attributes, and the checks that the result has its shape.
Status geometry(const KernelCall &call, Geometry &g) {
  const OpKind k = call.op.kind;
  FERRY_TRY(pairAttr(call, "kernel", g.kernel));
  g.stride = g.kernel;
  if (!attrInts(call.op, call.attrs, "stride").empty())
    FERRY_TRY(pairAttr(call, "stride", g.stride));
  if (k == OpKind::MaxPool2d) FERRY_TRY(pairAttr(call, "dilation", g.dilation));
  const std::vector<int64_t> &p = attrInts(call.op, call.attrs, "padding");
  bool padOk = p.size() == 2 || p.size() == 4;
  for (int64_t v : p) padOk = padOk && v >= 0 && v <= (int64_t{1} << 31);
  if (!padOk) return contractError(call, "padding must be 2 or 4 ints in [0, 2^31]");
  g.pad = p.size() == 2 ? std::array<int64_t, 4>{p[0], p[1], p[0], p[1]}
                        : std::array<int64_t, 4>{p[0], p[1], p[2], p[3]};
  g.ceilMode = attrBool(call.op, call.attrs, "ceil_mode");
  if (k == OpKind::AvgPool2d) g.includePad = attrBool(call.op, call.attrs, "count_include_pad");

  const Shape &xs = call.operands[0].type->shape;
  if (xs.size() < 2) return contractError(call, "operand " + call.operands[0].type->str());
  g.H = xs[xs.size() - 2];
  g.W = xs.back();
  g.planes = 1;
  for (size_t d = 0; d + 2 < xs.size(); ++d) g.planes *= xs[d];
  g.Ho = outSize(g.H, g.kernel[0], g.stride[0], g.pad[0], g.pad[2], g.dilation[0], g.ceilMode);
  g.Wo = outSize(g.W, g.kernel[1], g.stride[1], g.pad[1], g.pad[3], g.dilation[1], g.ceilMode);
  Shape want = xs;
  want[xs.size() - 2] = g.Ho;
  want.back() = g.Wo;
  if (call.result.type->shape != want)
    return contractError(call, "result " + call.result.type->str() + " for operand " +
                                   call.operands[0].type->str() + " (expected shape " +
                                   shapeStr(want) + ")");
  return Status();
}

// The output columns [lo, hi) whose input column ow * stride + offset lies in [0, size).
std::pair<int64_t, int64_t> inside(int64_t offset, int64_t stride, int64_t size, int64_t outs) {
  const int64_t lo = offset >= 0 ? 0 : ceilDiv(-offset, stride);
  const int64_t hi = size - 1 - offset >= 0 ? floorDiv(size - 1 - offset, stride) + 1 : 0;
  return {std::min(lo, outs), std::clamp<int64_t>(hi, 0, outs)};
}

template <class C> void maxPool(const TensorView &x, const TensorView &r, const Geometry &g) {
  const int64_t rows = g.planes * g.Ho;
  const int64_t work = g.kernel[0] * g.kernel[1] * g.Wo + g.W;
  parallelFor(rows, std::max<int64_t>(1, kGrain / std::max<int64_t>(work, 1)),
              [&](int64_t begin, int64_t end) {
                std::vector<C> in(static_cast<size_t>(g.W)), acc(static_cast<size_t>(g.Wo));
                for (int64_t row = begin; row < end; ++row) {
                  const int64_t p = row / g.Ho, oh = row % g.Ho;
                  C *out = outAs(r, row * g.Wo, acc.data());
                  ArrayMap<C> a(out, g.Wo);
                  // Padding is skipped, so it counts as -inf.
                  a.setConstant(-std::numeric_limits<C>::infinity());
                  for (int64_t i = 0; i < g.kernel[0]; ++i) {
                    const int64_t ih = oh * g.stride[0] - g.pad[0] + i * g.dilation[0];
                    if (ih < 0 || ih >= g.H) continue;
                    const C *src = loadAs(x, (p * g.H + ih) * g.W, g.W, in.data());
                    for (int64_t j = 0; j < g.kernel[1]; ++j) {
                      const int64_t offset = j * g.dilation[1] - g.pad[1];
                      const auto [lo, hi] = inside(offset, g.stride[1], g.W, g.Wo);
                      if (lo >= hi) continue;
                      // NaN wins and stays. A loop with `|`, not Eigen's select: it vectorises.
                      const C *v = src + lo * g.stride[1] + offset;
                      C *seg = out + lo;
                      const int64_t s = g.stride[1];
                      for (int64_t k = 0; k < hi - lo; ++k)
                        seg[k] = (v[k * s] > seg[k]) | (v[k * s] != v[k * s]) ? v[k * s] : seg[k];
                    }
                  }
                  storeAs(r, row * g.Wo, g.Wo, out);
                }
              });
}

template <class C> void avgPool(const TensorView &x, const TensorView &r, const Geometry &g) {
  // Per output column, the divisor's width part: the window clipped to the padded input, or to
  // the input (a window without input columns sums nothing: 0 over 1). Windows have no dilation.
  std::vector<C> widthDiv(static_cast<size_t>(g.Wo));
  for (int64_t ow = 0; ow < g.Wo; ++ow) {
    const int64_t w0 = ow * g.stride[1] - g.pad[1];
    const int64_t w1 = std::min(w0 + g.kernel[1], g.W + g.pad[3]);
    const int64_t in = std::min(w1, g.W) - std::max<int64_t>(w0, 0);
    widthDiv[ow] = static_cast<C>(g.includePad ? w1 - w0 : std::max<int64_t>(in, 1));
  }
  const int64_t rows = g.planes * g.Ho;
  const int64_t work = g.kernel[0] * g.kernel[1] * g.Wo + g.W;
  parallelFor(rows, std::max<int64_t>(1, kGrain / std::max<int64_t>(work, 1)),
              [&](int64_t begin, int64_t end) {
                std::vector<C> in(static_cast<size_t>(g.W)), acc(static_cast<size_t>(g.Wo));
                ArrayMap<C> div(widthDiv.data(), g.Wo);
                for (int64_t row = begin; row < end; ++row) {
                  const int64_t p = row / g.Ho, oh = row % g.Ho;
                  C *out = outAs(r, row * g.Wo, acc.data());
                  ArrayMap<C> a(out, g.Wo);
                  a.setZero();
                  const int64_t h0 = oh * g.stride[0] - g.pad[0];
                  const int64_t h1 = std::min(h0 + g.kernel[0], g.H + g.pad[2]);
                  const int64_t hIn = std::min(h1, g.H) - std::max<int64_t>(h0, 0);
                  if (hIn > 0) {
                    for (int64_t ih = std::max<int64_t>(h0, 0); ih < std::min(h1, g.H); ++ih) {
                      const C *src = loadAs(x, (p * g.H + ih) * g.W, g.W, in.data());
                      for (int64_t j = 0; j < g.kernel[1]; ++j) {
                        const auto [lo, hi] = inside(j - g.pad[1], g.stride[1], g.W, g.Wo);
                        if (lo >= hi) continue;
                        a.segment(lo, hi - lo) +=
                            StridedMap<C>(src + lo * g.stride[1] + j - g.pad[1], hi - lo,
                                          Eigen::InnerStride<>(g.stride[1]));
                      }
                    }
                    a /= div * static_cast<C>(g.includePad ? h1 - h0 : hIn);
                  }
                  storeAs(r, row * g.Wo, g.Wo, out);
                }
              });
}

template <class C> void globalAvgPool(const TensorView &x, const TensorView &r, int64_t spatial) {
  const int64_t planes = r.type->numel();
  constexpr int64_t kBlock = 1024;
  parallelFor(planes, std::max<int64_t>(1, kGrain / std::max<int64_t>(spatial, 1)),
              [&](int64_t begin, int64_t end) {
                C in[kBlock], mean[1];
                for (int64_t p = begin; p < end; ++p) {
                  // Blocks sum in C, vectorised; the blocks add up in double.
                  double s = 0;
                  for (int64_t at = 0; at < spatial; at += kBlock) {
                    const int64_t n = std::min(kBlock, spatial - at);
                    s += static_cast<double>(Eigen::Map<const Eigen::Array<C, Eigen::Dynamic, 1>>(
                                                 loadAs(x, p * spatial + at, n, in), n)
                                                 .sum());
                  }
                  C *out = outAs(r, p, mean);
                  *out = static_cast<C>(s / static_cast<double>(spatial));  // 0 elements: NaN
                  storeAs(r, p, 1, out);
                }
              });
}

}  // namespace

bool poolSupports(OpKind op, DType dtype) {
  switch (op) {
    case OpKind::MaxPool2d:
    case OpKind::AvgPool2d:
    case OpKind::GlobalAvgPool: return isFloating(dtype);
    default: return false;
  }
}

Status pool(const KernelCall &call) {
  const TensorView &x = call.operands[0], &r = call.result;
  if (x.type->dtype != r.type->dtype)
    return contractError(call, "operand 0 is " + x.type->str() + ", expected " +
                                   std::string(dtypeName(r.type->dtype)) + " (a cast is missing)");
  if (call.op.kind == OpKind::GlobalAvgPool) {
    const Shape &xs = x.type->shape;
    if (xs.size() < 2) return contractError(call, "operand " + x.type->str());
    Shape want(xs.size(), 1);
    want[0] = xs[0];
    want[1] = xs[1];
    if (r.type->shape != want)
      return contractError(call, "result " + r.type->str() + " for operand " + x.type->str());
    int64_t spatial = 1;
    for (size_t d = 2; d < xs.size(); ++d) spatial *= xs[d];
    withFloat(r.type->dtype, [&](auto c) { globalAvgPool<decltype(c)>(x, r, spatial); });
    return Status();
  }
  Geometry g;
  FERRY_TRY(geometry(call, g));
  withFloat(r.type->dtype, [&](auto c) {
    using C = decltype(c);
    if (call.op.kind == OpKind::MaxPool2d)
      maxPool<C>(x, r, g);
    else
      avgPool<C>(x, r, g);
  });
  return Status();
}

uint64_t poolScratchBytes(const StepSpec &) { return 0; }

Expected<std::unique_ptr<Kernel>> preparePool(const StepSpec &step) { return stepKernel(step, pool); }

}  // namespace ferry::cpu
