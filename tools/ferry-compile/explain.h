// tools/ferry-compile/explain.h — ferry-compile --explain: why a value is where it is, and which
// options would compile a rejected model.
#pragma once

#include <string>
#include <vector>

#include "ir/graph.h"
#include "passes/options.h"

namespace ferry {

/// For each name (with or without its `%`): the value's type and device, the reason chain that
/// put it on its device, the reason for its dtype, and where it is defined. An unknown name is
/// an error that lists the graph's values.
Expected<std::string> explainValues(const Graph &compiled, const std::vector<std::string> &names);

/// For a model `options` reject: which single change of policy (placement auto, dtype promote,
/// fallback on), or pair of them, compiles it, with what that costs (transfers and bytes per run,
/// casts); or that none does, so the fix is in the model (the diagnostics' fixes say where). A
/// plan that only its budgets reject comes with the budget flags that would let it pass
/// (`--max-casts 4`, `--transfers h2h=warn`), alone or after a change of policy.
std::string suggestOptions(const Graph &model, const CompileOptions &options);

}  // namespace ferry
