// tools/ferry-run/report.h — what ferry-run prints about its runs: a summary line per tensor,
// run times, data movement, memory and the slowest steps.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "runtime/session.h"

namespace ferry {

/// One timed run: its wall time as the caller measured it, and the Session's statistics.
struct TimedRun {
  double seconds = 0;
  RunStats stats;
};

/// "probs: f32[32,10] @cpu  min 0.0012 max 0.31 mean 0.1  [0.1, 0.2, 0.05, 0.3, 0.1, ...]"
std::string summarizeTensor(const std::string &name, const Tensor &t);

/// The timing block: median and minimum wall time per run, the last run's transfers and input
/// moves, the session's memory, and the `slowest` steps by median time. `runs` is not empty.
std::string renderTimings(const Session &session, std::span<const TimedRun> runs, int warmup,
                          size_t slowest = 5);

}  // namespace ferry
