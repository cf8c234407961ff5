// tools/ferry-run/report.cpp — summary lines for tensors and the timing block of ferry-run.
#include "tools/ferry-run/report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>

#include "ir/printer.h"

namespace ferry {

namespace {

constexpr int64_t kFirstValues = 5;

std::string number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.5g", v);
  return buf;
}

std::string millis(double seconds) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f ms", seconds * 1e3);
  return buf;
}

// "815144 bytes (796.0 KiB)"; the exact count first, so that scripts can read it.
std::string bytes(int64_t n) {
  std::string s = std::to_string(n) + " bytes";
  const char *units[] = {"KiB", "MiB", "GiB"};
  double v = static_cast<double>(n);
  int unit = -1;
  while (v >= 1024 && unit < 2) v /= 1024, ++unit;
  if (unit < 0) return s;
  char buf[32];
  std::snprintf(buf, sizeof buf, " (%.1f %s)", v, units[unit]);
  return s + buf;
}

// `s` padded with spaces to `width`, on the left when `right` (numbers) or on the right.
std::string padded(std::string s, size_t width, bool right) {
  if (s.size() >= width) return s;
  return right ? std::string(width - s.size(), ' ') + s : s + std::string(width - s.size(), ' ');
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// "examples/mlp.fy:9", "model.onnx: node 'Gemm_3' (#12, Gemm)", or "<unknown>".
std::string fileLine(const Location &loc) {
  if (!loc.known()) return "<unknown>";
  if (loc.imported()) return loc.str();
  return (loc.file.empty() ? std::string("<unknown>") : loc.file.str()) + ":" +
         std::to_string(loc.line);
}

}  // namespace

std::string summarizeTensor(const std::string &name, const Tensor &t) {
  std::string line = name + ": " + t.str();
  const TensorData &d = t.data();
  if (d.numel() == 0) return line + "  (empty)";
  const bool exact = !isFloating(d.dtype());  // bool and integers print without rounding
  auto value = [&](int64_t i) { return exact ? std::to_string(d.atInt(i)) : number(d.at(i)); };
  double lo = INFINITY, hi = -INFINITY, sum = 0;
  int64_t nans = 0;
  for (int64_t i = 0; i < d.numel(); ++i) {
    const double v = d.at(i);
    if (std::isnan(v)) {
      ++nans;
      continue;
    }
    lo = std::min(lo, v), hi = std::max(hi, v), sum += v;
  }
  if (nans < d.numel())
    line += "  min " + number(lo) + "  max " + number(hi) + "  mean " +
            number(sum / static_cast<double>(d.numel() - nans));
  if (nans > 0) line += "  nan " + std::to_string(nans);
  line += "  [";
  for (int64_t i = 0; i < std::min(d.numel(), kFirstValues); ++i)
    line += (i > 0 ? ", " : "") + value(i);
  return line + (d.numel() > kFirstValues ? ", ...]" : "]");
}

void Timings::add(double seconds, RunStats stats) {
  wall_.push_back(seconds);
  if (stepSums_.size() < stats.stepSeconds.size()) stepSums_.resize(stats.stepSeconds.size());
  for (size_t i = 0; i < stats.stepSeconds.size(); ++i) stepSums_[i] += stats.stepSeconds[i];
  last_ = std::move(stats);
}

std::vector<double> Timings::stepMeans() const {
  std::vector<double> means = stepSums_;
  for (double &m : means) m /= static_cast<double>(wall_.size());
  return means;
}

const RunStats &Timings::last() const {
  FERRY_CHECK(!wall_.empty()) << "no timed run";
  return last_;
}

std::string renderTimings(const Session &session, const Timings &timings, int64_t warmup,
                          size_t slowest) {
  FERRY_CHECK(timings.runs() > 0) << "renderTimings needs a timed run";
  const Executable &exe = session.executable();
  const std::vector<double> &wall = timings.wallSeconds();
  const size_t runs = timings.runs();
  const std::string count = std::to_string(runs) + (runs == 1 ? " run" : " runs");
  std::string out = "time per run: median " + millis(median(wall)) + ", min " +
                    millis(*std::min_element(wall.begin(), wall.end())) + " (" + count + " after " +
                    std::to_string(warmup) + " warmup)\n";
  const RunStats &last = timings.last();
  out += "last run: " + std::to_string(last.transfers) + " transfers, " +
         bytes(last.transferBytes) + "; " + std::to_string(last.inputMoves) + " input moves, " +
         bytes(last.inputMoveBytes) + "\n";
  // Transfers and casts of weights ran once, when the session was created: no run repeats them.
  if (const LoadStats &load = session.loadStats(); load.steps > 0) {
    const auto casts = std::count_if(exe.loadSteps.begin(), exe.loadSteps.end(),
                                     [](const Step &s) { return s.op == OpKind::Cast; });
    out += "at load, once: " + std::to_string(load.transfers) + " transfers, " +
           bytes(load.transferBytes) + "; " + std::to_string(casts) + " casts\n";
  }
  out += "memory: weights " + bytes(static_cast<int64_t>(session.weightBytes())) + ", workspace " +
         bytes(static_cast<int64_t>(session.workspaceBytes()));
  if (const int64_t packed = session.loadStats().packedWeightBytes; packed > 0)
    out += ", and a copy of weights packed for the GEMMs: " + bytes(packed);
  out += "\n";

  // Each step's mean over the runs; the slowest first, ties in step order.
  std::vector<double> stepMean = timings.stepMeans();
  stepMean.resize(exe.steps.size());
  std::vector<size_t> order(exe.steps.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return stepMean[a] > stepMean[b]; });
  order.resize(std::min(order.size(), slowest));
  if (order.empty()) return out;
  out += "slowest steps (mean of " + count + "):\n";
  auto result = [&](size_t i) {
    return valueRef(exe.slots[static_cast<size_t>(exe.steps[i].result)].name);
  };
  size_t opWidth = 0, resultWidth = 0;
  for (size_t i : order) {
    opWidth = std::max(opWidth, stepOpName(exe.steps[i]).size());
    resultWidth = std::max(resultWidth, result(i).size());
  }
  for (size_t i : order) {
    const Step &s = exe.steps[i];
    out += "  " + padded(millis(stepMean[i]), 10, true) + "  " +
           padded(stepOpName(s), opWidth, false) + "  " +
           padded(result(i), resultWidth, false) + "  " + fileLine(s.loc) +
           (s.inserted ? " (inserted)" : "") + "\n";
  }
  return out;
}

}  // namespace ferry
