// passes/compile.h — compile(): the pipeline from a verified graph to a placed, typed one.
#pragma once

#include <array>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "ir/graph.h"
#include "passes/options.h"

namespace ferry {

/// What a compile did, for `ferry-compile --stats`, budgets and tests.
struct CompileStats {
  int transfers = 0;          ///< transfer nodes in the final graph that run in every run
  int64_t transferBytes = 0;  ///< bytes they move per run
  /// Transfers of weights (passes/load_time.h): copies made once, when a Session is created,
  /// never per run; not in `transfers`, the directions, the budgets or the estimate.
  int loadTransfers = 0;
  int64_t loadTransferBytes = 0;
  /// Per-run bytes and transfers per direction, indexed by TransferDirection (passes/options.h).
  std::array<int64_t, kTransferDirectionCount> directionBytes{};
  std::array<int, kTransferDirectionCount> directionTransfers{};
  int64_t bytesOf(TransferDirection d) const { return directionBytes[static_cast<size_t>(d)]; }
  int transfersOf(TransferDirection d) const { return directionTransfers[static_cast<size_t>(d)]; }
  int castsInserted = 0;     ///< casts the dtype pass inserted
  int castsFolded = 0;       ///< casts of params done at compile time
  int castsRemoved = 0;      ///< cast round trips and duplicates simplify removed
  int transfersRemoved = 0;  ///< transfer round trips and duplicates simplify removed
  int casts = 0;             ///< cast nodes in the final graph
  int loadCasts = 0;         ///< of them, casts of weights: done once at load, never per run
  int nodesRemoved = 0;      ///< dead nodes removed
  int fusionGroups = 0;      ///< fused kernels the fusion pass made
  int fusedNodes = 0;        ///< nodes in them
  int batchNormsFolded = 0;  ///< batch_norms folded into the conv2d before them (fusion)
  int gelusFolded = 0;  ///< GELUs written out as erf formulas run as one gelu (fusion)
  std::map<Device, int> nodesPerDevice;
  double estimatedSeconds = 0;  ///< cost model's estimate of one run (load-time nodes are free)
  /// Auto placement under a cap on per-run bytes (Budgets::maxTransferBytes) that its cheapest
  /// plan exceeded: the fewest per-run bytes of any plan it found, by its estimate (in the dtypes
  /// before the dtype pass), and whether no plan has fewer (with two devices, where its search is
  /// exact). -1: the cap did not bind, or placement was not auto.
  int64_t autoFewestTransferBytes = -1;
  bool autoFewestExact = false;
  std::vector<std::pair<std::string, double>> passSeconds;  ///< wall time per pass
};

/// The graph as far as the pipeline got, every diagnostic (warnings too) and the statistics.
struct CompileResult {
  Graph graph;
  /// In the order the passes reported them; when several passes reported errors, sorted by
  /// location (stable: one node's errors in pass order), so that they read as the source does.
  std::vector<Diagnostic> diagnostics;
  CompileStats stats;
  /// The last pass that ran, which left the graph as it is: "budget" for a whole compile, else
  /// the options.stopAfter pass, or where errors stopped the pipeline. Errors stop it before the
  /// first pass that does not judge the model, so a rejected model's lastPass is "dtype" however
  /// many of verify, placement and dtype reported (each error's code says which check it is), or
  /// "verify" when verify found the graph itself broken (an undefined value, no outputs), or
  /// "budget" when only the budgets rejected it. Empty when the options are invalid.
  std::string lastPass;

  bool ok() const;  ///< no error diagnostics
};

/// Runs verify -> placement -> dtype -> simplify -> budget on `graph`, stopping after
/// options.stopAfter. Every problem of the model is reported in one run: verify, placement and
/// dtype each run even after an earlier one reported errors of single nodes (a type that does not
/// check, a device or dtype conflict), without repeating or cascading them, and the pipeline stops
/// before simplify; a graph verify finds broken as a whole stops it at once. Invalid options are
/// reported as diagnostics, like any error. Running out of host memory (std::bad_alloc) is one
/// error with code "memory"; the graph is then as far as the failing pass got, fit only to be
/// printed or destroyed.
CompileResult compile(Graph graph, const CompileOptions &options);

/// Recomputes the statistics that describe a graph (transfers, bytes, casts, per run and at load,
/// nodes per device, estimated time) — what compile() reports at the end.
void describeGraph(const Graph &graph, const CompileOptions &options, CompileStats &stats);

}  // namespace ferry
