// tools/ferry-compile/dot.cpp — Graphviz DOT rendering of a graph.
#include "tools/ferry-compile/dot.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <map>
#include <string_view>
#include <vector>

#include "passes/explain.h"

namespace ferry {

namespace {

// Attribute values longer than this are cut in DOT labels (a constant's data, long lists).
constexpr size_t kMaxDotAttrChars = 40;

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

// Device colours, in the order of CompileOptions::devices (then of first appearance); a cluster's
// fill is the light one, its border and the legend's swatch the strong one.
constexpr std::array<std::pair<std::string_view, std::string_view>, 6> kPalette = {{
    {"#e8f1fb", "#3b78c2"},  // blue
    {"#e9f6e9", "#3a9a3a"},  // green
    {"#fdf0e2", "#d97a16"},  // orange
    {"#f3eafa", "#8a4fc0"},  // purple
    {"#e6f6f6", "#23918f"},  // teal
    {"#f7f0e6", "#8c6a3f"},  // brown
}};
constexpr std::string_view kTransferColour = "#c0392b", kCastColour = "#b8860b";

std::string bytesText(int64_t b) {
  char buf[32];
  if (b < 1024) return std::to_string(b) + " B";
  if (b < 1024 * 1024) {
    std::snprintf(buf, sizeof buf, "%.1f KiB", static_cast<double>(b) / 1024);
  } else {
    std::snprintf(buf, sizeof buf, "%.1f MiB", static_cast<double>(b) / (1024.0 * 1024));
  }
  return buf;
}

// What the drawing needs beyond the graph: a cluster per device, transfers as edges, the
// diagnostics of a rejected compile on their nodes.
class DotWriter {
 public:
  DotWriter(const Graph &g, const DotOptions &o)
      : g_(g), o_(o), explained_(o.locations ? explainDevices(g) : std::vector<std::string>{}) {
    for (Device d : o.devices) deviceIndex(d);
    for (const Diagnostic &d : o.diagnostics)
      if (d.severity == Severity::Error && d.loc.known()) {
        std::string &text = errors_[d.loc.str()];
        text += (text.empty() ? "" : "; ") + d.message;
        for (const std::string &f : d.fixes) text += " (fix: " + f + ")";
      }
  }

  std::string render() {
    out_ = "digraph " + dotString(g_.name()) + " {\n";
    out_ += "  graph [rankdir=TB, fontname=\"monospace\", compound=true, newrank=true];\n";
    out_ += "  node [fontname=\"monospace\", fontsize=10, style=filled, fillcolor=white];\n";
    out_ += "  edge [fontname=\"monospace\", fontsize=9];\n";
    // Statements first, by device, then the edges (a cluster must hold its nodes).
    for (const InputDecl &in : g_.inputs()) {
      const Value &v = g_.value(in.value);
      add(in.device, "v" + std::to_string(in.value),
          "shape=invhouse, label=" +
              dotLabel({"input %" + v.name, v.type.str() + " @" + in.device.str()}) +
              tooltip(in.loc, in.value));
    }
    for (const ParamDecl &p : g_.params()) {
      const Value &v = g_.value(p.value);
      std::optional<Device> d = v.device ? v.device : p.pin;
      add(d, "v" + std::to_string(p.value),
          "shape=cylinder, label=" +
              dotLabel({"param %" + v.name, v.type.str() + (d ? " @" + d->str() : "")}) +
              tooltip(p.loc, p.value));
    }
    for (NodeId id : g_.order()) {
      const Node &n = g_.node(id);
      if (n.op == OpKind::Transfer) continue;  // an edge, drawn below
      node(n);
    }
    for (const auto &[index, body] : clusters_) cluster(index, body);
    out_ += unplaced_;
    for (NodeId id : g_.order()) {
      const Node &n = g_.node(id);
      if (n.op == OpKind::Transfer) continue;
      for (ValueId o : n.operands) edge(o, "n" + std::to_string(id));
    }
    for (size_t i = 0; i < g_.outputs().size(); ++i) {
      const OutputDecl &out = g_.outputs()[i];
      const Value &v = g_.value(out.value);
      std::vector<std::string> lines = {"output %" + v.name};
      if (out.pin) lines.push_back("@" + out.pin->str());
      const std::string id = "out" + std::to_string(i);
      out_ += "  " + id + " [shape=house, label=" + dotLabel(lines) +
              (o_.locations && out.loc.known() ? ", tooltip=" + dotString(out.loc.str()) : "") +
              "];\n";
      edge(out.value, id);
    }
    legend();
    return out_ + "}\n";
  }

 private:
  size_t deviceIndex(Device d) {
    auto it = std::find(devices_.begin(), devices_.end(), d);
    if (it != devices_.end()) return static_cast<size_t>(it - devices_.begin());
    devices_.push_back(d);
    return devices_.size() - 1;
  }

  // A statement inside its device's cluster, or outside when the value has no device yet.
  void add(std::optional<Device> d, const std::string &id, const std::string &attrs) {
    const std::string line = "    " + id + " [" + attrs + "];\n";
    if (d)
      clusters_[deviceIndex(*d)] += line;
    else
      unplaced_ += line.substr(2);
  }

  void node(const Node &n) {
    const Value &r = g_.value(n.result);
    const bool cast = n.op == OpKind::Cast;
    std::vector<std::string> lines;
    if (cast) {
      const DType from = g_.value(n.operands[0]).type.dtype;
      lines = {"%" + r.name + " = cast",
               std::string(dtypeName(from)) + " -> " + std::string(dtypeName(r.type.dtype)),
               shapeStr(r.type.shape) + " " + bytesText(static_cast<int64_t>(r.type.byteSize()))};
    } else {
      lines = {"%" + r.name + " = " + std::string(n.info().name), r.type.str()};
      if (n.pinDevice) lines.back() += " pinned @" + n.pinDevice->str();
      if (n.pinDType) lines.back() += " as " + std::string(dtypeName(*n.pinDType));
      if (std::string attrs = shownAttrs(n); !attrs.empty()) lines.push_back(attrs);
    }
    std::string style = n.inserted ? "filled,dashed" : "filled";
    std::string attrs = std::string(cast ? "shape=hexagon, color=\"" + std::string(kCastColour) +
                                               "\", penwidth=1.5, "
                                         : "shape=box, ");
    std::string tip = tooltip(n.loc, n.result);
    if (auto e = errors_.find(n.loc.str()); n.loc.known() && e != errors_.end()) {
      // Rejected: red, and the diagnostics as the tooltip.
      attrs += "color=red, fontcolor=red, penwidth=2, ";
      tip = ", tooltip=" + dotString(e->second);  // messages only: no locations in them
      style = "filled,bold";
    }
    add(shownDevice(g_, n), "n" + std::to_string(n.id),
        attrs + "style=\"" + style + "\", label=" + dotLabel(lines) + tip);
  }

  void cluster(size_t index, const std::string &body) {
    const auto &[fill, border] = kPalette[index % kPalette.size()];
    const std::string name = devices_[index].str();
    out_ += "  subgraph " + dotString("cluster_" + name) + " {\n";
    out_ += "    label=" + dotString("@" + name) + "; style=\"filled,rounded\"; fillcolor=\"" +
            std::string(fill) + "\"; color=\"" + std::string(border) +
            "\"; fontname=\"monospace\"; fontsize=12;\n";
    out_ += body + "  }\n";
  }

  // The value a use reads, through transfers: drawn from where the data comes from.
  ValueId origin(ValueId v, std::vector<const Node *> &hops) const {
    for (const Node *p = g_.producer(v); p && p->op == OpKind::Transfer; p = g_.producer(v)) {
      hops.push_back(p);
      v = p->operands[0];
    }
    return v;
  }

  std::string idOf(ValueId v) const {
    const Node *p = g_.producer(v);
    return p != nullptr ? "n" + std::to_string(p->id) : "v" + std::to_string(v);
  }

  // An edge from what produces `v` to `to`. A value that came through transfers is a bold edge
  // from its origin, labelled with the copy: destination and bytes per run.
  void edge(ValueId v, const std::string &to) {
    std::vector<const Node *> hops;
    const ValueId from = origin(v, hops);
    const std::string type = g_.value(v).type.str();
    if (hops.empty()) {
      out_ += "  " + idOf(from) + " -> " + to + " [label=" + dotString(type) + "];\n";
      return;
    }
    std::vector<std::string> label;
    for (auto it = hops.rbegin(); it != hops.rend(); ++it) {
      const Value &r = g_.value((*it)->result);
      label.push_back("transfer -> " + (r.device ? r.device->str() : std::string("?")) + " " +
                      bytesText(static_cast<int64_t>(r.type.byteSize())));
    }
    label.push_back(type);
    out_ += "  " + idOf(from) + " -> " + to + " [label=" + dotLabel(label) +
            ", style=bold, penwidth=2.5, color=\"" + std::string(kTransferColour) +
            "\", fontcolor=\"" + std::string(kTransferColour) + "\"];\n";
  }

  // Graphviz lays a rank's nodes out right to left in the order they are declared here, so the
  // legend is declared backwards to read input, param, op, cast, transfer, devices.
  void legend() {
    std::vector<std::string> items = {
        "legend_in [shape=invhouse, label=\"input\"];",
        "legend_param [shape=cylinder, label=\"param\"];",
        "legend_op [shape=box, label=\"op\"];",
        "legend_cast [shape=hexagon, style=\"filled,dashed\", color=\"" + std::string(kCastColour) +
            "\", label=\"inserted cast\"];",
        "legend_a [shape=point, width=0.05]; legend_b [shape=point, width=0.05];",
        "legend_a -> legend_b [label=\"transfer\", style=bold, penwidth=2.5, color=\"" +
            std::string(kTransferColour) + "\", fontcolor=\"" + std::string(kTransferColour) +
            "\"];"};
    for (size_t i = 0; i < devices_.size(); ++i)
      items.push_back("legend_d" + std::to_string(i) + " [shape=box, style=\"filled,rounded\", " +
                      "fillcolor=\"" + std::string(kPalette[i % kPalette.size()].first) +
                      "\", color=\"" + std::string(kPalette[i % kPalette.size()].second) +
                      "\", label=" + dotString("@" + devices_[i].str()) + "];");
    out_ += "  subgraph cluster_legend {\n";
    out_ += "    label=\"legend\"; style=rounded; color=gray; fontname=\"monospace\";\n";
    for (auto it = items.rbegin(); it != items.rend(); ++it) out_ += "    " + *it + "\n";
    out_ += "  }\n";
  }

  // The source location and why the value is on its device (reason chains name locations too,
  // so --no-locations drops both).
  std::string tooltip(const Location &loc, ValueId v) const {
    if (!o_.locations) return "";
    std::string tip = loc.known() ? loc.str() : "";
    if (g_.value(v).device) tip += (tip.empty() ? "" : ": ") + explained_[static_cast<size_t>(v)];
    return tip.empty() ? "" : ", tooltip=" + dotString(tip);
  }

  const Graph &g_;
  const DotOptions &o_;
  std::vector<std::string> explained_;  // tooltips: why each value is on its device
  std::vector<Device> devices_;
  std::map<size_t, std::string> clusters_;  // by device index
  std::string unplaced_;
  std::map<std::string, std::string> errors_;  // by location: the messages and their fixes
  std::string out_;
};

}  // namespace

std::string emitDot(const Graph &g, const DotOptions &options) {
  return DotWriter(g, options).render();
}

}  // namespace ferry
