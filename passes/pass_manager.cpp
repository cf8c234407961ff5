// passes/pass_manager.cpp — compile(): runs the pipeline (a list of passes, each a plain
// function over the graph), verifies after each pass when asked, times the passes and describes
// the result. It stops after the requested pass, or on errors: at once when they leave no graph
// to judge (PassContext::broken), else before the first pass that does not judge the model, so
// that verify, placement and dtype all report what they find in one run.
#include <algorithm>
#include <chrono>
#include <tuple>

#include "ir/printer.h"
#include "ir/verifier.h"
#include "passes/compile.h"
#include "passes/explain.h"
#include "passes/load_time.h"
#include "passes/pass.h"

namespace ferry {

namespace {

constexpr Pass kPipeline[] = {
    {"verify", "check structure and infer every type", verifyPass, true},
    {"placement", "decide each value's device; insert transfers", placeDevices, true},
    {"dtype", "decide each op's compute dtype; insert casts", assignDTypes, true},
    {"simplify", "fold param casts, drop round trips, merge duplicates, remove dead nodes",
     simplify},
    {"budget", "check transfers and casts against the budgets", checkBudgets},
    {"fusion", "group elementwise chains and GEMM epilogues into fused kernels", fuse},
};

// Invariants that hold once placement has run: every node has a device, and every operand is on
// its node's device (a transfer's operand is on the transfer's source side by construction).
Status verifyPlaced(const Graph &g) {
  DiagnosticEngine diags;
  for (NodeId id : g.order()) {
    const Node &n = g.node(id);
    const Value &r = g.value(n.result);
    if (!r.device) {
      diags.error("verify", n.loc, valueRef(r.name) + " has no device after placement");
      continue;
    }
    if (n.op == OpKind::Transfer) continue;
    for (ValueId o : n.operands) {
      const Value &v = g.value(o);
      if (v.device != r.device)
        diags.error("verify", n.loc,
                    "operand " + valueRef(v.name) + " of '" + std::string(n.info().name) +
                        "' is on " + (v.device ? v.device->str() : "no device") + ", the node on " +
                        r.device->str());
    }
  }
  if (diags.hasErrors()) return Status(diags.take());
  return {};
}

}  // namespace

std::span<const Pass> pipeline() { return kPipeline; }

void verifyPass(Graph &graph, PassContext &ctx) {
  Verification v = verifyGraph(graph);
  ctx.broken = v.structural;
  ctx.rejected.assign(graph.valueCount(), Rejected::No);
  for (const Verification::TypeError &e : v.typeErrors) {
    const Node &n = graph.node(e.node);
    ctx.rejected[n.result] = e.typeHolds ? Rejected::Reported : Rejected::Untyped;
    // An operand of the wrong kind (f32 indices): why it has its dtype, and the cast that fixes it.
    Diagnostic &d = v.diagnostics[e.diagnostic];
    std::vector<std::vector<std::string>> rows;
    std::vector<size_t> wrong;
    for (size_t i = 0; i < n.operands.size(); ++i) {
      const Value &o = graph.value(n.operands[i]);
      if (!wrongOperandKind(n.info(), i, o.type.dtype)) continue;
      wrong.push_back(i);
      rows.push_back({"operand " + std::to_string(i) + " (" + n.info().operand(i).name + ")",
                      valueRef(o.name), o.type.str(), explainDType(graph, o.id)});
    }
    std::vector<std::string> lines = alignColumns(rows);
    for (size_t k = 0; k < wrong.size(); ++k)
      d.detail(std::move(lines[k]), definitionLoc(graph, n.operands[wrong[k]]));
    for (size_t i : wrong) d.fix(operandKindFix(graph, n, i));
  }
  ctx.diags.append(v.diagnostics);
}

bool CompileResult::ok() const {
  for (const Diagnostic &d : diagnostics)
    if (d.severity == Severity::Error) return false;
  return true;
}

namespace {

void runPipeline(CompileResult &result, const CompileOptions &options) {
  if (Status s = options.validate(); !s.ok()) {
    result.diagnostics = std::move(s).takeDiagnostics();
    return;
  }
  DiagnosticEngine diags;
  PassContext ctx{options, diags, result.stats};
  bool placed = false;
  int reporting = 0;  // passes that reported errors
  for (const Pass &pass : pipeline()) {
    // Past errors only the passes that judge the model run: each reports its own, and none of
    // them repeats or cascades another's (PassContext::rejected).
    if (diags.hasErrors() && !pass.judges) break;
    const int before = diags.errorCount();
    auto start = std::chrono::steady_clock::now();
    pass.run(result.graph, ctx);
    reporting += diags.errorCount() > before;
    result.stats.passSeconds.emplace_back(
        pass.name, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    result.lastPass = pass.name;
    placed = placed || pass.name == "placement";
    if (ctx.broken) break;
    // A rejected graph breaks the invariants by definition; checking them is for accepted ones.
    if (options.verifyEachPass && pass.name != "verify" && !diags.hasErrors()) {
      // A pass that leaves a broken graph is a bug in ferry; say which pass, and stop.
      Status s = verify(result.graph);
      if (s.ok() && placed) s = verifyPlaced(result.graph);
      for (Diagnostic d : s.diagnostics()) {
        d.message = "after pass '" + std::string(pass.name) + "': " + d.message;
        d.code = "internal";
        diags.report(std::move(d));
      }
      if (diags.hasErrors()) break;
    }
    if (pass.name == options.stopAfter) break;
  }
  if (!diags.hasErrors()) describeGraph(result.graph, options, result.stats);
  result.diagnostics = diags.take();
  // Several passes' errors read in the order of the source, as one pass's do (ties: pass order).
  if (reporting > 1)
    std::stable_sort(result.diagnostics.begin(), result.diagnostics.end(),
                     [](const Diagnostic &a, const Diagnostic &b) {
                       return std::tuple(a.loc.file.view(), a.loc.line, a.loc.col) <
                              std::tuple(b.loc.file.view(), b.loc.line, b.loc.col);
                     });
}

}  // namespace

CompileResult compile(Graph graph, const CompileOptions &options) {
  CompileResult result{std::move(graph), {}, {}, ""};
  try {
    runPipeline(result, options);
  } catch (const std::bad_alloc &) {
    result.diagnostics.clear();
    result.diagnostics.push_back(
        outOfMemoryWhile("compiling '" + result.graph.name() + "'").diagnostics().front());
  }
  return result;
}

void describeGraph(const Graph &g, const CompileOptions &options, CompileStats &stats) {
  stats.transfers = 0;
  stats.transferBytes = 0;
  stats.directionBytes = {};
  stats.directionTransfers = {};
  stats.casts = 0;
  stats.loadTransfers = 0;
  stats.loadTransferBytes = 0;
  stats.loadCasts = 0;
  stats.nodesPerDevice.clear();
  stats.estimatedSeconds = 0;
  const std::vector<uint8_t> weights = weightValues(g);  // what runs at load is free per run
  std::vector<TensorType> types;                  // reused: assigning keeps each shape's storage
  std::vector<std::pair<Device, int>> perDevice;  // a handful of devices: a map lookup per node
  for (NodeId id : g.order()) {                   // costs more than this scan
    const Node &n = g.node(id);
    const Value &r = g.value(n.result);
    if (n.op == OpKind::Cast) ++stats.casts;
    if (!r.device) continue;
    auto counted = std::find_if(perDevice.begin(), perDevice.end(),
                                [&](const auto &e) { return e.first == *r.device; });
    if (counted == perDevice.end()) counted = perDevice.insert(counted, {*r.device, 0});
    ++counted->second;
    if (runsAtLoad(n, weights)) {
      if (n.op == OpKind::Transfer) {
        ++stats.loadTransfers;
        stats.loadTransferBytes += static_cast<int64_t>(r.type.byteSize());
      } else if (n.op == OpKind::Cast) {
        ++stats.loadCasts;
      }
      continue;
    }
    if (n.op == OpKind::Transfer) {
      Device from = g.value(n.operands[0]).device.value_or(*r.device);
      auto bytes = static_cast<int64_t>(r.type.byteSize());
      ++stats.transfers;
      stats.transferBytes += bytes;
      const auto dir = static_cast<size_t>(transferDirection(from, *r.device));
      stats.directionBytes[dir] += bytes;
      ++stats.directionTransfers[dir];
      stats.estimatedSeconds += options.cost.transferSeconds(from, *r.device, double(bytes));
      continue;
    }
    types.resize(n.operands.size());
    for (size_t i = 0; i < n.operands.size(); ++i) types[i] = g.value(n.operands[i]).type;
    stats.estimatedSeconds +=
        options.cost.computeSeconds(*r.device, opCost(n.info(), types, n.attrs, r.type)) *
        options.capabilities.costFactor(*r.device, n.op, computeDType(g, n));
  }
  for (const auto &[device, count] : perDevice) stats.nodesPerDevice[device] = count;
}

}  // namespace ferry
