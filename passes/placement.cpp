// passes/placement.cpp — SKELETON: being written.
#include "passes/pass.h"

namespace ferry {
void placeDevices(Graph &, PassContext &) {}
}  // namespace ferry
