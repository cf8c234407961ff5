// tools/ferry-compile/emit.cpp — what ferry-compile's renderings share.
#include "tools/ferry-compile/emit.h"

namespace ferry {

std::optional<Device> shownDevice(const Graph &g, const Node &n) {
  if (g.value(n.result).device) return g.value(n.result).device;
  return n.pinDevice;
}

}  // namespace ferry
