// backends/reference/normalize.cpp — batch_norm, layer_norm, softmax/log_softmax, and the
// reductions sum, mean and max.
#include <cmath>
#include <limits>

#include "backends/reference/kernels.h"

namespace ferry::reference {

namespace {

int64_t axisAttr(const KernelArgs &a, int64_t rank) {
  int64_t axis = a.intAttr("axis");
  std::optional<int64_t> n = normalizeAxis(axis, rank);
  FERRY_CHECK(n) << "'" << a.op.name << "' axis " << axis << " of " << a.in(0).type().str();
  return *n;
}

// a < b in the order max uses: exact for bool/integers; NaN is above everything.
bool lessForMax(DType t, const std::byte *a, const std::byte *b) {
  if (isIntegral(t)) return loadInt(t, a) < loadInt(t, b);
  double x = loadDouble(t, a), y = loadDouble(t, b);
  if (std::isnan(x)) return false;
  return std::isnan(y) || x < y;
}

}  // namespace

Expected<TensorData> evalBatchNorm(const KernelArgs &a) {
  const TensorData &x = a.in(0), &scale = a.in(1), &bias = a.in(2), &mean = a.in(3), &var = a.in(4);
  const Shape &xs = x.shape();
  FERRY_CHECK(xs.size() >= 2) << "'batch_norm' of " << x.type().str();
  const int64_t C = xs[1], inner = numel(std::span(xs).subspan(2));
  for (size_t i = 1; i < 5; ++i)
    FERRY_CHECK(a.in(i).numel() == C)
        << "'batch_norm' operand " << i << " " << a.in(i).type().str() << " for " << x.type().str();
  checkShape(a, xs);
  const double eps = a.floatAttr("eps");
  TensorData out(a.result.dtype, a.result.shape);
  for (int64_t i = 0; i < x.numel(); ++i) {
    int64_t c = (i / inner) % C;
    out.set(i, (x.at(i) - mean.at(c)) / std::sqrt(var.at(c) + eps) * scale.at(c) + bias.at(c));
  }
  return out;
}

Expected<TensorData> evalLayerNorm(const KernelArgs &a) {
  const TensorData &x = a.in(0);
  const Shape &xs = x.shape();
  const int64_t axis = axisAttr(a, x.shape().size());
  const int64_t inner = numel(std::span(xs).subspan(axis));
  const int64_t outer = numel(std::span(xs).first(axis));
  const TensorData *weight = a.has(1) ? &a.in(1) : nullptr;
  const TensorData *bias = a.has(2) ? &a.in(2) : nullptr;
  for (const TensorData *t : {weight, bias})
    FERRY_CHECK(!t || t->numel() == inner)
        << "'layer_norm' weight/bias " << t->type().str() << " for " << x.type().str();
  checkShape(a, xs);
  const double eps = a.floatAttr("eps");
  TensorData out(a.result.dtype, a.result.shape);
  for (int64_t o = 0; o < outer; ++o) {
    const int64_t base = o * inner;
    double mean = 0, var = 0;
    for (int64_t j = 0; j < inner; ++j) mean += x.at(base + j);
    mean /= static_cast<double>(inner);
    for (int64_t j = 0; j < inner; ++j) var += (x.at(base + j) - mean) * (x.at(base + j) - mean);
    var /= static_cast<double>(inner);  // population variance, as PyTorch
    const double inv = 1.0 / std::sqrt(var + eps);
    for (int64_t j = 0; j < inner; ++j) {
      double y = (x.at(base + j) - mean) * inv;
      if (weight) y *= weight->at(j);
      if (bias) y += bias->at(j);
      out.set(base + j, y);
    }
  }
  return out;
}

Expected<TensorData> evalSoftmax(const KernelArgs &a) {
  const TensorData &x = a.in(0);
  const Shape &xs = x.shape();
  checkShape(a, xs);
  // A scalar is a softmax over one element.
  const int64_t axis = xs.empty() ? 0 : axisAttr(a, xs.size());
  const int64_t dim = xs.empty() ? 1 : xs[axis];
  const int64_t inner = xs.empty() ? 1 : numel(std::span(xs).subspan(axis + 1));
  const int64_t outer = xs.empty() ? 1 : numel(std::span(xs).first(axis));
  const bool logSoftmax = a.op.kind == OpKind::LogSoftmax;
  TensorData out(a.result.dtype, a.result.shape);
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t in = 0; in < inner; ++in) {
      auto idx = [&](int64_t d) { return (o * dim + d) * inner + in; };
      // Subtracting the max keeps exp() from overflowing; the result is unchanged.
      double max = -std::numeric_limits<double>::infinity();
      for (int64_t d = 0; d < dim; ++d) max = std::fmax(max, x.at(idx(d)));
      double sum = 0;
      for (int64_t d = 0; d < dim; ++d) sum += std::exp(x.at(idx(d)) - max);
      for (int64_t d = 0; d < dim; ++d) {
        double shifted = x.at(idx(d)) - max;
        out.set(idx(d), logSoftmax ? shifted - std::log(sum) : std::exp(shifted) / sum);
      }
    }
  }
  return out;
}

Expected<TensorData> evalReduce(const KernelArgs &a) {
  const TensorData &x = a.in(0);
  const Shape &xs = x.shape();
  const int64_t rank = static_cast<int64_t>(xs.size());
  // Which dims are reduced: `axes`, or all of them when empty. A scalar has nothing to reduce.
  std::vector<bool> reduced(xs.size(), a.intsAttr("axes").empty());
  if (rank > 0) {
    for (int64_t axis : a.intsAttr("axes")) {
      std::optional<int64_t> n = normalizeAxis(axis, rank);
      FERRY_CHECK(n) << "'" << a.op.name << "' axis " << axis << " of " << x.type().str();
      reduced[*n] = true;
    }
  }
  const bool keepdims = a.boolAttr("keepdims");
  Shape outShape, keptShape;  // keptShape: the input's shape with reduced dims set to 1
  int64_t count = 1;          // elements per output
  for (int64_t d = 0; d < rank; ++d) {
    keptShape.push_back(reduced[d] ? 1 : xs[d]);
    if (reduced[d]) count *= xs[d];
    if (!reduced[d] || keepdims) outShape.push_back(reduced[d] ? 1 : xs[d]);
  }
  checkShape(a, outShape);
  TensorData out(a.result.dtype, a.result.shape);
  auto outIndex = [&](int64_t i) {
    std::vector<int64_t> index = unravel(i, xs);
    for (int64_t d = 0; d < rank; ++d)
      if (reduced[d]) index[d] = 0;
    return ravel(index, keptShape);
  };

  if (a.op.kind == OpKind::Max) {
    FERRY_CHECK(out.dtype() == x.dtype())
        << "'max' of " << x.type().str() << " to " << out.type().str();
    if (count == 0 && out.numel() > 0) {
      std::string dims;
      for (int64_t d = 0; d < rank; ++d)
        if (reduced[d] && xs[d] == 0) dims += (dims.empty() ? "" : ", ") + std::to_string(d);
      return a.error("runtime", "'max' over an empty set: " + x.type().str() +
                                    " has size 0 in reduced dim " + dims);
    }
    // The winning element is copied, so max is exact for every dtype.
    std::vector<int64_t> best(static_cast<size_t>(out.numel()), -1);
    for (int64_t i = 0; i < x.numel(); ++i) {
      int64_t &b = best[outIndex(i)];
      if (b < 0 || lessForMax(x.dtype(), elemPtr(x, b), elemPtr(x, i))) b = i;
    }
    for (int64_t o = 0; o < out.numel(); ++o) copyElem(x, best[o], out, o);
    return out;
  }

  std::vector<Accumulator> sums(static_cast<size_t>(out.numel()),
                                Accumulator(exactSums(out.dtype(), {x.dtype()})));
  for (int64_t i = 0; i < x.numel(); ++i) sums[outIndex(i)].add(x, i);
  for (int64_t o = 0; o < out.numel(); ++o) {
    // mean over no elements is 0/0 = NaN, as torch.mean; sum over none is 0.
    if (a.op.kind == OpKind::Mean)
      out.set(o, sums[o].value() / static_cast<double>(count));
    else
      sums[o].storeTo(out, o);
  }
  return out;
}

}  // namespace ferry::reference
