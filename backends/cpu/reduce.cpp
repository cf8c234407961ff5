// backends/cpu/reduce.cpp — the reductions sum, mean and max on the CPU.
//
// Semantics are the reference's (backends/reference/normalize.cpp): reductions run over `axes`
// (empty: all dims; a scalar reduces nothing). sum of bool/integers is exact in i64, wrapping as
// torch.sum; sum over nothing is 0, mean NaN, and max over nothing a "runtime" error. max is
// exact for every dtype and NaN wins. sum and mean accumulate in double.
//
// Prepare and launch, as in normalize.cpp: prepareReduce checks the step, reads its axes and
// keepdims and works out its geometry once, then picks the loop for the reducer and the split as
// a function pointer; a launch runs it, reading no attribute and allocating nothing.
//
// Layout of the work: the dims are coalesced (size-1 dims dropped, neighbours of the same kind
// merged) into kept and reduced dims around the innermost run; a reduced innermost run reduces
// each row to a scalar, a kept one accumulates whole rows. The work is split over items with
// outputs of their own (a group when the run is reduced, a block of kBlock columns of a group
// when it is kept); when there are fewer items than the work is worth pieces, every group's
// reduced units are split instead into a number of pieces fixed at prepare (at most
// kMaxPieces), each folding into its own partial results in planned scratch
// (reduceScratchBytes), combined in piece order. Either way every output is computed in an order
// that depends on the shapes alone, so results are the same bits whatever the pool's thread
// count.
#include <Eigen/Core>
#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "backends/cpu/kernels.h"
#include "backends/cpu/math_impl.h"
#include "backends/cpu/normalize_impl.h"
#include "backends/cpu/parallel.h"

namespace ferry::cpu {

namespace {

using namespace norm;

// The most pieces a reduction's rows are split into when it has too few items to share. A
// constant, not the pool's size: the pieces' partial results are planned scratch, and a compiled
// executable may run on a machine with another thread count.
constexpr int64_t kMaxPieces = 16;

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
      acc[i] = ((v[i] > acc[i]) | (v[i] != v[i])) ? v[i] : acc[i];
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

}  // namespace


namespace {

// `step`'s geometry, or why the step is outside the contract.
Expected<ReduceGeometry> geometryOf(const StepSpec &step) {
  if (step.operands.size() != 1)
    return contractError(step, std::to_string(step.operands.size()) + " operands");
  return reduceGeometry(step);
}

}  // namespace

uint64_t reduceScratchBytes(const StepSpec &step) {
  // A step outside the contract takes none: prepareReduce refuses it.
  const Expected<ReduceGeometry> g = geometryOf(step);
  return g ? scratchBytes(*g) : 0;
}

Expected<std::unique_ptr<Kernel>> prepareReduce(const StepSpec &step) {
  Expected<ReduceGeometry> g = geometryOf(step);
  if (!g) return std::move(g).takeStatus();
  return kernelFor(step, *g);
}

}  // namespace ferry::cpu
