// tools/ferry-compile/main.cpp — ferry-compile: check a .fy model, print it as text, DOT or JSON.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <string>

#include "ir/parser.h"
#include "ir/printer.h"
#include "tools/ferry-compile/emit.h"

namespace ferry {

namespace {

// Exit codes, as --help states them.
constexpr int kOk = 0;
constexpr int kRejected = 1;
constexpr int kUsage = 2;

struct Options {
  std::string model;
  std::string emit = "text";
  std::string output;
  std::string diagnostics = "text";
  bool noLocations = false;
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
  if (o.diagnostics == "json")
    std::cerr << renderJson(ds) << "\n";
  else
    std::cerr << renderText(ds, RenderOptions{.snippet = true});
}

// A failure that is not the model's fault (files, options): one line, in the chosen format.
int usageFailure(const std::string &message, const Options &o) {
  if (o.diagnostics == "json")
    std::cerr << renderJson(std::vector<Diagnostic>{
                     Diagnostic{Severity::Error, "io", {}, message, {}, {}}})
              << "\n";
  else
    std::cerr << "ferry-compile: error: " << message << "\n";
  return kUsage;
}

int run(const Options &o) {
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
  EmitOptions emitOptions{.locations = !o.noLocations};
  std::string text = o.emit == "dot" ? emitDot(*graph, emitOptions)
                     : o.emit == "json"
                         ? emitJson(*graph, emitOptions)
                         : printGraph(*graph, PrintOptions{.locations = !o.noLocations});
  if (o.output.empty() || o.output == "-") {
    std::cout << text << std::flush;
    return std::cout ? kOk : usageFailure("cannot write to standard output", o);
  }
  std::ofstream out(o.output, std::ios::binary);
  if (out) out << text;
  if (out) out.flush();
  if (!out) return usageFailure("cannot write '" + o.output + "': " + std::strerror(errno), o);
  return kOk;
}

}  // namespace

}  // namespace ferry

int main(int argc, char **argv) {
  ferry::Options o;
  CLI::App app{"Checks a .fy model (parse, verify, shape inference) and prints it.",
               "ferry-compile"};
  app.add_option("model", o.model, "The model, in ferry's .fy text format")
      ->required()
      ->type_name("MODEL.fy");
  app.add_option("--emit", o.emit, "Output format: text (.fy), dot (Graphviz) or json")
      ->check(CLI::IsMember({"text", "dot", "json"}))
      ->type_name("FORMAT")
      ->capture_default_str();
  app.add_option("-o,--output", o.output, "Write the output to FILE instead of stdout")
      ->type_name("FILE");
  app.add_option("--diagnostics", o.diagnostics, "Format of errors on stderr: text or json")
      ->check(CLI::IsMember({"text", "json"}))
      ->type_name("FORMAT")
      ->capture_default_str();
  app.add_flag("--no-locations", o.noLocations, "Leave source locations out of the output");
  app.footer("Exit status: 0 ok, 1 the model was rejected (diagnostics on stderr), "
             "2 usage error or unreadable file.\n");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError &e) {
    if (e.get_exit_code() == static_cast<int>(CLI::ExitCodes::Success)) return app.exit(e);
    std::cerr << "ferry-compile: error: " << e.what() << " (see --help)\n";
    return ferry::kUsage;
  }
  return ferry::run(o);
}
