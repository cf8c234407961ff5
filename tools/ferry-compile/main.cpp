// tools/ferry-compile/main.cpp — ferry-compile: compile a .fy model (placement, dtypes, simplify,
// budgets) and print the annotated graph as text, DOT or JSON, with statistics on request.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <iostream>
#include <string>

#include "ir/parser.h"
#include "ir/printer.h"
#include "passes/compile.h"
#include "passes/pass.h"
#include "tools/common/compile_flags.h"
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
  CompileFlags compile;
  std::string stopAfter;
  bool stats = false;
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
  ferry::addPolicyFlags(app, o.compile);
  app.add_option("--stop-after", o.stopAfter, "Stop after this pass: " + ferry::passNames())
      ->type_name("PASS");
  ferry::addBudgetFlags(app, o.compile);
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
