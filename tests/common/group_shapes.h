// tests/common/group_shapes.h — which shapes of fusion group a test saw (the fused CPU kernel's
// property test, the CUDA generator's tests): counted per group, so that a test can require each
// shape the fusion pass makes a few times.
#pragma once

#include <map>
#include <span>
#include <string>

#include "backends/target.h"

namespace ferry::testutil {

struct GroupShapes {
  int groups = 0, anchored = 0, elementwiseOnly = 0, large = 0, broadcastInput = 0, withCast = 0,
      withWhere = 0, withCompare = 0, mixedDTypes = 0, halfDTypes = 0, integerDTypes = 0;
  std::map<OpKind, int> anchors;  ///< groups by their GEMM anchor

  /// One step: a fused group's body (or an empty one for a step of one node) over `operands`,
  /// giving `result`. broadcastInput counts the steps with an operand of more than one element
  /// that broadcasts to the result; everything else counts groups.
  void add(const FusedBody &body, std::span<const TensorType> operands, const TensorType &result);
  /// "N groups (A anchored, ...)".
  std::string str() const;
  /// Every count above but the anchors, named, for "at least n" checks.
  std::map<std::string, int> counts() const;
};

}  // namespace ferry::testutil
