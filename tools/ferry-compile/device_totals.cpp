// tools/ferry-compile/device_totals.cpp — per-device totals of a compiled graph.
#include "tools/ferry-compile/device_totals.h"

#include <vector>

#include "passes/load_time.h"

namespace ferry {

std::map<Device, DeviceTotals> deviceTotals(const Graph &g, const Executable *lowered) {
  std::map<Device, DeviceTotals> per;
  // The weights a run reads (or returns): the session holds them on their devices; a weight that
  // only load-time transfers and casts read is released once they ran.
  const std::vector<uint8_t> weights = weightValues(g);
  std::vector<uint8_t> held(g.valueCount(), 0);
  for (NodeId id : g.order())
    if (!runsAtLoad(g.node(id), weights))
      for (ValueId o : g.node(id).operands) held[static_cast<size_t>(o)] = 1;
  for (const OutputDecl &o : g.outputs()) held[static_cast<size_t>(o.value)] = 1;
  auto hold = [&](ValueId v) {
    const Value &val = g.value(v);
    if (held[static_cast<size_t>(v)] && val.device)
      per[*val.device].weightBytes += static_cast<double>(val.type.byteSize());
  };
  for (const ParamDecl &p : g.params()) hold(p.value);
  std::vector<TensorType> types;
  for (NodeId id : g.order()) {
    const Node &n = g.node(id);
    const Value &r = g.value(n.result);
    if (runsAtLoad(n, weights)) {  // a weight's copy, made at load
      hold(n.result);
      continue;
    }
    if (n.op == OpKind::Transfer || !r.device) continue;
    types.clear();
    for (ValueId o : n.operands) types.push_back(g.value(o).type);
    const OpCost c = opCost(n.info(), types, n.attrs, r.type);
    DeviceTotals &t = per[*r.device];
    ++t.nodes;
    t.flops += c.flops;
    t.bytes += c.bytes;
  }
  if (lowered != nullptr)
    for (const Workspace &w : lowered->workspaces) per[w.device].workspaceBytes = w.bytes;
  return per;
}

bool lowerable(const CompileResult &result, const CompileOptions &options) {
  return result.ok() && options.stopAfter.empty();
}

}  // namespace ferry
