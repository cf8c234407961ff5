// tests/passes/placement_test_util.h — checks shared by the placement tests: the invariants a
// placed graph must hold, and that placing it again changes nothing.
#pragma once

#include <gtest/gtest.h>

#include <utility>
#include <vector>

#include "ir/printer.h"
#include "passes/compile.h"
#include "passes/pass.h"

namespace ferry {

inline CompileOptions options(PlacementPolicy policy,
                              std::vector<Device> devices = {Device::cpu(), Device::cuda(0)}) {
  CompileOptions o;
  o.devices = std::move(devices);
  o.target = o.devices.front();
  o.placement = policy;
  o.stopAfter = "placement";
  return o;
}

inline std::string text(const CompileResult &r) {
  return renderText(r.diagnostics, {.snippet = false});
}

inline void expectConsistent(const Graph &g) {
  std::vector<std::pair<ValueId, Device>> moved;
  for (const InputDecl &in : g.inputs()) EXPECT_EQ(g.value(in.value).device, in.device);
  for (const ParamDecl &p : g.params()) EXPECT_TRUE(g.value(p.value).device.has_value());
  for (NodeId nid : g.order()) {
    const Node &n = g.node(nid);
    const Value &r = g.value(n.result);
    ASSERT_TRUE(r.device.has_value()) << "%" << r.name;
    EXPECT_NE(g.deviceReason(r.id).kind, Reason::Kind::None) << "%" << r.name;
    if (n.op == OpKind::Transfer) {
      Device to = attrDevice(n.info(), n.attrs, "to");
      EXPECT_EQ(*r.device, to);
      for (const auto &m : moved) {
        EXPECT_FALSE(m.first == n.operands[0] && m.second == to);
      }
      moved.emplace_back(n.operands[0], to);
      continue;
    }
    for (ValueId o : n.operands) {
      EXPECT_EQ(g.value(o).device, r.device) << "%" << g.value(o).name << " -> %" << r.name;
    }
  }
  for (const OutputDecl &o : g.outputs()) {
    if (o.pin) {
      EXPECT_EQ(g.value(o.value).device, o.pin);
    }
  }
}

// Runs placement again on a placed graph: nothing new may appear.
inline void expectIdempotent(const CompileResult &first, const CompileOptions &o) {
  Graph again = first.graph;
  DiagnosticEngine diags;
  CompileStats stats;
  PassContext ctx{o, diags, stats};
  placeDevices(again, ctx);
  EXPECT_FALSE(diags.hasErrors()) << renderText(diags.diagnostics(), {.snippet = false});
  EXPECT_EQ(again.nodeCount(), first.graph.nodeCount());
  EXPECT_EQ(printGraph(again), printGraph(first.graph));
}

}  // namespace ferry
