// passes/simplify.cpp — SKELETON: being written.
#include "passes/pass.h"

namespace ferry {
void simplify(Graph &, PassContext &) {}
}  // namespace ferry
