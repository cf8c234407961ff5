// passes/dtype.cpp — SKELETON: being written.
#include "passes/pass.h"

namespace ferry {
void assignDTypes(Graph &, PassContext &) {}
}  // namespace ferry
