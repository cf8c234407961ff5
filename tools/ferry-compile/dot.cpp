// tools/ferry-compile/dot.cpp — Graphviz DOT rendering of a graph.
#include "tools/ferry-compile/dot.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <map>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "passes/explain.h"
#include "passes/load_time.h"
#include "tools/ferry-compile/dot_chains.h"

namespace ferry {

namespace {

// Attribute values longer than this are cut in DOT labels (a constant's data, long lists).
constexpr size_t kMaxDotAttrChars = 40;

// A value name shown whole in labels up to kMaxNameChars; a longer one as its first 20 and last 9
// characters around "..." (tooltips keep it whole).
std::string shortName(const std::string &name) {
  if (name.size() <= kMaxNameChars) return name;
  return name.substr(0, 20) + "..." + name.substr(name.size() - 9);
}

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
constexpr const char *kTransferEdgeStyle =
    "style=bold, penwidth=2.5, color=\"#c0392b\", fontcolor=\"#c0392b\"";

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

// What the drawing needs beyond the graph: a cluster per device, transfers as points with one
// bold edge each, long chains as one box, the diagnostics of a rejected compile on their nodes.
class DotWriter {
 public:
  DotWriter(const Graph &g, const DotOptions &o)
      : g_(g),
        o_(o),
        explained_(o.locations ? explainDevices(g) : std::vector<std::string>{}),
        weights_(weightValues(g)) {
    for (Device d : o.devices) deviceIndex(d);
    for (const Diagnostic &d : o.diagnostics)
      if (d.severity == Severity::Error && d.loc.known()) {
        std::string &text = errors_[d.loc.str()];
        text += (text.empty() ? "" : "; ") + d.message;
        for (const std::string &f : d.fixes) text += " (fix: " + f + ")";
      }
    chainOf_.assign(g.nodeCount(), -1);
    chains_ = longChains(g, [&](const Node &n) { return rejected(n); });
    for (size_t c = 0; c < chains_.size(); ++c)
      for (NodeId id : chains_[c]) chainOf_[static_cast<size_t>(id)] = static_cast<int>(c);
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
              dotLabel({"input %" + shortName(v.name), v.type.str() + " @" + in.device.str()}) +
              tooltip(in.loc, in.value));
    }
    for (const ParamDecl &p : g_.params()) {
      const Value &v = g_.value(p.value);
      std::optional<Device> d = v.device ? v.device : p.pin;
      add(d, "v" + std::to_string(p.value),
          "shape=cylinder, label=" +
              dotLabel({"param %" + shortName(v.name), v.type.str() + (d ? " @" + d->str() : "")}) +
              tooltip(p.loc, p.value));
    }
    for (NodeId id : g_.order()) {
      const Node &n = g_.node(id);
      const int chain = chainOf_[static_cast<size_t>(id)];
      if (n.op == OpKind::Transfer)
        transferPoint(n);
      else if (chain < 0)
        node(n);
      else if (chains_[static_cast<size_t>(chain)].front() == id)
        chainBox(chains_[static_cast<size_t>(chain)]);
    }
    for (const auto &[group, body] : groupBodies_) fusedCluster(group, body);
    for (const auto &[index, body] : clusters_) cluster(index, body);
    out_ += unplaced_;
    for (NodeId id : g_.order()) {
      const Node &n = g_.node(id);
      const int chain = chainOf_[static_cast<size_t>(id)];
      if (n.op == OpKind::Transfer) {
        transferEdge(n);
      } else if (chain < 0) {
        for (ValueId o : n.operands) edge(o, "n" + std::to_string(id));
      } else if (chains_[static_cast<size_t>(chain)].front() == id) {
        // What the chain reads from outside it, one edge per value.
        std::unordered_set<ValueId> drawn;  // a chain may read thousands of values
        for (NodeId member : chains_[static_cast<size_t>(chain)])
          for (ValueId o : g_.node(member).operands) {
            const Node *p = g_.producer(o);
            if ((p != nullptr && chainOf_[static_cast<size_t>(p->id)] == chain) ||
                !drawn.insert(o).second)
              continue;
            edge(o, idOf(g_.node(chains_[static_cast<size_t>(chain)].back()).result));
          }
      }
    }
    for (size_t i = 0; i < g_.outputs().size(); ++i) {
      const OutputDecl &out = g_.outputs()[i];
      const Value &v = g_.value(out.value);
      std::vector<std::string> lines = {"output %" + shortName(v.name)};
      if (out.pin) lines.push_back("@" + out.pin->str());
      const std::string id = "out" + std::to_string(i);
      std::string tip = o_.locations && out.loc.known() ? out.loc.str() : "";
      if (shortName(v.name) != v.name) tip = "%" + v.name + (tip.empty() ? "" : ": " + tip);
      out_ += "  " + id + " [shape=house, label=" + dotLabel(lines) +
              (tip.empty() ? "" : ", tooltip=" + dotString(tip)) + "];\n";
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

  bool rejected(const Node &n) const { return n.loc.known() && errors_.contains(n.loc.str()); }

  // A statement inside its device's cluster, or outside when the value has no device yet; a
  // member of a fusion group (`group` >= 0) inside the group's box within its device's.
  void add(std::optional<Device> d, const std::string &id, const std::string &attrs,
           int32_t group = -1) {
    const std::string line = "    " + id + " [" + attrs + "];\n";
    if (d && group >= 0) {
      groupBodies_[group] += "  " + line;
      groupDevice_[group] = deviceIndex(*d);
    } else if (d) {
      clusters_[deviceIndex(*d)] += line;
    } else {
      unplaced_ += line.substr(2);
    }
  }

  // A fusion group: a dashed box inside its device's cluster, labelled with its number and ops
  // (the nodes in it run as one kernel).
  void fusedCluster(int32_t group, const std::string &body) {
    const FusionGroup &fg = g_.groups()[static_cast<size_t>(group)];
    std::string ops;
    for (NodeId id : fg.members) {
      const std::string op(g_.node(id).info().name);
      if (ops.find(op) == std::string::npos) ops += (ops.empty() ? "" : " + ") + op;
    }
    std::string &cluster = clusters_[groupDevice_.at(group)];
    cluster += "    subgraph " + dotString("cluster_fused_" + std::to_string(group)) + " {\n";
    cluster += "      label=" + dotString("fused " + std::to_string(group) + ": " + ops) +
               "; style=\"dashed,rounded\"; color=\"#555555\"; fontsize=10;\n";
    cluster += body + "    }\n";
  }

  void node(const Node &n) {
    const Value &r = g_.value(n.result);
    const bool cast = n.op == OpKind::Cast;
    std::vector<std::string> lines;
    if (cast) {
      const DType from = g_.value(n.operands[0]).type.dtype;
      lines = {"%" + shortName(r.name) + " = cast",
               std::string(dtypeName(from)) + " -> " + std::string(dtypeName(r.type.dtype)),
               shapeStr(r.type.shape) + " " + bytesText(static_cast<int64_t>(r.type.byteSize()))};
    } else {
      lines = {"%" + shortName(r.name) + " = " + std::string(n.info().name), r.type.str()};
      if (n.pinDevice) lines.back() += " pinned @" + n.pinDevice->str();
      if (n.pinDType) lines.back() += " as " + std::string(dtypeName(*n.pinDType));
      if (std::string attrs = shownAttrs(n); !attrs.empty()) lines.push_back(attrs);
    }
    std::string style = n.inserted ? "filled,dashed" : "filled";
    std::string attrs = std::string(cast ? "shape=hexagon, color=\"" + std::string(kCastColour) +
                                               "\", penwidth=1.5, "
                                         : "shape=box, ");
    std::string tip = tooltip(n.loc, n.result);
    if (rejected(n)) {
      // Rejected: red, and the diagnostics as the tooltip.
      attrs += "color=red, fontcolor=red, penwidth=2, ";
      tip = ", tooltip=" + dotString(errors_.at(n.loc.str()));  // messages: no locations in them
      style = "filled,bold";
    }
    add(shownDevice(g_, n), "n" + std::to_string(n.id),
        attrs + "style=\"" + style + "\", label=" + dotLabel(lines) + tip, n.group);
  }

  // A transfer: a small point in its destination's cluster, where the one bold edge that carries
  // the copy ends and from which its users read.
  void transferPoint(const Node &n) {
    const Value &r = g_.value(n.result);
    std::string tip = "transfer of %" + g_.value(n.operands[0]).name + " to " +
                      (r.device ? r.device->str() : std::string("?")) + ", " +
                      std::to_string(r.type.byteSize()) +
                      (runsAtLoad(n, weights_) ? " bytes once, at load (a weight)" : " bytes per run");
    if (o_.locations && r.device) tip += ": " + explained_[static_cast<size_t>(n.result)];
    add(shownDevice(g_, n), "n" + std::to_string(n.id),
        "shape=point, width=0.12, color=\"" + std::string(kTransferColour) + "\", fillcolor=\"" +
            std::string(kTransferColour) + "\", tooltip=" + dotString(tip));
  }

  // The copy: a bold edge from what it copies to its point, labelled with the destination, the
  // bytes per run (or "at load" for a weight's, made once per session) and the type.
  void transferEdge(const Node &n) {
    const Value &r = g_.value(n.result);
    const std::vector<std::string> label = {
        "transfer -> " + (r.device ? r.device->str() : std::string("?")) + " " +
            bytesText(static_cast<int64_t>(r.type.byteSize())) +
            (runsAtLoad(n, weights_) ? " at load" : ""),
        r.type.str()};
    out_ += "  " + idOf(n.operands[0]) + " -> n" + std::to_string(n.id) +
            " [label=" + dotLabel(label) + ", " + kTransferEdgeStyle + "];\n";
  }

  // A long chain as one box: how many nodes, which ops, the first and last value, the last type.
  void chainBox(const std::vector<NodeId> &chain) {
    std::vector<std::string> ops;
    for (NodeId id : chain) {
      const std::string op(g_.node(id).info().name);
      if (std::find(ops.begin(), ops.end(), op) == ops.end()) ops.push_back(op);
    }
    std::string opList;
    for (size_t i = 0; i < ops.size() && i < 3; ++i) opList += (i ? ", " : "") + ops[i];
    if (ops.size() > 3) opList += ", ...";
    const Node &first = g_.node(chain.front()), &last = g_.node(chain.back());
    const Value &a = g_.value(first.result), &z = g_.value(last.result);
    const std::vector<std::string> lines = {
        std::to_string(chain.size()) + " nodes: " + opList,
        "(%" + shortName(a.name) + " .. %" + shortName(z.name) + ")", z.type.str()};
    std::string tip = std::to_string(chain.size()) + " nodes, drawn as one box: %" + a.name;
    for (size_t i = 1; i < chain.size() && i < 50; ++i)
      tip += ", %" + g_.value(g_.node(chain[i]).result).name;
    if (chain.size() > 50) tip += ", ... %" + z.name;
    if (o_.locations && first.loc.known())
      tip += " (" + first.loc.str() + (last.loc.known() ? " to " + last.loc.str() : "") + ")";
    add(shownDevice(g_, last), "n" + std::to_string(last.id),
        "shape=box3d, style=\"filled\", label=" + dotLabel(lines) + ", tooltip=" + dotString(tip));
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

  // The DOT node that holds `v`: its producer (a transfer's point, the box of a long chain), or
  // the input or param.
  std::string idOf(ValueId v) const {
    const Node *p = g_.producer(v);
    if (p == nullptr) return "v" + std::to_string(v);
    const int chain = chainOf_[static_cast<size_t>(p->id)];
    return "n" + std::to_string(chain < 0 ? p->id : chains_[static_cast<size_t>(chain)].back());
  }

  // An edge from what holds `v` to `to`, labelled with its type; from a transfer's point it is
  // plain (its bold edge carries the type).
  void edge(ValueId v, const std::string &to) {
    const Node *p = g_.producer(v);
    const bool fromTransfer = p != nullptr && p->op == OpKind::Transfer;
    out_ += "  " + idOf(v) + " -> " + to +
            (fromTransfer ? std::string(";\n")
                          : " [label=" + dotString(g_.value(v).type.str()) + "];\n");
  }

  // Graphviz lays a rank's nodes out right to left in the order they are declared here, so the
  // legend is declared backwards to read input, param, op, cast, inserted, rejected, transfer,
  // (a long chain,) devices; a fusion group's box, a cluster, goes where Graphviz puts clusters
  // (after them).
  void legend() {
    std::vector<std::string> items = {
        "legend_in [shape=invhouse, label=\"input\"];",
        "legend_param [shape=cylinder, label=\"param\"];",
        "legend_op [shape=box, label=\"op\"];",
        "legend_cast [shape=hexagon, color=\"" + std::string(kCastColour) +
            "\", penwidth=1.5, label=\"cast\"];",
        "legend_inserted [shape=box, style=\"filled,dashed\", label=\"inserted\"];",
        "legend_rejected [shape=box, style=\"filled,bold\", color=red, fontcolor=red, "
        "penwidth=2, label=\"rejected\"];",
        "legend_a [shape=point, width=0.05]; legend_b [shape=point, width=0.12, color=\"" +
            std::string(kTransferColour) + "\", fillcolor=\"" + std::string(kTransferColour) +
            "\"];",
        "{rank=same; legend_a -> legend_b [label=\"transfer\", " + std::string(kTransferEdgeStyle) +
            "];}"};
    if (!g_.groups().empty())  // drawn as fusedCluster draws a group
      items.push_back("subgraph cluster_legend_fused { label=\"fused N: ops\"; "
                      "style=\"dashed,rounded\"; color=\"#555555\"; fontsize=10; "
                      "legend_fused [shape=box, label=\"one kernel\"]; }");
    if (!chains_.empty())
      items.push_back("legend_chain [shape=box3d, label=\"more than " +
                      std::to_string(kMaxChainDrawn) + " nodes\\nin a chain\"];");
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

  // The value's full name when its label shortens it, the source location, and why the value is
  // on its device (reason chains name locations too, so --no-locations drops both).
  std::string tooltip(const Location &loc, ValueId v) const {
    const std::string &name = g_.value(v).name;
    std::string tip = shortName(name) != name ? "%" + name : "";
    if (o_.locations && loc.known()) tip += (tip.empty() ? "" : ": ") + loc.str();
    if (o_.locations && g_.value(v).device)
      tip += (tip.empty() ? "" : ": ") + explained_[static_cast<size_t>(v)];
    return tip.empty() ? "" : ", tooltip=" + dotString(tip);
  }

  const Graph &g_;
  const DotOptions &o_;
  std::vector<std::string> explained_;  // tooltips: why each value is on its device
  std::vector<uint8_t> weights_;        // per value: a weight (passes/load_time.h)
  std::vector<Device> devices_;
  std::map<size_t, std::string> clusters_;  // by device index
  std::map<int32_t, std::string> groupBodies_;  // by fusion group
  std::map<int32_t, size_t> groupDevice_;
  std::string unplaced_;
  std::map<std::string, std::string> errors_;  // by location: the messages and their fixes
  std::vector<std::vector<NodeId>> chains_;    // long chains, each drawn as one box
  std::vector<int> chainOf_;                   // per node id: its chain's index, or -1
  std::string out_;
};

}  // namespace

std::string emitDot(const Graph &g, const DotOptions &options) {
  return DotWriter(g, options).render();
}

}  // namespace ferry
