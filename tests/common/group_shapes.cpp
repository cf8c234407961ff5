// tests/common/group_shapes.cpp — see group_shapes.h.
#include "common/group_shapes.h"

#include <algorithm>
#include <cstdio>
#include <vector>

namespace ferry::testutil {

void GroupShapes::add(const FusedBody &body, std::span<const TensorType> operands,
                      const TensorType &result) {
  for (const TensorType &t : operands) broadcastInput += t.shape != result.shape && t.numel() > 1;
  if (body.empty()) return;
  ++groups;
  const bool isAnchored = opInfo(body[0].op).is(OpTrait::GemmLike);
  anchored += isAnchored;
  elementwiseOnly += !isAnchored;
  if (isAnchored) ++anchors[body[0].op];
  large += body.size() >= 4;
  bool cast = false, where = false, compare = false, half = false, integer = false;
  std::vector<DType> dtypes;
  for (const MicroOp &m : body) {
    cast |= m.op == OpKind::Cast;
    where |= m.op == OpKind::Where;
    compare |= opInfo(m.op).dtypeRule == DTypeRule::Compare;
    half |= m.type.dtype == DType::F16 || m.type.dtype == DType::BF16;
    integer |= !isFloating(m.type.dtype) && m.type.dtype != DType::Bool;
    if (std::find(dtypes.begin(), dtypes.end(), m.type.dtype) == dtypes.end()) dtypes.push_back(m.type.dtype);
  }
  withCast += cast;
  withWhere += where;
  withCompare += compare;
  halfDTypes += half;
  integerDTypes += integer;
  mixedDTypes += dtypes.size() > 1;
}

std::string GroupShapes::str() const {
  char buf[512];
  std::snprintf(buf, sizeof buf,
                "%d groups (%d anchored, %d elementwise only, %d of 4+ micro-ops, %d with a cast, "
                "%d with where, %d with a comparison, %d of mixed dtypes, %d with f16/bf16, %d with "
                "integers); %d steps read a broadcast input",
                groups, anchored, elementwiseOnly, large, withCast, withWhere, withCompare,
                mixedDTypes, halfDTypes, integerDTypes, broadcastInput);
  return buf;
}

std::map<std::string, int> GroupShapes::counts() const {
  return {{"anchored", anchored},       {"elementwise only", elementwiseOnly},
          {"4+ micro-ops", large},      {"broadcast input", broadcastInput},
          {"cast", withCast},           {"where", withWhere},
          {"comparison", withCompare},  {"mixed dtypes", mixedDTypes},
          {"f16/bf16", halfDTypes},     {"integers", integerDTypes}};
}

}  // namespace ferry::testutil
