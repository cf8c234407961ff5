// backends/cuda/codegen/conv_pool.cpp — the kernels of conv2d, max_pool2d, avg_pool2d,
// global_avg_pool and batch_norm (inference).
//
// Semantics are the reference's (backends/reference/linalg.cpp, pool.cpp, normalize.cpp),
// computed in float (f16, bf16, f32) or double (f64) and rounded once when stored. Each kernel
// but global_avg_pool's takes one thread per result element, grid-stride, with the shapes and
// attributes printed as constants:
//   - conv2d, NCHW, weight [O, C/groups, kH, kW], optional bias [O]: the bias, then the direct
//     sum over the C/groups x kH x kW window of the output channel's group; a tap in the padding
//     reads zero (it is skipped). For grouped and f64 convolutions, and those whose im2col
//     matrix would be too large; the others are a GEMM (below, and cuda_target.cpp).
//   - im2col, for a conv2d that cuBLASLt computes as a GEMM: the matrix [N, Ho*Wo, C*kH*kW] of
//     the input taps each output pixel reads (zero in the padding), in x's dtype.
//   - max_pool2d: the largest element of the (dilated) window, padding skipped, -inf over none;
//     a NaN wins and stays; the winner is stored back unchanged.
//   - avg_pool2d, as PyTorch: the window clipped to the padded input gives the divisor with
//     count_include_pad, clipped again to the input the elements summed (and the divisor
//     without); a window with no input element gives 0.
//   - global_avg_pool: the mean over the dims after N and C, which is reduce.cpp's kernel of mean
//     (a thread or a block per plane, 0/0 = NaN over no elements).
//   - batch_norm: (x - mean) / sqrt(var + eps) * scale + bias, the statistics of x's channel
//     (dim 1; the dims after it are the channel's elements).
// Pools read the last two dims as H and W and the ones before as independent planes, as the
// reference does (the shape rules give them 4-D operands). Output sizes are the reference's
// (floor, or ceil with ceil_mode where the last window starts inside the input or its leading
// padding) and must be the step's result: anything else breaks the contract.
#include <cinttypes>
#include <cstdio>

#include "backends/cuda/codegen/generators_impl.h"

namespace ferry::cuda {

namespace {

int64_t floorDiv(int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }

// `const ferry_i64 A = 1LL, B = 2LL;`: the constants a kernel's text names.
std::string constants(std::initializer_list<std::pair<const char *, int64_t>> values) {
  std::string s = "  const ferry_i64 ";
  bool first = true;
  for (const auto &[name, v] : values) {
    s += (first ? "" : ", ") + std::string(name) + " = " + ll(v);
    first = false;
  }
  return s + ";\n";
}

// Every operand and the result of one floating dtype (the dtype pass casts them to one).
Status sameFloatDType(const StepSpec &step) {
  if (!isFloating(step.result.dtype)) return contractError(step, "result " + step.result.str());
  for (size_t i = 0; i < step.operands.size(); ++i)
    if (step.operands[i].dtype != step.result.dtype)
      return contractError(step, "operand " + std::to_string(i) + " " + step.operands[i].str() +
                                     " for result " + step.result.str() + " (a cast is missing?)");
  return {};
}

// A window over H and W: kernel, stride, dilation, padding (top, left, bottom, right).
struct Window {
  int64_t kh = 1, kw = 1, sh = 1, sw = 1, dh = 1, dw = 1, pt = 0, pl = 0, pb = 0, pr = 0;
};

// The attribute `name`, two ints each >= `min`, into `a` and `b`.
Status pairAttr(const StepSpec &step, const char *name, int64_t min, int64_t &a, int64_t &b) {
  const std::vector<int64_t> &v = attrInts(step.op, step.attrs, name);
  if (v.size() != 2 || v[0] < min || v[1] < min)
    return contractError(step, std::string(name) + " " + attrValueStr(v) +
                                   ", expected 2 ints >= " + std::to_string(min));
  a = v[0];
  b = v[1];
  return {};
}

// The window's stride, dilation (where the op has one) and padding; the kernel is given. An empty
// stride of a pool is its kernel.
Expected<Window> windowOf(const StepSpec &step, int64_t kh, int64_t kw) {
  Window w;
  w.kh = kh;
  w.kw = kw;
  if (kh < 1 || kw < 1)
    return contractError(step, "kernel [" + std::to_string(kh) + "," + std::to_string(kw) + "]");
  if (step.op.is(OpTrait::Pool) && attrInts(step.op, step.attrs, "stride").empty()) {
    w.sh = kh;
    w.sw = kw;
  } else {
    FERRY_TRY(pairAttr(step, "stride", 1, w.sh, w.sw));
  }
  if (step.op.attrIndex("dilation") >= 0) FERRY_TRY(pairAttr(step, "dilation", 1, w.dh, w.dw));
  const std::vector<int64_t> &p = attrInts(step.op, step.attrs, "padding");
  bool ok = p.size() == 2 || p.size() == 4;
  for (int64_t v : p) ok = ok && v >= 0;
  if (!ok) return contractError(step, "padding " + attrValueStr(p));
  w.pt = p[0];
  w.pl = p[1];
  w.pb = p.size() == 4 ? p[2] : p[0];
  w.pr = p.size() == 4 ? p[3] : p[1];
  return w;
}

// Windows along a dim of `in` elements, as the reference counts them.
int64_t windowCount(int64_t in, int64_t k, int64_t s, int64_t d, int64_t padBegin, int64_t padEnd,
                    bool ceilMode) {
  const int64_t span = in + padBegin + padEnd - d * (k - 1) - 1;
  int64_t out = (ceilMode ? -floorDiv(-span, s) : floorDiv(span, s)) + 1;
  if (ceilMode && out > 0 && (out - 1) * s >= in + padBegin) --out;
  return out;
}

// A kernel with nothing to compute: the launch of a step without result elements.
KernelSource emptyKernel(size_t inputs) {
  KernelSource k;
  k.source = prelude() + kernelSignature(inputs) + "}\n";
  k.inputs = static_cast<int32_t>(inputs);
  k.threads = kGridThreads;
  k.blocks = 1;
  return k;
}

// The kernel's start: typed pointers to the operands (`names`, in order) and the result `y`.
std::string pointers(DType t, std::initializer_list<const char *> names) {
  const std::string st = storageType(t);
  std::string s;
  size_t i = 0;
  for (const char *name : names)
    s += "  const " + st + " *" + name + " = (const " + st + " *)in" + std::to_string(i++) + ";\n";
  return s + "  " + st + " *y = (" + st + " *)out;\n";
}

// A grid-stride loop over `n` result elements `e`, split into the coordinates ow, oh and the
// plane `p` (all dims before H and W).
std::string elementLoop(int64_t n) {
  return "  for (ferry_i64 e = FERRY_TID; e < " + ll(n) + "; e += FERRY_STRIDE) {\n" +
         "    const ferry_i64 ow = e % Wo, oh = e / Wo % Ho, p = e / (Wo * Ho);\n";
}

KernelSource gridKernel(std::string source, size_t inputs, int64_t n) {
  KernelSource k;
  k.source = std::move(source);
  k.inputs = static_cast<int32_t>(inputs);
  k.threads = kGridThreads;
  k.blocks = gridBlocks(n);
  return k;
}

Expected<KernelSource> maxOrAvgPool(const StepSpec &step) {
  const bool isMax = step.op.kind == OpKind::MaxPool2d;
  const TensorType &x = step.operands[0];
  if (x.rank() < 2) return contractError(step, "x " + x.str() + ", expected [..., H, W]");
  int64_t kh = 0, kw = 0;
  FERRY_TRY(pairAttr(step, "kernel", 1, kh, kw));
  Expected<Window> win = windowOf(step, kh, kw);
  if (!win) return win.status();
  const Window &w = *win;
  const bool ceilMode = attrBool(step.op, step.attrs, "ceil_mode");
  const int64_t H = x.shape[x.shape.size() - 2], W = x.shape.back();
  const int64_t Ho = windowCount(H, w.kh, w.sh, w.dh, w.pt, w.pb, ceilMode);
  const int64_t Wo = windowCount(W, w.kw, w.sw, w.dw, w.pl, w.pr, ceilMode);
  Shape outShape = x.shape;
  outShape[outShape.size() - 2] = Ho;
  outShape.back() = Wo;
  if (step.result.shape != outShape)
    return contractError(step, "result " + step.result.str() + " for " + x.str());
  const int64_t n = step.result.numel();
  if (n == 0) return emptyKernel(1);

  const std::string ct = computeType(x.dtype), st = storageType(x.dtype),
                    sfx = dtypeSuffix(x.dtype);
  std::string s = prelude() + kernelSignature(1) + pointers(x.dtype, {"x"});
  s += constants({{"H", H}, {"W", W}, {"Ho", Ho}, {"Wo", Wo}, {"kH", w.kh}, {"kW", w.kw}});
  s += constants({{"sh", w.sh}, {"sw", w.sw}, {"pt", w.pt}, {"pl", w.pl}});
  if (isMax) {
    s += constants({{"dh", w.dh}, {"dw", w.dw}});
    s += elementLoop(n);
    s += "    const " + st + " *xp = x + p * (H * W);\n";
    s += "    const ferry_i64 h0 = oh * sh - pt, w0 = ow * sw - pl;\n";
    s += "    " + ct + " best = (" + ct + ")ferry_u2f(0xff800000u);  // -inf: padding is skipped\n";
    s += "    for (ferry_i64 i = 0; i < kH; ++i) {\n";
    s += "      const ferry_i64 ih = h0 + i * dh;\n";
    s += "      if (ih < 0 || ih >= H) continue;\n";
    s += "      for (ferry_i64 j = 0; j < kW; ++j) {\n";
    s += "        const ferry_i64 iw = w0 + j * dw;\n";
    s += "        if (iw < 0 || iw >= W) continue;\n";
    s += "        const " + ct + " v = ferry_ld_" + sfx + "(xp[ih * W + iw]);\n";
    s += "        if (v > best || v != v) best = v;  // a NaN wins and stays\n";
    s += "      }\n    }\n";
    s += "    y[e] = ferry_st_" + sfx + "(best);\n  }\n}\n";
    return gridKernel(std::move(s), 1, n);
  }
  const bool includePad = attrBool(step.op, step.attrs, "count_include_pad");
  s += constants({{"Hp", H + w.pb}, {"Wp", W + w.pr}});  // the input's end and its padding's
  s += elementLoop(n);
  s += "    const " + st + " *xp = x + p * (H * W);\n";
  s += "    ferry_i64 h0 = oh * sh - pt, w0 = ow * sw - pl, h1 = h0 + kH, w1 = w0 + kW;\n";
  s += "    if (h1 > Hp) h1 = Hp;\n    if (w1 > Wp) w1 = Wp;\n";
  if (includePad) s += "    const ferry_i64 count = (h1 - h0) * (w1 - w0);\n";
  s += "    if (h0 < 0) h0 = 0;\n    if (w0 < 0) w0 = 0;\n";
  s += "    if (h1 > H) h1 = H;\n    if (w1 > W) w1 = W;\n";
  s += "    if (h0 >= h1 || w0 >= w1) {  // no input element\n";
  s += "      y[e] = ferry_st_" + sfx + "((" + ct + ")0);\n";
  s += "      continue;\n    }\n";
  if (!includePad) s += "    const ferry_i64 count = (h1 - h0) * (w1 - w0);\n";
  s += "    " + ct + " acc = 0;\n";
  s += "    for (ferry_i64 ih = h0; ih < h1; ++ih)\n";
  s += "      for (ferry_i64 iw = w0; iw < w1; ++iw) acc += ferry_ld_" + sfx +
       "(xp[ih * W + iw]);\n";
  s += "    y[e] = ferry_st_" + sfx + "(acc / (" + ct + ")count);\n  }\n}\n";
  return gridKernel(std::move(s), 1, n);
}

// The mean over the dims after N and C: reduce.cpp's kernel of `mean` with keepdims.
Expected<KernelSource> globalAvgPool(const StepSpec &step) {
  const TensorType &x = step.operands[0];
  if (x.rank() < 3) return contractError(step, "x " + x.str() + ", expected [N, C, ...]");
  Shape outShape(x.shape.size(), 1);
  outShape[0] = x.shape[0];
  outShape[1] = x.shape[1];
  if (step.result.shape != outShape)
    return contractError(step, "result " + step.result.str() + " for " + x.str());
  std::vector<int64_t> axes;
  for (int64_t d = 2; d < x.rank(); ++d) axes.push_back(d);
  const OpInfo &mean = opInfo(OpKind::Mean);
  const NamedAttr given[] = {{"axes", AttrValue(std::move(axes))}, {"keepdims", AttrValue(true)}};
  Expected<Attrs> attrs = makeAttrs(mean, given, step.loc);
  if (!attrs) return contractError(step, attrs.status().message());
  return reduceKernel({mean, *attrs, step.operands, step.result, step.device, step.loc});
}

}  // namespace

namespace {

// A conv2d step's sizes, checked against its contract.
struct ConvGeometry {
  int64_t N = 0, C = 0, H = 0, W = 0, O = 0, Cg = 0, groups = 1, Ho = 0, Wo = 0;
  bool bias = false;
  Window w;
};

Expected<ConvGeometry> convGeometry(const StepSpec &step) {
  if (step.op.kind != OpKind::Conv2d) return contractError(step, "not a conv2d");
  if (step.operands.size() != 2 && step.operands.size() != 3)
    return contractError(step, "expected x, weight and an optional bias");
  FERRY_TRY(sameFloatDType(step));
  const TensorType &x = step.operands[0], &wt = step.operands[1];
  if (x.rank() != 4 || wt.rank() != 4)
    return contractError(step, "x " + x.str() + " and weight " + wt.str() + ", expected 4-D");
  ConvGeometry g;
  g.N = x.shape[0], g.C = x.shape[1], g.H = x.shape[2], g.W = x.shape[3];
  g.O = wt.shape[0], g.Cg = wt.shape[1];
  g.groups = attrInt(step.op, step.attrs, "groups");
  if (g.groups < 1 || g.C % g.groups != 0 || g.O % g.groups != 0 || g.Cg != g.C / g.groups)
    return contractError(step, "x " + x.str() + " and weight " + wt.str() + " in " +
                                   std::to_string(g.groups) + " groups");
  g.bias = step.operands.size() == 3;
  if (g.bias && step.operands[2].numel() != g.O)
    return contractError(step, "bias " + step.operands[2].str() + " for weight " + wt.str());
  Expected<Window> win = windowOf(step, wt.shape[2], wt.shape[3]);
  if (!win) return win.status();
  g.w = *win;
  g.Ho = windowCount(g.H, g.w.kh, g.w.sh, g.w.dh, g.w.pt, g.w.pb, false);
  g.Wo = windowCount(g.W, g.w.kw, g.w.sw, g.w.dw, g.w.pl, g.w.pr, false);
  if (step.result.shape != Shape{g.N, g.O, g.Ho, g.Wo})
    return contractError(step, "result " + step.result.str() + " for " + x.str() + " and weight " +
                                   wt.str());
  return g;
}

}  // namespace

Expected<KernelSource> conv2dKernel(const StepSpec &step) {
  Expected<ConvGeometry> geometry = convGeometry(step);
  if (!geometry) return geometry.status();
  const ConvGeometry &g = *geometry;
  const Window &w = g.w;
  const int64_t n = step.result.numel();
  if (n == 0) return emptyKernel(step.operands.size());

  const DType t = step.result.dtype;
  const std::string ct = computeType(t), st = storageType(t), sfx = dtypeSuffix(t);
  std::string s = prelude() + kernelSignature(step.operands.size());
  s += g.bias ? pointers(t, {"x", "wt", "b"}) : pointers(t, {"x", "wt"});
  s += constants({{"C", g.C}, {"H", g.H}, {"W", g.W}, {"O", g.O}, {"Og", g.O / g.groups}, {"Cg", g.Cg}});
  s += constants({{"Ho", g.Ho}, {"Wo", g.Wo}, {"kH", w.kh}, {"kW", w.kw}});
  s += constants(
      {{"sh", w.sh}, {"sw", w.sw}, {"dh", w.dh}, {"dw", w.dw}, {"pt", w.pt}, {"pl", w.pl}});
  // The plane p is (image, output channel); the channel's group reads x's channels from
  // its first, c0.
  s += elementLoop(n);
  s += "    const ferry_i64 o = p % O, c0 = o / Og * Cg;\n";
  s += "    const " + st + " *xg = x + (p / O * C + c0) * (H * W);\n";
  s += "    const " + st + " *wo = wt + o * (Cg * kH * kW);\n";
  s += "    const ferry_i64 h0 = oh * sh - pt, w0 = ow * sw - pl;\n";
  s += "    " + ct + " acc = " + (g.bias ? "ferry_ld_" + sfx + "(b[o])" : "(" + ct + ")0") + ";\n";
  s += "    for (ferry_i64 c = 0; c < Cg; ++c) {\n";
  s += "      for (ferry_i64 i = 0; i < kH; ++i) {\n";
  s += "        const ferry_i64 ih = h0 + i * dh;\n";
  s += "        if (ih < 0 || ih >= H) continue;  // zero padding\n";
  s += "        for (ferry_i64 j = 0; j < kW; ++j) {\n";
  s += "          const ferry_i64 iw = w0 + j * dw;\n";
  s += "          if (iw < 0 || iw >= W) continue;\n";
  s += "          acc += ferry_ld_" + sfx + "(xg[(c * H + ih) * W + iw]) * ferry_ld_" + sfx +
       "(wo[(c * kH + i) * kW + j]);\n";
  s += "        }\n      }\n    }\n";
  s += "    y[e] = ferry_st_" + sfx + "(acc);\n  }\n}\n";
  return gridKernel(std::move(s), step.operands.size(), n);
}

Expected<KernelSource> im2colKernel(const StepSpec &step) {
  Expected<ConvGeometry> geometry = convGeometry(step);
  if (!geometry) return geometry.status();
  const ConvGeometry &g = *geometry;
  if (g.groups != 1) return contractError(step, "im2col of a grouped conv2d");
  const Window &w = g.w;
  const int64_t K = g.C * w.kh * w.kw, n = g.N * g.Ho * g.Wo * K;
  if (n == 0) return emptyKernel(1);
  const std::string st = storageType(step.result.dtype);
  std::string s = prelude() + kernelSignature(1);
  s += "  const " + st + " *x = (const " + st + " *)in0;\n  " + st + " *y = (" + st + " *)out;\n";
  s += constants({{"C", g.C}, {"H", g.H}, {"W", g.W}, {"Ho", g.Ho}, {"Wo", g.Wo}, {"K", K}});
  s += constants({{"kH", w.kh}, {"kW", w.kw}, {"sh", w.sh}, {"sw", w.sw}, {"dh", w.dh},
                  {"dw", w.dw}, {"pt", w.pt}, {"pl", w.pl}});
  // Element e is tap k of output pixel q (image, oh, ow); taps in the padding are zero.
  s += "  for (ferry_i64 e = FERRY_TID; e < " + ll(n) + "; e += FERRY_STRIDE) {\n";
  s += "    const ferry_i64 k = e % K, q = e / K, ow = q % Wo, oh = q / Wo % Ho, img = q / (Wo * Ho);\n";
  s += "    const ferry_i64 c = k / (kH * kW), ih = oh * sh - pt + k / kW % kH * dh,\n";
  s += "                    iw = ow * sw - pl + k % kW * dw;\n";
  s += "    y[e] = ih < 0 || ih >= H || iw < 0 || iw >= W ? (" + st +
       ")0 : x[((img * C + c) * H + ih) * W + iw];\n";
  s += "  }\n}\n";
  return gridKernel(std::move(s), 1, n);
}

Expected<KernelSource> poolKernel(const StepSpec &step) {
  const OpKind kind = step.op.kind;
  if (kind != OpKind::MaxPool2d && kind != OpKind::AvgPool2d && kind != OpKind::GlobalAvgPool)
    return contractError(step, "not a pool");
  if (step.operands.size() != 1) return contractError(step, "expected one operand");
  FERRY_TRY(sameFloatDType(step));
  return kind == OpKind::GlobalAvgPool ? globalAvgPool(step) : maxOrAvgPool(step);
}

Expected<KernelSource> batchNormKernel(const StepSpec &step) {
  if (step.op.kind != OpKind::BatchNorm) return contractError(step, "not a batch_norm");
  if (step.operands.size() != 5) return contractError(step, "expected x, scale, bias, mean, var");
  FERRY_TRY(sameFloatDType(step));
  const TensorType &x = step.operands[0];
  if (x.rank() < 2 || step.result.shape != x.shape)
    return contractError(step, "result " + step.result.str() + " for " + x.str());
  const int64_t C = x.shape[1], inner = numel(std::span(x.shape).subspan(2));
  for (size_t i = 1; i < 5; ++i)
    if (step.operands[i].numel() != C)
      return contractError(step, "operand " + std::to_string(i) + " " + step.operands[i].str() +
                                     " for " + x.str());
  const int64_t n = x.numel();
  if (n == 0) return emptyKernel(5);

  const DType t = x.dtype;
  const std::string ct = computeType(t), sfx = dtypeSuffix(t);
  const std::string ld = "ferry_ld_" + sfx, sqrtFn = ct == "float" ? "sqrtf" : "sqrt";
  std::string s = prelude() + kernelSignature(5);
  s += pointers(t, {"x", "scale", "bias", "mean", "var"});
  s += constants({{"C", C}, {"inner", inner}});
  s += "  for (ferry_i64 e = FERRY_TID; e < " + ll(n) + "; e += FERRY_STRIDE) {\n";
  s += "    const ferry_i64 c = e / inner % C;\n";
  s += "    const " + ct + " r = (" + ld + "(x[e]) - " + ld + "(mean[c])) / " + sqrtFn + "(" + ld +
       "(var[c]) + " + floatLiteral(attrFloat(step.op, step.attrs, "eps"), ct) + ");\n";
  s += "    y[e] = ferry_st_" + sfx + "(r * " + ld + "(scale[c]) + " + ld + "(bias[c]));\n";
  s += "  }\n}\n";
  return gridKernel(std::move(s), 5, n);
}

}  // namespace ferry::cuda
