// passes/pass.h — the pipeline as data: every pass is a plain function over the graph.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "ir/diagnostics.h"
#include "ir/graph.h"
#include "passes/compile.h"
#include "passes/options.h"

namespace ferry {

/// How an earlier pass rejected a value's node, so that the passes after it neither repeat nor
/// cascade its error while they judge the rest of the model.
enum class Rejected : uint8_t {
  No,
  /// Its node was reported, and its type is what the node gives once fixed (a gather with f32
  /// indices): readers are judged by it as usual; the node's own error is not reported again.
  Reported,
  /// Its node was reported and its type cannot be trusted: it and every value computed from it
  /// take no part in a dtype check (their readers are judged by their other operands).
  Untyped,
};

/// What every pass may use besides the graph: the options, a place for diagnostics (report all
/// errors, not the first) and the statistics it contributes to.
struct PassContext {
  const CompileOptions &options;
  DiagnosticEngine &diags;
  CompileStats &stats;
  /// Per value (verify fills it; values made after are No): see Rejected. Device conflicts add
  /// nothing here: strict placement judges the nodes after one as if its fix were applied.
  std::vector<Rejected> rejected = {};
  /// Set by a pass whose errors leave no graph to judge (verify: an undefined value, no outputs):
  /// compile() stops after it.
  bool broken = false;

  Rejected rejectedOf(ValueId v) const {
    return static_cast<size_t>(v) < rejected.size() ? rejected[v] : Rejected::No;
  }
};

using PassFn = void (*)(Graph &graph, PassContext &ctx);

struct Pass {
  std::string_view name;
  std::string_view summary;  ///< one line, for --help and --stop-after errors
  PassFn run;
  /// A pass that judges the model (verify, placement, dtype). compile() runs each of them even
  /// after an earlier one reported errors, unless those leave no graph (PassContext::broken), so
  /// that one run reports every independent mistake; the passes after them, which rewrite an
  /// accepted graph, run only when there is none.
  bool judges = false;
};

/// verify, placement, dtype, simplify, budget, fusion — in order.
std::span<const Pass> pipeline();

// The passes (one file each in passes/).
void verifyPass(Graph &graph, PassContext &ctx);    ///< pass_manager.cpp
void placeDevices(Graph &graph, PassContext &ctx);  ///< placement.cpp
void assignDTypes(Graph &graph, PassContext &ctx);  ///< dtype.cpp
void simplify(Graph &graph, PassContext &ctx);      ///< simplify.cpp
void checkBudgets(Graph &graph, PassContext &ctx);  ///< budget.cpp
void fuse(Graph &graph, PassContext &ctx);          ///< fusion.cpp
/// Folds each batch_norm with param statistics into the conv2d before it (part of fuse());
/// returns how many. fold_batch_norm.cpp
int foldBatchNorms(Graph &graph, const Capabilities &capabilities);
/// Runs each GELU written out as x/2·(1 + erf(x/√2)) as one gelu (part of fuse()); returns how
/// many. fold_gelu.cpp
int foldGelus(Graph &graph, const Capabilities &capabilities);

/// Puts every inserted node directly after its operand's producer, ties by result name, the
/// user's nodes in their order: the same graph gets the same order however it was compiled
/// (simplify's last step). canonical_order.cpp
void canonicalOrder(Graph &graph);

}  // namespace ferry
