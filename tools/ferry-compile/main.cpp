// tools/ferry-compile/main.cpp — ferry-compile: compile a .fy model (placement, dtypes, simplify,
// budgets) and write the annotated graph as text, DOT, SVG or JSON, the executable artifact,
// and statistics on request.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include "ir/parser.h"
#include "ir/printer.h"
#include "passes/compile.h"
#include "passes/pass.h"
#include "runtime/executable.h"
#include "tools/common/compile_flags.h"
#include "tools/ferry-compile/dot.h"
#include "tools/ferry-compile/explain.h"
#include "tools/ferry-compile/json.h"
#include "tools/ferry-compile/stats.h"
#include "tools/ferry-compile/svg.h"

namespace ferry {

namespace {

// Exit codes, as --help states them.
constexpr int kOk = 0;
constexpr int kRejected = 1;
constexpr int kUsage = 2;

// The command line as written; turned into CompileOptions by compileOptions().
struct Options {
  std::string model;
  std::vector<std::string> emits;  ///< empty: text
  std::string output;
  std::string emitDir;
  std::string diagnostics = "text";
  bool noLocations = false;
  CompileFlags compile;
  std::string stopAfter;
  bool stats = false;
  /// --explain: "*" for a bare --explain (rejections), else value names.
  std::vector<std::string> explain;
};

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

// The options for compile(), each checked with a message that names its flag.
Status compileOptions(const Options &o, CompileOptions &c) {
  CompileOptions probe;
  probe.stopAfter = c.stopAfter = o.stopAfter;
  FERRY_TRY(validateAlone(probe, "--stop-after"));
  return toCompileOptions(o.compile, c);
}

// The file extension of each --emit format.
std::string_view extension(const std::string &format) {
  return format == "text" ? ".fy" : format == "dot" ? ".dot" : format == "json" ? ".json" : ".svg";
}

bool isArtifactPath(const std::string &path) { return path.ends_with(".ferry"); }

// Where each format goes: "" for standard output, else a file. Usage errors for combinations
// that would lose output: two formats on standard output, -o with several formats.
Expected<std::vector<std::pair<std::string, std::string>>> destinations(const Options &o) {
  std::vector<std::string> formats;
  for (const std::string &f : o.emits.empty() ? std::vector<std::string>{"text"} : o.emits)
    if (f != "none" && std::find(formats.begin(), formats.end(), f) == formats.end())
      formats.push_back(f);
  const bool artifact = isArtifactPath(o.output);
  const std::string file = artifact ? "" : o.output == "-" ? "" : o.output;
  if (!o.emitDir.empty() && !file.empty())
    return flagError("-o", "give -o FILE or --emit-dir DIR, not both (-o MODEL.ferry can go "
                           "with --emit-dir)");
  if (o.emitDir.empty() && formats.size() > 1)
    return flagError("--emit", "several formats (" + std::to_string(formats.size()) +
                                   ") need --emit-dir DIR, where each is written as MODEL.EXT");
  std::vector<std::pair<std::string, std::string>> out;
  const std::string stem = std::filesystem::path(o.model).stem().string();
  for (const std::string &f : formats)
    out.emplace_back(
        f, !o.emitDir.empty()
               ? (std::filesystem::path(o.emitDir) / (stem + std::string(extension(f)))).string()
               : file);
  return out;
}

Status writeText(const std::string &text, const std::string &path) {
  if (path.empty()) {
    std::cout << text << std::flush;
    if (!std::cout) return makeError("io", "cannot write to standard output");
    return {};
  }
  std::ofstream out(path, std::ios::binary);
  if (out) out << text;
  if (out) out.flush();
  if (!out) return makeError("io", "cannot write '" + path + "': " + std::strerror(errno));
  return {};
}

// Writes `graph` as `format` to `path` ("" = standard output). A text file is written with
// saveModel: params too large to print inline (a weight cast at compile time) go beside it as
// the .npy files its text names, so that the dump reads back. `diagnostics` of a rejected
// compile mark their nodes in the pictures; `summary` closes the text.
Status writeFormat(const CompileResult &result, const std::string &format, const std::string &path,
                   const Options &o, const CompileOptions &options,
                   const std::vector<Diagnostic> &diagnostics, const std::string &summary) {
  const Graph &graph = result.graph;
  const PrintOptions printOptions{.locations = !o.noLocations};
  DotOptions dot;
  dot.locations = !o.noLocations;
  dot.devices = options.devices;
  dot.diagnostics = diagnostics;
  if (format == "text" && !path.empty()) {
    FERRY_TRY(saveModel(graph, path, printOptions));
    std::ofstream out(path, std::ios::binary | std::ios::app);
    if (out) out << summary;
    if (!out.flush())
      return makeError("io", "cannot write '" + path + "': " + std::strerror(errno));
    return {};
  }
  if (format == "text") return writeText(printGraph(graph, printOptions) + summary, path);
  if (format == "dot") return writeText(emitDot(graph, dot), path);
  if (format == "svg") return renderSvg(emitDot(graph, dot), path);
  return writeText(emitManifest(result, options, EmitOptions{.locations = !o.noLocations}), path);
}

// Each device's workspace for one run, as the runtime would plan it; empty when the graph cannot
// be lowered (the pipeline stopped before the end).
std::map<Device, size_t> workspaces(const Graph &graph, const CompileOptions &options) {
  std::map<Device, size_t> out;
  if (!options.stopAfter.empty()) return out;
  Expected<Executable> exe = lower(graph, options);
  if (exe.ok())
    for (const Workspace &w : exe->workspaces) out[w.device] = w.bytes;
  return out;
}

Status writeArtifact(const Graph &graph, const CompileOptions &options, const std::string &path) {
  Expected<Executable> exe = lower(graph, options);
  if (!exe.ok()) return exe.status();
  return exe->save(path);
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
    if (!io && std::find(o.explain.begin(), o.explain.end(), "*") != o.explain.end())
      std::cerr << "explain: the model does not parse or type-check, which no option changes; "
                   "the diagnostics above say where\n";
    return io ? kUsage : kRejected;
  }
  Expected<std::vector<std::pair<std::string, std::string>>> outputs = destinations(o);
  if (!outputs.ok()) return usageFailure(oneLine(outputs.status()), o, "usage");
  if (!o.emitDir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(o.emitDir, ec);
    if (ec) return usageFailure("cannot create '" + o.emitDir + "': " + ec.message(), o);
  }
  // What this build's backends can run, so that the dump is what ferry-run would execute.
  Capabilities table = backendCapabilities();
  table.merge(options.capabilities);
  options.capabilities = std::move(table);
  const bool explainRejection =
      std::find(o.explain.begin(), o.explain.end(), "*") != o.explain.end();
  std::optional<Graph> original;
  if (explainRejection) original = *graph;
  CompileResult result = compile(std::move(graph).value(), options);
  printDiagnostics(result.diagnostics, o);
  if (!result.ok()) {
    if (explainRejection) std::cerr << suggestOptions(*original, options);
    // A rejected graph is still drawn, its offending nodes in red, and the manifest carries
    // its diagnostics.
    for (const auto &[format, path] : *outputs)
      if (format == "dot" || format == "svg" || format == "json")
        if (Status s = writeFormat(result, format, path, o, options, result.diagnostics, "");
            !s.ok())
          return usageFailure(oneLine(s), o);
    return kRejected;
  }
  const std::string summary = renderSummary(result, workspaces(result.graph, options));
  for (const auto &[format, path] : *outputs)
    if (Status s = writeFormat(result, format, path, o, options, {}, summary); !s.ok())
      return usageFailure(oneLine(s), o);
  if (isArtifactPath(o.output)) {
    if (!options.stopAfter.empty())
      return usageFailure("-o " + o.output +
                              " writes an executable, which needs the whole "
                              "pipeline; --stop-after " +
                              options.stopAfter + " stops before it",
                          o, "usage");
    if (Status s = writeArtifact(result.graph, options, o.output); !s.ok())
      return usageFailure(oneLine(s), o);
  }
  // After the graph, on stderr: stdout stays a valid .fy / DOT / JSON document.
  if (o.stats) std::cerr << renderStats(result, options, StatsOptions{.timings = true});
  std::vector<std::string> names;
  for (const std::string &n : o.explain)
    if (n != "*") names.push_back(n);
  if (!names.empty()) {
    Expected<std::string> why = explainValues(result.graph, names);
    if (!why.ok()) return usageFailure(oneLine(why.status()), o, "usage");
    std::cerr << *why;
  } else if (explainRejection) {
    std::cerr << "explain: compiled; name values to see why each is where it is: --explain "
                 "%NAME[,%NAME...]\n";
  }
  for (const auto &[format, path] : *outputs)
    if (!path.empty()) std::cerr << "ferry-compile: wrote " << format << " to " << path << "\n";
  if (isArtifactPath(o.output))
    std::cerr << "ferry-compile: wrote the executable to " << o.output << "\n";
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
  app.add_option("--emit", o.emits, "text (annotated .fy, the default), dot, svg, json or none")
      ->check(CLI::IsMember({"text", "dot", "svg", "json", "none"}))
      ->delimiter(',')
      ->expected(1)  // one value per --emit (commas allowed): the model after it stays the model
      ->allow_extra_args(false)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
      ->type_name("FORMAT");
  app.add_option("-o,--output", o.output,
                 "Write the output to FILE; FILE.ferry: the executable for ferry-run")
      ->type_name("FILE");
  app.add_option("--emit-dir", o.emitDir,
                 "Write each --emit (several allowed) to DIR/MODEL.{fy,dot,svg,json}")
      ->type_name("DIR");
  app.add_option("--diagnostics", o.diagnostics, "Format of errors on stderr: text or json")
      ->check(CLI::IsMember({"text", "json"}))
      ->type_name("FORMAT")
      ->capture_default_str();
  app.add_flag("--no-locations", o.noLocations, "Leave source locations out of the output");
  ferry::addPolicyFlags(app, o.compile);
  app.add_option("--stop-after", o.stopAfter, "Stop after this pass: " + ferry::passNames())
      ->type_name("PASS");
  ferry::addBudgetFlags(app, o.compile);
  app.add_flag("--stats", o.stats, "Print transfers, casts, nodes per device and times on stderr");
  app.add_option("--explain", o.explain,
                 "Rejected: options that would compile it; %V,...: why V is where it is")
      ->type_name("[%V,...]")
      ->delimiter(',')
      ->expected(1)
      ->allow_extra_args(false)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  app.footer("Exit status: 0 compiled (warnings on stderr), 1 the model was rejected\n"
             "(diagnostics on stderr), 2 usage error or unreadable file.\n");
  // `--explain` takes an optional value: `--explain %h` names a value, a bare `--explain` (its
  // next argument not a %value) explains a rejection. Rewritten as `--explain=...` for CLI11,
  // which would otherwise take the model file as the value.
  std::vector<std::string> args(argv + 1, argv + argc);
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] != "--explain") continue;
    if (i + 1 < args.size() && args[i + 1].starts_with("%")) {
      args[i] += "=" + args[i + 1];
      args.erase(args.begin() + static_cast<ptrdiff_t>(i) + 1);
    } else {
      args[i] += "=*";
    }
  }
  std::reverse(args.begin(), args.end());  // CLI11 takes them in reverse
  try {
    app.parse(args);
  } catch (const CLI::ParseError &e) {
    if (e.get_exit_code() == static_cast<int>(CLI::ExitCodes::Success)) return app.exit(e);
    std::cerr << "ferry-compile: error: " << e.what() << " (see --help)\n";
    return ferry::kUsage;
  }
  return ferry::run(o);
}
