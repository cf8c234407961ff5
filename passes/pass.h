// passes/pass.h — the pipeline as data: every pass is a plain function over the graph.
#pragma once

#include <span>
#include <string_view>

#include "ir/diagnostics.h"
#include "ir/graph.h"
#include "passes/compile.h"
#include "passes/options.h"

namespace ferry {

/// What every pass may use besides the graph: the options, a place for diagnostics (report all
/// errors, not the first) and the statistics it contributes to.
struct PassContext {
  const CompileOptions &options;
  DiagnosticEngine &diags;
  CompileStats &stats;
};

using PassFn = void (*)(Graph &graph, PassContext &ctx);

struct Pass {
  std::string_view name;
  std::string_view summary;  ///< one line, for --help and --stop-after errors
  PassFn run;
};

/// verify, placement, dtype, simplify, budget — in order.
std::span<const Pass> pipeline();

// The passes (one file each in passes/).
void verifyPass(Graph &graph, PassContext &ctx);    ///< pass_manager.cpp
void placeDevices(Graph &graph, PassContext &ctx);  ///< placement.cpp
void assignDTypes(Graph &graph, PassContext &ctx);  ///< dtype.cpp
void simplify(Graph &graph, PassContext &ctx);      ///< simplify.cpp
void checkBudgets(Graph &graph, PassContext &ctx);  ///< budget.cpp

/// Puts every inserted node directly after its operand's producer, ties by result name, the
/// user's nodes in their order: the same graph gets the same order however it was compiled
/// (simplify's last step). canonical_order.cpp
void canonicalOrder(Graph &graph);

}  // namespace ferry
