// tools/ferry-compile/command_line.cpp — ferry-compile's options and their parsing.
#include "tools/ferry-compile/command_line.h"

#include <CLI/CLI.hpp>
#include <algorithm>

#include "ir/printer.h"
#include "passes/pass.h"
#include "tools/common/cli_errors.h"
#include "tools/common/load_model.h"
#include "tools/common/report.h"

namespace ferry {

namespace {

std::string passNames() {
  std::string names;
  for (const Pass &p : pipeline()) names += (names.empty() ? "" : ", ") + std::string(p.name);
  return names;
}

void addOptions(CLI::App &app, Options &o) {
  app.add_option("model", o.model, "The model: ferry's .fy text, or an ONNX model (.onnx)")
      ->required()
      ->type_name("MODEL");
  app.add_option("--emit", o.emits, "text (annotated .fy, the default), dot, svg, json, cuda or none")
      ->check(CLI::IsMember({"text", "dot", "svg", "json", "cuda", "none"}))
      ->delimiter(',')
      ->expected(1)  // one value per --emit (commas allowed): the model after it stays the model
      ->allow_extra_args(false)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
      ->type_name("FORMAT");
  app.add_option("-o,--output", o.output,
                 "Write the output to FILE; FILE.ferry: the executable for ferry-run")
      ->type_name("FILE");
  app.add_option("--emit-dir", o.emitDir,
                 "Write each --emit (several allowed) to DIR/MODEL.{fy,dot,svg,json,cu}")
      ->type_name("DIR");
  app.add_option("--diagnostics", o.diagnostics,
                 "Format of stderr: text, or json (one JSON array, explanations too)")
      ->check(CLI::IsMember({"text", "json"}))
      ->type_name("FORMAT")
      ->capture_default_str();
  app.add_flag("--no-locations", o.noLocations, "Leave source locations out of the output");
  addShapeFlag(app, o.shapes);
  addInputValueFlag(app, o.inputValues);
  addParamLimitFlag(app, o.maxTotalParamBytes);
  addPolicyFlags(app, o.compile);
  app.add_option("--stop-after", o.stopAfter, "Stop after PASS: " + passNames())
      ->type_name("PASS");
  addBudgetFlags(app, o.compile);
  app.add_flag("--stats", o.stats, "Print transfers, casts, nodes per device and times on stderr");
  app.add_option("--explain", o.explain,
                 "Rejected: options that would compile it; %V,...: why V is where it is")
      ->type_name("[%V,...]")
      ->delimiter(',')
      ->expected(1)
      ->allow_extra_args(false)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  app.footer("Text written to FILE.fy (-o, --emit-dir) puts its params' data (npy params,\n"
             "weights too large to print inline) in FILE.params/ beside it, never over a file\n"
             "that is there (remove the folder or write elsewhere). On stdout, npy params keep\n"
             "their paths and converted weights print inline, up to " +
             std::to_string(PrintOptions{}.maxInline) +
             " elements each.\n"
             "An existing -o FILE is replaced; the model and the files it reads never are.\n\n"
             "Exit status: 0 compiled (warnings on stderr), 1 the model was rejected\n"
             "(diagnostics on stderr), 2 usage error or unreadable file.\n");
}

// `--diagnostics json` anywhere on the command line: even a parse error is then JSON.
bool jsonRequested(const std::vector<std::string> &args) {
  for (size_t i = 0; i < args.size(); ++i)
    if (args[i] == "--diagnostics=json" ||
        (args[i] == "--diagnostics" && i + 1 < args.size() && args[i + 1] == "json"))
      return true;
  return false;
}

// The word after a bare `--explain` that is neither a %value nor an option nor a model file:
// meant as a value name without its %. "" when there is none.
std::string explainWithoutPercent(const std::vector<std::string> &args) {
  for (size_t i = 0; i + 1 < args.size(); ++i) {
    const std::string &next = args[i + 1];
    if (args[i] == "--explain" && !next.starts_with("%") && !next.starts_with("-") &&
        !next.ends_with(".fy") && !next.ends_with(".ferry") && !isOnnxPath(next))
      return next;
  }
  return "";
}

}  // namespace

std::optional<int> parseCommandLine(int argc, char **argv, Options &o) {
  CLI::App app{
      "Compiles a .fy or ONNX model (devices, dtypes, transfers, casts); prints the result.",
      "ferry-compile"};
  addOptions(app, o);
  const std::vector<std::string> given(argv + 1, argv + argc);
  Report report(jsonRequested(given) ? Report::Format::Json : Report::Format::Text,
                "ferry-compile");
  // `--explain` takes an optional value: `--explain %h` names a value, a bare `--explain` (its
  // next argument not a %value) explains a rejection. Rewritten as `--explain=...` for CLI11,
  // which would otherwise take the model file as the value.
  std::vector<std::string> args = given;
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] != "--explain") continue;
    if (i + 1 < args.size() && args[i + 1].starts_with("%")) {
      args[i] += "=" + args[i + 1];
      args.erase(args.begin() + static_cast<ptrdiff_t>(i) + 1);
    } else {
      args[i] += "=*";
    }
  }
  return parseArgs(app, args, report, [&](const CLI::ParseError &e) -> std::string {
    const std::string word = explainWithoutPercent(given);
    if (dynamic_cast<const CLI::ExtrasError *>(&e) == nullptr || word.empty()) return "";
    return "--explain: expected %NAME[,%NAME...] (value names start with %), got '" + word +
           "'; a bare --explain explains a rejected model (see --help)";
  });
}

}  // namespace ferry
