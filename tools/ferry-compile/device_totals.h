// tools/ferry-compile/device_totals.h — what each device does in one run of a compiled graph:
// nodes, FLOPs, bytes, weights and peak workspace. The text dump's summary and the manifest's
// `statistics.devices` both read it; ferry-compile computes it once for both.
#pragma once

#include <map>
#include <optional>

#include "passes/compile.h"
#include "runtime/executable.h"

namespace ferry {

struct DeviceTotals {
  int nodes = 0;     ///< nodes computing on it per run; transfers are copies, not counted, and
                     ///< load-time casts (passes/load_time.h) run once, not per run
  double flops = 0;  ///< the op table's estimates (ir/ops.def), per run
  double bytes = 0;  ///< read and written by those nodes, per run
  /// The weights a run reads there: params placed on it and the copies load-time transfers and
  /// casts make there (a weight only those read is released after loading, as Session does).
  double weightBytes = 0;
  /// Peak bytes of its arena in one run, as the runtime plans it (lower()); unknown when the
  /// graph was not lowered (the pipeline stopped early, or the compile was rejected).
  std::optional<size_t> workspaceBytes;
};

/// The totals of every device of `graph` that holds a node, a param or a workspace, in Device
/// order. `lowered` is the executable lower() made of `graph`, whose workspaces give each
/// device's peak workspace; null when there is none (workspaces unknown). Lowers nothing itself.
std::map<Device, DeviceTotals> deviceTotals(const Graph &graph, const Executable *lowered);

/// Whether `result` is a whole, accepted compile: the only kind lower() takes, and so the only
/// kind whose totals have workspaces.
bool lowerable(const CompileResult &result, const CompileOptions &options);

}  // namespace ferry
