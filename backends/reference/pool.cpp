// backends/reference/pool.cpp — max_pool2d, avg_pool2d and global_avg_pool, as PyTorch.
//
// Pools read the last two dims as H and W; all leading dims (N, C) are independent planes.
// Output sizes follow PyTorch: floor (or ceil with ceil_mode) of the window count, where a
// ceil_mode window must start inside the input or its leading padding.
#include <cmath>
#include <limits>

#include "backends/reference/kernels.h"

namespace ferry::reference {

namespace {

struct PoolGeometry {
  int64_t planes = 0, H = 0, W = 0, Ho = 0, Wo = 0;
  std::array<int64_t, 2> kernel{}, stride{}, dilation{1, 1};
  std::array<int64_t, 4> pad{};  // top, left, bottom, right
};

int64_t outSize(int64_t in, int64_t k, int64_t s, int64_t padBegin, int64_t padEnd, int64_t d,
                bool ceilMode) {
  int64_t span = in + padBegin + padEnd - d * (k - 1) - 1;
  int64_t out = (ceilMode ? ceilDiv(span, s) : floorDiv(span, s)) + 1;
  if (ceilMode && out > 0 && (out - 1) * s >= in + padBegin) --out;
  return out;
}

Expected<PoolGeometry> geometry(const KernelArgs &a, bool hasDilation) {
  PoolGeometry g;
  Expected<std::array<int64_t, 2>> kernel = pairAttr(a, "kernel", 1);
  if (!kernel) return std::move(kernel).takeStatus();
  g.kernel = *kernel;
  g.stride = g.kernel;  // an empty stride means stride = kernel
  if (!a.intsAttr("stride").empty()) {
    Expected<std::array<int64_t, 2>> stride = pairAttr(a, "stride", 1);
    if (!stride) return std::move(stride).takeStatus();
    g.stride = *stride;
  }
  if (hasDilation) {
    Expected<std::array<int64_t, 2>> dilation = pairAttr(a, "dilation", 1);
    if (!dilation) return std::move(dilation).takeStatus();
    g.dilation = *dilation;
  }
  Expected<std::array<int64_t, 4>> pad = padAttr(a);
  if (!pad) return std::move(pad).takeStatus();
  g.pad = *pad;

  const Shape &xs = a.in(0).shape();
  FERRY_CHECK(xs.size() >= 2) << "'" << a.op.name << "' of " << a.in(0).type().str();
  g.H = xs[xs.size() - 2];
  g.W = xs.back();
  g.planes = numel(std::span(xs).first(xs.size() - 2));
  bool ceilMode = a.boolAttr("ceil_mode");
  g.Ho = outSize(g.H, g.kernel[0], g.stride[0], g.pad[0], g.pad[2], g.dilation[0], ceilMode);
  g.Wo = outSize(g.W, g.kernel[1], g.stride[1], g.pad[1], g.pad[3], g.dilation[1], ceilMode);
  Shape outShape = xs;
  outShape[xs.size() - 2] = g.Ho;
  outShape.back() = g.Wo;
  checkShape(a, outShape);
  return g;
}

}  // namespace

Expected<TensorData> evalMaxPool2d(const KernelArgs &a) {
  Expected<PoolGeometry> eg = geometry(a, /*hasDilation=*/true);
  if (!eg) return std::move(eg).takeStatus();
  const PoolGeometry &g = *eg;
  const TensorData &x = a.in(0);
  TensorData out(a.result.dtype, a.result.shape);
  for (int64_t p = 0; p < g.planes; ++p) {
    for (int64_t oh = 0; oh < g.Ho; ++oh) {
      for (int64_t ow = 0; ow < g.Wo; ++ow) {
        // Padding (and, with ceil_mode, whatever lies past it) counts as -inf: it is skipped.
        double best = -std::numeric_limits<double>::infinity();
        for (int64_t i = 0; i < g.kernel[0]; ++i) {
          int64_t ih = oh * g.stride[0] - g.pad[0] + i * g.dilation[0];
          if (ih < 0 || ih >= g.H) continue;
          for (int64_t j = 0; j < g.kernel[1]; ++j) {
            int64_t iw = ow * g.stride[1] - g.pad[1] + j * g.dilation[1];
            if (iw < 0 || iw >= g.W) continue;
            double v = x.at((p * g.H + ih) * g.W + iw);
            if (v > best || std::isnan(v)) best = v;  // NaN wins and stays, as PyTorch
          }
        }
        out.set((p * g.Ho + oh) * g.Wo + ow, best);
      }
    }
  }
  return out;
}

Expected<TensorData> evalAvgPool2d(const KernelArgs &a) {
  Expected<PoolGeometry> eg = geometry(a, /*hasDilation=*/false);
  if (!eg) return std::move(eg).takeStatus();
  const PoolGeometry &g = *eg;
  const bool includePad = a.boolAttr("count_include_pad");
  const TensorData &x = a.in(0);
  TensorData out(a.result.dtype, a.result.shape);
  for (int64_t p = 0; p < g.planes; ++p) {
    for (int64_t oh = 0; oh < g.Ho; ++oh) {
      for (int64_t ow = 0; ow < g.Wo; ++ow) {
        // PyTorch: the window is clipped to the padded input (so a ceil_mode window hanging past
        // it never counts those cells), then to the input for the elements summed.
        int64_t h0 = oh * g.stride[0] - g.pad[0], w0 = ow * g.stride[1] - g.pad[1];
        int64_t h1 = std::min(h0 + g.kernel[0], g.H + g.pad[2]);
        int64_t w1 = std::min(w0 + g.kernel[1], g.W + g.pad[3]);
        int64_t paddedCount = (h1 - h0) * (w1 - w0);
        h0 = std::max<int64_t>(h0, 0);
        w0 = std::max<int64_t>(w0, 0);
        h1 = std::min(h1, g.H);
        w1 = std::min(w1, g.W);
        if (h0 >= h1 || w0 >= w1) continue;  // no input element: 0, as PyTorch
        double s = 0;
        for (int64_t ih = h0; ih < h1; ++ih)
          for (int64_t iw = w0; iw < w1; ++iw) s += x.at((p * g.H + ih) * g.W + iw);
        int64_t count = includePad ? paddedCount : (h1 - h0) * (w1 - w0);
        out.set((p * g.Ho + oh) * g.Wo + ow, s / static_cast<double>(count));
      }
    }
  }
  return out;
}

Expected<TensorData> evalGlobalAvgPool(const KernelArgs &a) {
  const TensorData &x = a.in(0);
  const Shape &xs = x.shape();
  FERRY_CHECK(xs.size() >= 2) << "'global_avg_pool' of " << x.type().str();
  Shape outShape(xs.size(), 1);
  outShape[0] = xs[0];
  outShape[1] = xs[1];
  checkShape(a, outShape);
  int64_t planes = xs[0] * xs[1], spatial = numel(std::span(xs).subspan(2));
  TensorData out(a.result.dtype, a.result.shape);
  for (int64_t p = 0; p < planes; ++p) {
    double s = 0;
    for (int64_t i = 0; i < spatial; ++i) s += x.at(p * spatial + i);
    out.set(p, s / static_cast<double>(spatial));  // no spatial elements: NaN, as a mean
  }
  return out;
}

}  // namespace ferry::reference
