// backends/cpu/onednn_conv.h — internal: f32 conv2d through oneDNN's convolution, made once when
// a step is prepared, its batch split into panels over ferry's pool.
//
// Why: OpenBLAS's GEMMs ran the 3x3 convolutions of a residual block at 30-35 GFLOP/s at one
// thread on the 2-core Zen 4 box, oneDNN's direct convolution (brgconv, JIT for the running CPU)
// at about twice that, its own blocked layouts included (bench/README.md). The user's tensors stay
// NCHW: a launch reorders x into the layout the primitive chose, convolves, and reorders the
// result back, in per-thread buffers; the weights are packed once when the session gives them
// (StepSpec::constants, within its budget), else reordered at each launch. Threads, streams and
// allocations follow onednn_gemm.h: one OpenMP thread per panel, a few handles per launch.
#pragma once

#include <cstdint>
#include <memory>

#include "ir/status.h"

namespace ferry::cpu {

/// One conv2d's geometry: x [n, c, h, w], weight [o, c / groups, kh, kw], result
/// [n, o, ho, wo]; stride, dilation (1: none) and padding top, left, bottom, right.
struct ConvShape {
  int64_t n = 0, c = 0, h = 0, w = 0;
  int64_t o = 0, kh = 0, kw = 0, groups = 1;
  int64_t ho = 0, wo = 0;
  int64_t sh = 1, sw = 1, dh = 1, dw = 1;
  int64_t pt = 0, pl = 0, pb = 0, pr = 0;
  bool bias = false;
};

/// A convolution of one shape, ready to run many times, from any thread, concurrently.
class OnednnConv {
 public:
  /// The convolution, or null when oneDNN is not enabled (or not in this build), declines the
  /// shape, has fewer than 8 input channels per group and 16 outputs (where linalg.cpp's path
  /// was faster), or would run it on fewer panels than the pool has threads while another path
  /// can use them all (a batch smaller than the pool). `constantWeight`: the weight's bytes when they
  /// are the same at every run; packed now, once, when the copy fits `packBudget` (taken from
  /// it). Throws std::bad_alloc when memory runs out.
  static std::shared_ptr<const OnednnConv> make(const ConvShape &shape, const float *constantWeight = nullptr,
                                                uint64_t *packBudget = nullptr);

  /// y = conv(x, weight) (+ bias), as NCHW tensors. With the weight packed, `weight` must be the
  /// one it was packed from: else an "internal" error. Throws std::bad_alloc when memory runs out.
  Status run(const float *x, const float *weight, const float *bias, float *y) const;

  int panels() const;
  const char *implementation() const;
  uint64_t packedBytes() const;

  struct Impl;
  explicit OnednnConv(std::unique_ptr<Impl> impl);
  ~OnednnConv();

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace ferry::cpu
