// tools/common/compile_flags.cpp — the shared compile-option flags and their checks.
#include "tools/common/compile_flags.h"

#include "backends/registry.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <array>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <limits>
#include <vector>

#include "passes/cost_settings.h"

namespace ferry {

namespace {

// Every flag this file adds, for firstCompileFlagGiven().
constexpr std::array<std::string_view, 11> kFlagNames = {
    "--devices",   "--target",    "--placement",          "--dtype",     "--no-fallback",
    "--cost",      "--cost-file", "--transfers",          "--max-transfer-bytes",
    "--max-casts", "--no-fusion"};

// Stores the value of `e` in `out`, or says which flag was wrong.
template <class T> Status take(Expected<T> e, std::string_view flag, T &out) {
  if (!e) return flagError(flag, oneLine(e.status()));
  out = std::move(e).value();
  return {};
}

// "h2d=allow,d2h=error": each named direction gets its action; the others stay `allow`.
Status transferBudgets(const std::string &spec, Budgets &b) {
  if (spec.empty()) return {};
  constexpr std::string_view kFlag = "--transfers";
  const std::string expected = "expected DIR=ACTION[,...] with DIR one of h2d, d2h, d2d, h2h";
  std::vector<std::string> seen;
  std::string_view rest = spec;
  while (true) {
    size_t comma = rest.find(',');
    std::string_view item = rest.substr(0, comma);
    size_t eq = item.find('=');
    if (eq == std::string_view::npos)
      return flagError(kFlag, expected + ", got '" + std::string(item) + "'");
    std::string dir(item.substr(0, eq));
    BudgetAction *slot = dir == "h2d"   ? &b.h2d
                         : dir == "d2h" ? &b.d2h
                         : dir == "d2d" ? &b.d2d
                         : dir == "h2h" ? &b.h2h
                                        : nullptr;
    if (slot == nullptr) return flagError(kFlag, "unknown direction '" + dir + "': " + expected);
    if (std::find(seen.begin(), seen.end(), dir) != seen.end())
      return flagError(kFlag, "direction '" + dir + "' is given twice");
    seen.push_back(dir);
    FERRY_TRY(take(parseBudgetAction(item.substr(eq + 1)), std::string(kFlag) + " " + dir, *slot));
    if (comma == std::string_view::npos) return {};
    rest.remove_prefix(comma + 1);
  }
}

// --cost-file, then --cost over it. A file's bad lines are all reported, each with its line.
Status costModel(const CompileFlags &f, CostModel &cost) {
  if (!f.costFile.empty()) {
    if (std::string why = unreadableReason(f.costFile); !why.empty())
      return flagError("--cost-file", "cannot read '" + f.costFile + "': " + why);
    std::ifstream in(f.costFile, std::ios::binary);
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (Status s = applyCostFile(cost, text, f.costFile); !s.ok()) {
      std::string why;
      for (const Diagnostic &d : s.diagnostics())
        why += (why.empty() ? "" : "; ") + d.loc.str() + ": " + d.message;
      return flagError("--cost-file", why);
    }
  }
  if (!f.cost.empty())
    if (Status s = applyCostSettings(cost, f.cost); !s.ok()) return flagError("--cost", oneLine(s));
  return {};
}

}  // namespace

std::string defaultDeviceList() {
  std::string list;
  for (Device d : machineDevices()) list += (list.empty() ? "" : ",") + d.str();
  return list;
}

void addPolicyFlags(CLI::App &app, CompileFlags &f) {
  app.add_option("--devices", f.devices,
                 "Devices the model may use, e.g. cpu,cuda:0 (default: cpu, every GPU)")
      ->type_name("LIST")
      ->capture_default_str();
  app.add_option("--target", f.target,
                 "Where values nothing constrains go (default: the first of --devices)")
      ->type_name("DEV");
  app.add_option("--placement", f.placement,
                 "strict (nothing moves implicitly) or auto (transfers where they pay)")
      ->type_name("strict|auto")
      ->capture_default_str();
  app.add_option("--dtype", f.dtype, "Dtype policy: strict, promote, autocast=f16, autocast=bf16")
      ->type_name("POLICY")
      ->capture_default_str();
  app.add_flag("--no-fallback", f.noFallback,
               "An op its device cannot run is an error, not moved to the cpu");
  app.add_flag("--no-fusion", f.noFusion,
               "One kernel per node: no fused elementwise chains or GEMM epilogues");
  app.add_option("--cost", f.cost,
                 "Cost model for auto, e.g. h2d.bandwidth=1e10,cuda.flops=2e13")
      ->type_name("KEY=VALUE,...");
  app.add_option("--cost-file", f.costFile,
                 "Cost settings, one KEY = VALUE per line; --cost wins")
      ->type_name("FILE");
}

void addBudgetFlags(CLI::App &app, CompileFlags &f) {
  app.add_option("--transfers", f.transfers,
                 "Budget: h2d|d2h|d2d|h2h = allow|warn|error, e.g. d2h=error")
      ->type_name("DIR=ACTION,...");
  app.add_option("--max-transfer-bytes", f.maxTransferBytes, "Reject plans moving more per run")
      ->type_name("N");
  app.add_option("--max-casts", f.maxCasts, "Reject plans leaving more casts in the graph")
      ->type_name("N");
}

std::string firstCompileFlagGiven(const CLI::App &app) {
  for (const CLI::Option *o : app.parse_order())
    for (std::string_view name : kFlagNames)
      if (o->check_lname(std::string(name.substr(2)))) return std::string(name);
  return "";
}

std::optional<Diagnostic> unusedTargetWarning(const CompileFlags &flags, const CompileOptions &c,
                                              std::span<const Device> computing) {
  if (!flags.target || computing.empty() ||
      std::find(computing.begin(), computing.end(), c.target) != computing.end())
    return std::nullopt;
  std::string where;
  for (Device d : computing)
    if (where.find(d.str()) == std::string::npos) where += (where.empty() ? "" : ", ") + d.str();
  Diagnostic d;
  d.severity = Severity::Warning;
  d.code = "placement";
  const std::string target = c.target.str();
  if (c.placement == PlacementPolicy::Strict) {
    d.message = "--target " + target + ", but no node runs there: under strict placement every " +
                "node stays on its operands' device, and this model's inputs and params are on " +
                where;
    d.fix("--placement auto, to let ferry move the work to " + target + " where it pays");
  } else {
    d.message = "--target " + target + ", but no node runs there: auto placement kept every node " +
                "on " + where + ", where moving it to " + target + " would cost more than it saves";
    d.fix("ferry-compile --explain %NAME shows the costs behind a node's place; @" + target +
          " on a node pins it there");
  }
  return d;
}

std::optional<Diagnostic> unusedTargetWarning(const CompileFlags &flags, const CompileOptions &c,
                                              const Executable &exe) {
  std::vector<Device> computing;
  for (const Step &st : exe.steps)
    if (st.op != OpKind::Transfer) computing.push_back(exe.slots[static_cast<size_t>(st.result)].device);
  return unusedTargetWarning(flags, c, computing);
}

Status toCompileOptions(const CompileFlags &f, CompileOptions &c) {
  FERRY_TRY(take(parseDeviceList(f.devices), "--devices", c.devices));
  CompileOptions probe;
  probe.devices = c.devices;
  probe.target = c.devices.front();
  FERRY_TRY(validateAlone(probe, "--devices"));
  c.target = c.devices.front();
  if (f.target && f.target->empty())
    return flagError("--target", "expected a device such as cpu, cpu:1 or cuda:0, got ''");
  if (f.target) FERRY_TRY(take(parseDevice(*f.target), "--target", c.target));
  probe.target = c.target;
  FERRY_TRY(validateAlone(probe, "--target"));
  FERRY_TRY(take(parsePlacementPolicy(f.placement), "--placement", c.placement));
  // The library reads a bare "autocast" as f16; a command line says which (as --help lists).
  if (f.dtype == "autocast")
    return flagError("--dtype", "say which precision: autocast=f16 or autocast=bf16");
  FERRY_TRY(take(parseDTypePolicy(f.dtype), "--dtype", c.dtype));
  c.fallback = !f.noFallback;
  c.fusion = !f.noFusion;
  FERRY_TRY(costModel(f, c.cost));
  FERRY_TRY(transferBudgets(f.transfers, c.budgets));
  FERRY_TRY(integerFlag(f.maxTransferBytes, "--max-transfer-bytes", 0, c.budgets.maxTransferBytes));
  FERRY_TRY(integerFlag(f.maxCasts, "--max-casts", 0, c.budgets.maxCasts));
  return validateAlone(c, "options");
}

std::string oneLine(const Status &s) {
  std::string line;
  for (const Diagnostic &d : s.diagnostics()) line += (line.empty() ? "" : "; ") + d.message;
  return line;
}

Status flagError(std::string_view flag, std::string why) {
  return makeError("usage", std::string(flag) + ": " + why);
}

Status validateAlone(const CompileOptions &probe, std::string_view flag) {
  if (Status s = probe.validate(); !s.ok()) return flagError(flag, oneLine(s));
  return {};
}

Status integerFlag(const std::string &s, std::string_view flag, int64_t min,
                   std::optional<int64_t> &out, int64_t max) {
  if (s.empty()) return {};
  int64_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  std::string expected = min == 0   ? "a non-negative integer"
                         : min == 1 ? "a positive integer"
                                    : "an integer of at least " + std::to_string(min);
  // Too many digits for int64 is too large, unless it is too small (a long negative number).
  const bool tooLarge = (ec == std::errc::result_out_of_range && !s.starts_with('-')) ||
                        (ec == std::errc() && v > max);
  if (tooLarge && end == s.data() + s.size())
    return flagError(flag, "'" + s + "' is out of range: expected " + expected + " up to " +
                               std::to_string(max));
  if (ec != std::errc() || end != s.data() + s.size() || v < min)
    return flagError(flag, "expected " + expected + ", got '" + s + "'");
  out = v;
  return {};
}

// A directory opens but does not read, so one byte is read to find out.
std::string unreadableReason(const std::string &path) {
  errno = 0;
  std::FILE *f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) return std::strerror(errno != 0 ? errno : ENOENT);
  std::fgetc(f);
  int err = std::ferror(f) ? errno : 0;
  std::fclose(f);
  return err != 0 ? std::strerror(err) : "";
}

}  // namespace ferry
