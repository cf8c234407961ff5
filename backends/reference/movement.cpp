// backends/reference/movement.cpp — data movement (reshape family, transpose, concat, slice,
// gather, expand), cast and constant. Movement copies raw bytes, so it is exact for every dtype.
#include <algorithm>
#include <cstring>
#include <limits>

#include "backends/reference/kernels.h"
#include "ir/op_rules.h"

namespace ferry::reference {

namespace {

int64_t normalizedAxis(const KernelArgs &a, int64_t axis, int64_t rank) {
  std::optional<int64_t> n = normalizeAxis(axis, rank);
  FERRY_CHECK(n) << "'" << a.op.name << "' axis " << axis << " for rank " << rank;
  return *n;
}

std::string indexStr(std::span<const int64_t> index) { return shapeStr(index); }

}  // namespace

Expected<TensorData> evalCopy(const KernelArgs &a) {
  const TensorData &x = a.in(0);
  FERRY_CHECK(x.dtype() == a.result.dtype && x.numel() == a.result.numel())
      << "'" << a.op.name << "' of " << x.type().str() << " to " << a.result.str();
  if (a.op.kind == OpKind::Reshape) {
    const std::vector<int64_t> &shape = a.intsAttr("shape");
    FERRY_CHECK(shape.size() == a.result.shape.size())
        << "'reshape' to " << shapeStr(shape) << " typed " << a.result.str();
    for (size_t d = 0; d < shape.size(); ++d)
      FERRY_CHECK(shape[d] == -1 || shape[d] == a.result.shape[d])
          << "'reshape' to " << shapeStr(shape) << " typed " << a.result.str();
  }
  TensorData out(a.result.dtype, a.result.shape);
  if (out.byteSize() > 0) std::memcpy(elemPtr(out, 0), elemPtr(x, 0), out.byteSize());
  return out;
}

Expected<TensorData> evalTranspose(const KernelArgs &a) {
  const TensorData &x = a.in(0);
  const int64_t rank = x.type().rank();
  std::vector<int64_t> perm = a.intsAttr("perm");
  if (perm.empty())
    for (int64_t d = rank; d-- > 0;) perm.push_back(d);  // reverse the dims
  FERRY_CHECK(static_cast<int64_t>(perm.size()) == rank)
      << "'transpose' perm of " << x.type().str();
  Shape outShape;
  for (int64_t &p : perm) {
    p = normalizedAxis(a, p, rank);
    outShape.push_back(x.shape()[p]);
  }
  checkShape(a, outShape);
  TensorData out(a.result.dtype, a.result.shape);
  std::vector<int64_t> in(rank);
  for (int64_t i = 0; i < out.numel(); ++i) {
    std::vector<int64_t> o = unravel(i, outShape);
    for (int64_t k = 0; k < rank; ++k) in[perm[k]] = o[k];
    copyElem(x, ravel(in, x.shape()), out, i);
  }
  return out;
}

Expected<TensorData> evalConcat(const KernelArgs &a) {
  const Shape &first = a.in(0).shape();
  const int64_t rank = static_cast<int64_t>(first.size());
  const int64_t axis = normalizedAxis(a, a.intAttr("axis"), rank);
  Shape outShape = first;
  outShape[axis] = 0;
  for (const TensorData &t : a.operands) {
    for (int64_t d = 0; d < rank; ++d)
      FERRY_CHECK(t.type().rank() == rank && (d == axis || t.shape()[d] == first[d]))
          << "'concat' of " << a.in(0).type().str() << " and " << t.type().str();
    outShape[axis] += t.shape()[axis];
  }
  checkShape(a, outShape);
  TensorData out(a.result.dtype, a.result.shape);
  const int64_t outer = numel(std::span(first).first(axis));
  const int64_t inner = numel(std::span(first).subspan(axis + 1));
  const int64_t total = outShape[axis];
  int64_t offset = 0;  // along the axis, where the current operand starts
  for (const TensorData &t : a.operands) {
    const int64_t d = t.shape()[axis];
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t j = 0; j < d * inner; ++j)
        convertElem(t, o * d * inner + j, out, (o * total + offset) * inner + j);
    offset += d;
  }
  return out;
}

Expected<TensorData> evalSlice(const KernelArgs &a) {
  const TensorData &x = a.in(0);
  const Shape &xs = x.shape();
  const int64_t rank = x.type().rank();
  const std::vector<int64_t> &starts = a.intsAttr("starts"), &ends = a.intsAttr("ends");
  std::vector<int64_t> axes = a.intsAttr("axes"), steps = a.intsAttr("steps");
  if (axes.empty())
    for (size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<int64_t>(i));
  if (steps.empty()) steps.assign(starts.size(), 1);
  FERRY_CHECK(ends.size() == starts.size() && axes.size() == starts.size() &&
              steps.size() == starts.size())
      << "'slice' starts/ends/axes/steps of different lengths";
  // Per dim: first element, step and count; dims not sliced are taken whole.
  std::vector<int64_t> first(rank, 0), step(rank, 1);
  Shape outShape = xs;
  std::vector<bool> seen(rank, false);
  for (size_t i = 0; i < starts.size(); ++i) {
    const int64_t ax = normalizedAxis(a, axes[i], rank), dim = xs[ax];
    FERRY_CHECK(!seen[ax]) << "'slice' axis " << ax << " given twice";
    seen[ax] = true;
    const int64_t s = steps[i];
    if (s == 0)
      return a.error("attr", "'slice' step must not be 0 (axis " + std::to_string(ax) + ")");
    const SliceDim sd = resolveSliceDim(starts[i], ends[i], s, dim);
    first[ax] = sd.start;
    step[ax] = s;
    outShape[ax] = sd.count;
  }
  checkShape(a, outShape);
  TensorData out(a.result.dtype, a.result.shape);
  std::vector<int64_t> in(rank);
  for (int64_t i = 0; i < out.numel(); ++i) {
    std::vector<int64_t> o = unravel(i, outShape);
    for (int64_t d = 0; d < rank; ++d) in[d] = first[d] + o[d] * step[d];
    copyElem(x, ravel(in, xs), out, i);
  }
  return out;
}

Expected<TensorData> evalGather(const KernelArgs &a) {
  const TensorData &data = a.in(0), &indices = a.in(1);
  FERRY_CHECK(indices.dtype() == DType::I32 || indices.dtype() == DType::I64)
      << "'gather' indices " << indices.type().str();
  const Shape &ds = data.shape();
  const int64_t axis = normalizedAxis(a, a.intAttr("axis"), data.type().rank());
  const int64_t dim = ds[axis];
  Shape outShape(ds.begin(), ds.begin() + axis);
  outShape.insert(outShape.end(), indices.shape().begin(), indices.shape().end());
  outShape.insert(outShape.end(), ds.begin() + axis + 1, ds.end());
  checkShape(a, outShape);

  // Validate and wrap every index first: negative ones count from the end, once.
  std::vector<int64_t> idx(static_cast<size_t>(indices.numel()));
  for (int64_t j = 0; j < indices.numel(); ++j) {
    int64_t v = loadInt(indices.dtype(), elemPtr(indices, j));
    if (v < -dim || v >= dim) {
      std::string where =
          indices.type().rank() > 0 ? " at " + indexStr(unravel(j, indices.shape())) : "";
      return a.error(
          "runtime",
          "'gather' index " + std::to_string(v) + where + " is out of range for axis " +
              std::to_string(axis) + " of size " + std::to_string(dim) + " in " +
              data.type().str() + ": allowed " +
              (dim == 0 ? "none" : "-" + std::to_string(dim) + " to " + std::to_string(dim - 1)));
    }
    idx[j] = v < 0 ? v + dim : v;
  }
  TensorData out(a.result.dtype, a.result.shape);
  const int64_t n = indices.numel();
  const int64_t inner = numel(std::span(ds).subspan(axis + 1));
  for (int64_t i = 0; i < out.numel(); ++i) {
    const int64_t o = i / (n * inner), j = (i / inner) % n, in = i % inner;
    copyElem(data, (o * dim + idx[j]) * inner + in, out, i);
  }
  return out;
}

Expected<TensorData> evalExpand(const KernelArgs &a) {
  const TensorData &x = a.in(0);
  // Broadcasts both ways, as ONNX Expand; sizes are non-negative (inferExpand).
  const Shape target = a.intsAttr("shape");
  std::optional<Shape> outShape = broadcastShapes(x.shape(), target);
  FERRY_CHECK(outShape) << "'expand' of " << x.type().str() << " to " << shapeStr(target);
  checkShape(a, *outShape);
  TensorData out(a.result.dtype, a.result.shape);
  BroadcastIndex bi(out.shape(), x.shape());
  for (int64_t i = 0; i < out.numel(); ++i) copyElem(x, bi(i), out, i);
  return out;
}

Expected<TensorData> evalCast(const KernelArgs &a) {
  const TensorData &x = a.in(0);
  FERRY_CHECK(a.result.dtype == attrDType(a.op, a.attrs, "to"))
      << "'cast' to " << dtypeName(attrDType(a.op, a.attrs, "to")) << " typed " << a.result.str();
  checkShape(a, x.shape());
  return castTensor(x, a.result.dtype);  // convertElement: the one rule of cast
}

Expected<TensorData> evalConstant(const KernelArgs &a) {
  const TensorData &value = attrTensor(a.op, a.attrs, "value");
  FERRY_CHECK(value.type() == a.result)
      << "'constant' of " << value.type().str() << " typed " << a.result.str();
  return value;
}

}  // namespace ferry::reference
