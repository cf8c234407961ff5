// backends/cuda/codegen/movement.cpp — the copies of the movement and view ops.
//
// Semantics are the reference's (backends/reference/movement.cpp): elements are copied as stored
// (raw, exact for every dtype), one thread per result element, grid-stride.
//   - reshape, flatten, squeeze, unsqueeze, identity: a dense copy, four elements a thread with
//     vector loads and stores;
//   - transpose, slice, expand: result element i reads the input at base + offset(i), the
//     offset printed from constant strides over the result's dims (coalesced): a permutation of
//     the input's strides, the strides times the steps (negative too) from the first element
//     taken, or 0 where a dim repeats;
//   - concat: each input copied in turn to its place along the axis;
//   - gather: result element (o, j, k) reads data (o, index[j], k); a negative index counts from
//     the end, one out of range sets the error flag (the reference's "runtime" error) and writes
//     nothing for that element. With no result elements the indices are still checked.
// Operands and result share the dtype: the dtype pass casts a concat's operands to its result's.
#include <algorithm>
#include <cinttypes>
#include <cstdio>

#include "backends/cuda/codegen/generators_impl.h"
#include "ir/op_rules.h"

namespace ferry::cuda {

namespace {

Expected<int64_t> axisOf(const StepSpec &step, int64_t axis, int64_t rank) {
  std::optional<int64_t> n = normalizeAxis(axis, rank);
  if (!n)
    return contractError(step,
                         "axis " + std::to_string(axis) + " for rank " + std::to_string(rank));
  return *n;
}

// The copy of `n` dense elements of dtype `t`: vectors of four, then the n % 4 last.
KernelSource denseCopy(DType t, int64_t n) {
  const std::string st = storageType(t), v = "ferry_vec4<" + st + ">";
  std::string s = prelude() + kernelSignature(1);
  s += "  const ferry_i64 n = " + ll(n) + ", nv = n / 4;\n";
  s += "  for (ferry_i64 q = FERRY_TID; q < nv; q += FERRY_STRIDE)\n";
  s += "    ((" + v + " *)out)[q] = ((const " + v + " *)in0)[q];\n";
  s += "  for (ferry_i64 i = nv * 4 + FERRY_TID; i < n; i += FERRY_STRIDE)\n";
  s += "    ((" + st + " *)out)[i] = ((const " + st + " *)in0)[i];\n}\n";
  KernelSource k;
  k.source = std::move(s);
  k.threads = kGridThreads;
  k.inputs = 1;
  k.blocks = gridBlocks(std::max(n / 4, n % 4));
  return k;
}

// Result element i (of n) is the input's element base + offset(i) over `dims` (the result's dims
// with the input's stride for each).
KernelSource stridedCopy(DType t, int64_t n, const StridedDims &dims, int64_t base) {
  const StridedDims c = coalesce(dims);
  if (base == 0 && (c.sizes.empty() || (c.sizes.size() == 1 && c.strides[0] == 1)))
    return denseCopy(t, n);
  const std::string st = storageType(t);
  std::string s = prelude() + offsetFunction("ferry_src", c) + kernelSignature(1);
  s += "  for (ferry_i64 i = FERRY_TID; i < " + ll(n) + "; i += FERRY_STRIDE)\n";
  s += "    ((" + st + " *)out)[i] = ((const " + st + " *)in0)[" + ll(base) + " + ferry_src(i)];\n";
  s += "}\n";
  KernelSource k;
  k.source = std::move(s);
  k.threads = kGridThreads;
  k.inputs = 1;
  k.blocks = gridBlocks(n);
  return k;
}

Expected<KernelSource> transposeCopy(const StepSpec &step) {
  const TensorType &x = step.operands[0];
  const int64_t rank = x.rank();
  std::vector<int64_t> perm = attrInts(step.op, step.attrs, "perm");
  if (perm.empty())
    for (int64_t d = rank; d-- > 0;) perm.push_back(d);  // reverse the dims
  if (static_cast<int64_t>(perm.size()) != rank)
    return contractError(step, "perm of " + std::to_string(perm.size()) + " dims for " + x.str());
  const std::vector<int64_t> strides = contiguousStrides(x.shape);
  StridedDims dims;
  Shape outShape;
  for (int64_t p : perm) {
    Expected<int64_t> d = axisOf(step, p, rank);
    if (!d) return d.status();
    dims.push(x.shape[static_cast<size_t>(*d)], strides[static_cast<size_t>(*d)]);
    outShape.push_back(x.shape[static_cast<size_t>(*d)]);
  }
  if (outShape != step.result.shape)
    return contractError(step, "result " + step.result.str() + " for " + x.str());
  return stridedCopy(x.dtype, step.result.numel(), dims, 0);
}

Expected<KernelSource> sliceCopy(const StepSpec &step) {
  const TensorType &x = step.operands[0];
  const int64_t rank = x.rank();
  const SliceAttrs slice = sliceAttrs(step.op, step.attrs);
  if (!slice.consistent) return contractError(step, "starts/ends/axes/steps of different lengths");
  const std::vector<int64_t> &starts = slice.starts, &ends = slice.ends, &axes = slice.axes,
                             &steps = slice.steps;
  // Per dim: the first element taken, the step and the count; dims not sliced are taken whole.
  std::vector<int64_t> first(static_cast<size_t>(rank), 0), step1(static_cast<size_t>(rank), 1);
  Shape outShape = x.shape;
  std::vector<bool> seen(static_cast<size_t>(rank), false);
  for (size_t i = 0; i < starts.size(); ++i) {
    Expected<int64_t> a = axisOf(step, axes[i], rank);
    if (!a) return a.status();
    const size_t ax = static_cast<size_t>(*a);
    if (seen[ax] || steps[i] == 0)
      return contractError(step, "axis " + std::to_string(ax) + " given twice or with step 0");
    seen[ax] = true;
    const SliceDim sd = resolveSliceDim(starts[i], ends[i], steps[i], x.shape[ax]);
    first[ax] = sd.start;
    step1[ax] = steps[i];
    outShape[ax] = sd.count;
  }
  if (outShape != step.result.shape)
    return contractError(step, "result " + step.result.str() + " for " + x.str());
  const std::vector<int64_t> strides = contiguousStrides(x.shape);
  StridedDims dims;
  int64_t base = 0;
  for (size_t d = 0; d < outShape.size(); ++d) {
    // A dim taken once needs no stride (a step of any length would only risk overflow).
    dims.push(outShape[d], outShape[d] > 1 ? step1[d] * strides[d] : 0);
    base += first[d] * strides[d];
  }
  return stridedCopy(x.dtype, step.result.numel(), dims, step.result.numel() == 0 ? 0 : base);
}

Expected<KernelSource> expandCopy(const StepSpec &step) {
  const TensorType &x = step.operands[0];
  const Shape &out = step.result.shape;
  std::optional<Shape> b = broadcastShapes(x.shape, attrInts(step.op, step.attrs, "shape"));
  if (!b || *b != out)
    return contractError(step, "result " + step.result.str() + " for " + x.str());
  // The input's dims right-aligned against the result's; a dim of 1 repeats (stride 0).
  const std::vector<int64_t> strides = contiguousStrides(x.shape);
  const size_t lead = out.size() - x.shape.size();
  StridedDims dims;
  for (size_t d = 0; d < out.size(); ++d) {
    const bool own = d >= lead && x.shape[d - lead] != 1;
    dims.push(out[d], own ? strides[d - lead] : 0);
  }
  return stridedCopy(x.dtype, step.result.numel(), dims, 0);
}

Expected<KernelSource> concatCopy(const StepSpec &step) {
  const Shape &first = step.operands[0].shape;
  const int64_t rank = static_cast<int64_t>(first.size());
  Expected<int64_t> a = axisOf(step, attrInt(step.op, step.attrs, "axis"), rank);
  if (!a) return a.status();
  const size_t axis = static_cast<size_t>(*a);
  Shape outShape = first;
  outShape[axis] = 0;
  for (const TensorType &t : step.operands) {
    bool fits = t.rank() == rank;
    for (size_t d = 0; fits && d < first.size(); ++d) fits = d == axis || t.shape[d] == first[d];
    if (!fits) return contractError(step, "operands " + step.operands[0].str() + " and " + t.str());
    outShape[axis] += t.shape[axis];
  }
  if (outShape != step.result.shape)
    return contractError(step, "result " + step.result.str() + " for its operands");
  const int64_t inner = numel(std::span(first).subspan(axis + 1)), total = outShape[axis];
  const std::string st = storageType(step.result.dtype);
  std::string s = prelude() + kernelSignature(step.operands.size());
  s += "  " + st + " *y = (" + st + " *)out;\n";
  int64_t offset = 0;  // along the axis, where the current operand starts
  for (size_t j = 0; j < step.operands.size(); ++j) {
    const int64_t n = step.operands[j].numel(), chunk = step.operands[j].shape[axis] * inner;
    if (n > 0) {
      const std::string in = "((const " + st + " *)in" + std::to_string(j) + ")";
      s += "  for (ferry_i64 e = FERRY_TID; e < " + ll(n) + "; e += FERRY_STRIDE)\n";
      s += "    y[(e / " + ll(chunk) + ") * " + ll(total * inner) + " + " + ll(offset * inner) +
           " + e % " + ll(chunk) + "] = " + in + "[e];\n";
    }
    offset += step.operands[j].shape[axis];
  }
  s += "}\n";
  KernelSource k;
  k.source = std::move(s);
  k.threads = kGridThreads;
  k.inputs = static_cast<int32_t>(step.operands.size());
  k.blocks = gridBlocks(step.result.numel());
  return k;
}

Expected<KernelSource> gatherCopy(const StepSpec &step) {
  if (step.operands.size() != 2) return contractError(step, "expected data and indices");
  const TensorType &data = step.operands[0], &indices = step.operands[1];
  if (indices.dtype != DType::I32 && indices.dtype != DType::I64)
    return contractError(step, "indices " + indices.str());
  const Shape &ds = data.shape;
  Expected<int64_t> a = axisOf(step, attrInt(step.op, step.attrs, "axis"), data.rank());
  if (!a) return a.status();
  const size_t axis = static_cast<size_t>(*a);
  Shape outShape(ds.begin(), ds.begin() + static_cast<ptrdiff_t>(axis));
  outShape.insert(outShape.end(), indices.shape.begin(), indices.shape.end());
  outShape.insert(outShape.end(), ds.begin() + static_cast<ptrdiff_t>(axis) + 1, ds.end());
  if (outShape != step.result.shape)
    return contractError(step, "result " + step.result.str() + " for " + data.str() + " and " +
                                   indices.str());
  const int64_t dim = ds[axis], picks = indices.numel(), n = step.result.numel();
  const int64_t inner = numel(std::span(ds).subspan(axis + 1));
  const std::string st = storageType(data.dtype), it = storageType(indices.dtype);
  std::string s = prelude() + kernelSignature(2);
  s += "  const " + st + " *x = (const " + st + " *)in0;\n  " + st + " *y = (" + st + " *)out;\n";
  s += "  const " + it + " *index = (const " + it + " *)in1;\n  (void)x; (void)y;\n";
  const std::string outOfRange = "idx < " + ll(-dim) + " || idx >= " + ll(dim);
  if (n == 0) {
    // Nothing to copy, but an index out of range is still an error.
    s += "  for (ferry_i64 j = FERRY_TID; j < " + ll(picks) + "; j += FERRY_STRIDE) {\n";
    s += "    const ferry_i64 idx = index[j];\n";
    s += "    if (" + outOfRange + ") atomicOr(error, 1u);\n";
    s += "  }\n";
  } else {
    s += "  for (ferry_i64 i = FERRY_TID; i < " + ll(n) + "; i += FERRY_STRIDE) {\n";
    s += "    const ferry_i64 o = i / " + ll(picks * inner) + ", j = (i / " + ll(inner) + ") % " +
         ll(picks) + ", k = i % " + ll(inner) + ";\n";
    s += "    ferry_i64 idx = index[j];\n";
    s += "    if (" + outOfRange + ") {\n";
    s += "      atomicOr(error, 1u);\n";
    s += "      continue;\n";
    s += "    }\n";
    s += "    if (idx < 0) idx += " + ll(dim) + ";\n";
    s += "    y[i] = x[(o * " + ll(dim) + " + idx) * " + ll(inner) + " + k];\n";
    s += "  }\n";
  }
  s += "}\n";
  KernelSource k;
  k.source = std::move(s);
  k.threads = kGridThreads;
  k.inputs = 2;
  k.blocks = gridBlocks(std::max(n, picks));
  return k;
}

}  // namespace

Expected<KernelSource> movementKernel(const StepSpec &step) {
  if (step.operands.empty()) return contractError(step, "no operand");
  for (const TensorType &t :
       step.operands.first(step.op.kind == OpKind::Gather ? 1 : step.operands.size()))
    if (t.dtype != step.result.dtype)
      return contractError(step, "operand " + t.str() + " for result " + step.result.str() +
                                     " (a cast is missing)");
  const bool variadic = step.op.kind == OpKind::Concat || step.op.kind == OpKind::Gather;
  if (!variadic && step.operands.size() != 1) return contractError(step, "expected one operand");
  switch (step.op.kind) {
    case OpKind::Reshape:
    case OpKind::Flatten:
    case OpKind::Squeeze:
    case OpKind::Unsqueeze:
    case OpKind::Identity:
      if (step.operands[0].numel() != step.result.numel())
        return contractError(step,
                             "result " + step.result.str() + " for " + step.operands[0].str());
      return denseCopy(step.result.dtype, step.result.numel());
    case OpKind::Transpose: return transposeCopy(step);
    case OpKind::Slice: return sliceCopy(step);
    case OpKind::Expand: return expandCopy(step);
    case OpKind::Concat: return concatCopy(step);
    case OpKind::Gather: return gatherCopy(step);
    default: break;
  }
  return contractError(step, "not a movement op");
}

}  // namespace ferry::cuda
