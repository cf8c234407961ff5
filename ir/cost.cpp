// ir/cost.cpp — flops and bytes of one execution of an op, for placement's cost model.
#include "ir/op_rules.h"

namespace ferry {

namespace {

// Rough flops per input element: a norm or softmax is a few passes over its input (mean or max,
// variance or sum of exps, normalise, scale and shift); a reduction is one add or compare.
constexpr double kNormFlopsPerElement = 5;
constexpr double kReduceFlopsPerElement = 1;

// In double so that huge shapes cannot overflow.
double elements(const TensorType &t) {
  double n = 1;
  for (int64_t d : t.shape) n *= static_cast<double>(d);
  return n;
}

double bytes(const TensorType &t) { return elements(t) * static_cast<double>(dtypeSize(t.dtype)); }

/// Bytes of every operand read plus the result written.
double trafficBytes(const InferArgs &a, const TensorType &out) {
  double b = bytes(out);
  for (const TensorType &t : a.operands) b += bytes(t);
  return b;
}

double dim(const TensorType &t, size_t i) { return static_cast<double>(t.shape[i]); }

}  // namespace

OpCost costNone(const InferArgs &, const TensorType &) { return {}; }

OpCost costUnary(const InferArgs &a, const TensorType &out) {
  return {elements(out), trafficBytes(a, out)};
}

OpCost costBinary(const InferArgs &a, const TensorType &out) {
  return {elements(out), trafficBytes(a, out)};
}

// 2·M·N·K·batch: every result element is a K-long dot product (1-D operands count as M or N = 1).
OpCost costMatmul(const InferArgs &a, const TensorType &out) {
  const TensorType &x = a.operands[0];
  return {2 * elements(out) * dim(x, x.shape.size() - 1), trafficBytes(a, out)};
}

// 2·rows·in·out, plus one add per result element for the bias.
OpCost costLinear(const InferArgs &a, const TensorType &out) {
  double flops = 2 * elements(out) * dim(a.operands[1], 1);
  if (a.operands.size() > 2) flops += elements(out);
  return {flops, trafficBytes(a, out)};
}

// 2·N·O·Ho·Wo·(C/groups)·kH·kW, plus the bias.
OpCost costConv2d(const InferArgs &a, const TensorType &out) {
  const TensorType &w = a.operands[1];
  double flops = 2 * elements(out) * dim(w, 1) * dim(w, 2) * dim(w, 3);
  if (a.operands.size() > 2) flops += elements(out);
  return {flops, trafficBytes(a, out)};
}

// One compare or add per kernel element per result element.
OpCost costPool2d(const InferArgs &a, const TensorType &out) {
  const std::vector<int64_t> &kernel = attrInts(a.op, a.attrs, "kernel");
  double area = 1;
  for (int64_t k : kernel) area *= static_cast<double>(k);
  return {elements(out) * area, trafficBytes(a, out)};
}

OpCost costNorm(const InferArgs &a, const TensorType &out) {
  return {kNormFlopsPerElement * elements(a.operands[0]), trafficBytes(a, out)};
}

OpCost costReduce(const InferArgs &a, const TensorType &out) {
  return {kReduceFlopsPerElement * elements(a.operands[0]), trafficBytes(a, out)};
}

// Data movement: no arithmetic; the result is read and written once each.
OpCost costMove(const InferArgs &, const TensorType &out) { return {0, 2 * bytes(out)}; }

}  // namespace ferry
