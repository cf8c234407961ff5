// backends/cpu/movement.cpp — transpose, concat, slice, gather and expand on the CPU.
//
// These ops move elements without looking at them, so the kernels work per element size (1, 2,
// 4 or 8 bytes), not per dtype, and are exact for every dtype. Transpose, slice, expand and each
// operand of concat are one strided copy: a region walked in the result's row-major order, each
// dim with a stride into the source and one into the result. Dims of size 1 are dropped and
// dims contiguous on both sides merged first, so that innermost runs are as long as they can be.
// Then a run is
//   - one memcpy when it is contiguous on both sides (transpose keeping the last dim, slice of
//     whole rows, concat, expand of leading dims);
//   - a fill when it reads one element (expand of a trailing 1);
//   - copied in square tiles when it reads with a stride while an outer dim is contiguous in the
//     source (transpose moving the last dim), so that reads and writes stay in a few cache lines;
//     a tile goes in small blocks of fixed size, which the compiler unrolls, kMicro source rows
//     at a time (about 2x faster than plain 32x32 tiles in a quick measurement, more for
//     power-of-two strides, whose lines all fall into the same cache sets);
//   - a strided loop otherwise (slice with steps).
// Gather copies the run of dims after `axis` once per (outer index, index).
//
// Prepare and launch: prepareMovement checks the step against the contract, reads the
// attributes and plans every copy once (CopyPlan: the simplified dims, rows or tiles, the loop
// for the element size, how the work is cut); gather's plan holds the sizes around its axis and
// its loops for the index type and element size. A launch allocates nothing: the odometers that
// walk the outer dims keep their index on the chunk's stack (so prepare refuses ranks past
// kMaxRank), and gather checks and wraps its indices into the step's planned scratch
// (movementScratchBytes); an index out of range is the one error a launch can report.
//
// Work is split with parallelFor over rows (rows longer than kPieceBytes cut into pieces) or over
// tiles, about kGrainBytes per chunk. Semantics are the reference's
// (backends/reference/movement.cpp); steps outside the contract of kernels.h are "internal".
#include <algorithm>
#include <array>
#include <cstring>
#include <span>

#include "backends/cpu/kernels.h"
#include "backends/cpu/parallel.h"
#include "ir/op_rules.h"
#include "ir/tensor_data.h"

namespace ferry::cpu {

namespace {

constexpr int64_t kGrainBytes = 64 << 10;  // work per parallel chunk, at least
constexpr int64_t kPieceBytes = 64 << 10;  // longer rows are cut into pieces of this size
constexpr int64_t kTile = 64;              // side of a transposing copy's tile, in elements
constexpr int64_t kMicro = 8;              // a tile is copied in kMicro x kMicro blocks
constexpr size_t kMaxRank = 64;            // dims a strided copy has at most (as in artifacts)

int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Calls f(T{}) with T an unsigned integer of `bytes` bytes, the size of an element.
template <class F> void withElement(size_t bytes, F &&f) {
  switch (bytes) {
    case 1: f(uint8_t{}); return;
    case 2: f(uint16_t{}); return;
    case 4: f(uint32_t{}); return;
    case 8: f(uint64_t{}); return;
  }
  FERRY_CHECK(false) << "no element type of " << bytes << " bytes";
}

// --- the loops --------------------------------------------------------------------------------

// One dim of a strided copy: its size and its strides in elements (0 or negative allowed) into
// the source and into the destination.
struct Dim {
  int64_t n = 1, src = 0, dst = 0;
};

// Source and destination offsets of consecutive rows: an odometer over some outer dims (at most
// kMaxRank), its index on the stack.
class Odometer {
 public:
  explicit Odometer(std::span<const Dim> dims) : dims_(dims) {}

  int64_t src() const { return srcOffset_; }
  int64_t dst() const { return dstOffset_; }

  // Moves to row `row` (row-major over the dims): one step when it is the next one.
  void moveTo(int64_t row) {
    if (row == row_) return;
    if (row == row_ + 1) {
      step();
    } else {
      srcOffset_ = dstOffset_ = 0;
      for (size_t d = dims_.size(), rest = static_cast<size_t>(row); d-- > 0;) {
        index_[d] = static_cast<int64_t>(rest % static_cast<size_t>(dims_[d].n));
        rest /= static_cast<size_t>(dims_[d].n);
        srcOffset_ += index_[d] * dims_[d].src;
        dstOffset_ += index_[d] * dims_[d].dst;
      }
    }
    row_ = row;
  }

 private:
  void step() {
    for (size_t d = dims_.size(); d-- > 0;) {
      srcOffset_ += dims_[d].src;
      dstOffset_ += dims_[d].dst;
      if (++index_[d] < dims_[d].n) return;
      srcOffset_ -= dims_[d].n * dims_[d].src;
      dstOffset_ -= dims_[d].n * dims_[d].dst;
      index_[d] = 0;
    }
  }

  std::span<const Dim> dims_;
  std::array<int64_t, kMaxRank> index_{};
  int64_t row_ = 0, srcOffset_ = 0, dstOffset_ = 0;
};

template <class T> void copyRun(T *d, const T *s, int64_t n, int64_t srcStride, int64_t dstStride) {
  if (n == 1)
    *d = *s;
  else if (srcStride == 1 && dstStride == 1)
    std::memcpy(d, s, static_cast<size_t>(n) * sizeof(T));
  else if (srcStride == 0 && dstStride == 1)
    std::fill_n(d, n, *s);
  else
    for (int64_t j = 0; j < n; ++j) d[j * dstStride] = s[j * srcStride];
}

// `rows` rows of `len` elements, each cut into `perRow` pieces of at most pieceLen, and the
// pieces a parallel chunk takes at least (about kGrainBytes).
struct Pieces {
  int64_t rows = 0, len = 0, perRow = 1, pieceLen = 1, grain = 1;
};

Pieces cutRows(int64_t rows, int64_t len, int64_t elementBytes) {
  Pieces p{rows, len};
  p.perRow = std::max<int64_t>(1, len * elementBytes / kPieceBytes);
  p.pieceLen = std::max<int64_t>(1, ceilDiv(len, p.perRow));
  p.grain = std::max<int64_t>(1, kGrainBytes / (p.pieceLen * elementBytes));
  return p;
}

// Calls, in parallel chunks, body(row, from, n) for each piece [from, from + n) of each row, in
// order within a chunk; each chunk gets its own body from makeBody() (bodies keep state, such as
// an odometer).
template <class MakeBody> void forEachPiece(const Pieces &p, const MakeBody &makeBody) {
  parallelFor(p.rows * p.perRow, p.grain, [&](int64_t begin, int64_t end) {
    auto body = makeBody();
    if (p.perRow == 1) {
      for (int64_t row = begin; row < end; ++row) body(row, 0, p.len);
      return;
    }
    for (int64_t u = begin; u < end; ++u) {
      const int64_t from = u % p.perRow * p.pieceLen;
      body(u / p.perRow, from, std::min(p.pieceLen, p.len - from));
    }
  });
}

struct CopyPlan;
using CopyFn = void (*)(const CopyPlan &plan, const std::byte *from, std::byte *to);

// A strided copy planned for its launches: the loop for its shape and element size, and the
// geometry that loop reads. Offsets and strides count elements.
struct CopyPlan {
  CopyFn run = nullptr;  // null: the region is empty
  int64_t srcBase = 0, dstBase = 0;
  std::vector<Dim> outer;  // walked by an odometer: every dim but `inner` (and `across`)
  Dim inner;               // the innermost dim: copyRows' rows, copyTiles' dim a
  Pieces pieces;           // copyRows: one row per index of `outer`, cut into pieces
  Dim across;              // copyTiles: dim b (source stride 1), cut into tiles
  int64_t tilesB = 0;      // copyTiles: tiles along b
  int64_t units = 0;       // copyTiles: (index of `outer`, tile of b) pairs, split over the pool
  int64_t grain = 1;       // copyTiles: units per chunk, at least

  void operator()(const std::byte *from, std::byte *to) const {
    if (run) run(*this, from, to);
  }
};

// Rows along the innermost dim: memcpy, fill or strided loop.
template <class T> void copyRows(const CopyPlan &c, const std::byte *from, std::byte *to) {
  const T *s = reinterpret_cast<const T *>(from) + c.srcBase;
  T *d = reinterpret_cast<T *>(to) + c.dstBase;
  const int64_t ss = c.inner.src, ds = c.inner.dst;
  forEachPiece(c.pieces, [&] {
    return [&, odometer = Odometer(c.outer)](int64_t row, int64_t at, int64_t n) mutable {
      odometer.moveTo(row);
      copyRun(d + odometer.dst() + at * ds, s + odometer.src() + at * ss, n, ss, ds);
    };
  });
}

// Element (i, j) of dims b (src stride 1) and a (the innermost, dst stride 1) in blocks of
// kMicro x kMicro, all the blocks of kMicro source rows of a tile in turn.
template <class T>
void copyTile(const T *s, T *d, int64_t sa, int64_t db, int64_t b0, int64_t b1, int64_t a0,
              int64_t a1) {
  for (int64_t j0 = a0; j0 < a1; j0 += kMicro)
    for (int64_t i0 = b0; i0 < b1; i0 += kMicro) {
      const T *sp = s + i0 + j0 * sa;
      T *dp = d + i0 * db + j0;
      if (i0 + kMicro <= b1 && j0 + kMicro <= a1) {
        for (int64_t i = 0; i < kMicro; ++i)
          for (int64_t j = 0; j < kMicro; ++j) dp[i * db + j] = sp[i + j * sa];
        continue;
      }
      const int64_t ni = std::min(kMicro, b1 - i0), nj = std::min(kMicro, a1 - j0);
      for (int64_t i = 0; i < ni; ++i)
        for (int64_t j = 0; j < nj; ++j) dp[i * db + j] = sp[i + j * sa];
    }
}

// Dim `a` (the innermost, dst stride 1) and dim `b` (src stride 1) in kTile x kTile tiles, for
// every index of the other dims.
template <class T> void copyTiles(const CopyPlan &c, const std::byte *from, std::byte *to) {
  const T *s = reinterpret_cast<const T *>(from) + c.srcBase;
  T *d = reinterpret_cast<T *>(to) + c.dstBase;
  const int64_t na = c.inner.n, sa = c.inner.src, nb = c.across.n, db = c.across.dst;
  const int64_t tilesB = c.tilesB;
  parallelFor(c.units, c.grain, [&](int64_t begin, int64_t end) {
    Odometer odometer(c.outer);
    for (int64_t u = begin; u < end; ++u) {
      odometer.moveTo(u / tilesB);
      const T *sp = s + odometer.src();
      T *dp = d + odometer.dst();
      const int64_t b0 = u % tilesB * kTile, b1 = std::min(nb, b0 + kTile);
      for (int64_t a0 = 0; a0 < na; a0 += kTile)
        copyTile(sp, dp, sa, db, b0, b1, a0, std::min(na, a0 + kTile));
    }
  });
}

// --- planning a strided copy ------------------------------------------------------------------

// A region copied from a source to a destination: its dims, outermost first, and the element
// offsets where it starts on both sides.
struct StridedCopy {
  std::vector<Dim> dims;
  int64_t srcBase = 0, dstBase = 0;

  void add(int64_t n, int64_t srcStride, int64_t dstStride) {
    dims.push_back({n, srcStride, dstStride});
  }

  // Drops dims of size 1 and merges neighbours contiguous on both sides; keeps at least one dim.
  void simplify() {
    std::vector<Dim> s;
    for (const Dim &k : dims) {
      if (k.n == 1) continue;
      if (!s.empty() && s.back().src == k.src * k.n && s.back().dst == k.dst * k.n) {
        s.back() = {s.back().n * k.n, k.src, k.dst};
        continue;
      }
      s.push_back(k);
    }
    if (s.empty()) s.push_back({1, 1, 1});
    dims = std::move(s);
  }
};

// Rows along the innermost dim, one per index of the outer dims.
void planRows(CopyPlan &p, const StridedCopy &c, int64_t elementBytes) {
  p.outer.assign(c.dims.begin(), c.dims.end() - 1);
  int64_t rows = 1;
  for (const Dim &k : p.outer) rows *= k.n;
  p.pieces = cutRows(rows, p.inner.n, elementBytes);
}

// Tiles of the innermost dim and dim `b`, for every index of the other dims.
void planTiles(CopyPlan &p, const StridedCopy &c, size_t b, int64_t elementBytes) {
  for (size_t k = 0; k + 1 < c.dims.size(); ++k)
    if (k != b) p.outer.push_back(c.dims[k]);
  p.across = c.dims[b];
  p.tilesB = ceilDiv(p.across.n, kTile);
  p.units = p.tilesB;
  for (const Dim &k : p.outer) p.units *= k.n;
  p.grain = std::max<int64_t>(1, kGrainBytes / (kTile * p.inner.n * elementBytes));
}

// The plan of copying `c` with elements of `elementBytes` bytes (at most kMaxRank dims).
CopyPlan planCopy(StridedCopy c, size_t elementBytes) {
  FERRY_CHECK(c.dims.size() <= kMaxRank) << "a strided copy of " << c.dims.size() << " dims";
  CopyPlan p;
  p.srcBase = c.srcBase;
  p.dstBase = c.dstBase;
  if (std::any_of(c.dims.begin(), c.dims.end(), [](const Dim &k) { return k.n == 0; })) return p;
  c.simplify();
  p.inner = c.dims.back();
  // Tiles when the innermost dim reads with a stride and an outer dim is contiguous in the source.
  const auto outerEnd = c.dims.end() - 1;
  const auto b = std::find_if(c.dims.begin(), outerEnd, [](const Dim &k) { return k.src == 1; });
  const bool tiles = p.inner.dst == 1 && p.inner.src != 0 && p.inner.src != 1 && b != outerEnd;
  const auto bytes = static_cast<int64_t>(elementBytes);
  if (tiles)
    planTiles(p, c, static_cast<size_t>(b - c.dims.begin()), bytes);
  else
    planRows(p, c, bytes);
  withElement(elementBytes, [&](auto e) {
    using T = decltype(e);
    p.run = tiles ? copyTiles<T> : copyRows<T>;
  });
  return p;
}

// The copies of a transpose, slice, expand or concat step: operand i into the result by plan i.
struct Copies {
  std::vector<CopyPlan> plans;

  Status operator()(const KernelCall &call) const {
    for (size_t i = 0; i < plans.size(); ++i) plans[i](call.operands[i].data, call.result.data);
    return Status();
  }
};

// --- prepare: the contract and the attributes -------------------------------------------------

Status checkArity(const StepSpec &step) {
  const auto n = static_cast<int>(step.operands.size());
  if (n >= std::max(step.op.minOperands, 1) &&
      (step.op.maxOperands < 0 || n <= step.op.maxOperands))
    return Status();
  return contractError(step, std::to_string(n) + " operands");
}

Status sameDType(const StepSpec &step, size_t i) {
  const DType want = step.result.dtype;
  if (step.operands[i].dtype == want) return Status();
  return contractError(step, "operand " + std::to_string(i) + " is " + step.operands[i].str() +
                                 ", expected " + std::string(dtypeName(want)) +
                                 " (a cast is missing)");
}

Status checkResultShape(const StepSpec &step, const Shape &shape) {
  if (shape == step.result.shape) return Status();
  return contractError(step, "the result is " + step.result.str() + " but the operands give " +
                                 shapeStr(shape));
}

Status badAxis(const StepSpec &step, int64_t axis, const TensorType &x) {
  return contractError(step, "axis " + std::to_string(axis) + " of " + x.str());
}

// One strided copy of operand 0 into the result, which is `c`'s region.
Expected<Copies> oneCopy(const StepSpec &step, StridedCopy c) {
  if (c.dims.size() > kMaxRank)
    return contractError(step, "the result " + step.result.str() + " has more than " +
                                   std::to_string(kMaxRank) + " dims");
  return Copies{{planCopy(std::move(c), dtypeSize(step.result.dtype))}};
}

Expected<Copies> transpose(const StepSpec &step) {
  FERRY_TRY(sameDType(step, 0));
  const TensorType &x = step.operands[0];
  const Shape &xs = x.shape;
  const int64_t rank = x.rank();
  std::vector<int64_t> perm = attrInts(step.op, step.attrs, "perm");
  if (perm.empty())
    for (int64_t d = rank; d-- > 0;) perm.push_back(d);  // reverse the dims
  if (static_cast<int64_t>(perm.size()) != rank)
    return contractError(step, "perm " + shapeStr(perm) + " for " + x.str());
  const std::vector<int64_t> given = perm;
  std::vector<bool> seen(perm.size(), false);
  for (int64_t &p : perm) {
    const std::optional<int64_t> axis = normalizeAxis(p, rank);
    if (!axis || seen[*axis])
      return contractError(step, "perm " + shapeStr(given) +
                                     " is not a permutation of the dims of " + x.str());
    seen[*axis] = true;
    p = *axis;
  }
  Shape outShape;
  for (int64_t p : perm) outShape.push_back(xs[p]);
  FERRY_TRY(checkResultShape(step, outShape));
  const std::vector<int64_t> in = contiguousStrides(xs), out = contiguousStrides(outShape);
  StridedCopy c;
  for (size_t k = 0; k < perm.size(); ++k) c.add(outShape[k], in[perm[k]], out[k]);
  return oneCopy(step, std::move(c));
}

Expected<Copies> concat(const StepSpec &step) {
  const Shape &first = step.operands[0].shape;
  const int64_t rank = static_cast<int64_t>(first.size());
  const int64_t given = attrInt(step.op, step.attrs, "axis");
  const std::optional<int64_t> axisOr = normalizeAxis(given, rank);
  if (!axisOr || rank == 0) return badAxis(step, given, step.operands[0]);
  const auto axis = static_cast<size_t>(*axisOr);
  Shape outShape = first;
  outShape[axis] = 0;
  for (size_t i = 0; i < step.operands.size(); ++i) {
    FERRY_TRY(sameDType(step, i));
    const Shape &s = step.operands[i].shape;
    for (size_t d = 0; d < first.size(); ++d)
      if (s.size() != first.size() || (d != axis && s[d] != first[d]))
        return contractError(step, "operands " + step.operands[0].str() + " and " +
                                       step.operands[i].str() + " do not concatenate");
    outShape[axis] += s[axis];
  }
  FERRY_TRY(checkResultShape(step, outShape));
  const int64_t outer = numel(std::span(first).first(axis));
  const int64_t inner = numel(std::span(first).subspan(axis + 1));
  Copies copies;
  int64_t offset = 0;  // along the axis, where the current operand starts
  for (const TensorType &t : step.operands) {
    const int64_t run = t.shape[axis] * inner;
    StridedCopy c;
    c.add(outer, run, outShape[axis] * inner);
    c.add(run, 1, 1);
    c.dstBase = offset * inner;
    copies.plans.push_back(planCopy(std::move(c), dtypeSize(t.dtype)));
    offset += t.shape[axis];
  }
  return copies;
}

Expected<Copies> slice(const StepSpec &step) {
  FERRY_TRY(sameDType(step, 0));
  const TensorType &x = step.operands[0];
  const Shape &xs = x.shape;
  const int64_t rank = x.rank();
  const SliceAttrs slice = sliceAttrs(step.op, step.attrs);
  if (!slice.consistent) return contractError(step, "starts/ends/axes/steps of different lengths");
  const std::vector<int64_t> &starts = slice.starts, &ends = slice.ends, &axes = slice.axes,
                             &steps = slice.steps;
  // Per dim: first element and step; dims not sliced are taken whole.
  std::vector<int64_t> firstAt(xs.size(), 0), stepOf(xs.size(), 1);
  std::vector<bool> seen(xs.size(), false);
  Shape outShape = xs;
  for (size_t i = 0; i < starts.size(); ++i) {
    const std::optional<int64_t> ax = normalizeAxis(axes[i], rank);
    if (!ax || seen[*ax]) return badAxis(step, axes[i], x);
    seen[*ax] = true;
    if (steps[i] == 0)
      return makeError("attr", "'slice' step must not be 0 (axis " + std::to_string(*ax) + ")",
                       step.loc);
    const SliceDim sd = resolveSliceDim(starts[i], ends[i], steps[i], xs[*ax]);
    firstAt[*ax] = sd.start;
    stepOf[*ax] = steps[i];
    outShape[*ax] = sd.count;
  }
  FERRY_TRY(checkResultShape(step, outShape));
  if (step.result.numel() == 0) return Copies{{CopyPlan{}}};
  const std::vector<int64_t> in = contiguousStrides(xs), out = contiguousStrides(outShape);
  StridedCopy c;
  for (size_t d = 0; d < xs.size(); ++d) {
    // A dim taking one element has no stride (its step may be as long as int64 allows).
    c.add(outShape[d], outShape[d] > 1 ? in[d] * stepOf[d] : 0, out[d]);
    c.srcBase += firstAt[d] * in[d];
  }
  return oneCopy(step, std::move(c));
}

Expected<Copies> expand(const StepSpec &step) {
  FERRY_TRY(sameDType(step, 0));
  const TensorType &x = step.operands[0];
  const Shape &xs = x.shape;
  // Broadcasts both ways, as ONNX Expand; a negative size breaks the contract (inferExpand).
  const Shape &target = attrInts(step.op, step.attrs, "shape");
  std::optional<Shape> outShape;
  if (std::all_of(target.begin(), target.end(), [](int64_t d) { return d >= 0; }))
    outShape = broadcastShapes(xs, target);
  if (!outShape) return contractError(step, x.str() + " does not broadcast to " + shapeStr(target));
  FERRY_TRY(checkResultShape(step, *outShape));
  const std::vector<int64_t> in = contiguousStrides(xs), out = contiguousStrides(*outShape);
  const size_t newDims = outShape->size() - xs.size();
  StridedCopy c;
  for (size_t k = 0; k < outShape->size(); ++k) {
    const bool repeats = k < newDims || xs[k - newDims] == 1;
    c.add((*outShape)[k], repeats ? 0 : in[k - newDims], out[k]);
  }
  return oneCopy(step, std::move(c));
}

// --- gather -----------------------------------------------------------------------------------

// A gather step, prepared: data [outer..., dim, inner...] and `count` indices; the loops that
// check and wrap the indices (per index type) and copy the rows (per element size and row
// length) were picked by prepare.
struct Gather {
  int64_t axis = 0, dim = 0, count = 0, outer = 0, inner = 0;
  bool empty = false;  // the result has no element (the indices are checked all the same)
  Pieces pieces;       // long rows: (outer index, index) rows of `inner`, cut into pieces
  int64_t grain = 1;   // short rows: rows per chunk
  Status (*wrap)(const Gather &g, const KernelCall &call, int64_t *idx) = nullptr;
  void (*copy)(const Gather &g, const int64_t *idx, const std::byte *from, std::byte *to) = nullptr;

  // The indices wrapped into [0, dim) go to the step's scratch, then the rows are copied.
  Status operator()(const KernelCall &call) const {
    ScratchArena scratch(call.scratch);
    int64_t *idx = scratch.take<int64_t>(count);
    FERRY_TRY(wrap(*this, call, idx));
    if (!empty) copy(*this, idx, call.operands[0].data, call.result.data);
    return Status();
  }
};

// A "runtime" error for index `v`, the j-th of the indices: out of range.
Status indexOutOfRange(const Gather &g, const KernelCall &call, int64_t v, size_t j) {
  const Shape &is = call.operands[1].type->shape;
  Shape at(is.size());
  for (size_t d = is.size(), rest = j; d-- > 0;) {
    at[d] = static_cast<int64_t>(rest % static_cast<size_t>(is[d]));
    rest /= static_cast<size_t>(is[d]);
  }
  const std::string where = is.empty() ? "" : " at " + shapeStr(at);
  const int64_t dim = g.dim;
  return makeError(
      "runtime",
      "'gather' index " + std::to_string(v) + where + " is out of range for axis " +
          std::to_string(g.axis) + " of size " + std::to_string(dim) + " in " +
          call.operands[0].type->str() + ": allowed " +
          (dim == 0 ? "none" : "-" + std::to_string(dim) + " to " + std::to_string(dim - 1)),
      call.loc);
}

// Every index wrapped into [0, dim), into `idx`; an error at the first out of range.
template <class I> Status wrapIndices(const Gather &g, const KernelCall &call, int64_t *idx) {
  const auto *p = reinterpret_cast<const I *>(call.operands[1].data);
  const int64_t dim = g.dim;
  for (int64_t j = 0; j < g.count; ++j) {
    const int64_t v = p[j];
    if (v < -dim || v >= dim) return indexOutOfRange(g, call, v, static_cast<size_t>(j));
    idx[j] = v < 0 ? v + dim : v;
  }
  return Status();
}

// Rows longer than kPieceBytes, cut into pieces.
template <class T>
void gatherLongRows(const Gather &g, const int64_t *idx, const std::byte *from, std::byte *to) {
  const auto *s = reinterpret_cast<const T *>(from);
  auto *d = reinterpret_cast<T *>(to);
  forEachPiece(g.pieces, [&] {
    return [&](int64_t row, int64_t at, int64_t len) {
      const int64_t o = row / g.count, j = row % g.count;
      copyRun(d + row * g.inner + at, s + (o * g.dim + idx[j]) * g.inner + at, len, 1, 1);
    };
  });
}

// Short rows: one loop stepping (outer index o, index j) without divisions.
template <class T>
void gatherShortRows(const Gather &g, const int64_t *idx, const std::byte *from, std::byte *to) {
  const auto *s = reinterpret_cast<const T *>(from);
  auto *d = reinterpret_cast<T *>(to);
  parallelFor(g.outer * g.count, g.grain, [&, s, d](int64_t begin, int64_t end) {
    // Locals, not captures: stores of bytes could alias the closure and force reloads.
    const int64_t *at = idx, count = g.count, rowLen = g.inner, dimLen = g.dim;
    int64_t o = begin / count, j = begin % count;
    T *out = d + begin * rowLen;
    for (int64_t row = begin; row < end; ++row, out += rowLen) {
      const T *in = s + (o * dimLen + at[j]) * rowLen;
      if (rowLen == 1)
        *out = *in;
      else
        std::memcpy(out, in, static_cast<size_t>(rowLen) * sizeof(T));
      if (++j == count) {
        j = 0;
        ++o;
      }
    }
  });
}

Expected<Gather> gather(const StepSpec &step) {
  const TensorType &data = step.operands[0], &indices = step.operands[1];
  FERRY_TRY(sameDType(step, 0));
  const DType indexType = indices.dtype;
  if (indexType != DType::I32 && indexType != DType::I64)
    return contractError(step, "indices are " + indices.str() + ", expected i32 or i64");
  const Shape &ds = data.shape;
  const int64_t given = attrInt(step.op, step.attrs, "axis");
  const std::optional<int64_t> axisOr = normalizeAxis(given, data.rank());
  if (!axisOr || ds.empty()) return badAxis(step, given, data);
  const auto axis = static_cast<size_t>(*axisOr);
  Shape outShape(ds.begin(), ds.begin() + *axisOr);
  outShape.insert(outShape.end(), indices.shape.begin(), indices.shape.end());
  outShape.insert(outShape.end(), ds.begin() + *axisOr + 1, ds.end());
  FERRY_TRY(checkResultShape(step, outShape));
  Gather g;
  g.axis = *axisOr;
  g.dim = ds[axis];
  g.count = indices.numel();
  g.outer = numel(std::span(ds).first(axis));
  g.inner = numel(std::span(ds).subspan(axis + 1));
  g.empty = step.result.numel() == 0;
  g.wrap = indexType == DType::I32 ? wrapIndices<int32_t> : wrapIndices<int64_t>;
  const auto bytes = static_cast<int64_t>(dtypeSize(step.result.dtype));
  const bool longRows = g.inner * bytes > kPieceBytes;
  if (longRows)
    g.pieces = cutRows(g.outer * g.count, g.inner, bytes);
  else
    g.grain = std::max<int64_t>(1, kGrainBytes / std::max<int64_t>(1, g.inner * bytes));
  withElement(dtypeSize(step.result.dtype), [&](auto e) {
    using T = decltype(e);
    g.copy = longRows ? gatherLongRows<T> : gatherShortRows<T>;
  });
  return g;
}

// Whatever a step's kernel is made of, or why there is none.
template <class K> Expected<std::unique_ptr<Kernel>> kernelOf(const StepSpec &step, Expected<K> k) {
  if (!k) return k.status();
  return stepKernel(step, std::move(*k));
}

}  // namespace


// Gather's indices, wrapped (Gather::operator()); the other ops take none.
uint64_t movementScratchBytes(const StepSpec &step) {
  if (step.op.kind != OpKind::Gather || step.operands.size() != 2) return 0;
  return ScratchArena::bytes<int64_t>(step.operands[1].numel());
}

Expected<std::unique_ptr<Kernel>> prepareMovement(const StepSpec &step) {
  FERRY_TRY(checkArity(step));
  switch (step.op.kind) {
    case OpKind::Transpose: return kernelOf(step, transpose(step));
    case OpKind::Concat: return kernelOf(step, concat(step));
    case OpKind::Slice: return kernelOf(step, slice(step));
    case OpKind::Gather: return kernelOf(step, gather(step));
    case OpKind::Expand: return kernelOf(step, expand(step));
    default: return contractError(step, "not a movement op");
  }
}

}  // namespace ferry::cpu
