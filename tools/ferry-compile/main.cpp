// tools/ferry-compile/main.cpp — ferry-compile: compile a .fy model (placement, dtypes, simplify,
// budgets) and print the annotated graph as text, DOT or JSON, with statistics on request.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <optional>
#include <string>

#include "ir/parser.h"
#include "ir/printer.h"
#include "passes/compile.h"
#include "passes/pass.h"
#include "tools/ferry-compile/emit.h"

namespace ferry {

namespace {

// Exit codes, as --help states them.
constexpr int kOk = 0;
constexpr int kRejected = 1;
constexpr int kUsage = 2;

// The command line as written; turned into CompileOptions by compileOptions().
struct Options {
  std::string model;
  std::string emit = "text";
  std::string output;
  std::string diagnostics = "text";
  bool noLocations = false;
  std::string devices = "cpu";
  std::string target;  // "": the first of `devices`
  std::string placement = "strict";
  std::string dtype = "strict";
  bool noFallback = false;
  std::string stopAfter;
  std::string transfers;
  std::string maxTransferBytes;
  std::string maxCasts;
  bool stats = false;
};

// Why `path` cannot be read (strerror text), or "" when it can. A directory opens but does not
// read, so one byte is read to find out.
std::string unreadableReason(const std::string &path) {
  errno = 0;
  std::FILE *f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) return std::strerror(errno != 0 ? errno : ENOENT);
  std::fgetc(f);
  int err = std::ferror(f) ? errno : 0;
  std::fclose(f);
  return err != 0 ? std::strerror(err) : "";
}

void printDiagnostics(const std::vector<Diagnostic> &ds, const Options &o) {
  if (ds.empty()) return;
  if (o.diagnostics == "json")
    std::cerr << renderJson(ds) << "\n";
  else
    std::cerr << renderText(ds, RenderOptions{.snippet = true});
}

// A failure that is not the model's fault (files, options): one line, in the chosen format.
int usageFailure(const std::string &message, const Options &o, const std::string &code = "io") {
  if (o.diagnostics == "json")
    std::cerr << renderJson(std::vector<Diagnostic>{
                     Diagnostic{Severity::Error, code, {}, message, {}, {}}})
              << "\n";
  else
    std::cerr << "ferry-compile: error: " << message << "\n";
  return kUsage;
}

// The messages of a failed option check, joined into one line.
std::string oneLine(const Status &s) {
  std::string line;
  for (const Diagnostic &d : s.diagnostics()) line += (line.empty() ? "" : "; ") + d.message;
  return line;
}

// A bad option value, reported as one line naming its flag: "--flag: why".
Status flagError(std::string_view flag, std::string why) {
  return makeError("usage", std::string(flag) + ": " + why);
}

// Stores the value of `e` in `out`, or says which flag was wrong.
template <class T> Status take(Expected<T> e, std::string_view flag, T &out) {
  if (!e) return flagError(flag, oneLine(e.status()));
  out = std::move(e).value();
  return {};
}

// An option checked on its own by CompileOptions::validate (everything else at its default, so
// that a message is about this option only).
Status validateAlone(const CompileOptions &probe, std::string_view flag) {
  if (Status s = probe.validate(); !s.ok()) return flagError(flag, oneLine(s));
  return {};
}

Status nonNegative(const std::string &s, std::string_view flag, std::optional<int64_t> &out) {
  if (s.empty()) return {};
  int64_t v = -1;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || v < 0)
    return flagError(flag, "expected a non-negative integer, got '" + s + "'");
  out = v;
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

// The options for compile(), each checked with a message that names its flag.
Status compileOptions(const Options &o, CompileOptions &c) {
  FERRY_TRY(take(parseDeviceList(o.devices), "--devices", c.devices));
  CompileOptions probe;
  probe.devices = c.devices;
  probe.target = c.devices.front();
  FERRY_TRY(validateAlone(probe, "--devices"));
  c.target = c.devices.front();
  if (!o.target.empty()) FERRY_TRY(take(parseDevice(o.target), "--target", c.target));
  probe.target = c.target;
  FERRY_TRY(validateAlone(probe, "--target"));
  FERRY_TRY(take(parsePlacementPolicy(o.placement), "--placement", c.placement));
  FERRY_TRY(take(parseDTypePolicy(o.dtype), "--dtype", c.dtype));
  c.fallback = !o.noFallback;
  probe = CompileOptions{};
  probe.stopAfter = c.stopAfter = o.stopAfter;
  FERRY_TRY(validateAlone(probe, "--stop-after"));
  FERRY_TRY(transferBudgets(o.transfers, c.budgets));
  FERRY_TRY(nonNegative(o.maxTransferBytes, "--max-transfer-bytes", c.budgets.maxTransferBytes));
  FERRY_TRY(nonNegative(o.maxCasts, "--max-casts", c.budgets.maxCasts));
  return validateAlone(c, "options");
}

// Writes the graph in the chosen format to stdout or to the output file. A text file is written
// with saveModel: params too large to print inline (a weight cast at compile time) go beside it
// as the .npy files its text names, so that the dump reads back.
Status writeOutput(const Graph &graph, const Options &o) {
  const PrintOptions printOptions{.locations = !o.noLocations};
  const EmitOptions emitOptions{.locations = !o.noLocations};
  bool toFile = !o.output.empty() && o.output != "-";
  if (toFile && o.emit == "text") return saveModel(graph, o.output, printOptions);
  std::string text = o.emit == "dot"    ? emitDot(graph, emitOptions)
                     : o.emit == "json" ? emitJson(graph, emitOptions)
                                        : printGraph(graph, printOptions);
  if (!toFile) {
    std::cout << text << std::flush;
    if (!std::cout) return makeError("io", "cannot write to standard output");
    return {};
  }
  std::ofstream out(o.output, std::ios::binary);
  if (out) out << text;
  if (out) out.flush();
  if (!out) return makeError("io", "cannot write '" + o.output + "': " + std::strerror(errno));
  return {};
}

int run(const Options &o) {
  CompileOptions options;
  if (Status s = compileOptions(o, options); !s.ok()) return usageFailure(oneLine(s), o, "usage");
  if (std::string why = unreadableReason(o.model); !why.empty())
    return usageFailure("cannot read '" + o.model + "': " + why, o);
  Expected<Graph> graph = parseFile(o.model);
  if (!graph.ok()) {
    const std::vector<Diagnostic> &ds = graph.status().diagnostics();
    printDiagnostics(ds, o);
    // A file that vanished or failed between the check above and the parse is no model error.
    bool io = std::all_of(ds.begin(), ds.end(), [](const Diagnostic &d) { return d.code == "io"; });
    return io ? kUsage : kRejected;
  }
  CompileResult result = compile(std::move(graph).value(), options);
  printDiagnostics(result.diagnostics, o);
  if (!result.ok()) return kRejected;

  if (Status s = writeOutput(result.graph, o); !s.ok()) return usageFailure(oneLine(s), o);
  // After the graph, on stderr: stdout stays a valid .fy / DOT / JSON document.
  if (o.stats) std::cerr << renderStats(result, options, StatsOptions{.timings = true});
  return kOk;
}

std::string passNames() {
  std::string names;
  for (const Pass &p : pipeline()) names += (names.empty() ? "" : ", ") + std::string(p.name);
  return names;
}

}  // namespace

}  // namespace ferry

int main(int argc, char **argv) {
  ferry::Options o;
  CLI::App app{"Compiles a .fy model (devices, dtypes, transfers, casts); prints the result.",
               "ferry-compile"};
  app.add_option("model", o.model, "The model, in ferry's .fy text format")
      ->required()
      ->type_name("MODEL.fy");
  app.add_option("--emit", o.emit, "Output format: text (.fy), dot (Graphviz) or json")
      ->check(CLI::IsMember({"text", "dot", "json"}))
      ->type_name("FORMAT")
      ->capture_default_str();
  app.add_option("-o,--output", o.output,
                 "Write the output to FILE (text: large params as .npy files beside it)")
      ->type_name("FILE");
  app.add_option("--diagnostics", o.diagnostics, "Format of errors on stderr: text or json")
      ->check(CLI::IsMember({"text", "json"}))
      ->type_name("FORMAT")
      ->capture_default_str();
  app.add_flag("--no-locations", o.noLocations, "Leave source locations out of the output");
  app.add_option("--devices", o.devices, "Devices the model may use, e.g. cpu,cpu:1,cuda:0")
      ->type_name("LIST")
      ->capture_default_str();
  app.add_option("--target", o.target,
                 "Where values nothing constrains go (default: the first of --devices)")
      ->type_name("DEV");
  app.add_option("--placement", o.placement,
                 "strict (nothing moves implicitly) or auto (transfers where they pay)")
      ->type_name("strict|auto")
      ->capture_default_str();
  app.add_option("--dtype", o.dtype, "Dtype policy: strict, promote, autocast=f16, autocast=bf16")
      ->type_name("POLICY")
      ->capture_default_str();
  app.add_flag("--no-fallback", o.noFallback,
               "An op its device cannot run is an error, not moved to the cpu");
  app.add_option("--stop-after", o.stopAfter, "Stop after this pass: " + ferry::passNames())
      ->type_name("PASS");
  app.add_option("--transfers", o.transfers,
                 "Budget: h2d|d2h|d2d|h2h = allow|warn|error, e.g. d2h=error")
      ->type_name("DIR=ACTION,...");
  app.add_option("--max-transfer-bytes", o.maxTransferBytes, "Reject plans moving more per run")
      ->type_name("N");
  app.add_option("--max-casts", o.maxCasts, "Reject plans leaving more casts in the graph")
      ->type_name("N");
  app.add_flag("--stats", o.stats, "Print transfers, casts, nodes per device and times on stderr");
  app.footer("Exit status: 0 compiled (warnings on stderr), 1 the model was rejected\n"
             "(diagnostics on stderr), 2 usage error or unreadable file.\n");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError &e) {
    if (e.get_exit_code() == static_cast<int>(CLI::ExitCodes::Success)) return app.exit(e);
    std::cerr << "ferry-compile: error: " << e.what() << " (see --help)\n";
    return ferry::kUsage;
  }
  return ferry::run(o);
}
