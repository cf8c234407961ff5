// frontend/onnx/ops_shape.cpp — converters of ONNX's data movement and shape ops: Transpose,
// Reshape, Flatten, Concat, Slice, Gather, Unsqueeze, Squeeze, Expand, Shape, ConstantOfShape and
// Range.
//
// Shapes are static in ferry, so every operand ONNX passes as a tensor and ferry takes as an
// attribute (Reshape's shape, Slice's starts, Unsqueeze's axes...) must be known at import time
// (`intsInput`); a shape subgraph computing it folds through `emit()`. Shape and Range produce
// import-time data directly; ConstantOfShape is a one-element constant expanded to the shape,
// which folds when small and otherwise stays a cheap `expand` instead of a huge constant.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "frontend/onnx/convert.h"

namespace ferry::onnx_import {

namespace {

/// Ranges longer than this are not folded into an import-time tensor.
constexpr int64_t kMaxRangeElements = int64_t{1} << 24;

/// "[1, -1, 0]", for messages.
std::string intsStr(const std::vector<int64_t> &v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

/// Input `i` (described as `what`) must be present; otherwise an error naming it.
bool need(NodeContext &ctx, size_t i, std::string_view what) {
  if (ctx.hasInput(i)) return true;
  ctx.error(std::string(ctx.opType()) + ": input " + std::to_string(i) + " (" + std::string(what) +
            ") is missing");
  return false;
}

/// Emits `op` and binds its result to output 0.
void emitOut(NodeContext &ctx, OpKind op, std::vector<Known> operands,
             std::vector<NamedAttr> attrs = {}) {
  if (std::optional<Known> r = ctx.emit(op, std::move(operands), std::move(attrs)))
    ctx.setOutput(0, *r);
}

/// The axes of Unsqueeze/Squeeze (an input since opset 13): nullopt after an error, an empty list
/// when absent.
std::optional<std::vector<int64_t>> axesOperand(NodeContext &ctx) {
  if (ctx.opset() < 13) return ctx.attrInts("axes", {});  // an attribute before opset 13
  if (!ctx.hasInput(1)) return std::vector<int64_t>{};
  return ctx.intsInput(1, "axes");
}

void convertTranspose(NodeContext &ctx) {
  if (!need(ctx, 0, "data")) return;
  // ferry's transpose reverses the dims for an empty perm, as ONNX's default does.
  emitOut(ctx, OpKind::Transpose, {ctx.known(0)}, {{"perm", ctx.attrInts("perm", {})}});
}

void convertReshape(NodeContext &ctx) {
  if (!need(ctx, 0, "data") || !need(ctx, 1, "shape")) return;
  int64_t allowZero = ctx.opset() >= 14 ? ctx.attrInt("allowzero", 0) : 0;
  std::optional<std::vector<int64_t>> shape = ctx.intsInput(1, "shape");
  if (!shape) return;
  if (allowZero != 0 && allowZero != 1)
    return ctx.error("Reshape: attribute 'allowzero' is " + std::to_string(allowZero) +
                     ", expected 0 or 1");
  const Shape &in = ctx.inputType(0).shape;
  std::vector<int64_t> target = *shape;
  bool hasZero = false;
  for (size_t i = 0; i < target.size(); ++i) {
    if (target[i] != 0) continue;
    hasZero = true;
    if (allowZero) continue;
    // allowzero=0: a 0 copies the input's dim at the same index.
    if (i >= in.size())
      return ctx.error("Reshape: shape " + intsStr(*shape) + " has 0 at index " +
                       std::to_string(i) + " (copy the input's dim) but the input " +
                       ctx.inputType(0).str() + " has rank " + std::to_string(in.size()));
    target[i] = in[i];
  }
  if (allowZero && hasZero && std::count(target.begin(), target.end(), -1) > 0)
    return ctx.error("Reshape: shape " + intsStr(*shape) +
                     " has both 0 and -1, which allowzero=1 forbids");
  emitOut(ctx, OpKind::Reshape, {ctx.known(0)}, {{"shape", target}});
}

void convertFlatten(NodeContext &ctx) {
  if (!need(ctx, 0, "input")) return;
  const Shape &in = ctx.inputType(0).shape;
  const int64_t rank = static_cast<int64_t>(in.size());
  int64_t axis = ctx.attrInt("axis", 1);
  if (axis < -rank || axis > rank)
    return ctx.error("Flatten: attribute 'axis' is " + std::to_string(axis) +
                     ", expected a value in [" + std::to_string(-rank) + ", " +
                     std::to_string(rank) + "] for the input " + ctx.inputType(0).str());
  if (axis < 0) axis += rank;
  // The input's element count is bounded (< 2^62), so these products cannot overflow.
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < rank; ++d) (d < axis ? outer : inner) *= in[d];
  emitOut(ctx, OpKind::Reshape, {ctx.known(0)}, {{"shape", std::vector<int64_t>{outer, inner}}});
}

void convertConcat(NodeContext &ctx) {
  if (!ctx.hasAttr("axis")) return ctx.error("Concat: attribute 'axis' is required");
  int64_t axis = ctx.attrInt("axis", 0);
  if (ctx.inputCount() == 0) return ctx.error("Concat: expected at least one input, got none");
  std::vector<Known> operands;
  for (size_t i = 0; i < ctx.inputCount(); ++i) {
    if (!need(ctx, i, "inputs")) return;
    operands.push_back(ctx.known(i));
  }
  emitOut(ctx, OpKind::Concat, std::move(operands), {{"axis", axis}});
}

void convertSlice(NodeContext &ctx) {
  if (ctx.opset() < 10) {
    // Before opset 10 the bounds were attributes (no steps).
    if (!need(ctx, 0, "data")) return;
    if (!ctx.hasAttr("starts") || !ctx.hasAttr("ends"))
      return ctx.error("Slice: attributes 'starts' and 'ends' are required before opset 10");
    return emitOut(ctx, OpKind::Slice, {ctx.known(0)},
                   {{"starts", ctx.attrInts("starts", {})},
                    {"ends", ctx.attrInts("ends", {})},
                    {"axes", ctx.attrInts("axes", {})},
                    {"steps", std::vector<int64_t>{}}});
  }
  if (!need(ctx, 0, "data") || !need(ctx, 1, "starts") || !need(ctx, 2, "ends")) return;
  std::optional<std::vector<int64_t>> starts = ctx.intsInput(1, "starts");
  std::optional<std::vector<int64_t>> ends = ctx.intsInput(2, "ends");
  std::optional<std::vector<int64_t>> axes = std::vector<int64_t>{};
  std::optional<std::vector<int64_t>> steps = std::vector<int64_t>{};
  if (ctx.hasInput(3)) axes = ctx.intsInput(3, "axes");
  if (ctx.hasInput(4)) steps = ctx.intsInput(4, "steps");
  if (!starts || !ends || !axes || !steps) return;
  // ferry's slice is ONNX's: clamped bounds, negative axes and steps; its rule checks lengths.
  emitOut(ctx, OpKind::Slice, {ctx.known(0)},
          {{"starts", *starts}, {"ends", *ends}, {"axes", *axes}, {"steps", *steps}});
}

void convertGather(NodeContext &ctx) {
  if (!need(ctx, 0, "data") || !need(ctx, 1, "indices")) return;
  // ferry's gather is ONNX's, negative indices included.
  emitOut(ctx, OpKind::Gather, {ctx.known(0), ctx.known(1)}, {{"axis", ctx.attrInt("axis", 0)}});
}

void convertUnsqueeze(NodeContext &ctx) {
  if (!need(ctx, 0, "data")) return;
  if (ctx.opset() >= 13 && !need(ctx, 1, "axes")) return;
  std::optional<std::vector<int64_t>> axes = axesOperand(ctx);
  if (!axes) return;
  if (axes->empty()) return ctx.error("Unsqueeze: 'axes' is empty, expected at least one axis");
  emitOut(ctx, OpKind::Unsqueeze, {ctx.known(0)}, {{"axes", *axes}});
}

void convertSqueeze(NodeContext &ctx) {
  if (!need(ctx, 0, "data")) return;
  std::optional<std::vector<int64_t>> axes = axesOperand(ctx);
  if (!axes) return;
  // No axes: every dim of size 1, as ferry's squeeze with an empty list.
  emitOut(ctx, OpKind::Squeeze, {ctx.known(0)}, {{"axes", *axes}});
}

void convertExpand(NodeContext &ctx) {
  if (!need(ctx, 0, "input") || !need(ctx, 1, "shape")) return;
  std::optional<std::vector<int64_t>> shape = ctx.intsInput(1, "shape");
  if (!shape) return;
  // ferry's expand broadcasts both ways, as ONNX's: the result is broadcast(input, shape).
  emitOut(ctx, OpKind::Expand, {ctx.known(0)}, {{"shape", *shape}});
}

void convertShape(NodeContext &ctx) {
  if (!need(ctx, 0, "data")) return;
  const Shape &in = ctx.inputType(0).shape;
  const int64_t rank = static_cast<int64_t>(in.size());
  int64_t start = 0, end = rank;
  if (ctx.opset() >= 15) {
    start = ctx.attrInt("start", 0);
    end = ctx.attrInt("end", rank);
  }
  // Negative bounds count from the end; both are clamped to [0, rank].
  auto clampBound = [&](int64_t v) {
    if (v < 0) v = v < -rank ? 0 : v + rank;
    return std::min(v, rank);
  };
  start = clampBound(start);
  end = std::max(clampBound(end), start);
  TensorData dims(DType::I64, {end - start});
  for (int64_t i = start; i < end; ++i) dims.setInt(i - start, in[i]);
  ctx.setOutput(0, ctx.constant(std::move(dims)));
}

void convertConstantOfShape(NodeContext &ctx) {
  if (!need(ctx, 0, "input")) return;
  TensorData value = TensorData::zeros(DType::F32, {});
  if (ctx.hasAttr("value")) {
    std::optional<TensorData> given = ctx.attrTensor("value");
    if (!given) return;
    if (given->numel() != 1)
      return ctx.error("ConstantOfShape: attribute 'value' is " + given->type().str() +
                       ", expected a tensor of one element");
    value = TensorData(given->dtype(), {});
    std::memcpy(value.mutableBytes().data(), given->bytes().data(), given->byteSize());
  }
  std::optional<std::vector<int64_t>> shape = ctx.intsInput(0, "input");
  if (!shape) return;
  for (int64_t d : *shape)
    if (d < 0)
      return ctx.error("ConstantOfShape: shape " + intsStr(*shape) +
                       " has a negative dim, expected sizes >= 0");
  emitOut(ctx, OpKind::Expand, {ctx.constant(std::move(value))}, {{"shape", *shape}});
}

// Range's integer arithmetic: limit - start may overflow int64.
__extension__ using Int128 = __int128;

/// Range's element count for integer operands; nullopt when delta is 0.
std::optional<Int128> rangeCount(Int128 start, Int128 limit, Int128 delta) {
  if (delta == 0) return std::nullopt;
  Int128 span = limit - start;
  // ceil(span / delta) with truncating division
  Int128 n = span / delta + ((span % delta != 0 && ((span > 0) == (delta > 0))) ? 1 : 0);
  return std::max<Int128>(n, 0);
}

void convertRange(NodeContext &ctx) {
  // stash_type (opset 27) is the precision of start + i * delta; the fold computes it in double
  // (exact for integers, and for floats at least as precise as the f32 it defaults to).
  if (ctx.opset() >= 27) ctx.ignoreAttr("stash_type");
  const char *names[] = {"start", "limit", "delta"};
  for (size_t i = 0; i < 3; ++i)
    if (!need(ctx, i, names[i])) return;
  const TensorData *data[3];
  for (size_t i = 0; i < 3; ++i) {
    // The result's length is its bounds' function: ferry's shapes are static.
    data[i] = ctx.requireData(i, names[i]);
    if (!data[i]) return;
    if (data[i]->numel() != 1)
      return ctx.error(std::string("Range: input '") + names[i] + "' is " + data[i]->type().str() +
                       ", expected a scalar");
    if (data[i]->dtype() != data[0]->dtype())
      return ctx.error(std::string("Range: input '") + names[i] + "' is " + data[i]->type().str() +
                       " but 'start' is " + data[0]->type().str() + ", expected one dtype");
  }
  const DType dtype = data[0]->dtype();
  if (dtype == DType::Bool) return ctx.error("Range: inputs are bool, expected numbers");
  int64_t n = 0;
  if (isInteger(dtype)) {
    std::optional<Int128> count =
        rangeCount(data[0]->atInt(0), data[1]->atInt(0), data[2]->atInt(0));
    if (!count) return ctx.error("Range: 'delta' is 0");
    if (*count > kMaxRangeElements)
      return ctx.unsupported("Range of more than " + std::to_string(kMaxRangeElements) +
                             " elements");
    n = static_cast<int64_t>(*count);
    TensorData out(dtype, {n});
    for (int64_t i = 0; i < n; ++i)
      out.setInt(i, static_cast<int64_t>(data[0]->atInt(0) + Int128{i} * data[2]->atInt(0)));
    return ctx.setOutput(0, ctx.constant(std::move(out)));
  }
  double start = data[0]->at(0), limit = data[1]->at(0), delta = data[2]->at(0);
  if (delta == 0) return ctx.error("Range: 'delta' is 0");
  double count = std::ceil((limit - start) / delta);
  if (!std::isfinite(count) && !std::isnan(count))
    return ctx.error("Range: start " + std::to_string(start) + ", limit " + std::to_string(limit) +
                     " and delta " + std::to_string(delta) + " give infinitely many elements");
  if (std::isnan(count) || count <= 0) count = 0;
  if (count > static_cast<double>(kMaxRangeElements))
    return ctx.unsupported("Range of more than " + std::to_string(kMaxRangeElements) + " elements");
  n = static_cast<int64_t>(count);
  TensorData out(dtype, {n});
  for (int64_t i = 0; i < n; ++i) out.set(i, start + static_cast<double>(i) * delta);
  ctx.setOutput(0, ctx.constant(std::move(out)));
}

constexpr ConverterEntry kShapeConverters[] = {
    {"Concat", convertConcat, 4},    {"ConstantOfShape", convertConstantOfShape},
    {"Expand", convertExpand},       {"Flatten", convertFlatten},
    {"Gather", convertGather},       {"Range", convertRange},
    {"Reshape", convertReshape},     {"Shape", convertShape},
    {"Slice", convertSlice},         {"Squeeze", convertSqueeze},
    {"Transpose", convertTranspose}, {"Unsqueeze", convertUnsqueeze},
};

}  // namespace

std::span<const ConverterEntry> shapeConverters() { return kShapeConverters; }

}  // namespace ferry::onnx_import
