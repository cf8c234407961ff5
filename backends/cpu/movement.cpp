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
// Work is split with parallelFor over rows (rows longer than kPieceBytes cut into pieces) or over
// tiles, about kGrainBytes per chunk. Semantics are the reference's
// (backends/reference/movement.cpp); calls outside the contract of kernels.h are "internal".
#include <algorithm>
#include <cstring>

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

int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Calls f(T{}) with T an unsigned integer as wide as an element of `dtype`.
template <class F> void withElement(DType dtype, F &&f) {
  switch (dtypeSize(dtype)) {
    case 1: f(uint8_t{}); return;
    case 2: f(uint16_t{}); return;
    case 4: f(uint32_t{}); return;
    case 8: f(uint64_t{}); return;
  }
  FERRY_CHECK(false) << "no element type of " << dtypeSize(dtype) << " bytes";
}

// A region copied from a source to a destination: per dim its size and its strides (in
// elements, 0 or negative allowed) on both sides; bases are element offsets.
struct StridedCopy {
  std::vector<int64_t> dims, src, dst;
  int64_t srcBase = 0, dstBase = 0;

  void add(int64_t n, int64_t srcStride, int64_t dstStride) {
    dims.push_back(n);
    src.push_back(srcStride);
    dst.push_back(dstStride);
  }

  // Drops dims of size 1 and merges neighbours contiguous on both sides; keeps at least one dim.
  void simplify() {
    StridedCopy s;
    for (size_t k = 0; k < dims.size(); ++k) {
      if (dims[k] == 1) continue;
      if (!s.dims.empty() && s.src.back() == src[k] * dims[k] && s.dst.back() == dst[k] * dims[k]) {
        s.dims.back() *= dims[k];
        s.src.back() = src[k];
        s.dst.back() = dst[k];
        continue;
      }
      s.add(dims[k], src[k], dst[k]);
    }
    if (s.dims.empty()) s.add(1, 1, 1);
    dims = std::move(s.dims);
    src = std::move(s.src);
    dst = std::move(s.dst);
  }
};

// Source and destination offsets of consecutive rows: an odometer over some outer dims.
class Odometer {
 public:
  Odometer(std::vector<int64_t> dims, std::vector<int64_t> src, std::vector<int64_t> dst)
      : dims_(std::move(dims)), src_(std::move(src)), dst_(std::move(dst)),
        index_(dims_.size(), 0) {}

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
        index_[d] = static_cast<int64_t>(rest % static_cast<size_t>(dims_[d]));
        rest /= static_cast<size_t>(dims_[d]);
        srcOffset_ += index_[d] * src_[d];
        dstOffset_ += index_[d] * dst_[d];
      }
    }
    row_ = row;
  }

 private:
  void step() {
    for (size_t d = dims_.size(); d-- > 0;) {
      srcOffset_ += src_[d];
      dstOffset_ += dst_[d];
      if (++index_[d] < dims_[d]) return;
      srcOffset_ -= dims_[d] * src_[d];
      dstOffset_ -= dims_[d] * dst_[d];
      index_[d] = 0;
    }
  }

  std::vector<int64_t> dims_, src_, dst_, index_;
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

// Copies `rows` rows of `len` elements of T, a piece of each row at a time, in parallel chunks
// of about kGrainBytes: each chunk gets its own body from makeBody() (bodies keep state, such as
// an odometer) and calls body(row, from, n) for [from, from + n) of its pieces, in order.
template <class T, class MakeBody>
void forEachPiece(int64_t rows, int64_t len, const MakeBody &makeBody) {
  const int64_t pieces = std::max<int64_t>(1, len * int64_t{sizeof(T)} / kPieceBytes);
  const int64_t pieceLen = ceilDiv(len, pieces);
  const int64_t grain = std::max<int64_t>(1, kGrainBytes / (pieceLen * int64_t{sizeof(T)}));
  parallelFor(rows * pieces, grain, [&](int64_t begin, int64_t end) {
    auto body = makeBody();
    if (pieces == 1) {
      for (int64_t row = begin; row < end; ++row) body(row, 0, len);
      return;
    }
    for (int64_t u = begin; u < end; ++u) {
      const int64_t from = u % pieces * pieceLen;
      body(u / pieces, from, std::min(pieceLen, len - from));
    }
  });
}

// Rows along the innermost dim: memcpy, fill or strided loop.
template <class T> void copyRows(const StridedCopy &c, const T *s, T *d) {
  const size_t last = c.dims.size() - 1;
  const int64_t len = c.dims[last], ss = c.src[last], ds = c.dst[last];
  const std::vector<int64_t> dims(c.dims.begin(), c.dims.end() - 1);
  const std::vector<int64_t> src(c.src.begin(), c.src.end() - 1);
  const std::vector<int64_t> dst(c.dst.begin(), c.dst.end() - 1);
  forEachPiece<T>(numel(dims), len, [&] {
    return [&, odometer = Odometer(dims, src, dst)](int64_t row, int64_t from, int64_t n) mutable {
      odometer.moveTo(row);
      copyRun(d + odometer.dst() + from * ds, s + odometer.src() + from * ss, n, ss, ds);
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
template <class T> void copyTiles(const StridedCopy &c, size_t b, const T *s, T *d) {
  const size_t a = c.dims.size() - 1;
  const int64_t na = c.dims[a], sa = c.src[a], nb = c.dims[b], db = c.dst[b];
  std::vector<int64_t> dims, src, dst;
  for (size_t k = 0; k < a; ++k) {
    if (k == b) continue;
    dims.push_back(c.dims[k]);
    src.push_back(c.src[k]);
    dst.push_back(c.dst[k]);
  }
  const int64_t tilesB = ceilDiv(nb, kTile);
  const int64_t grain = std::max<int64_t>(1, kGrainBytes / (kTile * na * int64_t{sizeof(T)}));
  parallelFor(numel(dims) * tilesB, grain, [&](int64_t begin, int64_t end) {
    Odometer odometer(dims, src, dst);
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

void runStrided(StridedCopy c, DType dtype, const std::byte *from, std::byte *to) {
  if (std::find(c.dims.begin(), c.dims.end(), 0) != c.dims.end()) return;
  c.simplify();
  withElement(dtype, [&](auto e) {
    using T = decltype(e);
    const T *s = reinterpret_cast<const T *>(from) + c.srcBase;
    T *d = reinterpret_cast<T *>(to) + c.dstBase;
    const size_t last = c.dims.size() - 1;
    if (c.dst[last] == 1 && c.src[last] != 0 && c.src[last] != 1)
      for (size_t b = 0; b < last; ++b)
        if (c.src[b] == 1) return copyTiles(c, b, s, d);
    copyRows(c, s, d);
  });
}

Status sameDType(const KernelCall &call, size_t i) {
  const DType want = call.result.type->dtype;
  if (call.operands[i].type->dtype == want) return Status();
  return contractError(call, "operand " + std::to_string(i) + " is " +
                                 call.operands[i].type->str() + ", expected " +
                                 std::string(dtypeName(want)) + " (a cast is missing)");
}

Status checkResultShape(const KernelCall &call, const Shape &shape) {
  if (shape == call.result.type->shape) return Status();
  return contractError(call, "the result is " + call.result.type->str() +
                                 " but the operands give " + shapeStr(shape));
}

Status badAxis(const KernelCall &call, int64_t axis, const TensorView &x) {
  return contractError(call, "axis " + std::to_string(axis) + " of " + x.type->str());
}

Status transpose(const KernelCall &call) {
  const TensorView &x = call.operands[0], &r = call.result;
  FERRY_TRY(sameDType(call, 0));
  const Shape &xs = x.type->shape;
  const int64_t rank = x.type->rank();
  std::vector<int64_t> perm = attrInts(call.op, call.attrs, "perm");
  if (perm.empty())
    for (int64_t d = rank; d-- > 0;) perm.push_back(d);  // reverse the dims
  if (static_cast<int64_t>(perm.size()) != rank)
    return contractError(call, "perm " + shapeStr(perm) + " for " + x.type->str());
  const std::vector<int64_t> given = perm;
  std::vector<bool> seen(perm.size(), false);
  for (int64_t &p : perm) {
    const std::optional<int64_t> axis = normalizeAxis(p, rank);
    if (!axis || seen[*axis])
      return contractError(call, "perm " + shapeStr(given) +
                                     " is not a permutation of the dims of " + x.type->str());
    seen[*axis] = true;
    p = *axis;
  }
  Shape outShape;
  for (int64_t p : perm) outShape.push_back(xs[p]);
  FERRY_TRY(checkResultShape(call, outShape));
  const std::vector<int64_t> in = contiguousStrides(xs), out = contiguousStrides(outShape);
  StridedCopy c;
  for (size_t k = 0; k < perm.size(); ++k) c.add(outShape[k], in[perm[k]], out[k]);
  runStrided(std::move(c), r.type->dtype, x.data, r.data);
  return Status();
}

Status concat(const KernelCall &call) {
  const TensorView &r = call.result;
  const Shape &first = call.operands[0].type->shape;
  const int64_t rank = static_cast<int64_t>(first.size());
  const int64_t given = attrInt(call.op, call.attrs, "axis");
  const std::optional<int64_t> axisOr = normalizeAxis(given, rank);
  if (!axisOr || rank == 0) return badAxis(call, given, call.operands[0]);
  const auto axis = static_cast<size_t>(*axisOr);
  Shape outShape = first;
  outShape[axis] = 0;
  for (size_t i = 0; i < call.operands.size(); ++i) {
    FERRY_TRY(sameDType(call, i));
    const Shape &s = call.operands[i].type->shape;
    for (size_t d = 0; d < first.size(); ++d)
      if (s.size() != first.size() || (d != axis && s[d] != first[d]))
        return contractError(call, "operands " + call.operands[0].type->str() + " and " +
                                       call.operands[i].type->str() + " do not concatenate");
    outShape[axis] += s[axis];
  }
  FERRY_TRY(checkResultShape(call, outShape));
  const int64_t outer = numel(std::span(first).first(axis));
  const int64_t inner = numel(std::span(first).subspan(axis + 1));
  int64_t offset = 0;  // along the axis, where the current operand starts
  for (const TensorView &t : call.operands) {
    const int64_t run = t.type->shape[axis] * inner;
    StridedCopy c;
    c.add(outer, run, outShape[axis] * inner);
    c.add(run, 1, 1);
    c.dstBase = offset * inner;
    runStrided(std::move(c), r.type->dtype, t.data, r.data);
    offset += t.type->shape[axis];
  }
  return Status();
}

Status slice(const KernelCall &call) {
  const TensorView &x = call.operands[0], &r = call.result;
  FERRY_TRY(sameDType(call, 0));
  const Shape &xs = x.type->shape;
  const int64_t rank = x.type->rank();
  const std::vector<int64_t> &starts = attrInts(call.op, call.attrs, "starts"),
                             &ends = attrInts(call.op, call.attrs, "ends");
  std::vector<int64_t> axes = attrInts(call.op, call.attrs, "axes"),
                       steps = attrInts(call.op, call.attrs, "steps");
  if (axes.empty())
    for (size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<int64_t>(i));
  if (steps.empty()) steps.assign(starts.size(), 1);
  if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size())
    return contractError(call, "starts/ends/axes/steps of different lengths");
  // Per dim: first element and step; dims not sliced are taken whole.
  std::vector<int64_t> firstAt(xs.size(), 0), step(xs.size(), 1);
  std::vector<bool> seen(xs.size(), false);
  Shape outShape = xs;
  for (size_t i = 0; i < starts.size(); ++i) {
    const std::optional<int64_t> ax = normalizeAxis(axes[i], rank);
    if (!ax || seen[*ax]) return badAxis(call, axes[i], x);
    seen[*ax] = true;
    if (steps[i] == 0)
      return makeError("attr", "'slice' step must not be 0 (axis " + std::to_string(*ax) + ")",
                       call.loc);
    const SliceDim sd = resolveSliceDim(starts[i], ends[i], steps[i], xs[*ax]);
    firstAt[*ax] = sd.start;
    step[*ax] = steps[i];
    outShape[*ax] = sd.count;
  }
  FERRY_TRY(checkResultShape(call, outShape));
  if (r.type->numel() == 0) return Status();
  const std::vector<int64_t> in = contiguousStrides(xs), out = contiguousStrides(outShape);
  StridedCopy c;
  for (size_t d = 0; d < xs.size(); ++d) {
    // A dim taking one element has no stride (its step may be as long as int64 allows).
    c.add(outShape[d], outShape[d] > 1 ? in[d] * step[d] : 0, out[d]);
    c.srcBase += firstAt[d] * in[d];
  }
  runStrided(std::move(c), r.type->dtype, x.data, r.data);
  return Status();
}

// Every index of `indices` wrapped into [0, dim); a "runtime" error at the first out of range.
template <class I>
Expected<std::vector<int64_t>> wrapIndices(const KernelCall &call, int64_t axis, int64_t dim) {
  const TensorView &data = call.operands[0], &indices = call.operands[1];
  const auto *p = reinterpret_cast<const I *>(indices.data);
  std::vector<int64_t> idx(static_cast<size_t>(indices.type->numel()));
  for (size_t j = 0; j < idx.size(); ++j) {
    const int64_t v = p[j];
    if (v >= -dim && v < dim) {
      idx[j] = v < 0 ? v + dim : v;
      continue;
    }
    const Shape &is = indices.type->shape;
    Shape at(is.size());
    for (size_t d = is.size(), rest = j; d-- > 0;) {
      at[d] = static_cast<int64_t>(rest % static_cast<size_t>(is[d]));
      rest /= static_cast<size_t>(is[d]);
    }
    const std::string where = is.empty() ? "" : " at " + shapeStr(at);
    return makeError(
        "runtime",
        "'gather' index " + std::to_string(v) + where + " is out of range for axis " +
            std::to_string(axis) + " of size " + std::to_string(dim) + " in " + data.type->str() +
            ": allowed " +
            (dim == 0 ? "none" : "-" + std::to_string(dim) + " to " + std::to_string(dim - 1)),
        call.loc);
  }
  return idx;
}

Status gather(const KernelCall &call) {
  const TensorView &data = call.operands[0], &indices = call.operands[1], &r = call.result;
  FERRY_TRY(sameDType(call, 0));
  const DType indexType = indices.type->dtype;
  if (indexType != DType::I32 && indexType != DType::I64)
    return contractError(call, "indices are " + indices.type->str() + ", expected i32 or i64");
  const Shape &ds = data.type->shape;
  const int64_t given = attrInt(call.op, call.attrs, "axis");
  const std::optional<int64_t> axisOr = normalizeAxis(given, data.type->rank());
  if (!axisOr || ds.empty()) return badAxis(call, given, data);
  const auto axis = static_cast<size_t>(*axisOr);
  Shape outShape(ds.begin(), ds.begin() + *axisOr);
  outShape.insert(outShape.end(), indices.type->shape.begin(), indices.type->shape.end());
  outShape.insert(outShape.end(), ds.begin() + *axisOr + 1, ds.end());
  FERRY_TRY(checkResultShape(call, outShape));
  const int64_t dim = ds[axis];
  Expected<std::vector<int64_t>> wrapped = indexType == DType::I32
                                               ? wrapIndices<int32_t>(call, *axisOr, dim)
                                               : wrapIndices<int64_t>(call, *axisOr, dim);
  if (!wrapped.ok()) return wrapped.status();
  if (r.type->numel() == 0) return Status();
  const std::vector<int64_t> &idx = *wrapped;
  const auto n = static_cast<int64_t>(idx.size());
  const int64_t outer = numel(std::span(ds).first(axis));
  const int64_t inner = numel(std::span(ds).subspan(axis + 1));
  withElement(r.type->dtype, [&](auto e) {
    using T = decltype(e);
    const auto *s = reinterpret_cast<const T *>(data.data);
    auto *d = reinterpret_cast<T *>(r.data);
    if (inner * int64_t{sizeof(T)} > kPieceBytes) {  // long rows, cut into pieces
      forEachPiece<T>(outer * n, inner, [&] {
        return [&](int64_t row, int64_t from, int64_t len) {
          const int64_t o = row / n, j = row % n;
          copyRun(d + row * inner + from, s + (o * dim + idx[j]) * inner + from, len, 1, 1);
        };
      });
      return;
    }
    // Short rows: one loop stepping (outer index o, index j) without divisions.
    const int64_t grain = std::max<int64_t>(1, kGrainBytes / (inner * int64_t{sizeof(T)}));
    parallelFor(outer * n, grain, [&, s, d](int64_t begin, int64_t end) {
      // Locals, not captures: stores of bytes could alias the closure and force reloads.
      const int64_t *at = idx.data(), count = n, rowLen = inner, dimLen = dim;
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
  });
  return Status();
}

Status expand(const KernelCall &call) {
  const TensorView &x = call.operands[0], &r = call.result;
  FERRY_TRY(sameDType(call, 0));
  const Shape &xs = x.type->shape;
  // Broadcasts both ways, as ONNX Expand; a negative size breaks the contract (inferExpand).
  const Shape target = attrInts(call.op, call.attrs, "shape");
  std::optional<Shape> outShape;
  if (std::all_of(target.begin(), target.end(), [](int64_t d) { return d >= 0; }))
    outShape = broadcastShapes(xs, target);
  if (!outShape)
    return contractError(call, x.type->str() + " does not broadcast to " + shapeStr(target));
  FERRY_TRY(checkResultShape(call, *outShape));
  const std::vector<int64_t> in = contiguousStrides(xs), out = contiguousStrides(*outShape);
  const size_t newDims = outShape->size() - xs.size();
  StridedCopy c;
  for (size_t k = 0; k < outShape->size(); ++k) {
    const bool repeats = k < newDims || xs[k - newDims] == 1;
    c.add((*outShape)[k], repeats ? 0 : in[k - newDims], out[k]);
  }
  runStrided(std::move(c), r.type->dtype, x.data, r.data);
  return Status();
}

}  // namespace

bool movementSupports(OpKind op, DType dtype) {
  switch (op) {
    case OpKind::Transpose:
    case OpKind::Concat:
    case OpKind::Slice:
    case OpKind::Gather:
    case OpKind::Expand: return acceptsDType(opInfo(op).accepts, dtype);
    default: return false;
  }
}

Status movement(const KernelCall &call) {
  switch (call.op.kind) {
    case OpKind::Transpose: return transpose(call);
    case OpKind::Concat: return concat(call);
    case OpKind::Slice: return slice(call);
    case OpKind::Gather: return gather(call);
    case OpKind::Expand: return expand(call);
    default: return contractError(call, "not a movement op");
  }
}

uint64_t movementScratchBytes(const StepSpec &) { return 0; }

Expected<std::unique_ptr<Kernel>> prepareMovement(const StepSpec &step) { return stepKernel(step, movement); }

}  // namespace ferry::cpu
