// passes/placement_strict.cpp — strict placement: devices follow pins, inputs and the data flow;
// operands that disagree are errors, never silent copies.
//   1. forward   in order: a pinned node runs on its pin, a transfer's result is on its `to`, an
//                unpinned node on its decided operands' device. When those disagree (an error,
//                reported in 3) it takes the one the user pinned most to (see Strength), so the
//                nodes after it are judged on their own, as if the fix had been applied.
//                A node with no decided operand (only unpinned params and constants) waits.
//   2. backward  in reverse order: each value still undecided takes the device of its first
//                consumer (an output pin counts as a consumer after every node); a value nothing
//                decides goes to options.target. Transfers take any operand, so they decide
//                nothing.
//   3. check     each node 1 found an undecided or disagreeing operand of, and whose operands
//                are not all on its device: one error naming the op, every operand with its type,
//                device and reason chain, and a fix. (A node about to fall back to cpu may also
//                read operands on cpu.)
//   4. kernels   a node whose device has no kernel for it runs on cpu instead (a warning, the
//                transfers around it inserted later) or is an error when fallback is off.
//   5. sources   after fallbacks, a value decided backward whose consumers all run on one other
//                device moves there (a weight read only by a node that fell back to cpu).
// One walk over the graph (1); 2 and 3 visit only what 1 recorded, 4 runs only with a capability
// table, 5 only when something fell back.
//
// Where the graph lives, and the fix an error names. A node whose operands disagree runs where
// the graph lives: on its pin if it has one, else on the strongest of its operands' devices —
// the one the most pins name (params, nodes, and inputs, whose declared device counts as a pin);
// on a tie a device other than the default cpu, then the one with the most bytes of pinned
// params, then the earliest operand's (Strength). Each operand off that device gets the fix that
// respects what the user wrote:
//   - a param or `constant` pinned elsewhere (directly, or through unpinned one-operand nodes that
//     inherit its device, as `%m = neg(%mask)`) is data created on the wrong device: the fix
//     names its pin, "drop the @cpu pin on %pos, or pin it to cuda:0";
//   - any other operand (an input, an activation, an unpinned weight) is moved: "move %x to
//     cuda:0 with transfer(%x, to=cuda:0), or compile with placement=auto to insert the transfer".
// The node is placed where its fix puts it, so the nodes after it are judged as if that fix were
// applied: no error follows from another, and every independent one is reported in the same run
// (two tables pinned @cpu feeding a cuda:0 graph: two errors, each naming its pin).
#include <algorithm>

#include "ir/printer.h"
#include "passes/explain.h"
#include "passes/placement_impl.h"

namespace ferry::placement {

namespace {

using Kind = Reason::Kind;
constexpr size_t kPrefetchAhead = 12;  // values: see Graph::prefetch

// How strongly the user placed the model on each device: the pins naming it (params, nodes and
// inputs' declared devices); on a tie, a device other than the default `cpu` (tensors land there
// when nobody says otherwise, as PyTorch creates them, so the cpu side of an even split is the
// likelier mistake); then the bytes of the params pinned there. A node whose operands disagree
// goes to the strongest of their devices: the side the user most likely meant, and the one the
// fix moves the other operands to ("weights pinned to cuda:0, input left on cpu": move the input;
// "a cuda:0 model with a positional table pinned @cpu": drop that pin).
struct Strength {
  int64_t pins = 0;
  bool chosen = false;  // not the default cpu
  double bytes = 0;
  bool operator<(const Strength &o) const {
    if (pins != o.pins) return pins < o.pins;
    if (chosen != o.chosen) return o.chosen;
    return bytes < o.bytes;
  }
};

std::vector<Strength> strengths(const Placer &p) {
  std::vector<Strength> s(p.devices.size());
  for (size_t l = 0; l < s.size(); ++l) s[l].chosen = p.devices[l] != Device::cpu();
  for (const ParamDecl &pr : p.graph.params())
    if (pr.pin) {
      Strength &d = s[p.label[pr.value]];
      ++d.pins;
      d.bytes += static_cast<double>(p.graph.value(pr.value).type.byteSize());
    }
  for (NodeId id : p.graph.order())
    if (p.pin[id] != kNone) ++s[p.pin[id]].pins;
  for (const InputDecl &in : p.graph.inputs()) ++s[p.label[in.value]].pins;
  return s;
}

// For a node whose decided operands disagree: the first operand on the strongest of their
// devices (ties: the device of the earliest operand).
ValueId strongest(const Placer &p, const Node &n, const std::vector<Strength> &strength) {
  ValueId best = -1;
  for (ValueId o : n.operands) {
    Label l = p.label[o];
    if (l != kNone && (best < 0 || strength[p.label[best]] < strength[l])) best = o;
  }
  return best;
}

// What the phases share: the values left undecided by 1 (params first, then nodes in order),
// the first user of each, and the nodes 3 must look at.
struct Strict {
  std::vector<uint8_t> open;      // per value: undecided after 1
  std::vector<ValueId> openList;  // the undecided values, in order
  // Per value: the first node reading it (transfers aside), or ~(2 + i) for output i when only
  // pinned outputs read it, or -1.
  std::vector<int32_t> firstUser;
  std::vector<NodeId> suspects;  // nodes with an undecided or disagreeing operand, in order
};

// 1. forward. Also records what 2 and 3 need, so that neither walks the whole graph again.
void forward(Placer &p, Strict &s) {
  Graph &g = p.graph;
  const std::vector<Strength> strength = strengths(p);
  for (const ParamDecl &pr : g.params())
    if (!pr.pin) s.open[pr.value] = 1, s.openList.push_back(pr.value);
  const auto order = g.order();
  for (size_t i = 0; i < order.size(); ++i) {
    // Every result is written, a cache miss each on a large graph: ask for a later one now.
    if (i + kPrefetchAhead < order.size()) g.prefetch(g.node(order[i + kPrefetchAhead]).result);
    const NodeId id = order[i];
    const Node &n = g.node(id);
    if (n.op == OpKind::Transfer) {
      p.placeTransfer(n);
      continue;
    }
    ValueId from = -1;
    bool agree = true, hasOpen = false;
    for (ValueId o : n.operands) {
      if (s.open[o]) {
        hasOpen = true;
        if (s.firstUser[o] == -1) s.firstUser[o] = id;
      } else if (from < 0) {
        from = o;
      } else if (p.label[o] != p.label[from]) {
        agree = false;
      }
    }
    Label pin = p.pin[id];
    if (pin != kNone) {
      p.place(n.result, pin, Reason{Kind::Pinned, -1, n.loc, {}});
      if (hasOpen || (from >= 0 && (!agree || p.label[from] != pin))) s.suspects.push_back(id);
    } else if (from < 0) {
      s.open[n.result] = 1;
      s.openList.push_back(n.result);
      // Its operands follow their own first users, which need not be this node.
      if (!n.operands.empty()) s.suspects.push_back(id);
    } else {
      if (!agree) from = strongest(p, n, strength);
      p.place(n.result, p.label[from], Kind::Inherited, from);
      if (hasOpen || !agree) s.suspects.push_back(id);
    }
  }
}

// 2. backward. A value's first user comes after it, so in reverse order it is decided first.
void backward(Placer &p, Strict &s) {
  Graph &g = p.graph;
  const auto outputs = g.outputs();
  for (size_t i = 0; i < outputs.size(); ++i) {
    ValueId v = outputs[i].value;
    if (outputs[i].pin && s.open[v] && s.firstUser[v] == -1)
      s.firstUser[v] = ~static_cast<int32_t>(2 + i);
  }
  for (size_t i = s.openList.size(); i-- > 0;) {
    if (i >= kPrefetchAhead) g.prefetch(s.openList[i - kPrefetchAhead]);
    ValueId v = s.openList[i];
    int32_t u = s.firstUser[v];
    if (u >= 0) {
      ValueId r = g.node(u).result;
      p.place(v, p.label[r], Kind::FromConsumer, r);
    } else if (u == -1) {
      p.place(v, p.target, Kind::Target);
    } else {
      size_t o = static_cast<size_t>(~u) - 2;
      p.place(v, p.outputPin[o], Reason{Kind::Pinned, -1, outputs[o].loc, "pinned by an output"});
    }
  }
}

// The value whose pin puts `v` on its device when that pin is the user's data placement: a pinned
// param or `constant`, reached through unpinned one-operand nodes that inherit their device from
// it (`%m = neg(%mask)`). -1 when there is none: `v` is then moved, not re-pinned.
ValueId pinnedSource(const Placer &p, ValueId v) {
  const Graph &g = p.graph;
  for (size_t hops = 0; hops < g.valueCount(); ++hops) {
    const Value &val = g.value(v);
    if (val.kind == ValueKind::Param) return g.paramOf(v).pin ? v : -1;
    if (val.kind != ValueKind::Result) return -1;
    const Node &n = g.node(val.def);
    if (n.op == OpKind::Transfer) return -1;
    if (p.pin[n.id] != kNone) return p.isSource(n) ? v : -1;
    const Reason &r = g.deviceReason(v);
    if (n.operands.size() != 1 || r.kind != Kind::Inherited || r.from != n.operands[0]) return -1;
    v = n.operands[0];
  }
  return -1;
}

// 3. One node's conflict: the devices involved, every operand with its reason chain, a fix for
// each operand off the node's device (see "Where the graph lives" above).
void reportConflict(Placer &p, const Node &n) {
  const Graph &g = p.graph;
  Label at = p.label[n.result];
  std::vector<Label> seen;
  std::vector<ValueId> off;
  for (ValueId o : n.operands) {
    Label l = p.label[o];
    if (std::find(seen.begin(), seen.end(), l) == seen.end()) seen.push_back(l);
    if (l != at && std::find(off.begin(), off.end(), o) == off.end()) off.push_back(o);
  }
  bool pinned = p.pin[n.id] != kNone;
  std::string message;
  if (seen.size() == 1)
    message = p.nodeRef(n) + (pinned ? " is pinned to " : " is on ") + p.devices[at].str() +
              " but its operand" + (n.operands.size() == 1 ? " is" : "s are") + " on " +
              p.devices[seen[0]].str();
  else
    message = "operands of " + p.nodeRef(n) + " are on different devices: " + p.devicesText(seen);
  Diagnostic &d = p.ctx.diags.error("device", n.loc, message);
  if (pinned && seen.size() > 1)
    d.detail(valueRef(g.value(n.result).name) + " is pinned to " + p.devices[at].str(), n.loc);

  // One line per operand, in columns: operand, value, type, device, reason chain.
  const OpInfo &op = n.info();
  std::vector<std::vector<std::string>> rows;
  for (size_t i = 0; i < n.operands.size(); ++i) {
    const Value &v = g.value(n.operands[i]);
    rows.push_back({"operand " + std::to_string(i) + " (" + op.operand(i).name + ")",
                    valueRef(v.name), v.type.str(), "@" + p.devices[p.label[v.id]].str(),
                    explainDevice(g, n.operands[i])});
  }
  std::vector<std::string> lines = alignColumns(rows);
  for (size_t i = 0; i < lines.size(); ++i)
    d.detail(std::move(lines[i]), definitionLoc(g, n.operands[i]));

  const std::string to = p.devices[at].str();
  std::vector<ValueId> sources, moved;
  for (ValueId o : off) {
    ValueId s = pinnedSource(p, o);
    if (s < 0)
      moved.push_back(o);
    else if (std::find(sources.begin(), sources.end(), s) == sources.end())
      sources.push_back(s);
  }
  for (ValueId s : sources) {
    const std::string name = valueRef(g.value(s).name);
    const std::string from = p.devices[p.label[s]].str();
    std::vector<std::string> via;  // operands computed from it, on its device
    for (ValueId o : off)
      if (o != s && pinnedSource(p, o) == s) via.push_back(valueRef(g.value(o).name));
    std::string puts;
    for (size_t i = 0; i < via.size(); ++i)
      puts += (i == 0 ? "" : i + 1 == via.size() ? " and " : ", ") + via[i];
    d.fix("drop the @" + from + " pin on " + name +
          (via.empty() ? "" : ", which puts " + puts + " on " + from) + ", or pin it to " + to);
  }
  if (moved.empty()) return;
  std::string names, moves;
  for (size_t i = 0; i < moved.size(); ++i) {
    std::string sep = i == 0 ? "" : i + 1 == moved.size() ? " and " : ", ";
    names += sep + valueRef(g.value(moved[i]).name);
    moves += sep + "transfer(" + valueRef(g.value(moved[i]).name) + ", to=" + to + ")";
  }
  d.fix("move " + names + " to " + to + " with " + moves +
        ", or compile with placement=auto to insert the transfer" + (moved.size() > 1 ? "s" : ""));
}

// 5. sources: see the overview.
void settleSources(Placer &p, const std::vector<uint8_t> &open) {
  Graph &g = p.graph;
  p.buildUsers();
  auto settle = [&](ValueId v, const Node *n) {
    if (!open[v]) return;
    Label to = kNone;
    int32_t first = 0;
    for (int32_t u : p.users(v)) {
      if (u >= 0 && g.producer(u)->op == OpKind::Transfer) continue;
      Label l = p.userLabel(u);
      if (to == kNone)
        to = l, first = u;
      else if (l != to)
        return;
    }
    if (to == kNone || to == p.label[v] || (n && !p.supports(*n, to))) return;
    if (first >= 0)
      p.place(v, to, Kind::FromConsumer, first);
    else
      p.place(v, to,
              Reason{Kind::Pinned, -1, g.outputs()[static_cast<size_t>(~first)].loc,
                     "pinned by an output"});
  };
  const auto order = g.order();
  for (size_t i = order.size(); i-- > 0;) {
    const Node &n = g.node(order[i]);
    if (n.op != OpKind::Transfer) settle(n.result, &n);
  }
  for (const ParamDecl &pr : g.params()) settle(pr.value, nullptr);
}

}  // namespace

void placeStrict(Placer &p) {
  Graph &g = p.graph;
  Strict s{
      std::vector<uint8_t>(g.valueCount(), 0), {}, std::vector<int32_t>(g.valueCount(), -1), {}};
  forward(p, s);
  backward(p, s);
  for (NodeId id : s.suspects) {
    const Node &n = g.node(id);
    Label at = p.label[n.result];
    // A node that will fall back to cpu may read its operands there already (its own output,
    // placed again: the fallback's transfers are in the graph).
    Label also = at < p.available && p.options.fallback && p.cpu != kNone && !p.supports(n, at) &&
                         p.supports(n, p.cpu)
                     ? p.cpu
                     : at;
    for (ValueId o : n.operands)
      if (p.label[o] != at && p.label[o] != also) {
        reportConflict(p, n);
        break;
      }
  }
  if (p.options.capabilities.anyMissing()) {
    for (NodeId id : g.order()) {
      const Node &n = g.node(id);
      Label l = p.label[n.result];
      if (n.op != OpKind::Transfer && l < p.available && !p.supports(n, l))
        p.runnable(id, l, explainDevice(g, n.result));
    }
  }
  if (p.anyFallback) settleSources(p, s.open);
}

}  // namespace ferry::placement
