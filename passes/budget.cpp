// passes/budget.cpp — SKELETON: being written.
#include "passes/pass.h"

namespace ferry {
void checkBudgets(Graph &, PassContext &) {}
}  // namespace ferry
