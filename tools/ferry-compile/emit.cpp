// tools/ferry-compile/emit.cpp — Graphviz DOT and JSON renderings of a graph; compile statistics
// as text.
#include "tools/ferry-compile/emit.h"

#include <array>
#include <cmath>
#include <cstdio>

#include "ir/json.h"

namespace ferry {

namespace {

// Attribute values longer than this are cut in DOT labels (a constant's data, long lists).
constexpr size_t kMaxDotAttrChars = 40;

// The device a value is drawn with: where placement put it, else where its node is pinned.
std::optional<Device> shownDevice(const Graph &g, const Node &n) {
  if (g.value(n.result).device) return g.value(n.result).device;
  return n.pinDevice;
}

// ---- DOT -------------------------------------------------------------------------------------

// A DOT double-quoted string: `"` and `\` escaped, control characters (newlines) dropped.
std::string dotString(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (static_cast<unsigned char>(c) < 0x20) c = ' ';
    out += c;
  }
  return out + "\"";
}

// A multi-line label: each line escaped, joined with DOT's centred line break `\n`.
std::string dotLabel(const std::vector<std::string> &lines) {
  std::string joined;
  for (size_t i = 0; i < lines.size(); ++i) {
    std::string escaped = dotString(lines[i]);
    joined += (i ? "\\n" : "") + escaped.substr(1, escaped.size() - 2);
  }
  return "\"" + joined + "\"";
}

std::string dotId(const Graph &g, ValueId v) {
  const Node *p = g.producer(v);
  return p != nullptr ? "n" + std::to_string(p->id) : "v" + std::to_string(v);
}

std::string dotTooltip(const Location &loc, const EmitOptions &options) {
  if (!options.locations || !loc.known()) return "";
  return ", tooltip=" + dotString(loc.str());
}

// Attributes that differ from the op's defaults, as `name=value`, shortened for a label.
std::string shownAttrs(const Node &n) {
  const OpInfo &op = n.info();
  std::string s;
  for (size_t i = 0; i < op.attrs.size() && i < n.attrs.size(); ++i) {
    const AttrSpec &spec = op.attrs[i];
    if (!spec.required && n.attrs[i] == spec.defaultValue) continue;
    std::string v = attrKind(n.attrs[i]) == AttrKind::Tensor
                        ? std::get<TensorData>(n.attrs[i]).type().str()
                        : attrValueStr(n.attrs[i]);
    if (v.size() > kMaxDotAttrChars) v = v.substr(0, kMaxDotAttrChars - 3) + "...";
    s += (s.empty() ? "" : " ") + spec.name + "=" + v;
  }
  return s;
}

// ---- JSON ------------------------------------------------------------------------------------

// JSON has no NaN or infinities: those become the strings "nan", "inf", "-inf".
std::string jsonNumber(double v) {
  std::string s = floatStr(v);
  return std::isfinite(v) ? s : jsonString(s);
}

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

std::string jsonLocation(const Location &loc, const EmitOptions &options) {
  return options.locations && loc.known() ? jsonString(loc.str()) : "null";
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
    case AttrKind::Bool: return std::get<bool>(v) ? "true" : "false";
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

// Joins already-rendered items as the lines of a JSON array.
std::string jsonArray(const std::vector<std::string> &items) {
  if (items.empty()) return "[]";
  std::string s = "[\n";
  for (size_t i = 0; i < items.size(); ++i)
    s += "    " + items[i] + (i + 1 < items.size() ? ",\n" : "\n");
  return s + "  ]";
}

// ---- statistics ------------------------------------------------------------------------------

// 3 significant digits in the unit that suits the magnitude: "12.3 us".
std::string seconds(double s) {
  const char *unit = "s";
  if (s < 1e-6) {
    s *= 1e9;
    unit = "ns";
  } else if (s < 1e-3) {
    s *= 1e6;
    unit = "us";
  } else if (s < 1) {
    s *= 1e3;
    unit = "ms";
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g %s", s, unit);
  return buf;
}

std::string bytesStr(int64_t n) { return std::to_string(n) + (n == 1 ? " byte" : " bytes"); }

// Transfers in the final graph by direction (h2d, d2h, d2d, h2h), classified as describeGraph
// classifies their bytes.
std::array<int, 4> transfersByDirection(const Graph &g) {
  std::array<int, 4> n{};
  for (NodeId id : g.order()) {
    const Node &node = g.node(id);
    const std::optional<Device> &to = g.value(node.result).device;
    if (node.op != OpKind::Transfer || !to) continue;
    Device from = g.value(node.operands[0]).device.value_or(*to);
    ++n[from.isHost() && to->isHost() ? 3 : from.isHost() ? 0 : to->isHost() ? 1 : 2];
  }
  return n;
}

}  // namespace

std::string renderStats(const CompileResult &result, const CompileOptions &options,
                        const StatsOptions &statsOptions) {
  const CompileStats &st = result.stats;
  std::string devices;
  for (Device d : options.devices) devices += (devices.empty() ? "" : ",") + d.str();
  std::string s = "statistics for '" + result.graph.name() + "' (placement " +
                  std::string(placementPolicyName(options.placement)) + ", dtype " +
                  options.dtype.str() + ", devices " + devices + ", target " +
                  options.target.str() + "):\n";
  s += "  transfers: " + std::to_string(st.transfers) + " per run, " + bytesStr(st.transferBytes) +
       "\n";
  std::array<int, 4> count = transfersByDirection(result.graph);
  const std::array<int64_t, 4> bytes = {st.h2dBytes, st.d2hBytes, st.d2dBytes, st.h2hBytes};
  const std::array<const char *, 4> names = {"h2d", "d2h", "d2d", "h2h"};
  for (size_t i = 0; i < names.size(); ++i)
    s += std::string("    ") + names[i] + ": " + std::to_string(count[i]) + ", " +
         bytesStr(bytes[i]) + "\n";
  s += "  casts: " + std::to_string(st.casts) + " in the graph; " +
       std::to_string(st.castsInserted) + " inserted, " + std::to_string(st.castsFolded) +
       " folded into params, " + std::to_string(st.castsRemoved) + " removed\n";
  s += "  removed: " + std::to_string(st.transfersRemoved) + " transfers, " +
       std::to_string(st.nodesRemoved) + " dead nodes\n";
  std::string perDevice;
  for (const auto &[device, n] : st.nodesPerDevice)
    perDevice += (perDevice.empty() ? "" : ", ") + device.str() + " " + std::to_string(n);
  s += "  nodes per device: " + (perDevice.empty() ? "none placed" : perDevice) + "\n";
  s += "  estimated time: " + seconds(st.estimatedSeconds) + " per run\n";
  if (statsOptions.timings) {
    std::string times;
    for (const auto &[pass, t] : st.passSeconds)
      times += (times.empty() ? "" : ", ") + pass + " " + seconds(t);
    s += "  pass times: " + times + " (stopped after " + result.lastPass + ")\n";
  }
  return s;
}

std::string emitDot(const Graph &g, const EmitOptions &options) {
  std::string s = "digraph " + dotString(g.name()) + " {\n";
  s += "  graph [rankdir=TB, fontname=\"monospace\"];\n";
  s += "  node [fontname=\"monospace\", fontsize=10];\n";
  s += "  edge [fontname=\"monospace\", fontsize=9];\n";
  for (const InputDecl &in : g.inputs()) {
    const Value &v = g.value(in.value);
    s += "  v" + std::to_string(in.value) + " [shape=invhouse, label=" +
         dotLabel({"input %" + v.name, v.type.str() + " @" + in.device.str()}) +
         dotTooltip(in.loc, options) + "];\n";
  }
  for (const ParamDecl &p : g.params()) {
    const Value &v = g.value(p.value);
    std::string type = v.type.str();
    if (v.device)
      type += " @" + v.device->str();
    else if (p.pin)
      type += " @" + p.pin->str();
    s += "  v" + std::to_string(p.value) +
         " [shape=cylinder, label=" + dotLabel({"param %" + v.name, type}) +
         dotTooltip(p.loc, options) + "];\n";
  }
  for (NodeId id : g.order()) {
    const Node &n = g.node(id);
    std::vector<std::string> lines = {"%" + g.value(n.result).name + " = " +
                                      std::string(n.info().name)};
    std::string type = g.value(n.result).type.str();
    if (std::optional<Device> d = shownDevice(g, n)) type += " @" + d->str();
    if (n.pinDType) type += " @" + std::string(dtypeName(*n.pinDType));
    lines.push_back(type);
    if (std::string attrs = shownAttrs(n); !attrs.empty()) lines.push_back(attrs);
    s += "  n" + std::to_string(id) + " [shape=box, " + (n.inserted ? "style=dashed, " : "") +
         "label=" + dotLabel(lines) + dotTooltip(n.loc, options) + "];\n";
    for (ValueId o : n.operands)
      s += "  " + dotId(g, o) + " -> n" + std::to_string(id) +
           " [label=" + dotString(g.value(o).type.str()) + "];\n";
  }
  for (size_t i = 0; i < g.outputs().size(); ++i) {
    const OutputDecl &out = g.outputs()[i];
    const Value &v = g.value(out.value);
    std::vector<std::string> lines = {"output %" + v.name};
    if (out.pin) lines.push_back("@" + out.pin->str());
    std::string id = "out" + std::to_string(i);
    s += "  " + id + " [shape=house, label=" + dotLabel(lines) + dotTooltip(out.loc, options) +
         "];\n";
    s += "  " + dotId(g, out.value) + " -> " + id + " [label=" + dotString(v.type.str()) + "];\n";
  }
  return s + "}\n";
}

std::string emitJson(const Graph &g, const EmitOptions &options) {
  std::vector<std::string> inputs;
  for (const InputDecl &in : g.inputs()) {
    const Value &v = g.value(in.value);
    inputs.push_back("{\"name\": " + jsonString(v.name) + ", \"type\": " + jsonType(v.type) +
                     ", \"device\": " + jsonString(in.device.str()) +
                     ", \"location\": " + jsonLocation(in.loc, options) + "}");
  }
  std::vector<std::string> params;
  for (const ParamDecl &p : g.params()) {
    const Value &v = g.value(p.value);
    std::string s = "{\"name\": " + jsonString(v.name) + ", \"type\": " + jsonType(v.type) +
                    ", \"device\": " + jsonOptDevice(v.device ? v.device : p.pin) +
                    ", \"init\": " + jsonString(initName(p.init.kind));
    if (p.init.kind == Initializer::Kind::Randn) s += ", \"seed\": " + std::to_string(p.init.seed);
    if (p.init.kind == Initializer::Kind::Npy) s += ", \"path\": " + jsonString(p.init.path);
    params.push_back(s + ", \"location\": " + jsonLocation(p.loc, options) + "}");
  }
  std::vector<std::string> nodes;
  for (NodeId id : g.order()) {
    const Node &n = g.node(id);
    const OpInfo &op = n.info();
    std::string operands = "[";
    for (size_t i = 0; i < n.operands.size(); ++i)
      operands += (i ? ", " : "") + jsonString(g.value(n.operands[i]).name);
    operands += "]";
    std::string attrs = "{";
    for (size_t i = 0; i < op.attrs.size() && i < n.attrs.size(); ++i)
      attrs += (i ? ", " : "") + jsonString(op.attrs[i].name) + ": " + jsonAttr(n.attrs[i]);
    attrs += "}";
    nodes.push_back(
        "{\"id\": " + std::to_string(id) + ", \"op\": " + jsonString(op.name) +
        ", \"result\": " + jsonString(g.value(n.result).name) +
        ", \"type\": " + jsonType(g.value(n.result).type) + ", \"operands\": " + operands +
        ", \"attrs\": " + attrs + ", \"device\": " + jsonOptDevice(shownDevice(g, n)) +
        ", \"compute_dtype\": " + (n.pinDType ? jsonString(dtypeName(*n.pinDType)) : "null") +
        ", \"location\": " + jsonLocation(n.loc, options) +
        ", \"inserted\": " + (n.inserted ? "true" : "false") + "}");
  }
  std::vector<std::string> outputs;
  for (const OutputDecl &out : g.outputs()) {
    outputs.push_back("{\"name\": " + jsonString(g.value(out.value).name) +
                      ", \"type\": " + jsonType(g.value(out.value).type) + ", \"device\": " +
                      jsonOptDevice(out.pin ? out.pin : g.value(out.value).device) +
                      ", \"location\": " + jsonLocation(out.loc, options) + "}");
  }
  return "{\n  \"format\": \"ferry.graph\",\n  \"version\": 1,\n  \"graph\": " +
         jsonString(g.name()) + ",\n  \"inputs\": " + jsonArray(inputs) +
         ",\n  \"params\": " + jsonArray(params) + ",\n  \"nodes\": " + jsonArray(nodes) +
         ",\n  \"outputs\": " + jsonArray(outputs) + "\n}\n";
}

}  // namespace ferry
