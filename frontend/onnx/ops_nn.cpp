// frontend/onnx/ops_nn.cpp — converters of ONNX's neural network ops: MatMul, Gemm, Conv,
// MaxPool, AveragePool, GlobalAveragePool, BatchNormalization, Softmax, LogSoftmax,
// LayerNormalization, ReduceMean, ReduceMax and ReduceSum.
//
// Each maps onto ferry ops exactly, inserting what ONNX's semantics need beyond ferry's
// (PyTorch's): Gemm's alpha/beta/transposes, 1-D convolutions and pools through a unit H dim,
// auto_pad resolved from the static input shape, pool pads beyond ferry's half-window limit
// concatenated explicitly, MaxPool of int8/uint8 through f32, LayerNormalization's statistics
// outputs, ReduceSum of integers cast back to the input's dtype, ReduceMax of nothing as -inf.
#include <algorithm>
#include <limits>
#include <string>
#include <vector>

#include "frontend/onnx/convert.h"

namespace ferry::onnx_import {

namespace {

std::string intsStr(const std::vector<int64_t> &v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

std::string op(NodeContext &ctx) { return std::string(ctx.opType()); }

bool need(NodeContext &ctx, size_t i, std::string_view what) {
  if (ctx.hasInput(i)) return true;
  ctx.error(op(ctx) + ": input " + std::to_string(i) + " (" + std::string(what) + ") is missing");
  return false;
}

/// Outputs from `first` on are ONNX extras ferry does not compute (BatchNormalization's running
/// statistics, MaxPool's Indices...): unsupported when anything reads them.
bool extraOutputsUnused(NodeContext &ctx, size_t first, std::string_view what) {
  for (size_t i = first; i < ctx.outputCount(); ++i)
    if (ctx.outputUsed(i)) {
      ctx.unsupported(op(ctx) + " whose output " + std::to_string(i) + " (" + std::string(what) +
                      ") is used");
      return false;
    }
  return true;
}

void emitOut(NodeContext &ctx, OpKind kind, std::vector<Known> operands,
             std::vector<NamedAttr> attrs = {}) {
  if (std::optional<Known> r = ctx.emit(kind, std::move(operands), std::move(attrs)))
    ctx.setOutput(0, *r);
}

/// A scalar of `dtype` holding `v`; nullopt when an integer dtype cannot hold it exactly.
std::optional<Known> scalar(NodeContext &ctx, DType dtype, double v) {
  if (!isFloating(dtype) && v != static_cast<double>(static_cast<int64_t>(v))) return std::nullopt;
  return ctx.constant(TensorData::full(dtype, {}, v));
}

// ---- MatMul and Gemm -------------------------------------------------------------------------

void convertMatMul(NodeContext &ctx) {
  if (!need(ctx, 0, "A") || !need(ctx, 1, "B")) return;
  // ferry's matmul is numpy.matmul, as ONNX's.
  emitOut(ctx, OpKind::Matmul, {ctx.known(0), ctx.known(1)});
}

void convertGemm(NodeContext &ctx) {
  if (!need(ctx, 0, "A") || !need(ctx, 1, "B")) return;
  const double alpha = ctx.attrFloat("alpha", 1.0), beta = ctx.attrFloat("beta", 1.0);
  const int64_t transA = ctx.attrInt("transA", 0), transB = ctx.attrInt("transB", 0);
  const TensorType &a = ctx.inputType(0), &b = ctx.inputType(1);
  for (size_t i = 0; i < 2; ++i)
    if (ctx.inputType(i).rank() != 2)
      return ctx.error("Gemm: input " + std::to_string(i) + " (" + (i ? "B" : "A") + ") is " +
                       ctx.inputType(i).str() + ", expected a 2-D matrix");
  const int64_t m = transA ? a.shape[1] : a.shape[0], n = transB ? b.shape[0] : b.shape[1];
  const bool hasC = ctx.hasInput(2);
  if (hasC) {
    // C broadcasts to [M, N] one way only.
    const Shape &c = ctx.inputType(2).shape;
    std::optional<Shape> out = broadcastShapes(c, Shape{m, n});
    if (c.size() > 2 || !out || *out != Shape{m, n})
      return ctx.error("Gemm: input 2 (C) is " + ctx.inputType(2).str() +
                       ", expected a shape that broadcasts to the result's " +
                       shapeStr(Shape{m, n}));
  }

  // x·Wᵀ + b is ferry's linear.
  if (!transA && transB && alpha == 1.0 && beta == 1.0 &&
      (!hasC || ctx.inputType(2).shape == Shape{n})) {
    std::vector<Known> operands = {ctx.known(0), ctx.known(1)};
    if (hasC) operands.push_back(ctx.known(2));
    return emitOut(ctx, OpKind::Linear, std::move(operands));
  }

  auto transposed = [&](size_t i, bool t) -> std::optional<Known> {
    if (!t) return ctx.known(i);
    return ctx.emit(OpKind::Transpose, {ctx.known(i)}, {{"perm", std::vector<int64_t>{1, 0}}});
  };
  std::optional<Known> x = transposed(0, transA), w = transposed(1, transB);
  if (!x || !w) return;
  std::optional<Known> y = ctx.emit(OpKind::Matmul, {*x, *w});
  if (!y) return;
  auto scaled = [&](Known k, double factor, std::string_view name) -> std::optional<Known> {
    if (factor == 1.0) return k;
    std::optional<Known> s = scalar(ctx, k.type.dtype, factor);
    if (!s) {
      ctx.unsupported("Gemm of " + std::string(dtypeName(k.type.dtype)) + " with the attribute '" +
                      std::string(name) + "' " + std::to_string(factor) + ", not an integer");
      return std::nullopt;
    }
    return ctx.emit(OpKind::Mul, {k, *s});
  };
  y = scaled(*y, alpha, "alpha");
  if (!y) return;
  if (hasC) {
    std::optional<Known> c = scaled(ctx.known(2), beta, "beta");
    if (!c) return;
    y = ctx.emit(OpKind::Add, {*y, *c});
    if (!y) return;
  }
  ctx.setOutput(0, *y);
}

// ---- Conv and pools --------------------------------------------------------------------------

/// Window parameters of a Conv or pool with one or two spatial dims, resolved to explicit
/// padding.
struct Window {
  std::vector<int64_t> kernel, strides, dilations, padBegin, padEnd;
};

/// Reads strides, dilations (when `hasDilations`), pads and auto_pad for `kernel` over the
/// spatial dims of input 0. Reports and returns nullopt on a problem.
std::optional<Window> readWindow(NodeContext &ctx, std::vector<int64_t> kernel, bool hasDilations) {
  const Shape &x = ctx.inputType(0).shape;
  const size_t spatial = kernel.size();
  Window w;
  w.kernel = std::move(kernel);
  w.strides = ctx.attrInts("strides", std::vector<int64_t>(spatial, 1));
  w.dilations = hasDilations ? ctx.attrInts("dilations", std::vector<int64_t>(spatial, 1))
                             : std::vector<int64_t>(spatial, 1);
  const bool padsGiven = ctx.hasAttr("pads");
  std::vector<int64_t> pads = ctx.attrInts("pads", std::vector<int64_t>(2 * spatial, 0));
  const std::string autoPad = ctx.attrString("auto_pad", "NOTSET");

  auto checkList = [&](std::string_view name, const std::vector<int64_t> &v, size_t size,
                       int64_t min) {
    bool ok = v.size() == size;
    for (int64_t e : v) ok = ok && e >= min;
    if (!ok)
      ctx.error(op(ctx) + ": attribute '" + std::string(name) + "' is " + intsStr(v) +
                ", expected " + std::to_string(size) + " values >= " + std::to_string(min) +
                " for the input " + ctx.inputType(0).str());
    return ok;
  };
  if (!checkList("strides", w.strides, spatial, 1) ||
      !checkList("dilations", w.dilations, spatial, 1) || !checkList("pads", pads, 2 * spatial, 0))
    return std::nullopt;

  if (autoPad == "NOTSET") {
    w.padBegin.assign(pads.begin(), pads.begin() + spatial);
    w.padEnd.assign(pads.begin() + spatial, pads.end());
    return w;
  }
  if (autoPad != "SAME_UPPER" && autoPad != "SAME_LOWER" && autoPad != "VALID") {
    ctx.error(op(ctx) + ": attribute 'auto_pad' is \"" + autoPad +
              "\", expected NOTSET, SAME_UPPER, SAME_LOWER or VALID");
    return std::nullopt;
  }
  if (padsGiven && pads != std::vector<int64_t>(2 * spatial, 0)) {
    ctx.error(op(ctx) + ": attribute 'pads' " + intsStr(pads) + " is given with auto_pad " +
              autoPad + ", expected one or the other");
    return std::nullopt;
  }
  w.padBegin.assign(spatial, 0);
  w.padEnd.assign(spatial, 0);
  if (autoPad == "VALID") return w;
  // SAME: the output has ceil(in / stride) elements; the padding that takes is split evenly, the
  // odd one at the end (SAME_UPPER) or the beginning (SAME_LOWER).
  for (size_t i = 0; i < spatial; ++i) {
    const int64_t in = x[2 + i], s = w.strides[i];
    const int64_t out = (in + s - 1) / s;
    const int64_t extent = (w.kernel[i] - 1) * w.dilations[i] + 1;
    const int64_t total = std::max<int64_t>(0, (out - 1) * s + extent - in);
    const int64_t small = total / 2, large = total - small;
    w.padBegin[i] = autoPad == "SAME_UPPER" ? small : large;
    w.padEnd[i] = autoPad == "SAME_UPPER" ? large : small;
  }
  return w;
}

/// The input's rank must be 3 or 4 (one or two spatial dims); 5 and more are unsupported.
bool spatialRankOk(NodeContext &ctx) {
  const int64_t rank = ctx.inputType(0).rank();
  if (rank == 3 || rank == 4) return true;
  if (rank > 4)
    ctx.unsupported(std::to_string(rank - 2) + "-D " + op(ctx) + " (ferry has 1-D and 2-D)");
  else
    ctx.error(op(ctx) + ": input 0 (X) is " + ctx.inputType(0).str() +
              ", expected [N, C, spatial...] with one or more spatial dims");
  return false;
}

/// ferry's 2-D attributes for `w`; a 1-D window gets a unit H dim in front.
struct Window2d {
  std::vector<int64_t> kernel, stride, dilation, padding;
};

Window2d to2d(const Window &w) {
  if (w.kernel.size() == 2)
    return {
        w.kernel, w.strides, w.dilations, {w.padBegin[0], w.padBegin[1], w.padEnd[0], w.padEnd[1]}};
  return {
      {1, w.kernel[0]}, {1, w.strides[0]}, {1, w.dilations[0]}, {0, w.padBegin[0], 0, w.padEnd[0]}};
}

/// Runs `body` on input 0 lifted to 4-D (a unit H dim inserted for a 1-D op) and binds its
/// result, lowered back, to output 0.
template <class Body> void emitSpatial(NodeContext &ctx, Body body) {
  const bool oneD = ctx.inputType(0).rank() == 3;
  std::optional<Known> x = ctx.known(0);
  if (oneD) x = ctx.emit(OpKind::Unsqueeze, {*x}, {{"axes", std::vector<int64_t>{2}}});
  if (!x) return;
  std::optional<Known> y = body(*x);
  if (y && oneD) y = ctx.emit(OpKind::Squeeze, {*y}, {{"axes", std::vector<int64_t>{2}}});
  if (y) ctx.setOutput(0, *y);
}

void convertConv(NodeContext &ctx) {
  if (!need(ctx, 0, "X") || !need(ctx, 1, "W") || !spatialRankOk(ctx)) return;
  const TensorType &x = ctx.inputType(0), &wt = ctx.inputType(1);
  if (wt.rank() != x.rank())
    return ctx.error("Conv: input 1 (W) is " + wt.str() + ", expected rank " +
                     std::to_string(x.rank()) + " as the input " + x.str());
  std::vector<int64_t> kernel(wt.shape.begin() + 2, wt.shape.end());
  if (ctx.hasAttr("kernel_shape")) {
    std::vector<int64_t> given = ctx.attrInts("kernel_shape", {});
    if (given != kernel)
      return ctx.error("Conv: attribute 'kernel_shape' is " + intsStr(given) + " but the weight " +
                       wt.str() + " has the kernel " + intsStr(kernel));
  }
  const int64_t group = ctx.attrInt("group", 1);
  std::optional<Window> w = readWindow(ctx, kernel, /*hasDilations=*/true);
  if (!w) return;
  const Window2d w2 = to2d(*w);
  std::optional<Known> weight = ctx.known(1);
  if (x.rank() == 3)
    weight = ctx.emit(OpKind::Unsqueeze, {*weight}, {{"axes", std::vector<int64_t>{2}}});
  if (!weight) return;
  std::optional<Known> bias;
  if (ctx.hasInput(2)) bias = ctx.known(2);
  emitSpatial(ctx, [&](Known in) {
    std::vector<Known> operands = {in, *weight};
    if (bias) operands.push_back(*bias);
    return ctx.emit(OpKind::Conv2d, std::move(operands),
                    {{"stride", w2.stride},
                     {"padding", w2.padding},
                     {"dilation", w2.dilation},
                     {"groups", group}});
  });
}

/// Whether a pool's pads exceed what ferry's pools take: at most half the window on each side
/// (PyTorch's rule). Larger pads are made explicit (padWith) when ceil_mode is off; with it,
/// explicit padding would move where a last window may start, so they are unsupported.
bool padsExceedHalf(const Window &w) {
  for (size_t i = 0; i < w.kernel.size(); ++i) {
    const int64_t half = ((w.kernel[i] - 1) * w.dilations[i] + 1) / 2;
    if (std::max(w.padBegin[i], w.padEnd[i]) > half) return true;
  }
  return false;
}

/// `x` (4-D) with `fill` concatenated before and after its H and W dims, padding [t, l, b, r].
std::optional<Known> padWith(NodeContext &ctx, Known x, const std::vector<int64_t> &padding,
                             double fill) {
  for (int64_t dim : {2, 3}) {
    const int64_t before = padding[dim - 2], after = padding[dim];
    std::vector<Known> parts;
    for (int64_t size : {before, int64_t{-1}, after}) {
      if (size < 0) {
        parts.push_back(x);
        continue;
      }
      if (size == 0) continue;
      std::vector<int64_t> shape(x.type.shape.begin(), x.type.shape.end());
      shape[dim] = size;
      std::optional<Known> block =
          ctx.emit(OpKind::Expand, {ctx.constant(TensorData::full(x.type.dtype, {}, fill))},
                   {{"shape", shape}});
      if (!block) return std::nullopt;
      parts.push_back(*block);
    }
    std::optional<Known> padded = ctx.emit(OpKind::Concat, std::move(parts), {{"axis", dim}});
    if (!padded) return std::nullopt;
    x = *padded;
  }
  return x;
}

/// A 3-D MaxPool or AveragePool as two 2-D pools, since a box window is separable: max over
/// (D, H, W) is the max over D of the max over (H, W); an average's sum splits so too, and so does
/// its divisor (the window's cells, or with count_include_pad=0 its valid cells: the product of
/// the valid counts along each axis). [N,C,D,H,W] is pooled as [N, C*D, H, W] over (H, W), then
/// as [N, C, D, H'*W'] over (D, 1). Each axis's output size, ceil_mode included, depends on that
/// axis alone. Pads beyond half the window are not supported here.
void pool3d(NodeContext &ctx, OpKind kind, std::vector<int64_t> kernel, bool dilated) {
  const bool isMax = kind == OpKind::MaxPool2d;
  const Shape &x = ctx.inputType(0).shape;
  if (kernel.size() != 3 ||
      std::find_if(kernel.begin(), kernel.end(), [](int64_t k) { return k < 1; }) != kernel.end())
    return ctx.error(op(ctx) + ": attribute 'kernel_shape' is " + intsStr(kernel) +
                     ", expected 3 positive sizes for the input " + ctx.inputType(0).str());
  const bool ceil = ctx.attrInt("ceil_mode", 0) != 0;
  const bool countPad = !isMax && ctx.attrInt("count_include_pad", 0) != 0;
  std::optional<Window> w = readWindow(ctx, kernel, dilated);
  if (!w) return;
  if (!isMax && w->dilations != std::vector<int64_t>(3, 1))
    return ctx.unsupported("AveragePool with dilations " + intsStr(w->dilations));
  if (padsExceedHalf(*w))
    return ctx.unsupported("3-D " + op(ctx) + " with pads beyond half the window");
  const DType dtype = ctx.inputType(0).dtype;
  const bool viaF32 = isMax && (dtype == DType::I8 || dtype == DType::U8);
  auto pool = [&](Known in, std::vector<int64_t> k, std::vector<int64_t> stride,
                  std::vector<int64_t> dilation, std::vector<int64_t> padding) {
    std::vector<NamedAttr> attrs = {{"kernel", std::move(k)},
                                    {"stride", std::move(stride)},
                                    {"padding", std::move(padding)},
                                    {"ceil_mode", ceil}};
    if (isMax)
      attrs.push_back({"dilation", std::move(dilation)});
    else
      attrs.push_back({"count_include_pad", countPad});
    return ctx.emit(kind, {in}, std::move(attrs));
  };
  std::optional<Known> y = ctx.known(0);
  if (viaF32) y = ctx.emit(OpKind::Cast, {*y}, {{"to", DType::F32}});
  if (y) y = ctx.emit(OpKind::Reshape, {*y}, {{"shape", Shape{x[0], x[1] * x[2], x[3], x[4]}}});
  if (y)
    y = pool(*y, {w->kernel[1], w->kernel[2]}, {w->strides[1], w->strides[2]},
             {w->dilations[1], w->dilations[2]},
             {w->padBegin[1], w->padBegin[2], w->padEnd[1], w->padEnd[2]});
  if (!y) return;
  const int64_t h = y->type.shape[2], wd = y->type.shape[3];
  y = ctx.emit(OpKind::Reshape, {*y}, {{"shape", Shape{x[0], x[1], x[2], h * wd}}});
  if (y)
    y = pool(*y, {w->kernel[0], 1}, {w->strides[0], 1}, {w->dilations[0], 1},
             {w->padBegin[0], 0, w->padEnd[0], 0});
  if (y)
    y = ctx.emit(OpKind::Reshape, {*y}, {{"shape", Shape{x[0], x[1], y->type.shape[2], h, wd}}});
  if (y && viaF32) y = ctx.emit(OpKind::Cast, {*y}, {{"to", dtype}});
  if (y) ctx.setOutput(0, *y);
}

void convertPool(NodeContext &ctx, OpKind kind) {
  const bool isMax = kind == OpKind::MaxPool2d;
  if (!need(ctx, 0, "X")) return;
  if (!ctx.hasAttr("kernel_shape"))
    return ctx.error(op(ctx) + ": attribute 'kernel_shape' is required");
  std::vector<int64_t> kernel = ctx.attrInts("kernel_shape", {});
  const int64_t ceilMode = ctx.attrInt("ceil_mode", 0);
  int64_t countIncludePad = 0;
  if (isMax) {
    const int64_t storageOrder = ctx.attrInt("storage_order", 0);
    if (storageOrder != 0 && storageOrder != 1)
      return ctx.error("MaxPool: attribute 'storage_order' is " + std::to_string(storageOrder) +
                       ", expected 0 or 1");
    // storage_order only orders the Indices output, which is unsupported when used.
    if (!extraOutputsUnused(ctx, 1, "Indices")) return;
  } else {
    countIncludePad = ctx.attrInt("count_include_pad", 0);
  }
  // AveragePool has dilations from opset 19; ferry's avg_pool2d has none.
  const bool dilated = isMax || ctx.opset() >= 19;
  if (ctx.inputType(0).rank() == 5) return pool3d(ctx, kind, kernel, dilated);
  if (!spatialRankOk(ctx)) return;
  const size_t spatial = static_cast<size_t>(ctx.inputType(0).rank() - 2);
  if (kernel.size() != spatial ||
      std::find_if(kernel.begin(), kernel.end(), [](int64_t k) { return k < 1; }) != kernel.end())
    return ctx.error(op(ctx) + ": attribute 'kernel_shape' is " + intsStr(kernel) + ", expected " +
                     std::to_string(spatial) + " positive sizes for the input " +
                     ctx.inputType(0).str());
  std::optional<Window> w = readWindow(ctx, kernel, dilated);
  if (!w) return;
  if (!isMax && w->dilations != std::vector<int64_t>(spatial, 1))
    return ctx.unsupported("AveragePool with dilations " + intsStr(w->dilations));
  const bool explicitPads = padsExceedHalf(*w);
  if (explicitPads && ceilMode)
    return ctx.unsupported(op(ctx) + " with ceil_mode and pads " +
                           intsStr(ctx.attrInts("pads", {})) + " beyond half the window");
  const Window2d w2 = to2d(*w);
  std::vector<NamedAttr> attrs = {
      {"kernel", w2.kernel},
      {"stride", w2.stride},
      {"padding", explicitPads ? std::vector<int64_t>{0, 0} : w2.padding},
      {"ceil_mode", ceilMode != 0}};
  if (isMax)
    attrs.push_back({"dilation", w2.dilation});
  else
    attrs.push_back({"count_include_pad", countIncludePad != 0});
  // MaxPool of int8/uint8: ferry pools floats; f32 holds every such value, and max picks one.
  const DType dtype = ctx.inputType(0).dtype;
  const bool viaF32 = isMax && (dtype == DType::I8 || dtype == DType::U8);
  auto finish = [&](std::optional<Known> y) -> std::optional<Known> {
    if (y && viaF32) y = ctx.emit(OpKind::Cast, {*y}, {{"to", dtype}});
    return y;
  };
  emitSpatial(ctx, [&](Known in) -> std::optional<Known> {
    std::optional<Known> x = in;
    if (viaF32) x = ctx.emit(OpKind::Cast, {in}, {{"to", DType::F32}});
    if (!x) return std::nullopt;
    if (!explicitPads) return finish(ctx.emit(kind, {*x}, attrs));
    // Explicit padding: -inf for max; zeros for an average that counts them; otherwise the
    // average of the zero-padded input over the average of a mask of the input's cells.
    const double fill = isMax ? -std::numeric_limits<double>::infinity() : 0.0;
    std::optional<Known> padded = padWith(ctx, *x, w2.padding, fill);
    std::optional<Known> y = padded ? ctx.emit(kind, {*padded}, attrs) : std::nullopt;
    if (!y || isMax || countIncludePad) return finish(y);
    Shape maskShape = x->type.shape;
    maskShape[0] = maskShape[1] = 1;
    std::optional<Known> mask =
        padWith(ctx, ctx.constant(TensorData::full(x->type.dtype, maskShape, 1)), w2.padding, 0);
    if (mask) mask = ctx.emit(kind, {*mask}, attrs);
    return finish(mask ? ctx.emit(OpKind::Div, {*y, *mask}) : std::nullopt);
  });
}

void convertMaxPool(NodeContext &ctx) { convertPool(ctx, OpKind::MaxPool2d); }
void convertAveragePool(NodeContext &ctx) { convertPool(ctx, OpKind::AvgPool2d); }

void convertGlobalAveragePool(NodeContext &ctx) {
  if (!need(ctx, 0, "X")) return;
  const int64_t rank = ctx.inputType(0).rank();
  if (rank < 3)
    return ctx.error("GlobalAveragePool: input 0 (X) is " + ctx.inputType(0).str() +
                     ", expected [N, C, spatial...] with one or more spatial dims");
  if (rank == 4) return emitOut(ctx, OpKind::GlobalAvgPool, {ctx.known(0)});
  // Other ranks: the mean over every spatial dim, kept as size 1.
  std::vector<int64_t> axes;
  for (int64_t d = 2; d < rank; ++d) axes.push_back(d);
  emitOut(ctx, OpKind::Mean, {ctx.known(0)}, {{"axes", axes}, {"keepdims", true}});
}

// ---- normalisation ---------------------------------------------------------------------------

/// Input `i` in `dtype`, cast when it differs (BatchNormalization's scale may be f32 for f16 X).
std::optional<Known> inDType(NodeContext &ctx, size_t i, DType dtype) {
  if (ctx.inputType(i).dtype == dtype) return ctx.known(i);
  return ctx.emit(OpKind::Cast, {ctx.known(i)}, {{"to", dtype}});
}

/// BatchNormalization in training mode (opset 14 on): normalised with the batch's own mean and
/// (population) variance over every dim but the channel's, and the running statistics updated
/// with `momentum`, as ONNX defines it:
///   mean_b = mean(X), var_b = mean((X - mean_b)^2)        over axes 0, 2, 3, ...
///   Y = batch_norm(X, scale, B, mean_b, var_b)
///   running_mean = input_mean * momentum + mean_b * (1 - momentum)   (running_var alike)
void batchNormTraining(NodeContext &ctx, std::vector<Known> operands, double eps) {
  const TensorType &x = ctx.inputType(0);
  if (x.rank() < 2)
    return ctx.error("BatchNormalization: X is " + x.str() + ", expected at least 2 dims (N, C)");
  std::vector<int64_t> axes{0};
  for (int64_t d = 2; d < x.rank(); ++d) axes.push_back(d);
  const double momentum = ctx.attrFloat("momentum", 0.9);
  std::optional<Known> meanKept =
      ctx.emit(OpKind::Mean, {operands[0]}, {{"axes", axes}, {"keepdims", true}});
  if (!meanKept) return;
  std::optional<Known> centred = ctx.emit(OpKind::Sub, {operands[0], *meanKept});
  std::optional<Known> squared = centred ? ctx.emit(OpKind::Mul, {*centred, *centred}) : centred;
  std::optional<Known> var =
      squared ? ctx.emit(OpKind::Mean, {*squared}, {{"axes", axes}, {"keepdims", false}}) : squared;
  std::optional<Known> mean =
      ctx.emit(OpKind::Reshape, {*meanKept}, {{"shape", std::vector<int64_t>{x.shape[1]}}});
  if (!var || !mean) return;
  std::optional<Known> y = ctx.emit(
      OpKind::BatchNorm, {operands[0], operands[1], operands[2], *mean, *var}, {{"eps", eps}});
  if (!y) return;
  ctx.setOutput(0, *y);
  const DType dtype = x.dtype;
  for (size_t i = 1; i <= 2; ++i) {
    if (!ctx.outputUsed(i)) continue;
    const Known &batch = i == 1 ? *mean : *var;
    std::optional<Known> kept = ctx.emit(
        OpKind::Mul, {operands[2 + i], ctx.constant(TensorData::full(dtype, {}, momentum))});
    std::optional<Known> added =
        ctx.emit(OpKind::Mul, {batch, ctx.constant(TensorData::full(dtype, {}, 1.0 - momentum))});
    std::optional<Known> running =
        kept && added ? ctx.emit(OpKind::Add, {*kept, *added}) : std::nullopt;
    if (!running) return;
    ctx.setOutput(i, *running);
  }
}

void convertBatchNormalization(NodeContext &ctx) {
  const char *names[] = {"X", "scale", "B", "input_mean", "input_var"};
  for (size_t i = 0; i < 5; ++i)
    if (!need(ctx, i, names[i])) return;
  const double eps = ctx.attrFloat("epsilon", 1e-5);
  if (ctx.opset() < 9 && ctx.attrInt("spatial", 1) != 1)
    return ctx.unsupported("BatchNormalization with spatial=0 (statistics per element)");
  int64_t training = 0;
  if (ctx.opset() >= 14) {
    training = ctx.attrInt("training_mode", 0);
    if (training != 0 && training != 1)
      return ctx.error("BatchNormalization: attribute 'training_mode' is " +
                       std::to_string(training) + ", expected 0 or 1");
  }
  const DType dtype = ctx.inputType(0).dtype;
  std::vector<Known> operands = {ctx.known(0)};
  for (size_t i = 1; i < 5; ++i) {
    std::optional<Known> k = inDType(ctx, i, dtype);
    if (!k) return;
    operands.push_back(*k);
  }
  if (training == 1) return batchNormTraining(ctx, std::move(operands), eps);
  ctx.ignoreAttr("momentum");  // only updates running statistics in training
  if (!extraOutputsUnused(ctx, 1, "running statistics")) return;
  emitOut(ctx, OpKind::BatchNorm, std::move(operands), {{"eps", eps}});
}

/// Softmax / LogSoftmax of opset 13 on: one axis, as ferry's.
void convertSoftmaxLike(NodeContext &ctx, OpKind kind) {
  if (!need(ctx, 0, "input")) return;
  emitOut(ctx, kind, {ctx.known(0)}, {{"axis", ctx.attrInt("axis", -1)}});
}

void convertSoftmax(NodeContext &ctx) { convertSoftmaxLike(ctx, OpKind::Softmax); }
void convertLogSoftmax(NodeContext &ctx) { convertSoftmaxLike(ctx, OpKind::LogSoftmax); }

/// LayerNormalization's optional outputs Mean (1) and InvStdDev (2), in f32 (stash_type 1) with
/// the normalised dims kept as 1: mean(x) and 1 / sqrt(mean((x - mean)^2) + eps). False after an
/// error.
bool layerNormStatistics(NodeContext &ctx, int64_t axis, double eps) {
  std::vector<int64_t> axes;
  for (int64_t d = axis; d < ctx.inputType(0).rank(); ++d) axes.push_back(d);
  const std::vector<NamedAttr> reduce = {{"axes", axes}, {"keepdims", true}};
  std::optional<Known> x = inDType(ctx, 0, DType::F32);
  std::optional<Known> mean = x ? ctx.emit(OpKind::Mean, {*x}, reduce) : std::nullopt;
  if (!mean) return false;
  if (ctx.outputUsed(1)) ctx.setOutput(1, *mean);
  if (!ctx.outputUsed(2)) return true;
  std::optional<Known> d = ctx.emit(OpKind::Sub, {*x, *mean});
  std::optional<Known> var = d ? ctx.emit(OpKind::Mul, {*d, *d}) : std::nullopt;
  if (var) var = ctx.emit(OpKind::Mean, {*var}, reduce);
  if (var) var = ctx.emit(OpKind::Add, {*var, ctx.constant(TensorData::full(DType::F32, {}, eps))});
  std::optional<Known> inv = var ? ctx.emit(OpKind::Rsqrt, {*var}) : std::nullopt;
  if (!inv) return false;
  ctx.setOutput(2, *inv);
  return true;
}

void convertLayerNormalization(NodeContext &ctx) {
  if (!need(ctx, 0, "X") || !need(ctx, 1, "Scale")) return;
  const int64_t axisAttr = ctx.attrInt("axis", -1);
  const double eps = ctx.attrFloat("epsilon", 1e-5);
  const int64_t stashType = ctx.attrInt("stash_type", 1);
  if (stashType != 1)
    return ctx.unsupported("LayerNormalization with stash_type=" + std::to_string(stashType) +
                           " (ferry computes the statistics in f32)");
  const TensorType &x = ctx.inputType(0);
  std::optional<int64_t> axis = normalizeAxis(axisAttr, x.rank());
  if (!axis)
    return ctx.error("LayerNormalization: attribute 'axis' is " + std::to_string(axisAttr) +
                     ", out of range for the input " + x.str());
  if ((ctx.outputUsed(1) || ctx.outputUsed(2)) && !layerNormStatistics(ctx, *axis, eps)) return;
  const Shape normalized(x.shape.begin() + *axis, x.shape.end());

  // ferry's layer_norm takes weight and bias of exactly the normalized shape; one that
  // broadcasts to it (leading unit dims, unit dims) is reshaped and expanded.
  auto fitted = [&](size_t i) -> std::optional<Known> {
    Shape s = ctx.inputType(i).shape;
    while (s.size() > normalized.size() && s.front() == 1) s.erase(s.begin());
    std::optional<Shape> b = broadcastShapes(s, normalized);
    if (!b || *b != normalized) return std::nullopt;
    std::optional<Known> k = inDType(ctx, i, x.dtype);
    if (k && s != ctx.inputType(i).shape)
      k = ctx.emit(OpKind::Reshape, {*k}, {{"shape", std::vector<int64_t>(s.begin(), s.end())}});
    if (k && s != normalized)
      k = ctx.emit(OpKind::Expand, {*k},
                   {{"shape", std::vector<int64_t>(normalized.begin(), normalized.end())}});
    return k;
  };
  const bool hasBias = ctx.hasInput(2);
  std::optional<Known> scale = fitted(1), bias = hasBias ? fitted(2) : std::nullopt;
  if (scale && (!hasBias || bias)) {
    std::vector<Known> operands = {ctx.known(0), *scale};
    if (bias) operands.push_back(*bias);
    return emitOut(ctx, OpKind::LayerNorm, std::move(operands), {{"axis", *axis}, {"eps", eps}});
  }
  // Otherwise ONNX's broadcasting over X: normalise, then scale and shift; the result must keep
  // X's shape.
  std::optional<Known> y =
      ctx.emit(OpKind::LayerNorm, {ctx.known(0)}, {{"axis", *axis}, {"eps", eps}});
  if (y) y = ctx.emit(OpKind::Mul, {*y, ctx.known(1)});
  if (y && hasBias) y = ctx.emit(OpKind::Add, {*y, ctx.known(2)});
  if (!y) return;
  if (y->type.shape != x.shape)
    return ctx.error("LayerNormalization: Scale " + ctx.inputType(1).str() +
                     (hasBias ? " and B " + ctx.inputType(2).str() : std::string()) +
                     " broadcast the input " + x.str() + " to " + y->type.str() +
                     ", expected them to keep its shape");
  ctx.setOutput(0, *y);
}

// ---- reductions ------------------------------------------------------------------------------

/// ReduceMax over an empty set of elements is the dtype's lowest value in ONNX (-inf, false),
/// where ferry's max has no identity: the result is that constant. True when it applies (and the
/// output is bound or an error reported).
bool emptyMax(NodeContext &ctx, const std::vector<int64_t> &axes, bool keepdims) {
  const TensorType &x = ctx.inputType(0);
  std::vector<bool> reduced(x.shape.size(), axes.empty());
  for (int64_t a : axes) {
    std::optional<int64_t> n = normalizeAxis(a, x.rank());
    if (!n) return false;  // ferry's rule reports it
    reduced[*n] = true;
  }
  bool empty = false;
  Shape out;
  for (size_t d = 0; d < x.shape.size(); ++d) {
    empty = empty || (reduced[d] && x.shape[d] == 0);
    if (!reduced[d] || keepdims) out.push_back(reduced[d] ? 1 : x.shape[d]);
  }
  if (!empty) return false;
  double lowest = 0;  // bool and u8
  switch (x.dtype) {
    case DType::I8: lowest = -128; break;
    case DType::I32: lowest = -2147483648.0; break;
    case DType::I64: lowest = -9223372036854775808.0; break;
    case DType::Bool:
    case DType::U8: break;
    default: lowest = -std::numeric_limits<double>::infinity();
  }
  emitOut(ctx, OpKind::Expand, {ctx.constant(TensorData::full(x.dtype, {}, lowest))},
          {{"shape", std::vector<int64_t>(out.begin(), out.end())}});
  return true;
}

/// ReduceSum takes its axes as an input from opset 13, ReduceMean and ReduceMax from opset 18
/// (with noop_with_empty_axes); before, as an attribute.
template <OpKind Kind> void convertReduce(NodeContext &ctx) {
  if (!need(ctx, 0, "data")) return;
  const bool axesInput = ctx.opset() >= (Kind == OpKind::Sum ? 13 : 18);
  const bool keepdims = ctx.attrInt("keepdims", 1) != 0;
  std::optional<std::vector<int64_t>> axes = std::vector<int64_t>{};
  bool noop = false;
  if (axesInput) {
    noop = ctx.attrInt("noop_with_empty_axes", 0) != 0;
    if (ctx.hasInput(1)) axes = ctx.intsInput(1, "axes");
  } else {
    axes = ctx.attrInts("axes", {});
  }
  if (!axes) return;
  if (axes->empty() && noop) return emitOut(ctx, OpKind::Identity, {ctx.known(0)});
  if constexpr (Kind == OpKind::Max)
    if (emptyMax(ctx, *axes, keepdims)) return;
  // Empty axes reduce every dim, in ferry as in ONNX.
  std::optional<Known> y =
      ctx.emit(Kind, {ctx.known(0)}, {{"axes", *axes}, {"keepdims", keepdims}});
  if (!y) return;
  // ferry's sum of integers is i64 (torch.sum); ONNX keeps the input's dtype.
  const DType dtype = ctx.inputType(0).dtype;
  if (y->type.dtype != dtype) y = ctx.emit(OpKind::Cast, {*y}, {{"to", dtype}});
  if (y) ctx.setOutput(0, *y);
}

constexpr ConverterEntry kNnConverters[] = {
    {"AveragePool", convertAveragePool},
    {"BatchNormalization", convertBatchNormalization},
    {"Conv", convertConv},
    {"Gemm", convertGemm},
    {"GlobalAveragePool", convertGlobalAveragePool},
    {"LayerNormalization", convertLayerNormalization},
    {"LogSoftmax", convertLogSoftmax, 13},
    {"MatMul", convertMatMul},
    {"MaxPool", convertMaxPool},
    {"ReduceMax", convertReduce<OpKind::Max>},
    {"ReduceMean", convertReduce<OpKind::Mean>},
    {"ReduceSum", convertReduce<OpKind::Sum>},
    {"Softmax", convertSoftmax, 13},
};

}  // namespace

std::span<const ConverterEntry> nnConverters() { return kNnConverters; }

}  // namespace ferry::onnx_import
