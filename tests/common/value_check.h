// tests/common/value_check.h — inputs for random graphs and comparisons of their outputs,
// shared by the property tests of the passes (reference on original vs compiled graph) and of
// the runtime (CPU backend vs reference).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace ferry::testutil {

/// Ops whose results move by at most a small multiple of their operands' rounding error, so
/// that a tolerance derived from the narrowest dtype holds through a whole graph. Left out:
/// comparisons and casts (a rounded operand can flip them), division, pow, exp, log, sqrt, rsqrt
/// and the norms (they can amplify an error without bound near a pole or a zero variance).
const std::vector<OpKind> &wellConditionedOps();

/// Inputs for `g`: small values every dtype of their category holds exactly (multiples of 1/64
/// in [-2, 2], integers in [-8, 8]), as the random graphs' params are.
std::map<std::string, TensorData> randomInputs(const Graph &g, uint64_t seed);

/// Unit roundoff of a float dtype (0 for the exact bool and integer types).
double unitRoundoff(DType t);

/// The largest finite magnitude of any float value `g` computes on `inputs` (its inputs, params
/// and every node's result, by the reference interpreter), at least 1; infinity when the
/// interpreter fails.
double valueScale(const Graph &g, const std::map<std::string, TensorData> &inputs);

/// "" when `got` equals `want` element by element within `tol` (0: exactly; NaN equals NaN and
/// infinities must match), else the first difference.
std::string compareOutputs(const std::vector<TensorData> &want, const std::vector<TensorData> &got,
                           double tol);

}  // namespace ferry::testutil
