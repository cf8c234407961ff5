// tools/ferry-compile/stats.cpp — a compile's statistics as text.
#include "tools/ferry-compile/stats.h"

#include <array>
#include <cmath>
#include <cstdio>
#include <iterator>
#include <vector>

namespace ferry {

namespace {

// 3 significant digits in the unit that suits the magnitude: "12.3 us".
std::string seconds(double s) {
  const char *unit = "s";
  if (s < 1e-6) {
    s *= 1e9;
    unit = "ns";
  } else if (s < 1e-3) {
    s *= 1e6;
    unit = "us";
  } else if (s < 1) {
    s *= 1e3;
    unit = "ms";
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g %s", s, unit);
  return buf;
}

std::string bytesStr(int64_t n) { return std::to_string(n) + (n == 1 ? " byte" : " bytes"); }

// "1.23 M" style: 3 significant digits and a decimal prefix.
std::string quantity(double v, const char *unit) {
  const char *prefix[] = {"", "k", "M", "G", "T", "P"};
  size_t i = 0;
  while (v >= 999.5 && i + 1 < std::size(prefix)) v /= 1000, ++i;
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g %s%s", v, prefix[i], unit);
  return buf;
}

// Bytes in binary units: "98.0 KiB".
std::string binaryBytes(double b) {
  const char *unit[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  size_t i = 0;
  while (b >= 1024 && i + 1 < std::size(unit)) b /= 1024, ++i;
  char buf[32];
  std::snprintf(buf, sizeof buf, i == 0 ? "%.0f %s" : "%.1f %s", b, unit[i]);
  return buf;
}

// "2 groups of 5 nodes", or "none"; `kernels` adds " (one kernel each)" to the groups.
std::string fusedLine(const CompileStats &st, bool kernels = false) {
  std::string s = st.fusionGroups == 0 ? "none"
                                       : std::to_string(st.fusionGroups) +
                                             (st.fusionGroups == 1 ? " group of " : " groups of ") +
                                             std::to_string(st.fusedNodes) + " nodes" +
                                             (kernels ? " (one kernel each)" : "");
  if (st.batchNormsFolded > 0)
    s += "; " + std::to_string(st.batchNormsFolded) + " batch_norm folded into its conv2d";
  if (st.gelusFolded > 0)
    s += "; " + std::to_string(st.gelusFolded) +
         (st.gelusFolded == 1 ? " written-out gelu" : " written-out gelus") + " run as one op each";
  return s;
}

}  // namespace

std::string renderSummary(const CompileResult &result,
                          const std::map<Device, DeviceTotals> &totals) {
  std::string s = "\n# summary of '" + result.graph.name() + "', per run:\n";
  for (const auto &[d, t] : totals) {
    s += "#   @" + d.str() + ": " + std::to_string(t.nodes) +
         (t.nodes == 1 ? " node, " : " nodes, ") + quantity(t.flops, "FLOP") + ", " +
         binaryBytes(t.bytes) + " read and written, weights " + binaryBytes(t.weightBytes) +
         ", peak workspace " +
         (t.workspaceBytes ? binaryBytes(static_cast<double>(*t.workspaceBytes))
                           : std::string("unknown")) +
         "\n";
  }
  const CompileStats &st = result.stats;
  s += "#   transfers: " + std::to_string(st.transfers) + ", " +
       binaryBytes(static_cast<double>(st.transferBytes)) + "\n";
  s += "#   casts: " + std::to_string(st.casts) + " in the graph (" +
       std::to_string(st.castsInserted) + " inserted, " + std::to_string(st.castsFolded) +
       " folded into params, " + std::to_string(st.castsRemoved) + " removed)\n";
  s += "#   at load, once per session (weights): " + std::to_string(st.loadTransfers) +
       " transfers, " + binaryBytes(static_cast<double>(st.loadTransferBytes)) + "; " +
       std::to_string(st.loadCasts) + " casts\n";
  if (st.fusionGroups > 0 || st.batchNormsFolded > 0 || st.gelusFolded > 0)
    s += "#   fused: " + fusedLine(st, /*kernels=*/true) + "\n";
  return s;
}

std::string renderStats(const CompileResult &result, const CompileOptions &options,
                        const StatsOptions &statsOptions) {
  const CompileStats &st = result.stats;
  std::string devices;
  for (Device d : options.devices) devices += (devices.empty() ? "" : ",") + d.str();
  std::string s = "statistics for '" + result.graph.name() + "' (placement " +
                  std::string(placementPolicyName(options.placement)) + ", dtype " +
                  options.dtype.str() + ", devices " + devices + ", target " +
                  options.target.str() + "):\n";
  s += "  transfers: " + std::to_string(st.transfers) + " per run, " + bytesStr(st.transferBytes) +
       "\n";
  for (TransferDirection d : kTransferDirections)
    s += "    " + std::string(directionKey(d)) + ": " + std::to_string(st.transfersOf(d)) + ", " +
         bytesStr(st.bytesOf(d)) + "\n";
  s += "  casts: " + std::to_string(st.casts) + " in the graph; " +
       std::to_string(st.castsInserted) + " inserted, " + std::to_string(st.castsFolded) +
       " folded into params, " + std::to_string(st.castsRemoved) + " removed\n";
  s += "  at load, once per session (weights): " + std::to_string(st.loadTransfers) +
       " transfers, " + bytesStr(st.loadTransferBytes) + "; " + std::to_string(st.loadCasts) +
       " casts\n";
  s += "  removed: " + std::to_string(st.transfersRemoved) + " transfers, " +
       std::to_string(st.nodesRemoved) + " dead nodes\n";
  std::string perDevice;
  for (const auto &[device, n] : st.nodesPerDevice)
    perDevice += (perDevice.empty() ? "" : ", ") + device.str() + " " + std::to_string(n);
  s += "  nodes per device: " + (perDevice.empty() ? "none placed" : perDevice) + "\n";
  s += "  fused: " + fusedLine(st) + "\n";
  s += "  estimated time: " + seconds(st.estimatedSeconds) + " per run\n";
  if (statsOptions.timings) {
    std::string times;
    for (const auto &[pass, t] : st.passSeconds)
      times += (times.empty() ? "" : ", ") + pass + " " + seconds(t);
    s += "  pass times: " + times + " (stopped after " + result.lastPass + ")\n";
  }
  return s;
}

}  // namespace ferry
