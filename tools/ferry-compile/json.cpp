// tools/ferry-compile/json.cpp — JSON rendering of a compile: the placement manifest (version 4)
// and the graph-only layout of version 1. docs/manifest.md is the schema; a field added here is
// added there, or tests/tools/manifest_test.cpp fails.
//
// Layout: one top-level field per line, one array element per line (a node, a transfer), so that
// line-based tools (grep, diff) see one entity per line. Every array is in a deterministic order:
// inputs, params and outputs as declared, nodes topological, transfers and casts in node order,
// devices in Device order. Integers print as integers; the one estimate (seconds) is rounded to
// 4 significant digits, so that goldens do not depend on the last bits of a sum.
#include "tools/ferry-compile/json.h"

#include <array>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <optional>
#include <set>
#include <span>
#include <string_view>
#include <vector>

#include "ir/json.h"
#include "ir/printer.h"
#include "passes/explain.h"
#include "passes/load_time.h"
#include "passes/lower.h"
#include "passes/pass.h"
#include "tools/ferry-compile/device_totals.h"

namespace ferry {

namespace {

// JSON has no NaN or infinities: those become the strings "nan", "inf", "-inf".
std::string jsonNumber(double v) {
  std::string s = floatStr(v);
  return std::isfinite(v) ? s : jsonString(s);
}

// An estimate, rounded to 4 significant digits ("1.48e-06"); null when not finite.
std::string jsonRounded(double v) {
  if (!std::isfinite(v)) return "null";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4g", v);
  return buf;
}

std::string jsonBool(bool b) { return b ? "true" : "false"; }

std::string jsonOptString(std::string_view s) { return s.empty() ? "null" : jsonString(s); }

std::string jsonInts(const std::vector<int64_t> &xs) {
  std::string s = "[";
  for (size_t i = 0; i < xs.size(); ++i) s += (i ? ", " : "") + std::to_string(xs[i]);
  return s + "]";
}

std::string jsonType(const TensorType &t) {
  return "{\"dtype\": " + jsonString(dtypeName(t.dtype)) + ", \"shape\": " + jsonInts(t.shape) +
         "}";
}

std::string jsonOptDevice(const std::optional<Device> &d) {
  return d ? jsonString(d->str()) : "null";
}

std::string jsonTensor(const TensorData &t) {
  std::string s = "{\"dtype\": " + jsonString(dtypeName(t.dtype())) +
                  ", \"shape\": " + jsonInts(t.shape()) + ", \"data\": [";
  for (int64_t i = 0; i < t.numel(); ++i) {
    if (i) s += ", ";
    s += isFloating(t.dtype()) ? jsonNumber(t.at(i)) : tensorElementStr(t, i);
  }
  return s + "]}";
}

std::string jsonAttr(const AttrValue &v) {
  switch (attrKind(v)) {
    case AttrKind::Bool: return jsonBool(std::get<bool>(v));
    case AttrKind::Int: return std::to_string(std::get<int64_t>(v));
    case AttrKind::Float: return jsonNumber(std::get<double>(v));
    case AttrKind::Ints: return jsonInts(std::get<std::vector<int64_t>>(v));
    case AttrKind::String: return jsonString(std::get<std::string>(v));
    case AttrKind::DType: return jsonString(dtypeName(std::get<DType>(v)));
    case AttrKind::Device: return jsonString(std::get<Device>(v).str());
    case AttrKind::Tensor: return jsonTensor(std::get<TensorData>(v));
  }
  return "null";
}

std::string_view initName(Initializer::Kind k) {
  switch (k) {
    case Initializer::Kind::Data: return "data";
    case Initializer::Kind::Zeros: return "zeros";
    case Initializer::Kind::Ones: return "ones";
    case Initializer::Kind::Randn: return "randn";
    case Initializer::Kind::Npy: return "npy";
  }
  return "data";
}

std::string_view reasonKindName(Reason::Kind k) {
  switch (k) {
    case Reason::Kind::None: return "none";
    case Reason::Kind::Pinned: return "pinned";
    case Reason::Kind::Declared: return "declared";
    case Reason::Kind::Inherited: return "inherited";
    case Reason::Kind::FromConsumer: return "from_consumer";
    case Reason::Kind::Target: return "target";
    case Reason::Kind::Fallback: return "fallback";
    case Reason::Kind::CostModel: return "cost_model";
    case Reason::Kind::Rule: return "rule";
    case Reason::Kind::Inserted: return "inserted";
  }
  return "none";
}

// Joins already-rendered items as the lines of a JSON array.
std::string jsonArray(const std::vector<std::string> &items) {
  if (items.empty()) return "[]";
  std::string s = "[\n";
  for (size_t i = 0; i < items.size(); ++i)
    s += "    " + items[i] + (i + 1 < items.size() ? ",\n" : "\n");
  return s + "  ]";
}

// Renders the parts of a graph; `manifest` adds the fields of version 2 to the elements of
// version 1 (after them, so that a version 1 reader's view of each element is unchanged).
class Writer {
 public:
  Writer(const Graph &g, const EmitOptions &emit, bool manifest,
         std::span<const Diagnostic> diagnostics = {})
      : g_(g), emit_(emit), manifest_(manifest) {
    if (!manifest_) return;
    explained_ = explainDevices(g_);
    weights_ = weightValues(g_);
    listed_.assign(g_.valueCount(), false);
    for (const InputDecl &in : g_.inputs()) listed_[in.value] = true;
    for (const ParamDecl &p : g_.params()) listed_[p.value] = true;
    for (NodeId id : g_.order()) listed_[g_.node(id).result] = true;
    if (!emit_.locations) collectFiles(diagnostics);
  }

  std::string inputs() const {
    std::vector<std::string> items;
    for (const InputDecl &in : g_.inputs()) {
      const Value &v = g_.value(in.value);
      items.push_back("{\"name\": " + jsonString(v.name) + ", \"type\": " + jsonType(v.type) +
                      ", \"device\": " + jsonString(in.device.str()) +
                      ", \"location\": " + location(in.loc) + reasons(v.id) + "}");
    }
    return jsonArray(items);
  }

  std::string params() const {
    std::vector<std::string> items;
    for (const ParamDecl &p : g_.params()) {
      const Value &v = g_.value(p.value);
      std::string s = "{\"name\": " + jsonString(v.name) + ", \"type\": " + jsonType(v.type) +
                      ", \"device\": " + jsonOptDevice(v.device ? v.device : p.pin) +
                      ", \"init\": " + jsonString(initName(p.init.kind));
      if (p.init.kind == Initializer::Kind::Randn)
        s += ", \"seed\": " + std::to_string(p.init.seed);
      if (p.init.kind == Initializer::Kind::Npy) s += ", \"path\": " + jsonString(p.init.path);
      s += ", \"location\": " + location(p.loc);
      if (manifest_) {
        // A param a cast was folded into at compile time: the dtype it was declared in, and the
        // param it was converted from when the fold is a new param (simplify records that as its
        // device reason) and that param is still in the graph. A param converted in place, or
        // one whose source nothing else read, names none.
        const Reason &r = g_.deviceReason(v.id);
        std::string folded = "null";
        if (p.foldedFrom)
          folded = "{\"param\": " +
                   (r.kind == Reason::Kind::Inserted && hasValue(r.from) ? listedName(r.from)
                                                                         : std::string("null")) +
                   ", \"dtype\": " + jsonString(dtypeName(*p.foldedFrom)) + "}";
        s += ", \"pinned_device\": " + jsonOptDevice(p.pin) + ", \"folded_from\": " + folded;
      }
      items.push_back(s + reasons(v.id) + "}");
    }
    return jsonArray(items);
  }

  std::string nodes() const {
    std::vector<std::string> items;
    for (NodeId id : g_.order()) {
      const Node &n = g_.node(id);
      const OpInfo &op = n.info();
      std::string operands = "[";
      for (size_t i = 0; i < n.operands.size(); ++i)
        operands += (i ? ", " : "") + name(n.operands[i]);
      operands += "]";
      std::string attrs = "{";
      for (size_t i = 0; i < op.attrs.size() && i < n.attrs.size(); ++i)
        attrs += (i ? ", " : "") + jsonString(op.attrs[i].name) + ": " + jsonAttr(n.attrs[i]);
      attrs += "}";
      std::string s =
          "{\"id\": " + std::to_string(id) + ", \"op\": " + jsonString(op.name) +
          ", \"result\": " + name(n.result) + ", \"type\": " + jsonType(g_.value(n.result).type) +
          ", \"operands\": " + operands + ", \"attrs\": " + attrs +
          ", \"device\": " + jsonOptDevice(shownDevice(g_, n)) +
          ", \"compute_dtype\": " + (n.pinDType ? jsonString(dtypeName(*n.pinDType)) : "null") +
          ", \"location\": " + location(n.loc) + ", \"inserted\": " + jsonBool(n.inserted);
      if (manifest_) s += ", \"pinned_device\": " + jsonOptDevice(n.pinDevice);
      s += reasons(n.result);
      if (manifest_) s += ", \"at_load\": " + jsonBool(runsAtLoad(n, weights_));
      items.push_back(s + "}");
    }
    return jsonArray(items);
  }

  std::string outputs() const {
    std::vector<std::string> items;
    for (const OutputDecl &out : g_.outputs()) {
      std::string s =
          "{\"name\": " + name(out.value) + ", \"type\": " + jsonType(g_.value(out.value).type) +
          ", \"device\": " + jsonOptDevice(out.pin ? out.pin : g_.value(out.value).device) +
          ", \"location\": " + location(out.loc);
      if (manifest_) s += ", \"pinned_device\": " + jsonOptDevice(out.pin);
      items.push_back(s + "}");
    }
    return jsonArray(items);
  }

  // Every transfer node of the graph, in order, with what it moves per run or, a transfer of a
  // weight, once at load.
  std::string transfers() const {
    std::vector<std::string> items;
    for (NodeId id : g_.order()) {
      const Node &n = g_.node(id);
      if (n.op != OpKind::Transfer) continue;
      const Value &r = g_.value(n.result);
      const std::optional<Device> &from = g_.value(n.operands[0]).device;
      const std::optional<Device> &to = r.device;
      items.push_back(
          "{\"node\": " + std::to_string(id) + ", \"value\": " + name(n.result) +
          ", \"operand\": " + name(n.operands[0]) + ", \"from\": " + jsonOptDevice(from) +
          ", \"to\": " + jsonOptDevice(to) + ", \"direction\": " +
          (from && to ? jsonString(directionKey(transferDirection(*from, *to))) : "null") +
          ", \"bytes\": " + std::to_string(r.type.byteSize()) +
          ", \"inserted\": " + jsonBool(n.inserted) +
          ", \"reason\": " + reason(g_.deviceReason(r.id), explained_[static_cast<size_t>(r.id)]) +
          ", \"at_load\": " + jsonBool(runsAtLoad(n, weights_)) + "}");
    }
    return jsonArray(items);
  }

  // Every cast node of the graph, in order (casts folded into params are params: "folded_from").
  std::string casts() const {
    std::vector<std::string> items;
    for (NodeId id : g_.order()) {
      const Node &n = g_.node(id);
      if (n.op != OpKind::Cast) continue;
      const Value &r = g_.value(n.result);
      items.push_back("{\"node\": " + std::to_string(id) + ", \"value\": " + name(n.result) +
                      ", \"operand\": " + name(n.operands[0]) +
                      ", \"from\": " + jsonString(dtypeName(g_.value(n.operands[0]).type.dtype)) +
                      ", \"to\": " + jsonString(dtypeName(r.type.dtype)) +
                      ", \"device\": " + jsonOptDevice(r.device) +
                      ", \"bytes\": " + std::to_string(r.type.byteSize()) +
                      ", \"inserted\": " + jsonBool(n.inserted) +
                      ", \"reason\": " + reason(g_.dtypeReason(r.id), dtypeText(r.id)) +
                      ", \"at_load\": " + jsonBool(runsAtLoad(n, weights_)) + "}");
    }
    return jsonArray(items);
  }

  // Every fusion group (Graph::groups()): the nodes that run as one kernel.
  std::string fusionGroups() const {
    std::vector<std::string> items;
    for (size_t i = 0; i < g_.groups().size(); ++i) {
      const FusionGroup &fg = g_.groups()[i];
      const Value &r = g_.value(g_.node(fg.root).result);
      std::string members;
      for (NodeId m : fg.members) members += (members.empty() ? "" : ", ") + name(g_.node(m).result);
      items.push_back("{\"group\": " + std::to_string(i) + ", \"device\": " +
                      jsonOptDevice(r.device) + ", \"value\": " + name(r.id) +
                      ", \"anchor\": " +
                      (fg.anchor >= 0 ? name(g_.node(fg.anchor).result) : std::string("null")) +
                      ", \"nodes\": [" + members + "]}");
    }
    return jsonArray(items);
  }

  std::string statistics(const CompileStats &st,
                         const std::map<Device, DeviceTotals> &totals) const {
    std::string directions = "{";
    for (TransferDirection d : kTransferDirections)
      directions += (directions.size() > 1 ? ", " : "") + jsonString(directionKey(d)) +
                    ": {\"transfers\": " + std::to_string(st.transfersOf(d)) +
                    ", \"bytes\": " + std::to_string(st.bytesOf(d)) + "}";
    std::string perDevice = "{";
    for (const auto &[device, n] : st.nodesPerDevice)
      perDevice +=
          (perDevice.size() > 1 ? ", " : "") + jsonString(device.str()) + ": " + std::to_string(n);
    auto line = [](const char *key, const std::string &value) {
      return "\n    \"" + std::string(key) + "\": " + value;
    };
    return "{" + line("transfers", std::to_string(st.transfers)) + "," +
           line("transfer_bytes", std::to_string(st.transferBytes)) + "," +
           line("directions", directions + "}") + "," +
           line("load_transfers", std::to_string(st.loadTransfers)) + "," +
           line("load_transfer_bytes", std::to_string(st.loadTransferBytes)) + "," +
           line("transfers_removed", std::to_string(st.transfersRemoved)) + "," +
           line("casts", std::to_string(st.casts)) + "," +
           line("load_casts", std::to_string(st.loadCasts)) + "," +
           line("casts_inserted", std::to_string(st.castsInserted)) + "," +
           line("casts_folded", std::to_string(st.castsFolded)) + "," +
           line("casts_removed", std::to_string(st.castsRemoved)) + "," +
           line("nodes_removed", std::to_string(st.nodesRemoved)) + "," +
           line("nodes_per_device", perDevice + "}") + "," +
           line("fusion_groups", std::to_string(st.fusionGroups)) + "," +
           line("fused_nodes", std::to_string(st.fusedNodes)) + "," +
           line("estimated_seconds", jsonRounded(st.estimatedSeconds)) + "," +
           line("devices", devices(totals)) + "\n  }";
  }

  // Per device what its nodes compute and hold per run, as the text dump's summary says it.
  static std::string devices(const std::map<Device, DeviceTotals> &totals) {
    std::string s = "{";
    for (const auto &[device, t] : totals)
      s += (s.size() > 1 ? ", " : "") + jsonString(device.str()) +
           ": {\"nodes\": " + std::to_string(t.nodes) +
           ", \"flops\": " + std::to_string(std::llround(t.flops)) +
           ", \"bytes\": " + std::to_string(std::llround(t.bytes)) +
           ", \"weight_bytes\": " + std::to_string(std::llround(t.weightBytes)) +
           ", \"peak_workspace_bytes\": " +
           (t.workspaceBytes ? std::to_string(*t.workspaceBytes) : std::string("null")) + "}";
    return s + "}";
  }

  // In the shape of renderJson (ir/diagnostics.h), one diagnostic per line.
  std::string diagnostics(const std::vector<Diagnostic> &ds) const {
    std::vector<std::string> items;
    for (const Diagnostic &d : ds) {
      std::string s = "{\"severity\": " + jsonString(severityName(d.severity)) +
                      ", \"code\": " + jsonString(d.code) + place(d.loc) +
                      ", \"message\": " + text(d.message) + ", \"notes\": [";
      for (size_t i = 0; i < d.notes.size(); ++i)
        s += std::string(i ? ", " : "") + "{\"message\": " + text(d.notes[i].message) +
             place(d.notes[i].loc) + "}";
      s += "], \"fixes\": [";
      for (size_t i = 0; i < d.fixes.size(); ++i) s += (i ? ", " : "") + text(d.fixes[i]);
      items.push_back(s + "]}");
    }
    return jsonArray(items);
  }

 private:
  bool hasValue(ValueId v) const { return v >= 0 && static_cast<size_t>(v) < g_.valueCount(); }
  std::string name(ValueId v) const { return jsonString(g_.value(v).name); }
  // The name of `v` when the manifest lists it (an input, a param, a node's result), else null: a
  // reason may point at a value the compile removed, whose name may since be another's.
  std::string listedName(ValueId v) const {
    return hasValue(v) && listed_[static_cast<size_t>(v)] ? name(v) : "null";
  }

  std::string location(const Location &loc) const {
    return emit_.locations && loc.known() ? jsonString(loc.str()) : "null";
  }

  // ", file, line, col" as renderJson writes a location ("", 0, 0 when unknown or left out).
  std::string place(const Location &loc) const {
    const bool shown = emit_.locations && loc.known();
    return ", \"file\": " + jsonString(shown ? loc.file.view() : "") +
           ", \"line\": " + std::to_string(shown ? loc.line : 0) +
           ", \"col\": " + std::to_string(shown ? loc.col : 0) +
           (shown && loc.imported() ? ", \"node\": " + jsonString(loc.node.view()) : "");
  }

  // A free text (reason detail, explanation, message) as a JSON string, without the locations it
  // quotes when locations are off.
  std::string text(std::string s) const {
    if (!emit_.locations) s = withoutLocations(std::move(s));
    return jsonString(s);
  }

  // The version 2 fields of value `v`: why it is on its device and why it has its dtype.
  std::string reasons(ValueId v) const {
    if (!manifest_) return "";
    return ", \"device_reason\": " +
           reason(g_.deviceReason(v), explained_[static_cast<size_t>(v)]) +
           ", \"dtype_reason\": " + reason(g_.dtypeReason(v), dtypeText(v));
  }

  std::string reason(const Reason &r, std::string oneLine) const {
    return "{\"kind\": " + jsonString(reasonKindName(r.kind)) +
           ", \"from_value\": " + listedName(r.from) + ", \"location\": " + location(r.loc) +
           ", \"detail\": " + (r.detail.empty() ? "null" : text(r.detail.str())) +
           ", \"text\": " + text(std::move(oneLine)) + "}";
  }

  // Why `v` has its dtype, in one line worded as explainDevice words a device reason (that
  // explains devices only, and follows chains; a dtype reason is one step).
  std::string dtypeText(ValueId v) const {
    const Value &val = g_.value(v);
    const Reason &r = g_.dtypeReason(v);
    const std::string at = r.loc.known() ? " at " + r.loc.str() : "";
    const std::string detail = r.detail.empty() ? "" : ": " + r.detail;
    std::string from;
    if (hasValue(r.from)) {
      const std::string site = definitionSite(g_, r.from);
      from = valueRef(g_.value(r.from).name) + (site == "<unknown>" ? "" : " (" + site + ")");
    }
    const std::string dtype(dtypeName(val.type.dtype));
    switch (r.kind) {
      case Reason::Kind::None:
        return val.kind == ValueKind::Result ? dtype + ", as its op's dtype rule gives it"
                                             : dtype + ", as declared";
      case Reason::Kind::Rule:
        return (r.detail.empty() ? std::string("the op's dtype rule") : r.detail.str()) + at;
      case Reason::Kind::Inherited:
        return (from.empty() ? "inherited" : "inherited from " + from) + detail;
      default: break;
    }
    return std::string(reasonKindName(r.kind)) + (from.empty() ? "" : " from " + from) + detail +
           at;
  }

  // The file names that locations in the graph, its reasons and `diagnostics` carry.
  void collectFiles(std::span<const Diagnostic> diagnostics) {
    auto add = [&](const Location &loc) {
      if (!loc.file.empty()) files_.insert(loc.file.str());
    };
    for (const InputDecl &in : g_.inputs()) add(in.loc);
    for (const ParamDecl &p : g_.params()) add(p.loc);
    for (const OutputDecl &out : g_.outputs()) add(out.loc);
    for (size_t id = 0; id < g_.nodeCount(); ++id) add(g_.node(static_cast<NodeId>(id)).loc);
    for (size_t v = 0; v < g_.valueCount(); ++v) {
      add(g_.deviceReason(static_cast<ValueId>(v)).loc);
      add(g_.dtypeReason(static_cast<ValueId>(v)).loc);
    }
    for (const Diagnostic &d : diagnostics) {
      add(d.loc);
      for (const Note &n : d.notes) add(n.loc);
    }
  }

  // `s` without " at FILE:LINE[:COL]" and " (FILE:LINE[:COL])" for the files locations name
  // ("declared at mlp.fy:4:3" reads "declared").
  std::string withoutLocations(std::string s) const {
    auto digits = [&](size_t i) {
      while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) ++i;
      return i;
    };
    for (const std::string &file : files_) {
      for (size_t i = s.find(file); i != std::string::npos; i = s.find(file, i)) {
        size_t end = i + file.size();
        size_t line = end < s.size() && s[end] == ':' ? digits(end + 1) : end + 1;
        if (line <= end + 1) {
          i = end;
          continue;
        }
        end = line;
        if (end < s.size() && s[end] == ':' && digits(end + 1) > end + 1) end = digits(end + 1);
        size_t begin = i;
        if (begin >= 4 && s.compare(begin - 4, 4, " at ") == 0) {
          begin -= 4;
        } else if (begin >= 2 && s.compare(begin - 2, 2, " (") == 0 && end < s.size() &&
                   s[end] == ')') {
          begin -= 2;
          ++end;
        }
        s.erase(begin, end - begin);
        i = begin;
      }
    }
    return s;
  }

  const Graph &g_;
  std::vector<std::string> explained_;  // manifest: explainDevices, why each value is where it is
  const EmitOptions &emit_;
  const bool manifest_;
  std::vector<bool> listed_;      // per value: in the manifest (manifest only)
  std::vector<uint8_t> weights_;  // per value: a weight (passes/load_time.h; manifest only)
  std::set<std::string> files_;   // the files locations name (only when locations are off)
};

std::string jsonOptions(const CompileOptions &o) {
  std::string devices = "[";
  for (size_t i = 0; i < o.devices.size(); ++i)
    devices += (i ? ", " : "") + jsonString(o.devices[i].str());
  return "{\"devices\": " + devices + "], \"target\": " + jsonString(o.target.str()) +
         ", \"placement\": " + jsonString(placementPolicyName(o.placement)) +
         ", \"dtype\": " + jsonString(o.dtype.str()) + ", \"fallback\": " + jsonBool(o.fallback) +
         ", \"stop_after\": " + jsonOptString(o.stopAfter) + ", \"fusion\": " + jsonBool(o.fusion) +
         "}";
}

// "compiled", "stopped" (--stop-after before the last pass) or "rejected".
std::string_view outcome(const CompileResult &result) {
  if (!result.ok()) return "rejected";
  const std::span<const Pass> passes = pipeline();
  return !passes.empty() && result.lastPass != passes.back().name ? "stopped" : "compiled";
}

}  // namespace

std::string emitManifest(const CompileResult &result, const CompileOptions &options,
                         const std::map<Device, DeviceTotals> &totals, const EmitOptions &emit) {
  const Graph &g = result.graph;
  const Writer w(g, emit, /*manifest=*/true, result.diagnostics);
  // A rejected plan has no statistics: the pipeline stopped before describing it.
  const std::string statistics = result.ok() ? w.statistics(result.stats, totals) : "null";
  return "{\n  \"format\": \"ferry.graph\",\n  \"version\": " + std::to_string(kManifestVersion) +
         ",\n  \"graph\": " + jsonString(g.name()) + ",\n  \"options\": " + jsonOptions(options) +
         ",\n  \"last_pass\": " + jsonOptString(result.lastPass) +
         ",\n  \"outcome\": " + jsonString(outcome(result)) + ",\n  \"inputs\": " + w.inputs() +
         ",\n  \"params\": " + w.params() + ",\n  \"nodes\": " + w.nodes() +
         ",\n  \"outputs\": " + w.outputs() + ",\n  \"transfers\": " + w.transfers() +
         ",\n  \"casts\": " + w.casts() + ",\n  \"fusion_groups\": " + w.fusionGroups() +
         ",\n  \"statistics\": " + statistics +
         ",\n  \"diagnostics\": " + w.diagnostics(result.diagnostics) + "\n}\n";
}

std::string emitManifest(const CompileResult &result, const CompileOptions &options,
                         const EmitOptions &emit) {
  std::optional<Executable> lowered;
  if (lowerable(result, options))
    if (Expected<Executable> exe = lower(result.graph, options); exe.ok())
      lowered = std::move(exe).value();
  return emitManifest(result, options, deviceTotals(result.graph, lowered ? &*lowered : nullptr),
                      emit);
}

std::string emitJson(const Graph &g, const EmitOptions &options) {
  const Writer w(g, options, /*manifest=*/false);
  return "{\n  \"format\": \"ferry.graph\",\n  \"version\": 1,\n  \"graph\": " +
         jsonString(g.name()) + ",\n  \"inputs\": " + w.inputs() +
         ",\n  \"params\": " + w.params() + ",\n  \"nodes\": " + w.nodes() +
         ",\n  \"outputs\": " + w.outputs() + "\n}\n";
}

}  // namespace ferry
