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
// Prepare and launch: preparePool checks the step against the contract, reads the attributes,
// computes the window geometry (output sizes, avg_pool2d's divisors per output column, how the
// rows are split) and picks the loop for the op and compute type (float or double); the step's
// kernel holds all of it. A launch only computes, and allocates nothing.
//
// Work: parallelFor over output rows (plane, oh). An output row is an accumulator of Wo
// elements; for each kernel row whose input row lies inside the input, and each kernel column,
// the input row read at the column stride is folded into the output columns whose input column
// lies inside the input (acc[ow] op= in[ow * sW + j * dW - padLeft]): one Eigen array expression
// per (kernel row, kernel column), contiguous when the stride is 1. f32 and f64 accumulate in the
// result itself. f16/bf16 rows are converted to f32 in row buffers and the accumulator stored back
// once; the buffers are planned scratch (poolScratchBytes), one pair per buffer slot: chunks are
// at least `grain` rows long, so the chunk starting at row b owns slot b / grain, and the grain is
// raised until there are at most kSlots slots, whatever the pool's thread count.
// global_avg_pool sums each plane in blocks converted on the stack.
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
constexpr int64_t kSlots = 64;       // row buffer pairs an f16/bf16 window pool plans at most

template <class C> using ArrayMap = Eigen::Map<Eigen::Array<C, Eigen::Dynamic, 1>>;
template <class C> using ConstArrayMap = Eigen::Map<const Eigen::Array<C, Eigen::Dynamic, 1>>;
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

// The output columns [lo, hi) whose input column ow * stride + offset lies in [0, size).
std::pair<int64_t, int64_t> inside(int64_t offset, int64_t stride, int64_t size, int64_t outs) {
  const int64_t lo = offset >= 0 ? 0 : ceilDiv(-offset, stride);
  const int64_t hi = size - 1 - offset >= 0 ? floorDiv(size - 1 - offset, stride) + 1 : 0;
  return {std::min(lo, outs), std::clamp<int64_t>(hi, 0, outs)};
}

// --- prepare: the contract, the attributes, the geometry ------------------------------------

struct Geometry {
  int64_t planes = 0, H = 0, W = 0, Ho = 0, Wo = 0;
  std::array<int64_t, 2> kernel{}, stride{}, dilation{1, 1};
  std::array<int64_t, 4> pad{};  // top, left, bottom, right
  bool ceilMode = false, includePad = false;

  int64_t rows() const { return planes * Ho; }
  // Element operations of one output row.
  int64_t rowWork() const { return kernel[0] * kernel[1] * Wo + W; }
};

// One operand, in the result's dtype.
Status checkOperand(const StepSpec &step) {
  if (step.operands.size() != 1)
    return contractError(step, std::to_string(step.operands.size()) + " operands");
  const TensorType &x = step.operands[0];
  if (x.dtype != step.result.dtype)
    return contractError(step, "operand 0 is " + x.str() + ", expected " +
                                   std::string(dtypeName(step.result.dtype)) +
                                   " (a cast is missing)");
  return Status();
}

Status pairAttr(const StepSpec &step, std::string_view name, std::array<int64_t, 2> &out) {
  const std::vector<int64_t> &v = attrInts(step.op, step.attrs, name);
  if (v.size() != 2 || v[0] < 1 || v[1] < 1 || v[0] > (int64_t{1} << 31) ||
      v[1] > (int64_t{1} << 31))
    return contractError(step, std::string(name) + " must be 2 ints in [1, 2^31]");
  out = {v[0], v[1]};
  return Status();
}

// The window geometry of a max_pool2d or avg_pool2d step from its attributes, and the check that
// its result has the shape they give.
Expected<Geometry> geometry(const StepSpec &step) {
  FERRY_TRY(checkOperand(step));
  const OpKind k = step.op.kind;
  Geometry g;
  FERRY_TRY(pairAttr(step, "kernel", g.kernel));
  g.stride = g.kernel;
  if (!attrInts(step.op, step.attrs, "stride").empty())
    FERRY_TRY(pairAttr(step, "stride", g.stride));
  if (k == OpKind::MaxPool2d) FERRY_TRY(pairAttr(step, "dilation", g.dilation));
  const std::vector<int64_t> &p = attrInts(step.op, step.attrs, "padding");
  bool padOk = p.size() == 2 || p.size() == 4;
  for (int64_t v : p) padOk = padOk && v >= 0 && v <= (int64_t{1} << 31);
  if (!padOk) return contractError(step, "padding must be 2 or 4 ints in [0, 2^31]");
  g.pad = p.size() == 2 ? std::array<int64_t, 4>{p[0], p[1], p[0], p[1]}
                        : std::array<int64_t, 4>{p[0], p[1], p[2], p[3]};
  g.ceilMode = attrBool(step.op, step.attrs, "ceil_mode");
  if (k == OpKind::AvgPool2d) g.includePad = attrBool(step.op, step.attrs, "count_include_pad");

  const TensorType &x = step.operands[0];
  const Shape &xs = x.shape;
  if (xs.size() < 2) return contractError(step, "operand " + x.str());
  g.H = xs[xs.size() - 2];
  g.W = xs.back();
  g.planes = 1;
  for (size_t d = 0; d + 2 < xs.size(); ++d) g.planes *= xs[d];
  g.Ho = outSize(g.H, g.kernel[0], g.stride[0], g.pad[0], g.pad[2], g.dilation[0], g.ceilMode);
  g.Wo = outSize(g.W, g.kernel[1], g.stride[1], g.pad[1], g.pad[3], g.dilation[1], g.ceilMode);
  Shape want = xs;
  want[xs.size() - 2] = g.Ho;
  want.back() = g.Wo;
  if (step.result.shape != want)
    return contractError(step, "result " + step.result.str() + " for operand " + x.str() +
                                   " (expected shape " + shapeStr(want) + ")");
  return g;
}

// How a window pool's rows go over the pool, and where its f16/bf16 row buffers are: per slot an
// input row and an accumulator row of C, each padded to whole cache lines, all input rows first.
template <class C> struct RowPlan {
  int64_t rows = 0, grain = 1;
  int64_t slots = 0;  // 0: rows are read in place, the result accumulates in itself
  int64_t inStride = 0, accStride = 0;  // elements of C from one slot's buffer to the next

  uint64_t scratchBytes() const {
    return ScratchArena::bytes<C>(slots * inStride) + ScratchArena::bytes<C>(slots * accStride);
  }
  // The slot of the chunk [begin, ...): parallelFor's chunks start at least `grain` rows apart.
  int64_t slot(int64_t begin) const { return begin / grain; }
};

template <class C> RowPlan<C> rowPlan(const Geometry &g, DType dtype) {
  constexpr int64_t line = 64 / sizeof(C);
  RowPlan<C> p;
  p.rows = g.rows();
  const int64_t byWork = std::max<int64_t>(1, kGrain / std::max<int64_t>(g.rowWork(), 1));
  p.grain = std::max(byWork, ceilDiv(p.rows, kSlots));
  if (dtype != kDType<C> && p.rows > 0) {
    p.slots = ceilDiv(p.rows, p.grain);
    p.inStride = ceilDiv(g.W, line) * line;
    p.accStride = ceilDiv(g.Wo, line) * line;
  }
  return p;
}

// Per output column, the divisor's width part: the window clipped to the padded input, or to the
// input (a window without input columns sums nothing: 0 over 1). Windows have no dilation.
template <class C> std::vector<C> widthDivisors(const Geometry &g) {
  std::vector<C> div(static_cast<size_t>(g.Wo));
  for (int64_t ow = 0; ow < g.Wo; ++ow) {
    const int64_t w0 = ow * g.stride[1] - g.pad[1];
    const int64_t w1 = std::min(w0 + g.kernel[1], g.W + g.pad[3]);
    const int64_t in = std::min(w1, g.W) - std::max<int64_t>(w0, 0);
    div[ow] = static_cast<C>(g.includePad ? w1 - w0 : std::max<int64_t>(in, 1));
  }
  return div;
}

// The planes of a global_avg_pool step and the elements of each.
struct Planes {
  int64_t count = 0, spatial = 0;
};

Expected<Planes> planes(const StepSpec &step) {
  FERRY_TRY(checkOperand(step));
  const TensorType &x = step.operands[0];
  const Shape &xs = x.shape;
  if (xs.size() < 2) return contractError(step, "operand " + x.str());
  Shape want(xs.size(), 1);
  want[0] = xs[0];
  want[1] = xs[1];
  if (step.result.shape != want)
    return contractError(step, "result " + step.result.str() + " for operand " + x.str());
  Planes p{step.result.numel(), 1};
  for (size_t d = 2; d < xs.size(); ++d) p.spatial *= xs[d];
  return p;
}

// --- launch: the loops ------------------------------------------------------------------------

template <class C> struct WindowPool;

// Output rows [begin, end) of a window pool; `in` and `acc` are the chunk's row buffers (used
// only when the dtype is converted).
template <class C>
using RowsFn = void (*)(const WindowPool<C> &k, const TensorView &x, const TensorView &r,
                        int64_t begin, int64_t end, C *in, C *acc);

// A max_pool2d or avg_pool2d step, prepared: its geometry, its split and the loop over rows.
template <class C> struct WindowPool {
  Geometry g;
  RowPlan<C> plan;
  std::vector<C> widthDiv;  // avg_pool2d: per output column, the divisor's width part
  RowsFn<C> rows;

  Status operator()(const KernelCall &call) const {
    ScratchArena scratch(call.scratch);
    C *const in = scratch.take<C>(plan.slots * plan.inStride);
    C *const acc = scratch.take<C>(plan.slots * plan.accStride);
    const TensorView &x = call.operands[0], &r = call.result;
    parallelFor(plan.rows, plan.grain, [&](int64_t begin, int64_t end) {
      const int64_t s = plan.slot(begin);
      rows(*this, x, r, begin, end, in + s * plan.inStride, acc + s * plan.accStride);
    });
    return Status();
  }
};

// Whether a max_pool2d is the common 2x2 window at stride 2 wholly inside the image (no
// padding, dilation or partial window at the edge) on data stored as computed: then each output
// row is one pass over its two input rows (maxPairRows), not four strided passes and a fill.
template <class C> bool pairWindows(const Geometry &g, DType dtype) {
  return g.kernel == std::array<int64_t, 2>{2, 2} && g.stride == std::array<int64_t, 2>{2, 2} &&
         g.dilation == std::array<int64_t, 2>{1, 1} && g.pad == std::array<int64_t, 4>{} &&
         2 * g.Wo <= g.W && 2 * g.Ho <= g.H && dtype == kDType<C>;
}

// maxRows for pairWindows: the same comparisons in the same order (a NaN wins and stays, and of
// +0 and -0 the first seen stays), so the same bytes.
template <class C>
void maxPairRows(const WindowPool<C> &k, const TensorView &x, const TensorView &r, int64_t begin,
                 int64_t end, C *, C *acc) {
  const Geometry &g = k.g;
  auto pick = [](C v, C s) { return ((v > s) | (v != v)) ? v : s; };
  for (int64_t row = begin; row < end; ++row) {
    const int64_t p = row / g.Ho, oh = row % g.Ho;
    const C *a = reinterpret_cast<const C *>(x.data) + (p * g.H + 2 * oh) * g.W, *b = a + g.W;
    C *out = outAs(r, row * g.Wo, acc);
    for (int64_t n = 0; n < g.Wo; ++n)
      out[n] = pick(b[2 * n + 1], pick(b[2 * n], pick(a[2 * n + 1], a[2 * n])));
    storeAs(r, row * g.Wo, g.Wo, out);
  }
}

template <class C>
void maxRows(const WindowPool<C> &k, const TensorView &x, const TensorView &r, int64_t begin,
             int64_t end, C *in, C *acc) {
  const Geometry &g = k.g;
  for (int64_t row = begin; row < end; ++row) {
    const int64_t p = row / g.Ho, oh = row % g.Ho;
    C *out = outAs(r, row * g.Wo, acc);
    ArrayMap<C> a(out, g.Wo);
    // Padding is skipped, so it counts as -inf.
    a.setConstant(-std::numeric_limits<C>::infinity());
    for (int64_t i = 0; i < g.kernel[0]; ++i) {
      const int64_t ih = oh * g.stride[0] - g.pad[0] + i * g.dilation[0];
      if (ih < 0 || ih >= g.H) continue;
      const C *src = loadAs(x, (p * g.H + ih) * g.W, g.W, in);
      for (int64_t j = 0; j < g.kernel[1]; ++j) {
        const int64_t offset = j * g.dilation[1] - g.pad[1];
        const auto [lo, hi] = inside(offset, g.stride[1], g.W, g.Wo);
        if (lo >= hi) continue;
        // NaN wins and stays. A loop with `|`, not Eigen's select: it vectorises.
        const C *v = src + lo * g.stride[1] + offset;
        C *seg = out + lo;
        const int64_t s = g.stride[1];
        for (int64_t n = 0; n < hi - lo; ++n)
          seg[n] = (v[n * s] > seg[n]) | (v[n * s] != v[n * s]) ? v[n * s] : seg[n];
      }
    }
    storeAs(r, row * g.Wo, g.Wo, out);
  }
}

template <class C>
void avgRows(const WindowPool<C> &k, const TensorView &x, const TensorView &r, int64_t begin,
             int64_t end, C *in, C *acc) {
  const Geometry &g = k.g;
  const ConstArrayMap<C> div(k.widthDiv.data(), g.Wo);
  for (int64_t row = begin; row < end; ++row) {
    const int64_t p = row / g.Ho, oh = row % g.Ho;
    C *out = outAs(r, row * g.Wo, acc);
    ArrayMap<C> a(out, g.Wo);
    a.setZero();
    const int64_t h0 = oh * g.stride[0] - g.pad[0];
    const int64_t h1 = std::min(h0 + g.kernel[0], g.H + g.pad[2]);
    const int64_t hIn = std::min(h1, g.H) - std::max<int64_t>(h0, 0);
    if (hIn > 0) {
      for (int64_t ih = std::max<int64_t>(h0, 0); ih < std::min(h1, g.H); ++ih) {
        const C *src = loadAs(x, (p * g.H + ih) * g.W, g.W, in);
        for (int64_t j = 0; j < g.kernel[1]; ++j) {
          const auto [lo, hi] = inside(j - g.pad[1], g.stride[1], g.W, g.Wo);
          if (lo >= hi) continue;
          a.segment(lo, hi - lo) += StridedMap<C>(src + lo * g.stride[1] + j - g.pad[1], hi - lo,
                                                  Eigen::InnerStride<>(g.stride[1]));
        }
      }
      a /= div * static_cast<C>(g.includePad ? h1 - h0 : hIn);
    }
    storeAs(r, row * g.Wo, g.Wo, out);
  }
}

// A global_avg_pool step, prepared: the mean of each plane.
template <class C> struct GlobalAvgPool {
  Planes p;

  Status operator()(const KernelCall &call) const {
    const TensorView &x = call.operands[0], &r = call.result;
    constexpr int64_t kBlock = 1024;
    const int64_t spatial = p.spatial;
    parallelFor(p.count, std::max<int64_t>(1, kGrain / std::max<int64_t>(spatial, 1)),
                [&](int64_t begin, int64_t end) {
                  C in[kBlock], mean[1];
                  for (int64_t plane = begin; plane < end; ++plane) {
                    // Blocks sum in C, vectorised; the blocks add up in double.
                    double s = 0;
                    for (int64_t at = 0; at < spatial; at += kBlock) {
                      const int64_t n = std::min(kBlock, spatial - at);
                      s += static_cast<double>(
                          ConstArrayMap<C>(loadAs(x, plane * spatial + at, n, in), n).sum());
                    }
                    C *out = outAs(r, plane, mean);
                    *out = static_cast<C>(s / static_cast<double>(spatial));  // 0 elements: NaN
                    storeAs(r, plane, 1, out);
                  }
                });
    return Status();
  }
};

// --- the step's kernel --------------------------------------------------------------------------

// The kernel of a pooling step computing in C.
template <class C> Expected<std::unique_ptr<Kernel>> prepareAs(const StepSpec &step) {
  if (step.op.kind == OpKind::GlobalAvgPool) {
    Expected<Planes> p = planes(step);
    if (!p) return p.status();
    return stepKernel(step, GlobalAvgPool<C>{*p});
  }
  Expected<Geometry> g = geometry(step);
  if (!g) return g.status();
  WindowPool<C> k{*g, rowPlan<C>(*g, step.result.dtype), {},
                  pairWindows<C>(*g, step.result.dtype) ? maxPairRows<C> : maxRows<C>};
  if (step.op.kind == OpKind::AvgPool2d) {
    k.widthDiv = widthDivisors<C>(*g);
    k.rows = avgRows<C>;
  }
  return stepKernel(step, std::move(k));
}

bool windowPool(OpKind op) { return op == OpKind::MaxPool2d || op == OpKind::AvgPool2d; }

}  // namespace


// The row buffers of an f16/bf16 window pool (RowPlan); a step outside the contract takes none
// (prepare refuses it).
uint64_t poolScratchBytes(const StepSpec &step) {
  if (!windowPool(step.op.kind)) return 0;
  const Expected<Geometry> g = geometry(step);
  if (!g) return 0;
  return withFloat(step.result.dtype, [&](auto c) {
    return rowPlan<decltype(c)>(*g, step.result.dtype).scratchBytes();
  });
}

Expected<std::unique_ptr<Kernel>> preparePool(const StepSpec &step) {
  if (!windowPool(step.op.kind) && step.op.kind != OpKind::GlobalAvgPool)
    return contractError(step, "not a pooling op");
  if (!isFloating(step.result.dtype))
    return contractError(step, "the result is " + step.result.str() + ", not floating");
  return withFloat(step.result.dtype, [&](auto c) { return prepareAs<decltype(c)>(step); });
}

}  // namespace ferry::cpu
