// tools/ferry-compile/emit.h — what ferry-compile's renderings share: their options and the
// device a node is drawn with.
#pragma once

#include <optional>

#include "ir/graph.h"

namespace ferry {

struct EmitOptions {
  /// Include each statement's source location (DOT tooltips, JSON "location"; null when off).
  bool locations = true;
};

/// The device a value is drawn with: where placement put it, else where its node is pinned.
std::optional<Device> shownDevice(const Graph &g, const Node &n);

}  // namespace ferry
