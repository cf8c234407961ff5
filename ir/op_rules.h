// ir/op_rules.h — the shape rules and cost rules that rows of ir/ops.def name.
#pragma once

#include "ir/ops.h"

namespace ferry {

// Shape rules (ir/shape_rules.cpp). Each receives operands already checked for arity, operand
// roles and accepted dtypes, and attributes completed with defaults; it computes the result
// shape and dtype (see resultDType) or explains, naming operands and dims, why it cannot.
InferResult inferUnary(const InferArgs &a);
InferResult inferGelu(const InferArgs &a);
InferResult inferBroadcast(const InferArgs &a);
InferResult inferMatmul(const InferArgs &a);
InferResult inferLinear(const InferArgs &a);
InferResult inferConv2d(const InferArgs &a);
InferResult inferPool2d(const InferArgs &a);
InferResult inferGlobalAvgPool(const InferArgs &a);
InferResult inferBatchNorm(const InferArgs &a);
InferResult inferLayerNorm(const InferArgs &a);
InferResult inferReduce(const InferArgs &a);
InferResult inferSoftmax(const InferArgs &a);
InferResult inferReshape(const InferArgs &a);
InferResult inferTranspose(const InferArgs &a);
InferResult inferConcat(const InferArgs &a);
InferResult inferSlice(const InferArgs &a);
InferResult inferGather(const InferArgs &a);
InferResult inferUnsqueeze(const InferArgs &a);
InferResult inferSqueeze(const InferArgs &a);
InferResult inferFlatten(const InferArgs &a);
InferResult inferExpand(const InferArgs &a);
InferResult inferCast(const InferArgs &a);
InferResult inferConstant(const InferArgs &a);

/// One sliced dim by ONNX Slice's rules: negative bounds count from the end, then clamp to
/// [0, dim] for positive steps, start to [0, dim-1] and end to [-1, dim-1] for negative ones.
/// `step` must not be 0. Shared by the shape rule and every slice kernel.
struct SliceDim {
  int64_t start = 0;  ///< index of the first element taken
  int64_t count = 0;  ///< elements taken
};
SliceDim resolveSliceDim(int64_t start, int64_t end, int64_t step, int64_t dim);

/// A slice's attributes with their defaults filled in (axes 0.., steps 1), one entry per sliced
/// dim; `consistent` is false when their lengths differ. Axes are as written (not normalized).
struct SliceAttrs {
  std::vector<int64_t> starts, ends, axes, steps;
  bool consistent = true;
};
SliceAttrs sliceAttrs(const OpInfo &op, const Attrs &attrs);

/// The result dtype by the op's DTypeRule over its data operands (not for FromAttr ops).
DType resultDType(const InferArgs &a);

// Cost rules (ir/cost.cpp).
OpCost costNone(const InferArgs &a, const TensorType &out);
OpCost costUnary(const InferArgs &a, const TensorType &out);
OpCost costBinary(const InferArgs &a, const TensorType &out);
OpCost costMatmul(const InferArgs &a, const TensorType &out);
OpCost costLinear(const InferArgs &a, const TensorType &out);
OpCost costConv2d(const InferArgs &a, const TensorType &out);
OpCost costPool2d(const InferArgs &a, const TensorType &out);
OpCost costNorm(const InferArgs &a, const TensorType &out);
OpCost costReduce(const InferArgs &a, const TensorType &out);
OpCost costMove(const InferArgs &a, const TensorType &out);

}  // namespace ferry
