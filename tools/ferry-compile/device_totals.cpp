// tools/ferry-compile/device_totals.cpp — per-device totals of a compiled graph.
#include "tools/ferry-compile/device_totals.h"

#include <vector>

namespace ferry {

std::map<Device, DeviceTotals> deviceTotals(const Graph &g, const Executable *lowered) {
  std::map<Device, DeviceTotals> per;
  for (const ParamDecl &p : g.params())
    if (const std::optional<Device> &d = g.value(p.value).device)
      per[*d].weightBytes += static_cast<double>(g.value(p.value).type.byteSize());
  std::vector<TensorType> types;
  for (NodeId id : g.order()) {
    const Node &n = g.node(id);
    const Value &r = g.value(n.result);
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
