// backends/cpu/linalg.cpp — matmul (numpy.matmul), linear (x·Wᵀ + b) and conv2d (NCHW) on the
// CPU, each as general matrix products (GEMMs).
//
//   matmul  one GEMM per broadcast batch, both operands read in place (a broadcast batch reads
//           its operand's one matrix again); when the right operand is a single matrix and the
//           left is not broadcast, every row of the left goes into one GEMM
//   linear  one GEMM over every row of x, W [out, in] read transposed (CblasTrans); the bias is
//           written into the result first and the GEMM adds to it (beta = 1)
//   conv2d  two paths, chosen when the step is planned (ConvGeometry):
//           shifted  stride 1 with at least 8 input and 8 output channels per group: x copied
//                    once into a padded NHWC image, then one accumulating GEMM per kernel tap
//                    over the whole batch's pixels ([pixels, C] by [C, O], no im2col), the
//                    result copied back to NCHW with the bias. Up to 1.5x the im2col path at
//                    one thread on 16-32 channels (equal at 64), 1.6-8x at two threads on a
//                    loaded box: OpenBLAS runs these tall, narrow products at the rate of the
//                    conv's own GEMM shape, and a conv is three pool barriers instead of two
//                    per image and group (bench/README.md, ferry-bench-conv).
//           im2col   everything else (stride > 1, depthwise and thin groups, integers): per image
//                    and group, im2col of the group's channels into [Cg·kH·kW, Ho·Wo] (split
//                    over the pool), then W_g [Og, Cg·kH·kW] times those columns into the
//                    result's rows, bias first as for linear. A 1x1 kernel without stride or
//                    padding reads the image itself as the columns.
//
// f32 matmul and linear of more than one row run through oneDNN's matmul when the build has it
// (onednn_gemm.h: 1.6-2x sgemm at batch 32, the linear's bias its own, weights packed once when
// the session gives them and few rows are multiplied); FERRY_CPU_GEMM=openblas takes sgemm.
//
// Compute types: f32 and f64 run OpenBLAS's sgemm and dgemm. f16 and bf16 are converted to f32,
// multiplied by sgemm and rounded once into the result (the reference rounds its double sums
// once too; Debian 12's OpenBLAS exports no cblas_sbgemm, docs/decisions.md). Integers are
// converted to int64 and multiplied as uint64, wrapping modulo 2^64, then stored wrapping at the
// result's width, as the reference does. Conversions are the cast op's (convertElements). Sizes
// past BLAS's 32-bit ints, and the integers, go through plain loops split over the pool.
//
// One pool shares the cores: OpenBLAS is set to one thread per call (once, process-wide), and a
// GEMM is split into row or column panels over ferry's pool, each panel one sgemm/dgemm. With
// OpenBLAS's own threads on as well, its workers spin after each GEMM and starve the next
// kernel's pool threads: on the 2-core CI box a relu after a conv2d ran 2x slower.
#include <cblas.h>

#include <algorithm>
#include <array>
#include <climits>
#include <memory>
#include <optional>
#include <vector>

#include "backends/cpu/kernels.h"
#include "backends/cpu/onednn_conv.h"
#include "backends/cpu/onednn_gemm.h"
#include "backends/cpu/parallel.h"
#include "ir/tensor_data.h"

namespace ferry::cpu {

namespace {

// Elements an im2col or loop-GEMM task should cover at least, so that small ops run inline.
constexpr int64_t kGrain = 16384;

// The dtype a product of `dtype` operands computes in.
DType computeDType(DType dtype) {
  switch (dtype) {
    case DType::F16:
    case DType::BF16:
    case DType::F32: return DType::F32;
    case DType::F64: return DType::F64;
    default: return DType::I64;
  }
}

// Calls f(C{}) with C the C++ type of computeDType(dtype); int64 is multiplied as uint64.
template <class F> decltype(auto) withCompute(DType dtype, F &&f) {
  switch (computeDType(dtype)) {
    case DType::F32: return f(float{});
    case DType::F64: return f(double{});
    default: return f(uint64_t{});
  }
}

// An operand's elements as compute type C: its own bytes when it is stored as C, else a copy
// converted once into the step's scratch.
template <class C> class Elements {
 public:
  Elements(const TensorView &v, ScratchArena &scratch) {
    const DType from = v.type->dtype, to = computeDType(from);
    if (from == to) {
      data_ = reinterpret_cast<const C *>(v.data);
      return;
    }
    C *copy = scratch.take<C>(v.type->numel());
    convertElements(from, v.data, to, reinterpret_cast<std::byte *>(copy),
                    static_cast<size_t>(v.type->numel()));
    data_ = copy;
  }
  const C *data() const { return data_; }

 private:
  const C *data_ = nullptr;
};

// The result as compute type C: written in place when it is stored as C, else into scratch that
// store() rounds (or wraps) into the result.
template <class C> class Output {
 public:
  Output(const TensorView &r, ScratchArena &scratch) : r_(r) {
    if (r.type->dtype == computeDType(r.type->dtype)) {
      data_ = reinterpret_cast<C *>(r.data);
      return;
    }
    converted_ = true;
    data_ = scratch.take<C>(r.type->numel());
  }
  C *data() { return data_; }
  void store() {
    if (!converted_) return;
    convertElements(computeDType(r_.type->dtype), reinterpret_cast<const std::byte *>(data_),
                    r_.type->dtype, r_.data, static_cast<size_t>(r_.type->numel()));
  }

 private:
  const TensorView &r_;
  bool converted_ = false;
  C *data_ = nullptr;
};

// How a GEMM reads b: as [k, n], or as [n, k] transposed (W [out, in] of linear).
enum class BLayout : uint8_t { KByN, NByK };

// c[m×n] = a[m×k] · b (+ c when accumulating), each matrix dense and row-major.
template <class C> struct Gemm {
  int64_t m, n, k;
  const C *a, *b;
  C *c;
  bool transB, accumulate;

  int64_t ldb() const { return transB ? k : n; }
};

// One panel: rows [r0, r0 + m) and columns [c0, c0 + n) of c, through BLAS on this thread. A
// single row is a matrix-vector product: sgemm would pack the whole of b first (OpenBLAS does on
// every call), which took 80 % of a batch-1 MLP's time at one thread (bench/README.md).
void blasPanel(const Gemm<float> &g, int64_t r0, int64_t m, int64_t c0, int64_t n) {
  const float *b = g.transB ? g.b + c0 * g.k : g.b + c0;
  if (m == 1) {
    // c = b·a (b [n, k] as stored) or bᵀ·a (b [k, n], columns c0.. of it).
    cblas_sgemv(CblasRowMajor, g.transB ? CblasNoTrans : CblasTrans,
                static_cast<int>(g.transB ? n : g.k), static_cast<int>(g.transB ? g.k : n), 1.0f,
                b, static_cast<int>(g.ldb()), g.a + r0 * g.k, 1, g.accumulate ? 1.0f : 0.0f,
                g.c + r0 * g.n + c0, 1);
    return;
  }
  cblas_sgemm(CblasRowMajor, CblasNoTrans, g.transB ? CblasTrans : CblasNoTrans,
              static_cast<int>(m), static_cast<int>(n), static_cast<int>(g.k), 1.0f, g.a + r0 * g.k,
              static_cast<int>(g.k), b, static_cast<int>(g.ldb()), g.accumulate ? 1.0f : 0.0f,
              g.c + r0 * g.n + c0, static_cast<int>(g.n));
}

void blasPanel(const Gemm<double> &g, int64_t r0, int64_t m, int64_t c0, int64_t n) {
  const double *b = g.transB ? g.b + c0 * g.k : g.b + c0;
  if (m == 1) {
    cblas_dgemv(CblasRowMajor, g.transB ? CblasNoTrans : CblasTrans,
                static_cast<int>(g.transB ? n : g.k), static_cast<int>(g.transB ? g.k : n), 1.0, b,
                static_cast<int>(g.ldb()), g.a + r0 * g.k, 1, g.accumulate ? 1.0 : 0.0,
                g.c + r0 * g.n + c0, 1);
    return;
  }
  cblas_dgemm(CblasRowMajor, CblasNoTrans, g.transB ? CblasTrans : CblasNoTrans,
              static_cast<int>(m), static_cast<int>(n), static_cast<int>(g.k), 1.0, g.a + r0 * g.k,
              static_cast<int>(g.k), b, static_cast<int>(g.ldb()), g.accumulate ? 1.0 : 0.0,
              g.c + r0 * g.n + c0, static_cast<int>(g.n));
}

// Multiply-adds a panel should hold at least, so that small GEMMs stay one call.
constexpr int64_t kGemmGrain = int64_t{1} << 18;

// OpenBLAS runs one thread per call, set once, process-wide (see the top of this file).
void oneBlasThread() {
  static const bool once = [] {
    openblas_set_num_threads(1);
    return true;
  }();
  (void)once;
}

template <class C> void blasGemm(const Gemm<C> &g) {
  oneBlasThread();
  // Panels along the longer side of c, so each keeps the full length of the other.
  if (g.m >= g.n) {
    const int64_t grain = std::max<int64_t>(1, kGemmGrain / (g.n * g.k));
    parallelFor(g.m, grain, [&g](int64_t r0, int64_t r1) { blasPanel(g, r0, r1 - r0, 0, g.n); });
  } else {
    const int64_t grain = std::max<int64_t>(1, kGemmGrain / (g.m * g.k));
    parallelFor(g.n, grain, [&g](int64_t c0, int64_t c1) { blasPanel(g, 0, g.m, c0, c1 - c0); });
  }
}

// The GEMM as loops, rows of c split over the pool (no BLAS inside).
template <class C> void loopGemm(const Gemm<C> &g) {
  const int64_t grain = std::max<int64_t>(1, kGrain / std::max<int64_t>(1, g.n * g.k));
  parallelFor(g.m, grain, [&g](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      const C *a = g.a + i * g.k;
      C *c = g.c + i * g.n;
      if (!g.accumulate) std::fill_n(c, g.n, C(0));
      if (g.transB) {
        for (int64_t j = 0; j < g.n; ++j) {
          const C *b = g.b + j * g.k;
          C s = 0;
          for (int64_t p = 0; p < g.k; ++p) s += a[p] * b[p];
          c[j] += s;
        }
      } else {
        for (int64_t p = 0; p < g.k; ++p) {
          const C ap = a[p], *b = g.b + p * g.n;
          for (int64_t j = 0; j < g.n; ++j) c[j] += ap * b[j];
        }
      }
    }
  });
}

template <class C>
void gemm(int64_t m, int64_t n, int64_t k, const C *a, const C *b, C *c,
          BLayout layout = BLayout::KByN, bool accumulate = false) {
  if (m == 0 || n == 0) return;
  if (k == 0) {  // an empty sum: zeros, or c as it is
    if (!accumulate) std::fill_n(c, m * n, C(0));
    return;
  }
  const Gemm<C> g{m, n, k, a, b, c, layout == BLayout::NByK, accumulate};
  if constexpr (std::is_floating_point_v<C>) {
    if (m <= INT_MAX && n <= INT_MAX && k <= INT_MAX) return blasGemm(g);
  }
  loopGemm(g);
}

Status checkDTypes(const StepSpec &step) {
  const DType want = step.result.dtype;
  for (size_t i = 0; i < step.operands.size(); ++i) {
    if (step.operands[i].dtype == want) continue;
    return contractError(step, "operand " + std::to_string(i) + " is " + step.operands[i].str() +
                                   ", expected " + std::string(dtypeName(want)) +
                                   " (a cast is missing)");
  }
  return Status();
}

bool hasBias(const StepSpec &step) { return step.operands.size() > 2; }

Status checkBias(const StepSpec &step, int64_t n, const char *of) {
  if (!hasBias(step) || step.operands[2].shape == Shape{n}) return Status();
  return contractError(step, "bias " + step.operands[2].str() + " is not [" + std::to_string(n) +
                                 "] (" + of + ")");
}

// --- matmul --------------------------------------------------------------------------------

// Element offsets of an operand's matrices, one per index of the broadcast batch shape `out`;
// `in` is the operand's own batch shape (right-aligned, dims of 1 repeat).
std::vector<int64_t> batchOffsets(const Shape &out, const Shape &in, int64_t matrix) {
  const size_t rank = out.size();
  std::vector<int64_t> stride(rank, 0), index(rank, 0), offsets(static_cast<size_t>(numel(out)));
  int64_t s = matrix;
  for (size_t d = 0; d < in.size(); ++d) {  // from the innermost dim outwards
    const int64_t n = in[in.size() - 1 - d];
    stride[rank - 1 - d] = n == 1 ? 0 : s;
    s *= n;
  }
  int64_t offset = 0;
  for (int64_t &o : offsets) {
    o = offset;
    for (size_t d = rank; d-- > 0;) {
      offset += stride[d];
      if (++index[d] < out[d]) break;
      offset -= stride[d] * out[d];
      index[d] = 0;
    }
  }
  return offsets;
}

// A matmul's GEMMs, decided when the step is prepared: one GEMM over every row of x when y is
// one matrix and x is not broadcast, else one per batch at the offsets given.
struct MatmulPlan {
  int64_t m = 0, n = 0, k = 0, batches = 0;
  bool oneGemm = false;
  std::vector<int64_t> xOffsets, yOffsets;  // elements, per batch (not oneGemm)
  std::shared_ptr<const OnednnGemm> fast;   // f32 through oneDNN (every batch's GEMM), or null
};

// Multiply-adds from which a GEMM takes oneDNN: below, its launch's fixed cost (memory handles,
// argument map: about 2 us) is a visible share, and sgemm was as fast or faster (a 32x256 by
// 256x10 linear: 2 us against 4 at two threads; 32x64x64 level).
constexpr int64_t kOnednnMinWork = int64_t{1} << 18;

// The fewest columns of a GEMM oneDNN takes: narrower products ran 1.4-4x slower than sgemm (a
// linear to 10 features, 32 or 256 rows of 1024: 24-31 against 43-93 GFLOP/s at one thread).
constexpr int64_t kOnednnMinColumns = 64;

// The step's f32 GEMM through oneDNN, when it computes in f32, has more than one row (a single
// row stays a BLAS matrix-vector product, faster than either library's GEMM), enough columns and
// is not small.
// Operand i's bytes when StepSpec::constants says they are the same at every launch and they are
// stored as f32 (what oneDNN packs), else null.
const float *constantF32(const StepSpec &step, size_t i) {
  if (i >= step.constants.size() || step.operands[i].dtype != DType::F32) return nullptr;
  return reinterpret_cast<const float *>(step.constants[i]);
}

// b is operand `bOperand`: when it is a weight stored as f32, oneDNN packs it once.
std::shared_ptr<const OnednnGemm> fastGemm(const StepSpec &step, const GemmShape &shape, size_t bOperand) {
  if (computeDType(step.result.dtype) != DType::F32 || shape.m < 2 || shape.n < kOnednnMinColumns)
    return nullptr;
  if (static_cast<double>(shape.m) * static_cast<double>(shape.n) * static_cast<double>(shape.k) < kOnednnMinWork)
    return nullptr;
  return OnednnGemm::make(shape, constantF32(step, bOperand), step.packBudget);
}

Expected<MatmulPlan> planMatmul(const StepSpec &step) {
  const TensorType &x = step.operands[0], &y = step.operands[1], &r = step.result;
  FERRY_TRY(checkDTypes(step));
  Shape xs = x.shape, ys = y.shape;
  if (xs.empty() || ys.empty()) return contractError(step, "an operand is a scalar");
  // numpy.matmul: a 1-D left operand is a row [1, k], a 1-D right operand a column [k, 1]; the
  // added dim is not in the result.
  const bool xVec = xs.size() == 1, yVec = ys.size() == 1;
  if (xVec) xs.insert(xs.begin(), 1);
  if (yVec) ys.push_back(1);
  MatmulPlan p;
  p.m = xs[xs.size() - 2], p.k = xs.back(), p.n = ys.back();
  const Shape xBatch(xs.begin(), xs.end() - 2), yBatch(ys.begin(), ys.end() - 2);
  const std::optional<Shape> batch = broadcastShapes(xBatch, yBatch);
  Shape want = batch.value_or(Shape{});
  if (!xVec) want.push_back(p.m);
  if (!yVec) want.push_back(p.n);
  if (ys[ys.size() - 2] != p.k || !batch || want != r.shape)
    return contractError(step, "cannot multiply " + x.str() + " by " + y.str() + " into " + r.str());
  p.batches = numel(*batch);
  p.oneGemm = numel(yBatch) == 1 && numel(xBatch) == p.batches;
  if (!p.oneGemm) {
    p.xOffsets = batchOffsets(*batch, xBatch, p.m * p.k);
    p.yOffsets = batchOffsets(*batch, yBatch, p.k * p.n);
  }
  const int64_t rows = p.oneGemm ? p.batches * p.m : p.m;
  // (Batches of b other than one matrix are not packed: each batch reads its own.)
  p.fast = fastGemm(step, {.m = rows, .n = p.n, .k = p.k, .lda = p.k, .ldb = p.n, .ldc = p.n},
                    p.oneGemm ? 1 : SIZE_MAX);
  return p;
}

template <class C> Status matmul(const MatmulPlan &p, const KernelCall &call) {
  ScratchArena scratch(call.scratch);
  const Elements<C> a(call.operands[0], scratch), b(call.operands[1], scratch);
  Output<C> out(call.result, scratch);
  if constexpr (std::is_same_v<C, float>) {
    if (p.fast) {
      const int64_t batches = p.oneGemm ? 1 : p.batches;
      for (int64_t i = 0; i < batches; ++i)
        FERRY_TRY(p.fast->run(a.data() + (p.oneGemm ? 0 : p.xOffsets[static_cast<size_t>(i)]),
                              b.data() + (p.oneGemm ? 0 : p.yOffsets[static_cast<size_t>(i)]), nullptr,
                              out.data() + i * p.m * p.n));
      out.store();
      return Status();
    }
  }
  if (p.oneGemm) {
    gemm<C>(p.batches * p.m, p.n, p.k, a.data(), b.data(), out.data());
  } else {
    for (int64_t i = 0; i < p.batches; ++i)
      gemm<C>(p.m, p.n, p.k, a.data() + p.xOffsets[static_cast<size_t>(i)],
              b.data() + p.yOffsets[static_cast<size_t>(i)], out.data() + i * p.m * p.n);
  }
  out.store();
  return Status();
}

// --- linear --------------------------------------------------------------------------------

struct LinearPlan {
  int64_t rows = 0, features = 0, in = 0;
  bool bias = false;
  std::shared_ptr<const OnednnGemm> fast;  // f32 through oneDNN, the bias its own, or null
};

Expected<LinearPlan> planLinear(const StepSpec &step) {
  const TensorType &x = step.operands[0], &w = step.operands[1], &r = step.result;
  FERRY_TRY(checkDTypes(step));
  const Shape &xs = x.shape, &ws = w.shape;
  if (xs.empty() || ws.size() != 2 || xs.back() != ws[1])
    return contractError(step, "x " + x.str() + " and weight " + w.str() +
                                   " are not [..., in] and [out, in]");
  LinearPlan p{0, ws[0], ws[1], hasBias(step), nullptr};
  Shape want(xs.begin(), xs.end() - 1);
  p.rows = numel(want);
  want.push_back(p.features);
  if (want != r.shape) return contractError(step, "the result " + r.str() + " is not " + shapeStr(want));
  FERRY_TRY(checkBias(step, p.features, "the output features"));
  p.fast = fastGemm(step, {.m = p.rows, .n = p.features, .k = p.in, .lda = p.in, .ldb = p.in,
                           .ldc = p.features, .transB = true, .bias = p.bias}, 1);
  return p;
}

template <class C> Status linear(const LinearPlan &p, const KernelCall &call) {
  ScratchArena scratch(call.scratch);
  const Elements<C> a(call.operands[0], scratch), b(call.operands[1], scratch);
  Output<C> out(call.result, scratch);
  if constexpr (std::is_same_v<C, float>) {
    if (p.fast) {
      const float *bias = p.bias ? Elements<C>(call.operands[2], scratch).data() : nullptr;
      FERRY_TRY(p.fast->run(a.data(), b.data(), bias, out.data()));
      out.store();
      return Status();
    }
  }
  if (p.bias) {
    const Elements<C> row(call.operands[2], scratch);
    for (int64_t i = 0; i < p.rows; ++i) std::copy_n(row.data(), p.features, out.data() + i * p.features);
  }
  gemm<C>(p.rows, p.features, p.in, a.data(), b.data(), out.data(), BLayout::NByK, p.bias);
  out.store();
  return Status();
}

// --- conv2d --------------------------------------------------------------------------------

struct ConvGeometry {
  int64_t n, c, h, w;     // x [N, C, H, W]
  int64_t o, cg, kh, kw;  // weight [O, C/groups, kH, kW]
  int64_t groups, ho, wo;
  int64_t sh, sw, dh, dw, pt, pl, pb, pr;
  bool direct;   // a 1x1 kernel with stride 1 and no padding: the image's channels are the columns
  bool shifted;  // stride 1, channels per group wide enough: shifted GEMMs over NHWC (below)
  bool bias;
  std::shared_ptr<const OnednnConv> fast;  // f32 through oneDNN (set when prepared), or null
};

// stride, dilation, padding and groups, checked as the reference checks them ("attr" errors).
Status convAttrs(const StepSpec &step, ConvGeometry &g) {
  const std::vector<int64_t> &stride = attrInts(step.op, step.attrs, "stride"),
                             &dilation = attrInts(step.op, step.attrs, "dilation"),
                             &pad = attrInts(step.op, step.attrs, "padding");
  g.groups = attrInt(step.op, step.attrs, "groups");
  bool ok = stride.size() == 2 && dilation.size() == 2 && (pad.size() == 2 || pad.size() == 4) &&
            g.groups >= 1;
  for (const std::vector<int64_t> *v : {&stride, &dilation})
    for (int64_t s : *v) ok = ok && s >= 1;
  for (int64_t p : pad) ok = ok && p >= 0;
  if (!ok)
    return makeError("attr",
                     "'conv2d' needs stride and dilation of 2 ints >= 1, padding of 2 or 4 ints "
                     ">= 0 and groups >= 1; got stride " +
                         attrValueStr(stride) + ", dilation " + attrValueStr(dilation) +
                         ", padding " + attrValueStr(pad) + ", groups " + std::to_string(g.groups),
                     step.loc);
  g.sh = stride[0], g.sw = stride[1], g.dh = dilation[0], g.dw = dilation[1];
  g.pt = pad[0], g.pl = pad[1];
  g.pb = pad.size() == 4 ? pad[2] : pad[0], g.pr = pad.size() == 4 ? pad[3] : pad[1];
  g.direct = g.kh == 1 && g.kw == 1 && g.sh == 1 && g.sw == 1 && g.pt == 0 && g.pl == 0 &&
             g.pb == 0 && g.pr == 0;
  return Status();
}

// Output positions along one dim, as the shape rule counts them; nullopt when the window does
// not fit or its extent overflows.
std::optional<int64_t> windowCount(int64_t in, int64_t kernel, int64_t stride, int64_t dilation,
                                   int64_t padBegin, int64_t padEnd) {
  int64_t extent = 0, padded = 0;
  if (__builtin_mul_overflow(dilation, kernel - 1, &extent) ||
      __builtin_add_overflow(in, padBegin, &padded) ||
      __builtin_add_overflow(padded, padEnd, &padded) || padded <= extent)
    return std::nullopt;
  return (padded - extent - 1) / stride + 1;
}

// The columns of one image's group: row (c, i, j) holds, for each output position (oh, ow), the
// input at (c, oh·sh - pt + i·dh, ow·sw - pl + j·dw), or 0 in the padding. Rows split over the
// pool.
// n elements from `from` to `to` (not overlapping), for the short rows of im2col (a few dozen
// elements, thousands of them per image): fixed-size copies the compiler inlines as vector moves.
// A memmove call per row, or Eigen's loop with its alignment peeling, took most of a LeNet's
// im2col (bench/README.md).
template <class C> void copyShort(const C *from, int64_t n, C *to) {
  const auto *s = reinterpret_cast<const std::byte *>(from);
  auto *d = reinterpret_cast<std::byte *>(to);
  size_t bytes = static_cast<size_t>(n) * sizeof(C);
  for (; bytes >= 64; bytes -= 64, s += 64, d += 64) __builtin_memcpy(d, s, 64);
  if (bytes >= 32) {
    __builtin_memcpy(d, s, 32);
    bytes -= 32, s += 32, d += 32;
  }
  if (bytes >= 16) {
    __builtin_memcpy(d, s, 16);
    bytes -= 16, s += 16, d += 16;
  }
  if (bytes >= 8) {
    __builtin_memcpy(d, s, 8);
    bytes -= 8, s += 8, d += 8;
  }
  for (; bytes > 0; --bytes) *d++ = *s++;
}

template <class C> void im2col(const ConvGeometry &g, const C *x, C *cols) {
  const int64_t window = g.kh * g.kw, positions = g.ho * g.wo;
  parallelFor(g.cg * window, std::max<int64_t>(1, kGrain / positions), [&](int64_t r0, int64_t r1) {
    for (int64_t row = r0; row < r1; ++row) {
      const int64_t i = row % window / g.kw, j = row % g.kw;
      const C *plane = x + row / window * g.h * g.w;
      // ow reads column ow·sw + shift, inside the image for ow in [lo, hi).
      const int64_t shift = j * g.dw - g.pl;
      const int64_t hi =
          std::clamp<int64_t>(g.w - shift <= 0 ? 0 : (g.w - shift + g.sw - 1) / g.sw, 0, g.wo);
      const int64_t lo = std::min(shift >= 0 ? 0 : (-shift + g.sw - 1) / g.sw, hi);
      for (int64_t oh = 0; oh < g.ho; ++oh) {
        C *out = cols + row * positions + oh * g.wo;
        const int64_t ih = oh * g.sh - g.pt + i * g.dh;
        if (ih < 0 || ih >= g.h) {
          std::fill_n(out, g.wo, C(0));
          continue;
        }
        const C *line = plane + ih * g.w;
        std::fill_n(out, lo, C(0));
        if (g.sw == 1)
          copyShort(line + lo + shift, hi - lo, out + lo);
        else
          for (int64_t ow = lo; ow < hi; ++ow) out[ow] = line[ow * g.sw + shift];
        std::fill(out + hi, out + g.wo, C(0));
      }
    }
  });
}

// --- conv2d as shifted GEMMs (stride 1) -----------------------------------------------------
//
// x is copied once into a zero-padded NHWC image, xp [N, Hp, Wp, C] (Hp = H + pt + pb, Wp
// likewise). Read as a matrix of rows, one row of C channels per padded pixel, the pixels a tap
// (i, j) of the kernel reads for every output position are the rows shifted by i·dh·Wp + j·dw:
// output position (n, oh, ow) sits in row r = (n·Hp + oh)·Wp + ow of a result grid
// [rows, O], and tap (i, j) adds xp's rows [r + i·dh·Wp + j·dw] (a dense [rows, C] matrix with
// lda = C) times the tap's weights [C, O]. So a conv is kH·kW accumulating GEMMs with M the
// batch's pixels, K = C and N = O, with no im2col: OpenBLAS runs tall-and-narrow products like
// these at 2-3x the rate of the per-image im2col GEMMs ([O, C·kH·kW] by [C·kH·kW, Ho·Wo]) on the
// residual block's shapes (bench/README.md, ferry-bench-conv). The grid's rows past an image's
// Wo or Ho are computed and dropped: (Wp - Wo)/Wp of the work, 2/34 on a 32-wide image. Groups
// read their channels at an offset (lda = C, ldc = O). Rows split over the pool, each panel all
// taps, so panels share nothing.

struct ShiftedSizes {
  int64_t hp, wp, rows;  // padded height and width; rows of the result grid
  int64_t padded, grid, taps;  // elements of xp, of the grid, of the weights per tap-major layout
};

ShiftedSizes shiftedSizes(const ConvGeometry &g) {
  ShiftedSizes s;
  s.hp = g.h + g.pt + g.pb, s.wp = g.w + g.pl + g.pr;
  s.rows = ((g.n - 1) * s.hp + g.ho - 1) * s.wp + g.wo;
  s.padded = g.n * s.hp * s.wp * g.c, s.grid = s.rows * g.o, s.taps = g.kh * g.kw * g.cg * g.o;
  return s;
}

// BLAS takes ints: the padded image and the grid must index within one.
bool shiftedFitsInt(const ConvGeometry &g) {
  const int64_t hp = g.h + g.pt + g.pb, wp = g.w + g.pl + g.pr;
  int64_t pixels = 0, elements = 0;
  return !__builtin_mul_overflow(g.n * hp, wp, &pixels) &&
         !__builtin_mul_overflow(pixels, std::max(g.c, g.o), &elements) && elements <= INT_MAX;
}

// c[m×n] (ldc) = a[m×k] (lda) · b[k×n] (ldb), plus c when accumulating; row-major, this thread.
void blasStrided(int64_t m, int64_t n, int64_t k, const float *a, int64_t lda, const float *b,
                 int64_t ldb, float *c, int64_t ldc, bool accumulate) {
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(m), static_cast<int>(n),
              static_cast<int>(k), 1.0f, a, static_cast<int>(lda), b, static_cast<int>(ldb),
              accumulate ? 1.0f : 0.0f, c, static_cast<int>(ldc));
}

void blasStrided(int64_t m, int64_t n, int64_t k, const double *a, int64_t lda, const double *b,
                 int64_t ldb, double *c, int64_t ldc, bool accumulate) {
  cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(m), static_cast<int>(n),
              static_cast<int>(k), 1.0, a, static_cast<int>(lda), b, static_cast<int>(ldb),
              accumulate ? 1.0 : 0.0, c, static_cast<int>(ldc));
}

// Elements of a block of the grid's rows (or of x's): 64 KiB of f32, well inside a core's L2.
constexpr int64_t kBlockElements = 16384;

template <class C>
void shiftedConv(const ConvGeometry &g, const C *x, const C *weight, const C *bias, C *y,
                 ScratchArena &scratch) {
  oneBlasThread();
  const ShiftedSizes s = shiftedSizes(g);
  C *const xp = scratch.take<C>(s.padded), *const grid = scratch.take<C>(s.grid),
           *const taps = scratch.take<C>(s.taps);
  const int64_t og = g.o / g.groups, window = g.kh * g.kw, planeOut = g.ho * g.wo;
  // The weights tap-major, [groups, kH·kW, C/groups, O/groups]: each tap's [K, N] matrix dense.
  for (int64_t grp = 0; grp < g.groups; ++grp)
    for (int64_t oo = 0; oo < og; ++oo)
      for (int64_t ci = 0; ci < g.cg; ++ci)
        for (int64_t t = 0; t < window; ++t)
          taps[((grp * window + t) * g.cg + ci) * og + oo] = weight[((grp * og + oo) * g.cg + ci) * window + t];
  // 1. x into xp, one padded row of one image per task.
  parallelFor(g.n * s.hp, std::max<int64_t>(1, kGrain / (s.wp * g.c)), [&](int64_t r0, int64_t r1) {
    for (int64_t row = r0; row < r1; ++row) {
      const int64_t image = row / s.hp, ih = row % s.hp - g.pt;
      C *out = xp + row * s.wp * g.c;
      if (ih < 0 || ih >= g.h) {
        std::fill_n(out, s.wp * g.c, C(0));
        continue;
      }
      std::fill_n(out, g.pl * g.c, C(0));
      std::fill_n(out + (g.pl + g.w) * g.c, g.pr * g.c, C(0));
      for (int64_t ch = 0; ch < g.c; ++ch) {
        const C *line = x + ((image * g.c + ch) * g.h + ih) * g.w;
        C *to = out + g.pl * g.c + ch;
        for (int64_t iw = 0; iw < g.w; ++iw) to[iw * g.c] = line[iw];
      }
    }
  });
  // 2. Every tap's GEMM on a panel of the grid's rows.
  const int64_t grain = std::max<int64_t>(16, kGemmGrain / std::max<int64_t>(1, og * g.cg * window));
  // A panel runs in blocks of rows whose grid rows (and x rows) stay in L2 across the taps: each
  // tap adds into the block, which would otherwise go out to memory and back kH·kW times.
  const int64_t block = std::max<int64_t>(64, kBlockElements / std::max(g.c, g.o));
  parallelFor(s.rows, grain, [&](int64_t r0, int64_t r1) {
    for (int64_t b0 = r0; b0 < r1; b0 += block) {
      const int64_t m = std::min(block, r1 - b0);
      for (int64_t grp = 0; grp < g.groups; ++grp)
        for (int64_t t = 0; t < window; ++t) {
          const int64_t shift = t / g.kw * g.dh * s.wp + t % g.kw * g.dw;
          blasStrided(m, og, g.cg, xp + (b0 + shift) * g.c + grp * g.cg, g.c,
                      taps + (grp * window + t) * g.cg * og, og, grid + b0 * g.o + grp * og, g.o,
                      t > 0);
        }
    }
  });
  // 3. The grid's valid rows into y (NCHW), plus the bias; one output plane per task.
  parallelFor(g.n * g.o, std::max<int64_t>(1, kGrain / planeOut), [&](int64_t p0, int64_t p1) {
    for (int64_t plane = p0; plane < p1; ++plane) {
      const int64_t image = plane / g.o, oc = plane % g.o;
      const C b = bias ? bias[oc] : C(0);
      C *out = y + plane * planeOut;
      for (int64_t oh = 0; oh < g.ho; ++oh) {
        const C *from = grid + ((image * s.hp + oh) * s.wp) * g.o + oc;
        for (int64_t ow = 0; ow < g.wo; ++ow) out[oh * g.wo + ow] = from[ow * g.o] + b;
      }
    }
  });
}

Expected<ConvGeometry> planConv2d(const StepSpec &step) {
  const TensorType &x = step.operands[0], &w = step.operands[1], &r = step.result;
  FERRY_TRY(checkDTypes(step));
  const Shape &xs = x.shape, &ws = w.shape;
  if (xs.size() != 4 || ws.size() != 4)
    return contractError(step, "x " + x.str() + " and weight " + w.str() +
                                   " are not [N, C, H, W] and [O, C/groups, kH, kW]");
  ConvGeometry g{xs[0], xs[1], xs[2], xs[3], ws[0], ws[1], ws[2], ws[3]};
  FERRY_TRY(convAttrs(step, g));
  g.bias = hasBias(step);
  if (g.c % g.groups != 0 || g.o % g.groups != 0 || g.cg != g.c / g.groups || g.kh < 1 || g.kw < 1)
    return contractError(step, "x " + x.str() + ", weight " + w.str() + " and groups " +
                                   std::to_string(g.groups) + " do not fit");
  FERRY_TRY(checkBias(step, g.o, "the output channels"));
  const std::optional<int64_t> ho = windowCount(g.h, g.kh, g.sh, g.dh, g.pt, g.pb),
                               wo = windowCount(g.w, g.kw, g.sw, g.dw, g.pl, g.pr);
  if (!ho || !wo || r.shape != Shape{g.n, g.o, *ho, *wo})
    return contractError(step, "the result " + r.str() + " is not what x " + x.str() +
                                   " and weight " + w.str() + " give");
  g.ho = *ho, g.wo = *wo;
  // The shifted GEMMs multiply K = C/groups by N = O/groups per kernel tap: below 8 either way
  // a tap is too thin a product to pay for the NHWC copies (depthwise stays on im2col).
  g.shifted = g.sh == 1 && g.sw == 1 && !g.direct && g.cg >= 8 && g.o / g.groups >= 8 &&
              shiftedFitsInt(g);
  return g;
}

// The step's f32 conv2d through oneDNN (onednn_conv.h), when it computes in f32, is not small
// (the GEMMs' bound) and is not a plain 1x1 (unpadded, stride 1: one sgemm over the image as it
// lies, 84 GFLOP/s at one thread where oneDNN, with its two layout reorders, gave 51-62); its
// weight packed when the session gives it.
std::shared_ptr<const OnednnConv> fastConv(const StepSpec &step, const ConvGeometry &g) {
  if (computeDType(step.result.dtype) != DType::F32 || g.direct) return nullptr;
  const double work = static_cast<double>(g.n * g.o) * static_cast<double>(g.ho * g.wo) *
                      static_cast<double>(g.cg * g.kh * g.kw);  // each a tensor's elements at most
  if (work < kOnednnMinWork) return nullptr;
  const ConvShape shape{.n = g.n, .c = g.c, .h = g.h, .w = g.w, .o = g.o, .kh = g.kh, .kw = g.kw,
                        .groups = g.groups, .ho = g.ho, .wo = g.wo, .sh = g.sh, .sw = g.sw,
                        .dh = g.dh, .dw = g.dw, .pt = g.pt, .pl = g.pl, .pb = g.pb, .pr = g.pr,
                        .bias = g.bias};
  return OnednnConv::make(shape, constantF32(step, 1), step.packBudget);
}

template <class C> Status conv2d(const ConvGeometry &g, const KernelCall &call) {
  ScratchArena scratch(call.scratch);
  const Elements<C> in(call.operands[0], scratch), weight(call.operands[1], scratch);
  std::optional<Elements<C>> b;
  if (g.bias) b.emplace(call.operands[2], scratch);
  Output<C> out(call.result, scratch);
  if constexpr (std::is_same_v<C, float>) {
    if (g.fast) {
      FERRY_TRY(g.fast->run(in.data(), weight.data(), b ? b->data() : nullptr, out.data()));
      out.store();
      return Status();
    }
  }
  if constexpr (std::is_floating_point_v<C>) {
    if (g.shifted) {
      shiftedConv<C>(g, in.data(), weight.data(), b ? b->data() : nullptr, out.data(), scratch);
      out.store();
      return Status();
    }
  }
  const int64_t og = g.o / g.groups, depth = g.cg * g.kh * g.kw, positions = g.ho * g.wo;
  // Uninitialised: im2col writes every element.
  C *const cols = scratch.take<C>(g.direct ? 0 : depth * positions);
  for (int64_t image = 0; image < g.n; ++image) {
    for (int64_t group = 0; group < g.groups; ++group) {
      const C *channels = in.data() + (image * g.c + group * g.cg) * g.h * g.w;
      C *rows = out.data() + (image * g.o + group * og) * positions;
      if (!g.direct) im2col(g, channels, cols);
      if (b)
        for (int64_t o = 0; o < og; ++o)
          std::fill_n(rows + o * positions, positions, b->data()[group * og + o]);
      gemm<C>(og, positions, depth, weight.data() + group * og * depth, g.direct ? channels : cols,
              rows, BLayout::KByN, b.has_value());
    }
  }
  out.store();
  return Status();
}

// `step`'s kernel: `run<C>(plan, call)` in the step's compute type, or nothing for an empty
// result.
template <class Plan, class Run>
Expected<std::unique_ptr<Kernel>> linalgKernel(const StepSpec &step, Expected<Plan> plan, Run run) {
  if (!plan) return plan.status();
  if (step.result.numel() == 0) return stepKernel(step, [](const KernelCall &) { return Status(); });
  return withCompute(step.result.dtype, [&](auto zero) {
    using C = decltype(zero);
    return stepKernel(step, [p = std::move(*plan), run](const KernelCall &call) {
      return run(C{}, p, call);
    });
  });
}

}  // namespace


Expected<std::unique_ptr<Kernel>> prepareLinalg(const StepSpec &step) {
  switch (step.op.kind) {
    case OpKind::Matmul:
      return linalgKernel(step, planMatmul(step), [](auto c, const MatmulPlan &p, const KernelCall &call) {
        return matmul<decltype(c)>(p, call);
      });
    case OpKind::Linear:
      return linalgKernel(step, planLinear(step), [](auto c, const LinearPlan &p, const KernelCall &call) {
        return linear<decltype(c)>(p, call);
      });
    case OpKind::Conv2d: {
      Expected<ConvGeometry> g = planConv2d(step);
      if (g) g->fast = fastConv(step, *g);
      return linalgKernel(step, std::move(g), [](auto c, const ConvGeometry &geometry, const KernelCall &call) {
        return conv2d<decltype(c)>(geometry, call);
      });
    }
    default: return contractError(step, "not a linalg op");
  }
}

// The pieces the kernels above take, in their order: converted operands (matmul, linear: x then
// the weight then the bias; conv2d: x, weight, bias), the converted result, then conv2d's
// columns. (matmul's batch offsets are computed when the step is prepared and kept with it.)
uint64_t linalgScratchBytes(const StepSpec &step) {
  const OpKind op = step.op.kind;
  if (op != OpKind::Matmul && op != OpKind::Linear && op != OpKind::Conv2d) return 0;
  if (smallGemmApplies(step)) return 0;
  const DType compute = computeDType(step.result.dtype);
  const auto converted = [&](const TensorType &t) -> uint64_t {
    if (t.dtype == compute) return 0;
    return withCompute(t.dtype, [&](auto zero) {
      return ScratchArena::bytes<decltype(zero)>(t.numel());
    });
  };
  return withCompute(step.result.dtype, [&](auto zero) -> uint64_t {
    using C = decltype(zero);
    uint64_t bytes = converted(step.result);
    for (const TensorType &t : step.operands) bytes += converted(t);
    // The columns, as conv2d takes them (a step outside the contract takes none: prepare
    // refuses it).
    if (op == OpKind::Conv2d) {
      const Expected<ConvGeometry> g = planConv2d(step);
      if (g && g->shifted && isFloating(step.result.dtype)) {
        const ShiftedSizes s = shiftedSizes(*g);
        bytes += ScratchArena::bytes<C>(s.padded) + ScratchArena::bytes<C>(s.grid) +
                 ScratchArena::bytes<C>(s.taps);
      } else if (g && !g->direct) {
        bytes += ScratchArena::bytes<C>(g->cg * g->kh * g->kw * g->ho * g->wo);
      }
    }
    return bytes;
  });
}


}  // namespace ferry::cpu
