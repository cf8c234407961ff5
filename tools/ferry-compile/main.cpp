// tools/ferry-compile/main.cpp — ferry-compile: compile a .fy or ONNX model (placement, dtypes,
// simplify, budgets) and write the annotated graph as text, DOT, SVG or JSON, the executable
// artifact, and statistics on request.
//
// A run is four steps, so that a usage error never leaves half an output behind:
//   1. check    options (--shape for ONNX models only), output destinations (writable, not the
//               model), the model file
//   2. compile  parse the .fy or import the ONNX model (tools/common/load_model.h; no output is
//               a file the model reads: its npy params), then compile; a rejection still draws
//               the graph (DOT, SVG, JSON)
//   3. render   every output into memory: --explain names, SVG through dot, the executable, a
//               dump too large for stdout and param files already there (-o FILE.fy writes
//               FILE.params/) can fail here, before anything is written
//   4. write    files, then standard output, then stderr (Report) — nothing is written before
#include <algorithm>
#include <iostream>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "ir/printer.h"
#include "passes/compile.h"
#include "passes/cost_settings.h"
#include "passes/lower.h"
#include "runtime/artifact.h"
#include "runtime/executable.h"
#include "tools/ferry-compile/cuda_kernels.h"
#include "tools/common/compile_flags.h"
#include "tools/common/load_model.h"
#include "tools/common/report.h"
#include "tools/ferry-compile/command_line.h"
#include "tools/ferry-compile/device_totals.h"
#include "tools/ferry-compile/dot.h"
#include "tools/ferry-compile/explain.h"
#include "tools/ferry-compile/json.h"
#include "tools/ferry-compile/outputs.h"
#include "tools/ferry-compile/stats.h"
#include "tools/ferry-compile/svg.h"

namespace ferry {

namespace {

// Exit codes, as --help states them.
constexpr int kOk = 0;
constexpr int kRejected = 1;
constexpr int kUsage = 2;

// The options for compile() and for reading the model, each checked with a message that names
// its flag.
Status compileOptions(const Options &o, CompileOptions &c, LoadOptions &load) {
  CompileOptions probe;
  probe.stopAfter = c.stopAfter = o.stopAfter;
  FERRY_TRY(validateAlone(probe, "--stop-after"));
  FERRY_TRY(parseShapeFlags(o.shapes, load.onnx.inputShapes));
  FERRY_TRY(checkShapesApply(o.shapes, o.model));
  FERRY_TRY(readInputValueFlags(o.inputValues, o.model, load.onnx.inputValues));
  FERRY_TRY(applyParamLimitFlag(o.maxTotalParamBytes, load));
  FERRY_TRY(toCompileOptions(o.compile, c));
  load.onnx.inputDevice = onnxInputDevice(c);
  return {};
}

std::string firstCode(const Status &s) {
  return s.diagnostics().empty() ? "io" : s.diagnostics().front().code;
}

// One output, rendered: its destination and its bytes.
struct Rendered {
  Destination to;
  std::string bytes;
};

// `to.format` of `result`; a rejected compile is drawn with its diagnostics on its nodes.
// `totals` are the per-device totals, computed once for the text summary and the manifest. Text
// for a file is checked here (no param file it needs is there already) and printed by write(),
// with its params; text for standard output comes without files, so its params print inline,
// within PrintOptions::maxInline elements each.
Expected<std::string> render(const CompileResult &result, const Destination &to, const Options &o,
                             const CompileOptions &options, const std::string &summary,
                             const std::map<Device, DeviceTotals> &totals) {
  const PrintOptions print{.locations = !o.noLocations};
  if (to.format == "text" && !to.path.empty()) {
    FERRY_TRY(checkSaveModel(result.graph, to.path, print));
    return std::string();
  }
  if (to.format == "text") {
    Expected<std::string> text = printModel(result.graph, print);
    if (!text.ok())
      return makeError("usage", oneLine(text.status()) +
                                    "; write the model to a file instead: -o FILE.fy (its params "
                                    "go to FILE.params/) or --emit-dir DIR");
    return std::move(text).value() + summary;
  }
  if (to.format == "json")
    return emitManifest(result, options, totals, EmitOptions{.locations = !o.noLocations});
  DotOptions dot;
  dot.locations = !o.noLocations;
  dot.devices = options.devices;
  if (!result.ok()) dot.diagnostics = result.diagnostics;
  std::string text = emitDot(result.graph, dot);
  if (to.format == "dot") return text;
  return renderSvg(text);
}

// Writes a rendered output. A text file is written with saveModel, its summary last: params too
// large to print inline (a weight cast at compile time) and the data of npy(...) params go to
// FILE.params/, which its text names, so that the file reads back wherever it is moved with
// its folder.
Status write(const Rendered &r, const CompileResult &result, const Options &o,
             const std::string &summary) {
  if (r.to.format != "text" || r.to.path.empty()) return writeBytes(r.to.path, r.bytes);
  return saveModel(result.graph, r.to.path, PrintOptions{.locations = !o.noLocations}, summary);
}

// --explain %V,...: each value of the graph compile returned, or a usage error naming the value.
Expected<std::vector<std::string>> explainNamed(const Graph &graph, const Options &o) {
  std::vector<std::string> out;
  for (const std::string &name : o.explain) {
    if (name == "*") continue;
    Expected<std::string> why = explainValues(graph, {name});
    if (!why.ok()) return why.status();
    out.push_back(std::move(why).value());
  }
  return out;
}

int run(const Options &o, Report &report) {
  // 1. check
  CompileOptions options;
  // Type errors of single nodes are left to compile()'s verify, beside the rest of the model's.
  LoadOptions load{.parse = ParseOptions{.deferTypeErrors = true}};
  if (Status s = compileOptions(o, options, load); !s.ok()) return report.usage(oneLine(s));
  Expected<OutputPlan> plan = planOutputs({.model = o.model,
                                           .emits = o.emits,
                                           .output = o.output,
                                           .emitDir = o.emitDir,
                                           .stopAfter = o.stopAfter});
  if (!plan.ok()) return report.usage(oneLine(plan.status()));
  if (std::string why = unreadableReason(o.model); !why.empty())
    return report.usage("cannot read '" + o.model + "': " + why, "io");
  if (isExecutableFile(o.model))
    return report.usage("'" + o.model +
                        "' is a compiled executable, not a model; run it with ferry-run");
  if (Status s = checkDestinations(*plan, o.model); !s.ok())
    return report.usage(oneLine(s), firstCode(s));
  const bool explainRejection =
      std::find(o.explain.begin(), o.explain.end(), "*") != o.explain.end();
  const bool explainNames = std::any_of(o.explain.begin(), o.explain.end(),
                                        [](const std::string &n) { return n != "*"; });

  // 2. compile
  Expected<Graph> graph = loadModel(o.model, load);
  if (!graph.ok()) {
    // --shape for a name that is no input of the model.
    if (allOfCode(graph.status(), "usage")) return report.usage(oneLine(graph.status()));
    const std::vector<Diagnostic> &ds = graph.status().diagnostics();
    // A file that vanished or failed between the check above and the parse is no model error.
    const bool io = allOfCode(graph.status(), "io");
    report.diagnostics(ds);
    if (!io && (explainRejection || explainNames))
      report.info("explain",
                  std::string("explain: the model does not ") +
                      (isOnnxPath(o.model) ? "import, which no option but --shape changes"
                                           : "parse or type-check, which no option changes") +
                      ", and it has no values to explain yet; the diagnostics above say where\n");
    report.flush();
    return io ? kUsage : kRejected;
  }
  if (Status s = checkNotRead(*plan, *graph, o.model); !s.ok()) return report.usage(oneLine(s));
  // What this build's backends can run, so that the dump is what ferry-run would execute.
  useBackendCapabilities(options);
  std::optional<Graph> original;
  if (explainRejection) original = *graph;
  const CompileResult result = compile(std::move(graph).value(), options);

  // 3. render. The graph is lowered at most once: for -o MODEL.ferry, and for the workspaces of
  // the per-device totals, which only the text summary and the manifest read.
  Expected<std::vector<std::string>> named = explainNamed(result.graph, o);
  if (!named.ok()) return report.usage(oneLine(named.status()));
  const bool wantsTotals =
      result.ok() &&
      std::any_of(plan->documents.begin(), plan->documents.end(),
                  [](const Destination &d) { return d.format == "text" || d.format == "json"; });
  const bool wantsArtifact = !plan->artifact.empty() && result.ok();
  const bool wantsKernels =
      result.ok() && std::any_of(plan->documents.begin(), plan->documents.end(),
                                 [](const Destination &d) { return d.format == "cuda"; });
  std::optional<Executable> executable;
  if ((wantsArtifact || wantsTotals || wantsKernels) && lowerable(result, options)) {
    Expected<Executable> exe = lower(result.graph, options);
    // The executable and the kernels need it; without one the totals leave the workspaces
    // unknown.
    if (!exe.ok() && (wantsArtifact || wantsKernels))
      return report.usage(oneLine(exe.status()), firstCode(exe.status()));
    if (exe.ok()) executable = std::move(exe).value();
  }
  std::map<Device, DeviceTotals> totals;
  if (wantsTotals) totals = deviceTotals(result.graph, executable ? &*executable : nullptr);
  std::string summary;
  if (wantsTotals) summary = renderSummary(result, totals);
  std::vector<Rendered> outputs;
  for (const Destination &d : plan->documents) {
    // A rejected graph is no model to read, and has no kernels.
    if (!result.ok() && (d.format == "text" || d.format == "cuda")) continue;
    if (d.format == "cuda") {
      if (!executable)
        return report.usage("--emit cuda: the model cannot be lowered to kernels with these options");
      outputs.push_back({d, emitCudaKernels(*executable)});
      continue;
    }
    Expected<std::string> bytes = render(result, d, o, options, summary, totals);
    if (!bytes.ok()) return report.usage(oneLine(bytes.status()), firstCode(bytes.status()));
    outputs.push_back({d, std::move(bytes).value()});
  }

  // 4. write: files first, standard output last, so that a failing file leaves stdout empty.
  if (Status s = makeEmitDir(*plan); !s.ok()) return report.usage(oneLine(s), "io");
  for (const Rendered &r : outputs)
    if (!r.to.path.empty())
      if (Status s = write(r, result, o, summary); !s.ok()) return report.usage(oneLine(s), "io");
  if (wantsArtifact) {  // saved atomically: a temporary file renamed
    FERRY_CHECK(executable) << "-o " << plan->artifact << " without an executable";
    if (Status s = executable->save(plan->artifact); !s.ok()) return report.usage(oneLine(s), "io");
  }
  for (const Rendered &r : outputs)
    if (r.to.path.empty())
      if (Status s = write(r, result, o, summary); !s.ok()) return report.usage(oneLine(s), "io");
  report.diagnostics(result.diagnostics);
  // Compiling ahead of time for a device this build cannot drive is allowed; saying so once
  // saves a surprise at ferry-run.
  if (result.ok()) {
    std::vector<Device> computing;
    for (NodeId id : result.graph.order()) {
      const Node &n = result.graph.node(id);
      if (n.op != OpKind::Transfer && n.op != OpKind::Constant)
        if (const std::optional<Device> &d = result.graph.value(n.result).device) computing.push_back(*d);
    }
    if (std::optional<Diagnostic> w = unusedTargetWarning(o.compile, options, computing))
      report.diagnostics(std::span<const Diagnostic>(&*w, 1));
    if (std::optional<Device> d = firstWithoutBackend(options.devices, builtinBackends())) {
      Diagnostic w{Severity::Warning,
                   "device",
                   {},
                   "the model is compiled for " + d->str() +
                       ", and this build of ferry has no backend for it (backends: " +
                       describeBackends(builtinBackends()) + "): it will not run on this build",
                   {},
                   {}};
      w.fix("run it with a build of ferry that has a backend for " + d->str() +
            ", or compile with --devices that leave it out");
      report.diagnostics(std::span<const Diagnostic>(&w, 1));
    } else if (auto absent = firstAbsent(options.devices, builtinBackends())) {
      // Ahead of time, for a machine with the GPU: fine, and said.
      Diagnostic w{Severity::Warning, "device", {},
                   "the model is compiled for " + absent->first.str() +
                       ", which is not on this machine (" + absent->second + "): it will run where " +
                       absent->first.str() + " is",
                   {}, {}};
      report.diagnostics(std::span<const Diagnostic>(&w, 1));
    }
  }
  if (!result.ok()) {
    if (explainRejection) report.info("explain", suggestOptions(*original, options));
    if (!named->empty())
      report.info("explain", "explain: the model is rejected; its values as the pass '" +
                                 result.lastPass + "' left them:\n");
  } else if (o.stats) {
    report.info("stats", renderStats(result, options, StatsOptions{.timings = true}));
  }
  for (std::string &why : *named) report.info("explain", std::move(why));
  if (!o.explain.empty() && options.placement == PlacementPolicy::Auto) {
    // One line per device kind or link, as --cost takes them.
    const std::string lines = costSettingsText(options.cost);
    std::string text = "explain: auto placement priced with this cost model (--cost, --cost-file):";
    std::string_view group;
    for (std::string_view rest = lines; !rest.empty();) {
      const std::string_view setting = rest.substr(0, rest.find('\n'));
      rest.remove_prefix(setting.size() + 1);
      const std::string_view prefix = setting.substr(0, setting.find('.'));
      text += (prefix == group ? " " : "\n  ") + std::string(setting);
      group = prefix;
    }
    report.info("explain", text + "\n");
  }

  if (result.ok() && explainRejection && named->empty())
    report.info("explain", "explain: compiled; name values to see why each is where it is: "
                           "--explain %NAME[,%NAME...]\n");
  for (const Rendered &r : outputs)
    if (!r.to.path.empty())
      report.info("output", "ferry-compile: wrote " + r.to.format + " to " + r.to.path + "\n");
  if (wantsArtifact)
    report.info("output", "ferry-compile: wrote the executable to " + plan->artifact + "\n");
  report.flush();
  return result.ok() ? kOk : kRejected;
}

}  // namespace

}  // namespace ferry

int main(int argc, char **argv) {
  ferry::Options o;
  if (std::optional<int> done = ferry::parseCommandLine(argc, argv, o)) return *done;
  ferry::Report report(o.diagnostics == "json" ? ferry::Report::Format::Json
                                               : ferry::Report::Format::Text,
                       "ferry-compile");
  return ferry::run(o, report);
}
