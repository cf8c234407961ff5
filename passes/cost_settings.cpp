// passes/cost_settings.cpp — reads and writes the cost model as key=value settings.
#include "passes/cost_settings.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <limits>

namespace ferry {

namespace {

// One number of the cost model: its key, whether it is a rate (positive) or a fixed cost (zero
// or more), and where it lives.
struct Field {
  std::string_view key;
  bool rate;
  double &(*get)(CostModel &);
};

#define FERRY_COST_FIELD(KEY, RATE, EXPR) \
  Field { KEY, RATE, [](CostModel &c) -> double & { return EXPR; } }

const Field kFields[] = {
    FERRY_COST_FIELD("cpu.flops", true, c.host.flopsPerSecond),
    FERRY_COST_FIELD("cpu.bandwidth", true, c.host.bytesPerSecond),
    FERRY_COST_FIELD("cpu.launch", false, c.host.launchSeconds),
    FERRY_COST_FIELD("cuda.flops", true, c.cuda.flopsPerSecond),
    FERRY_COST_FIELD("cuda.bandwidth", true, c.cuda.bytesPerSecond),
    FERRY_COST_FIELD("cuda.launch", false, c.cuda.launchSeconds),
    FERRY_COST_FIELD("h2d.bandwidth", true, c.hostToDevice.bytesPerSecond),
    FERRY_COST_FIELD("h2d.latency", false, c.hostToDevice.latencySeconds),
    FERRY_COST_FIELD("d2h.bandwidth", true, c.deviceToHost.bytesPerSecond),
    FERRY_COST_FIELD("d2h.latency", false, c.deviceToHost.latencySeconds),
    FERRY_COST_FIELD("d2d.bandwidth", true, c.deviceToDevice.bytesPerSecond),
    FERRY_COST_FIELD("d2d.latency", false, c.deviceToDevice.latencySeconds),
    FERRY_COST_FIELD("h2h.bandwidth", true, c.hostToHost.bytesPerSecond),
    FERRY_COST_FIELD("h2h.latency", false, c.hostToHost.latencySeconds),
};

#undef FERRY_COST_FIELD

std::string keyList() {
  std::string s;
  for (const Field &f : kFields) s += (s.empty() ? "" : ", ") + std::string(f.key);
  return s;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

// The message of a bad setting, or "" when `key=value` was applied.
std::string set(CostModel &cost, std::string_view key, std::string_view value) {
  const Field *field = nullptr;
  for (const Field &f : kFields)
    if (f.key == key) field = &f;
  if (!field) return "unknown cost setting '" + std::string(key) + "'; the settings: " + keyList();
  const std::string expected = field->rate ? "a positive number (e.g. 2e10)"
                                           : "a number >= 0 (seconds, e.g. 1e-5)";
  double v = 0;
  auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
  if (value.empty() || ec != std::errc() || end != value.data() + value.size() || !std::isfinite(v) ||
      (field->rate ? v <= 0 : v < 0))
    return std::string(key) + ": expected " + expected + ", got '" + std::string(value) + "'";
  field->get(cost) = v;
  return "";
}

}  // namespace

Status setCost(CostModel &cost, std::string_view key, std::string_view value) {
  std::string why = set(cost, key, value);
  return why.empty() ? Status() : makeError("options", why);
}

Status applyCostSettings(CostModel &cost, std::string_view settings) {
  std::string_view rest = settings;
  while (true) {
    const size_t comma = rest.find(',');
    const std::string_view item = trim(rest.substr(0, comma));
    const size_t eq = item.find('=');
    if (eq == std::string_view::npos)
      return makeError("options", "expected KEY=VALUE[,KEY=VALUE...], got '" + std::string(item) + "'");
    FERRY_TRY(setCost(cost, trim(item.substr(0, eq)), trim(item.substr(eq + 1))));
    if (comma == std::string_view::npos) return Status();
    rest.remove_prefix(comma + 1);
  }
}

Status applyCostFile(CostModel &cost, std::string_view text, const std::string &file) {
  DiagnosticEngine diags;
  int line = 0;
  std::string_view rest = text;
  while (!rest.empty()) {
    ++line;
    const size_t nl = rest.find('\n');
    std::string_view raw = rest.substr(0, nl);
    rest = nl == std::string_view::npos ? std::string_view() : rest.substr(nl + 1);
    const std::string_view content = trim(raw.substr(0, raw.find('#')));
    if (content.empty()) continue;
    const int col = static_cast<int>(content.data() - raw.data()) + 1;
    const size_t eq = content.find('=');
    std::string why = eq == std::string_view::npos
                          ? "expected KEY = VALUE, got '" + std::string(content) + "'"
                          : set(cost, trim(content.substr(0, eq)), trim(content.substr(eq + 1)));
    if (!why.empty()) diags.error("options", Location{file, line, col}, why);
  }
  if (diags.hasErrors()) return Status(diags.take());
  return Status();
}

std::string costSettingsText(const CostModel &cost) {
  CostModel copy = cost;
  std::string s;
  for (const Field &f : kFields) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.6g", f.get(copy));
    s += std::string(f.key) + "=" + buf + "\n";
  }
  return s;
}

}  // namespace ferry
