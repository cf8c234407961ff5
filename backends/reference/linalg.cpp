// backends/reference/linalg.cpp — matmul (numpy.matmul), linear (x·Wᵀ + b), conv2d (NCHW).
//
// Products of floats are accumulated in double and stored once in the result dtype; of
// integers exactly, wrapping modulo 2^64 (Accumulator), as torch and the CPU kernels do.
#include "backends/reference/kernels.h"

namespace ferry::reference {

Expected<TensorData> evalMatmul(const KernelArgs &a) {
  const TensorData &x = a.in(0), &y = a.in(1);
  Shape xs = x.shape(), ys = y.shape();
  FERRY_CHECK(!xs.empty() && !ys.empty()) << "'matmul' of a scalar";
  // numpy.matmul: a 1-D left operand is a row [1, k], a 1-D right operand a column [k, 1]; the
  // added dim is removed from the result again.
  bool xVec = xs.size() == 1, yVec = ys.size() == 1;
  if (xVec) xs.insert(xs.begin(), 1);
  if (yVec) ys.push_back(1);
  int64_t n = xs[xs.size() - 2], k = xs.back(), m = ys.back();
  FERRY_CHECK(ys[ys.size() - 2] == k)
      << "'matmul' of " << x.type().str() << " and " << y.type().str();
  Shape xBatch(xs.begin(), xs.end() - 2), yBatch(ys.begin(), ys.end() - 2);
  std::optional<Shape> batch = broadcastShapes(xBatch, yBatch);
  FERRY_CHECK(batch) << "'matmul' batch dims of " << x.type().str() << " and " << y.type().str();
  Shape outShape = *batch;
  if (!xVec) outShape.push_back(n);
  if (!yVec) outShape.push_back(m);
  checkShape(a, outShape);

  TensorData out(a.result.dtype, a.result.shape);
  const bool exact = exactSums(out.dtype(), {x.dtype(), y.dtype()});
  BroadcastIndex bx(*batch, xBatch), by(*batch, yBatch);
  for (int64_t b = 0; b < numel(*batch); ++b) {
    int64_t xo = bx(b) * n * k, yo = by(b) * k * m;
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t j = 0; j < m; ++j) {
        Accumulator s(exact);
        for (int64_t p = 0; p < k; ++p) s.addProduct(x, xo + i * k + p, y, yo + p * m + j);
        s.storeTo(out, (b * n + i) * m + j);
      }
    }
  }
  return out;
}

Expected<TensorData> evalLinear(const KernelArgs &a) {
  const TensorData &x = a.in(0), &w = a.in(1);
  FERRY_CHECK(x.shape().size() >= 1 && w.shape().size() == 2 && x.shape().back() == w.shape()[1])
      << "'linear' of " << x.type().str() << " and weight " << w.type().str();
  int64_t in = w.shape()[1], outFeatures = w.shape()[0];
  Shape outShape(x.shape().begin(), x.shape().end() - 1);
  int64_t rows = numel(outShape);
  outShape.push_back(outFeatures);
  checkShape(a, outShape);

  TensorData out(a.result.dtype, a.result.shape);
  // The bias is [out] in practice; any shape that broadcasts to the result is accepted.
  std::optional<BroadcastIndex> bi;
  if (a.has(2)) bi.emplace(outShape, a.in(2).shape());
  const bool exact = a.has(2) ? exactSums(out.dtype(), {x.dtype(), w.dtype(), a.in(2).dtype()})
                              : exactSums(out.dtype(), {x.dtype(), w.dtype()});
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t o = 0; o < outFeatures; ++o) {
      Accumulator s(exact);
      for (int64_t i = 0; i < in; ++i) s.addProduct(x, r * in + i, w, o * in + i);
      int64_t idx = r * outFeatures + o;
      if (bi) s.add(a.in(2), (*bi)(idx));
      s.storeTo(out, idx);
    }
  }
  return out;
}

Expected<TensorData> evalConv2d(const KernelArgs &a) {
  const TensorData &x = a.in(0), &w = a.in(1);
  Expected<std::array<int64_t, 2>> stride = pairAttr(a, "stride", 1);
  if (!stride) return std::move(stride).takeStatus();
  Expected<std::array<int64_t, 2>> dilation = pairAttr(a, "dilation", 1);
  if (!dilation) return std::move(dilation).takeStatus();
  Expected<std::array<int64_t, 4>> pad = padAttr(a);
  if (!pad) return std::move(pad).takeStatus();
  int64_t groups = a.intAttr("groups");
  if (groups < 1)
    return a.error("attr", "'conv2d' groups must be >= 1, got " + std::to_string(groups));

  FERRY_CHECK(x.shape().size() == 4 && w.shape().size() == 4)
      << "'conv2d' of " << x.type().str() << " and weight " << w.type().str();
  const int64_t N = x.shape()[0], C = x.shape()[1], H = x.shape()[2], W = x.shape()[3];
  const int64_t O = w.shape()[0], Cg = w.shape()[1], kH = w.shape()[2], kW = w.shape()[3];
  FERRY_CHECK(C % groups == 0 && O % groups == 0 && Cg == C / groups)
      << "'conv2d' of " << x.type().str() << ", weight " << w.type().str() << ", groups " << groups;
  FERRY_CHECK(!a.has(2) || a.in(2).numel() == O) << "'conv2d' bias " << a.in(2).type().str();
  const auto [sh, sw] = *stride;
  const auto [dh, dw] = *dilation;
  const auto [pt, pl, pb, pr] = *pad;
  const int64_t Ho = floorDiv(H + pt + pb - dh * (kH - 1) - 1, sh) + 1;
  const int64_t Wo = floorDiv(W + pl + pr - dw * (kW - 1) - 1, sw) + 1;
  checkShape(a, Shape{N, O, Ho, Wo});

  TensorData out(a.result.dtype, a.result.shape);
  const int64_t Og = O / groups;
  for (int64_t n = 0; n < N; ++n) {
    for (int64_t o = 0; o < O; ++o) {
      const int64_t c0 = (o / Og) * Cg;  // first input channel of o's group
      for (int64_t oh = 0; oh < Ho; ++oh) {
        for (int64_t ow = 0; ow < Wo; ++ow) {
          double s = a.has(2) ? a.in(2).at(o) : 0.0;
          for (int64_t c = 0; c < Cg; ++c) {
            for (int64_t i = 0; i < kH; ++i) {
              int64_t ih = oh * sh - pt + i * dh;
              if (ih < 0 || ih >= H) continue;  // zero padding
              for (int64_t j = 0; j < kW; ++j) {
                int64_t iw = ow * sw - pl + j * dw;
                if (iw < 0 || iw >= W) continue;
                s += x.at(((n * C + c0 + c) * H + ih) * W + iw) *
                     w.at(((o * Cg + c) * kH + i) * kW + j);
              }
            }
          }
          out.set(((n * O + o) * Ho + oh) * Wo + ow, s);
        }
      }
    }
  }
  return out;
}

}  // namespace ferry::reference
