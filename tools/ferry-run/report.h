// tools/ferry-run/report.h — what ferry-run prints about its runs: a summary line per tensor,
// run times, data movement, memory and the slowest steps.
#pragma once

#include <string>
#include <vector>

#include "runtime/session.h"

namespace ferry {

/// What the timing block needs of the timed runs, gathered run by run: each run's wall time
/// (8 bytes a run), per step the sum of its times, and the last run's statistics whole. Nothing
/// else of a run is kept, so memory does not grow with the per-step vectors of every run.
class Timings {
 public:
  /// One timed run: its wall time as the caller measured it, and the Session's statistics.
  void add(double seconds, RunStats stats);

  size_t runs() const { return wall_.size(); }
  const std::vector<double> &wallSeconds() const { return wall_; }
  /// Per step of the executable, its mean time over the runs (empty before the first run).
  std::vector<double> stepMeans() const;
  /// The statistics of the last run added. Precondition: runs() > 0.
  const RunStats &last() const;

 private:
  std::vector<double> wall_;
  std::vector<double> stepSums_;
  RunStats last_;
};

/// "probs: f32[32,10] @cpu  min 0.0012 max 0.31 mean 0.1  [0.1, 0.2, 0.05, 0.3, 0.1, ...]"
std::string summarizeTensor(const std::string &name, const Tensor &t);

/// The timing block: median and minimum wall time per run, the last run's transfers and input
/// moves, the session's memory, and the `slowest` steps by their mean time over the runs.
/// Precondition: `timings` holds at least one run.
std::string renderTimings(const Session &session, const Timings &timings, int64_t warmup,
                          size_t slowest = 5);

}  // namespace ferry
