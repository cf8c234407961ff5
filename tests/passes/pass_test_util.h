// tests/passes/pass_test_util.h — graphs placed by hand for tests of the passes after
// placement (simplify, budgets): parse a `.fy` text, take each `@device` as the value's device,
// and run one pass alone.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <string_view>

#include "common/parse.h"
#include "ir/printer.h"
#include "ir/verifier.h"
#include "passes/compile.h"
#include "passes/pass.h"

namespace ferry {

// A graph as placement and dtype leave it, written by hand: each statement's `@device` becomes
// its value's device; cast and transfer nodes lose their pin and are marked inserted.
inline Graph placed(std::string_view text) {
  Graph g = parseOk(text);
  for (const ParamDecl &p : g.params()) g.value(p.value).device = p.pin;
  for (NodeId id : g.order()) {
    Node &n = g.node(id);
    g.value(n.result).device = n.pinDevice;
    if (n.op == OpKind::Cast || n.op == OpKind::Transfer) {
      n.pinDevice.reset();
      n.inserted = true;
    }
  }
  return g;
}

// What compile() checks after placement (verifyPlaced), and that transfers go where they say.
inline std::string placedProblems(const Graph &g) {
  if (Status s = verify(g); !s.ok()) return s.message();
  for (const ParamDecl &p : g.params())
    if (!g.value(p.value).device) return "param %" + g.value(p.value).name + " has no device";
  for (NodeId id : g.order()) {
    const Node &n = g.node(id);
    const Value &r = g.value(n.result);
    if (!r.device) return "%" + r.name + " has no device";
    if (n.op == OpKind::Transfer) {
      if (attrDevice(n.info(), n.attrs, "to") != *r.device) return "%" + r.name + " misdirected";
      continue;
    }
    for (ValueId o : n.operands)
      if (g.value(o).device != r.device) return "operand of %" + r.name + " elsewhere";
  }
  return "";
}

inline CompileOptions options() {
  CompileOptions o;
  o.devices = {Device::cpu(), Device::cpu(1), Device::cuda(0), Device::cuda(1)};
  return o;
}

// Runs simplify alone and checks the placed invariants hold afterwards.
inline CompileStats simplified(Graph &g, const CompileOptions &o = options()) {
  DiagnosticEngine diags;
  CompileStats stats;
  PassContext ctx{o, diags, stats};
  simplify(g, ctx);
  EXPECT_FALSE(diags.hasErrors());
  EXPECT_EQ(placedProblems(g), "");
  return stats;
}

inline std::string dump(const Graph &g) { return printGraph(g, {.locations = false}); }

// The dump of a placed graph written by hand, so expectations do not depend on the printer's
// layout (aligned comments, one output per line).
inline std::string expected(std::string_view text) { return dump(placed(text)); }

inline CompileStats described(const Graph &g) {
  CompileStats s;
  describeGraph(g, options(), s);
  return s;
}

inline const ParamDecl *findParam(const Graph &g, std::string_view name) {
  for (const ParamDecl &p : g.params())
    if (g.value(p.value).name == name) return &p;
  return nullptr;
}

inline int countOps(const Graph &g, OpKind op) {
  int n = 0;
  for (NodeId id : g.order()) n += g.node(id).op == op;
  return n;
}

inline bool sameValues(const TensorData &a, const TensorData &b) {
  if (a.type() != b.type()) return false;
  for (int64_t i = 0; i < a.numel(); ++i) {
    double x = a.at(i), y = b.at(i);
    if (std::isnan(x) && std::isnan(y)) continue;
    if (!isFloating(a.dtype()) ? a.atInt(i) != b.atInt(i) : x != y) return false;
    if (x == 0 && std::signbit(x) != std::signbit(y)) return false;
  }
  return true;
}

}  // namespace ferry
