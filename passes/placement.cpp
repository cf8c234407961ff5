// passes/placement.cpp — device placement: decides the device of every value, then makes each
// cross-device edge an explicit `transfer` node, or rejects the graph with diagnostics.
//
// Policies (DESIGN.md, "Placement semantics"):
//   strict  eager-framework semantics checked ahead of time (placement_strict.cpp): inputs stay
//           where they are declared, pins are obeyed, unpinned nodes take their operands' device,
//           unpinned params and constants their consumers'. Every node whose operands disagree
//           is an error, all of them in one run. Nothing moves implicitly.
//   auto    pins are constraints; everything else minimises the cost model's estimate of compute
//           plus transfers per run (placement_auto.cpp; a weight's transfers run once, at load,
//           and cost nothing per run). Exact (a minimum s-t cut) with two devices.
// In both, an op the chosen device has no kernel for falls back to the CPU (a warning) or is an
// error (fallback off), and an output pin (`output %y @cpu`) is honoured with a transfer.
//
// Phases:
//   0. undo      auto only: transfers an earlier run inserted (Node::inserted) are taken out,
//                their consumers reading the original value again, and kept for reuse in 4.
//                (Strict keeps them: they are explicit in the graph it is given, like a user's.)
//   1. index     a label per device; pins (a transfer's `to` is one); every pin, input device
//                and output pin must be an available device
//   2. seed      inputs on their declared device, pinned params on their pin
//   3. decide    the policy's rules give every value a device and a Reason (Value::device,
//                Graph::deviceReason): every input, param and node result, dead ones aside
//   4. insert    unless there were errors: one transfer per (value, destination device), right
//                after the producer (inputs' and params' at the start), its result named like
//                `x.cuda0`; every consumer on that device reads it. Transfers already in the
//                graph are reused where they come before the consumer.
//
// After a node's error, in verify (PassContext::rejected) or here, the pass goes on judging the
// rest of the graph (compile() then runs the dtype pass too) but inserts nothing. Strict needs no
// types; auto's cost model does, so after a type error it leaves the values no pin decides
// undecided: its choice would rest on types the model does not have.
//
// Invariants after a run without errors: every node has a device; every operand of a
// non-transfer node is on its node's device; every pinned output's value is on its pin.
// Idempotent: on its own output, strict finds every edge agreeing already (the transfers it
// inserted are in the graph), and auto restores the graph it was given in 0, decides the same
// devices (deterministically) and puts the same transfer nodes back in 4, names and all.
// Deterministic: everything is visited in order (inputs, params, nodes, outputs).
#include <algorithm>
#include <charconv>
#include <cmath>

#include "ir/printer.h"
#include "passes/explain.h"
#include "passes/placement_impl.h"

namespace ferry {

namespace placement {

Placer::Placer(Graph &g, PassContext &c) : graph(g), ctx(c), options(c.options) {
  devices = options.devices;
  available = devices.size();
  target = labelOf(options.target);
  for (size_t i = 0; i < available; ++i)
    if (devices[i] == Device::cpu()) cpu = static_cast<Label>(i);
  label.assign(graph.valueCount(), kNone);
  pin.assign(graph.nodeCount(), kNone);
}

Label Placer::labelOf(Device d) {
  for (size_t i = 0; i < devices.size(); ++i)
    if (devices[i] == d) return static_cast<Label>(i);
  FERRY_CHECK(devices.size() < kNone) << "too many devices";
  devices.push_back(d);
  return static_cast<Label>(devices.size() - 1);
}

void Placer::place(ValueId v, Label l, Reason reason) {
  if (static_cast<size_t>(v) >= label.size()) label.resize(static_cast<size_t>(v) + 1, kNone);
  label[v] = l;
  Value &val = graph.value(v);
  val.device = devices[l];
  graph.deviceReason(v) = std::move(reason);
}

void Placer::place(ValueId v, Label l, Reason::Kind kind, ValueId from) {
  label[v] = l;
  Value &val = graph.value(v);
  val.device = devices[l];
  Reason &r = graph.deviceReason(v);
  r.kind = kind;
  r.from = from;
  r.loc = {};
  r.detail.clear();
}

void Placer::placeTransfer(const Node &n) {
  Label to = pin[n.id];
  place(n.result, to,
        n.inserted
            ? Reason{Reason::Kind::Inserted, n.operands[0], n.loc, {}}
            : Reason{Reason::Kind::Pinned, -1, n.loc, "transfer(to=" + devices[to].str() + ")"});
}

void Placer::buildUsers() {
  size_t n = graph.valueCount();
  userStart.assign(n + 1, 0);
  // A node reading a value twice is one user: its operands are scanned together.
  std::vector<NodeId> last(n, -1);
  auto each = [&](auto &&add) {
    for (NodeId id : graph.order()) {
      const Node &node = graph.node(id);
      for (ValueId o : node.operands)
        if (last[o] != id) {
          last[o] = id;
          add(o, node.result);
        }
    }
    const auto outputs = graph.outputs();
    for (size_t i = 0; i < outputs.size(); ++i)
      if (outputs[i].pin) add(outputs[i].value, ~static_cast<int32_t>(i));
  };
  each([&](ValueId v, int32_t) { ++userStart[v + 1]; });
  for (size_t v = 0; v < n; ++v) userStart[v + 1] += userStart[v];
  userList.resize(static_cast<size_t>(userStart[n]));
  std::vector<int32_t> fill(userStart.begin(), userStart.end() - 1);
  std::fill(last.begin(), last.end(), -1);
  each([&](ValueId v, int32_t user) { userList[fill[v]++] = user; });
}

DType Placer::computeDType(const Node &n) const { return ferry::computeDType(graph, n); }

bool Placer::supports(const Node &n, Label l) const {
  return !options.capabilities.anyMissing() ||
         options.capabilities.supports(devices[l], n.op, computeDType(n));
}

bool Placer::isSource(const Node &n) const { return n.operands.empty(); }

std::string Placer::nodeRef(const Node &n) const {
  return "'" + std::string(n.info().name) + "' (" + valueRef(graph.value(n.result).name) + ")";
}

std::string Placer::devicesText(std::span<const Label> labels) const {
  std::string s;
  for (size_t i = 0; i < labels.size(); ++i)
    s += (i == 0 ? "" : i + 1 == labels.size() ? " and " : ", ") + devices[labels[i]].str();
  return s;
}

Label Placer::runnable(NodeId id, Label want, const std::string &why) {
  const Node &n = graph.node(id);
  if (want >= available || supports(n, want)) return want;
  std::string dtype(dtypeName(computeDType(n)));
  std::string what = nodeRef(n) + " has no kernel for " + dtype + " on " + devices[want].str();
  bool canFallBack = cpu != kNone && supports(n, cpu);
  if (!options.fallback || !canFallBack) {
    Diagnostic &d = ctx.diags.error("device", n.loc, what);
    if (!why.empty()) d.detail("it is on " + devices[want].str() + ": " + why, n.loc);
    if (canFallBack)
      d.fix("compile with fallback on to run it on cpu, or place it on a device that has a kernel");
    else
      d.detail(cpu == kNone ? "cpu, where it would fall back to, is not among the available devices"
                            : "cpu has no kernel for it either",
               n.loc)
          .fix("place it on a device that has a kernel for '" + std::string(n.info().name) + "' " +
               dtype);
    return want;
  }
  Diagnostic &d = ctx.diags.warning("fallback", n.loc, what + "; it runs on cpu instead");
  if (!why.empty()) d.detail("it wanted " + devices[want].str() + ": " + why, n.loc);
  place(n.result, cpu,
        Reason{Reason::Kind::Fallback, -1, n.loc,
               "fallback to cpu: " + devices[want].str() + " has no kernel for '" +
                   std::string(n.info().name) + "' " + dtype});
  anyFallback = true;
  return cpu;
}

char *writeSeconds(char *out, double s) {
  if (!std::isfinite(s)) return std::copy_n("n/a", 3, out);
  const char *unit = "s";
  if (s < 1e-6) {
    s *= 1e9, unit = "ns";
  } else if (s < 1e-3) {
    s *= 1e6, unit = "\u00b5s";
  } else if (s < 1) {
    s *= 1e3, unit = "ms";
  }
  // Three significant digits, trailing zeros dropped: "35", "1.2", "0.25" (no printf: reasons
  // are written for every node of large graphs).
  int decimals = s >= 100 ? 0 : s >= 10 ? 1 : 2;
  long long scale = decimals == 0 ? 1 : decimals == 1 ? 10 : 100;
  long long q = std::llround(s * static_cast<double>(scale));
  long long frac = q % scale;
  out = std::to_chars(out, out + 24, q / scale).ptr;
  if (frac != 0) {
    *out++ = '.';
    if (decimals == 2) {
      *out++ = static_cast<char>('0' + frac / 10);
      if (frac % 10) *out++ = static_cast<char>('0' + frac % 10);
    } else {
      *out++ = static_cast<char>('0' + frac);
    }
  }
  *out++ = ' ';
  for (; *unit; ++unit) *out++ = *unit;
  return out;
}

}  // namespace placement

namespace {

using placement::kNone;
using placement::Label;
using placement::Placer;

// The value an inserted transfer (or a chain of them) copies.
ValueId origin(const Graph &g, ValueId v) {
  for (const Node *n = g.producer(v); n && n->op == OpKind::Transfer && n->inserted;
       n = g.producer(v))
    v = n->operands[0];
  return v;
}

// 0. undo: see the overview.
void undoInserted(Placer &p) {
  Graph &g = p.graph;
  bool any = false;
  for (NodeId id : g.order())
    any = any || (g.node(id).op == OpKind::Transfer && g.node(id).inserted);
  if (!any) return;
  p.firstRemoved.assign(g.valueCount(), -1);
  std::vector<NodeId> kept;
  for (NodeId id : g.order()) {
    const Node &n = g.node(id);
    if (n.op == OpKind::Transfer && n.inserted) {
      ValueId of = origin(g, n.operands[0]);
      p.removed.push_back({p.labelOf(attrDevice(n.info(), n.attrs, "to")), id, p.firstRemoved[of]});
      p.firstRemoved[of] = static_cast<int32_t>(p.removed.size() - 1);
      continue;
    }
    for (size_t k = 0; k < n.operands.size(); ++k)
      if (ValueId o = origin(g, n.operands[k]); o != n.operands[k]) g.setOperand(id, k, o);
    kept.push_back(id);
  }
  for (size_t i = 0; i < g.outputs().size(); ++i)
    if (ValueId o = origin(g, g.outputs()[i].value); o != g.outputs()[i].value)
      g.setOutputValue(i, o);
  g.setOrder(std::move(kept));
}

// 1. index: pins as labels; every device the graph names must be available.
void indexPins(Placer &p) {
  Graph &g = p.graph;
  std::string availableList, devicesFlag;
  for (size_t i = 0; i < p.available; ++i) {
    availableList += (i ? ", " : "") + p.devices[i].str();
    devicesFlag += (i ? "," : "") + p.devices[i].str();
  }
  auto check = [&](Device d, const Location &loc, const std::string &orElse) {
    Label l = p.labelOf(d);
    if (l < p.available) return l;
    p.ctx.diags
        .error("device", loc,
               "device " + d.str() + " is not available; available: " + availableList)
        .fix("compile with --devices " + devicesFlag + "," + d.str() + " or " + orElse);
    return l;
  };
  for (const InputDecl &in : g.inputs())
    check(in.device, in.loc,
          "declare " + valueRef(g.value(in.value).name) + " on an available device");
  for (const ParamDecl &pr : g.params())
    if (pr.pin) check(*pr.pin, pr.loc, "remove the pin");
  for (NodeId id : g.order()) {
    const Node &n = g.node(id);
    if (n.op == OpKind::Transfer) {
      Device to = attrDevice(n.info(), n.attrs, "to");
      p.pin[id] = check(to, n.loc, "transfer to an available device");
      if (n.pinDevice && *n.pinDevice != to)
        p.ctx.diags
            .error("device", n.loc,
                   p.nodeRef(n) + " is pinned to " + n.pinDevice->str() + " but transfers to " +
                       to.str())
            .fix("remove the pin: a transfer's result is on its 'to' device");
    } else if (n.pinDevice) {
      p.pin[id] = check(*n.pinDevice, n.loc, "remove the pin");
    }
  }
  for (const OutputDecl &o : g.outputs())
    p.outputPin.push_back(o.pin ? check(*o.pin, o.loc, "remove the pin") : kNone);
}

// 2. seed: what no policy may change.
void seed(Placer &p) {
  Graph &g = p.graph;
  for (const InputDecl &in : g.inputs())
    p.place(in.value, p.labelOf(in.device), Reason{Reason::Kind::Declared, -1, in.loc, {}});
  for (const ParamDecl &pr : g.params())
    if (pr.pin) p.place(pr.value, p.labelOf(*pr.pin), Reason{Reason::Kind::Pinned, -1, pr.loc, {}});
}

std::string deviceSuffix(Device d) {
  return (d.isHost() ? "cpu" : "cuda") +
         (d.isHost() && d.index == 0 ? "" : std::to_string(d.index));
}

// 4. insert: one transfer per (value, destination), consumers rewired.
void insertTransfers(Placer &p) {
  Graph &g = p.graph;
  std::vector<NodeId> order(g.order().begin(), g.order().end());
  std::vector<int32_t> position(g.nodeCount(), -1);
  for (size_t i = 0; i < order.size(); ++i) position[order[i]] = static_cast<int32_t>(i);

  struct Copy {
    Label to;
    ValueId result;
    NodeId node;
    int32_t position;  // -1: inserted now (right after the producer, before every consumer)
    int32_t next;      // the next copy of the same value, or -1
  };
  std::vector<int32_t> firstCopy(g.valueCount(), -1);
  std::vector<Copy> copies;
  for (NodeId id : order) {
    const Node &n = g.node(id);
    if (n.op != OpKind::Transfer) continue;
    ValueId v = n.operands[0];
    copies.push_back({p.pin[id], n.result, id, position[id], firstCopy[v]});
    firstCopy[v] = static_cast<int32_t>(copies.size() - 1);
  }
  size_t existing = copies.size();

  auto copyOf = [&](ValueId v, Label to, int32_t usedAt, const Location &loc) {
    for (int32_t c = firstCopy[v]; c >= 0; c = copies[c].next)
      if (copies[c].to == to && copies[c].position < usedAt) return copies[c].result;
    NodeId id = -1;
    if (!p.firstRemoved.empty())
      for (int32_t c = p.firstRemoved[v]; c >= 0 && id < 0; c = p.removed[c].next)
        if (p.removed[c].to == to && p.removed[c].node >= 0) {
          id = p.removed[c].node;
          p.removed[c].node = -1;  // reused once
        }
    if (id >= 0) {
      g.setOperand(id, 0, v);
      g.node(id).loc = loc;
    } else {
      Device d = p.devices[to];
      const Value &val = g.value(v);
      NodeSpec spec{OpKind::Transfer, {v}, Attrs{AttrValue{d}}, std::nullopt, std::nullopt, loc};
      id = g.createNode(std::move(spec), val.name + "." + deviceSuffix(d), TensorType(val.type),
                        Graph::Naming::Unique);
      g.node(id).inserted = true;
    }
    ValueId r = g.node(id).result;
    p.place(r, to, Reason{Reason::Kind::Inserted, v, loc, {}});
    p.pin.resize(g.nodeCount(), kNone);
    p.pin[id] = to;
    copies.push_back({to, r, id, -1, firstCopy[v]});
    firstCopy[v] = static_cast<int32_t>(copies.size() - 1);
    return r;
  };

  // Strict leaves no node reading across devices (that is an error) unless it fell back.
  const bool scan = p.options.placement == PlacementPolicy::Auto || p.anyFallback;
  for (size_t i = 0; scan && i < order.size(); ++i) {
    NodeId id = order[i];
    if (g.node(id).op == OpKind::Transfer) continue;
    Label want = p.label[g.node(id).result];
    for (size_t k = 0; k < g.node(id).operands.size(); ++k) {
      ValueId o = g.node(id).operands[k];
      if (p.label[o] == want) continue;
      Location loc = g.node(id).loc;
      g.setOperand(id, k, copyOf(o, want, static_cast<int32_t>(i), loc));
    }
  }
  for (size_t i = 0; i < g.outputs().size(); ++i) {
    const OutputDecl &o = g.outputs()[i];
    if (!o.pin) continue;
    Label want = p.outputPin[i];
    if (p.label[o.value] == want) continue;
    Location loc = o.loc;
    const ValueId v = o.value, copy = copyOf(v, want, INT32_MAX, loc);
    g.setOutputValue(i, copy);
    // Callers fetch outputs by name: the copy takes the output's name, the value it copies gets
    // another. An input or param keeps its own name (callers feed it by that name), and so does
    // a value some other output still returns.
    const Value &val = g.value(v);
    const bool stillOutput = std::any_of(g.outputs().begin(), g.outputs().end(),
                                         [&](const OutputDecl &other) { return other.value == v; });
    const std::string &copyName = g.value(copy).name;
    const bool generated = copyName.rfind(val.name + ".", 0) == 0;  // not one a compile named
    if (val.kind == ValueKind::Result && !stillOutput && generated) {
      const std::string name = val.name;
      g.rename(v, g.uniqueName(name + "." + deviceSuffix(p.devices[p.label[v]])));
      g.rename(copy, name);
    }
  }
  if (copies.size() == existing) return;

  // Each new transfer goes right after its producer (inputs' and params' first, by value id), in
  // the order the transfers were first needed.
  struct Slot {
    int64_t key;  // producer's position; inputs and params before every node, by value id
    size_t copy;
  };
  std::vector<Slot> slots;
  for (size_t c = existing; c < copies.size(); ++c) {
    const Value &of = g.value(g.node(copies[c].node).operands[0]);
    int64_t key =
        of.kind == ValueKind::Result ? position[of.def] : int64_t{of.id} - int64_t{INT32_MAX} - 1;
    slots.push_back({key, c});
  }
  std::stable_sort(slots.begin(), slots.end(),
                   [](const Slot &a, const Slot &b) { return a.key < b.key; });
  std::vector<NodeId> newOrder;
  newOrder.reserve(order.size() + slots.size());
  size_t s = 0;
  for (; s < slots.size() && slots[s].key < 0; ++s) newOrder.push_back(copies[slots[s].copy].node);
  for (size_t i = 0; i < order.size(); ++i) {
    newOrder.push_back(order[i]);
    for (; s < slots.size() && slots[s].key == static_cast<int64_t>(i); ++s)
      newOrder.push_back(copies[slots[s].copy].node);
  }
  g.setOrder(std::move(newOrder));
}

}  // namespace

void placeDevices(Graph &graph, PassContext &ctx) {
  Placer p(graph, ctx);
  if (ctx.options.placement == PlacementPolicy::Auto) undoInserted(p);
  indexPins(p);
  seed(p);
  if (ctx.options.placement == PlacementPolicy::Strict)
    placement::placeStrict(p);
  else if (std::find(ctx.rejected.begin(), ctx.rejected.end(), Rejected::Untyped) ==
           ctx.rejected.end())
    placement::placeAuto(p);
  if (!ctx.diags.hasErrors()) insertTransfers(p);
}

}  // namespace ferry
