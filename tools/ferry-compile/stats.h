// tools/ferry-compile/stats.h — a compile's statistics as text (ferry-compile --stats).
#pragma once

#include <map>
#include <string>

#include "passes/compile.h"
#include "tools/ferry-compile/device_totals.h"

namespace ferry {

struct StatsOptions {
  /// Include the wall time of each pass (the only part that differs from run to run).
  bool timings = true;
};

/// What a compile did, one fact per line under a `statistics for 'NAME' (...)` header:
/// `transfers: N per run, B bytes` with a line per direction (h2d, d2h, d2d, h2h), `casts:`
/// (in the graph, inserted, folded, removed), `removed:` (transfers, dead nodes), `nodes per
/// device:`, `estimated time:` and, with timings, `pass times:`.
std::string renderStats(const CompileResult &result, const CompileOptions &options,
                        const StatsOptions &stats = {});

/// The per-device summary that closes the annotated text dump, as `#` comment lines (the dump
/// still reads back): per device (`totals`, from deviceTotals()) its nodes, FLOPs and bytes per
/// run (the op table's cost estimates), weights, and peak workspace (unknown when the pipeline
/// stopped early), then the transfer and cast totals. Deterministic: no timings.
std::string renderSummary(const CompileResult &result,
                          const std::map<Device, DeviceTotals> &totals);

}  // namespace ferry
