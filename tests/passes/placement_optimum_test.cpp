// tests/passes/placement_optimum_test.cpp — cost-based placement against a brute-force optimum
// on random small graphs: exact with two devices, never worse than "everything on the target"
// with more, and idempotent; under budgets (`error` directions, a byte cap), against the
// brute-force optimum of the plans within them.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>
#include <string>
#include <vector>

#include "ir/parser.h"
#include "ir/printer.h"
#include "passes/compile.h"
#include "passes/pass.h"
#include "passes/placement_test_util.h"

namespace ferry {
namespace {

constexpr auto kAuto = PlacementPolicy::Auto;

// ---- auto against a brute-force optimum on random graphs
// -----------------------------------------

uint64_t splitmix(uint64_t &state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

struct Random {
  uint64_t state;
  int below(int n) { return static_cast<int>(splitmix(state) % static_cast<uint64_t>(n)); }
  bool chance(double p) { return static_cast<double>(splitmix(state) >> 11) * 0x1.0p-53 < p; }
  double logUniform(double lo, double hi) {  // 10^[lo, hi]
    return std::pow(10.0, lo + (hi - lo) * static_cast<double>(splitmix(state) >> 11) * 0x1.0p-53);
  }
};

ValueId addOp(Graph &g, OpKind op, std::vector<ValueId> in, std::optional<Device> pin,
              std::vector<NamedAttr> given = {}) {
  std::vector<TensorType> types;
  for (ValueId v : in) types.push_back(g.value(v).type);
  Attrs attrs = makeAttrs(opInfo(op), given, {}).value();
  TensorType t = std::get<TensorType>(inferType(opInfo(op), types, attrs));
  return g.node(g.addNode({op, std::move(in), attrs, pin, {}, {}}, g.uniqueName("v"), t)).result;
}

struct RandomCase {
  Graph graph;
  CompileOptions options;
};

// A random graph of elementwise ops, linear layers, reductions and constants over `devices`, with
// random pins, input devices, output pins, missing kernels and a random cost model; at most
// `maxFree` unpinned params and nodes.
RandomCase randomCase(uint64_t seed, std::vector<Device> devices, int maxFree) {
  Random rng{seed};
  CompileOptions o = options(kAuto, devices);
  o.target = devices[rng.below(static_cast<int>(devices.size()))];
  for (DeviceSpec *d : {&o.cost.host, &o.cost.cuda})
    *d = {rng.logUniform(10, 13.5), rng.logUniform(9.5, 12.5), rng.logUniform(-7.5, -5)};
  for (LinkSpec *l :
       {&o.cost.hostToDevice, &o.cost.deviceToHost, &o.cost.deviceToDevice, &o.cost.hostToHost})
    *l = {rng.logUniform(8.5, 11), rng.logUniform(-7, -4.5)};
  const bool hasCuda =
      std::any_of(devices.begin(), devices.end(), [](Device d) { return !d.isHost(); });
  if (hasCuda && rng.chance(0.3)) {
    const OpKind ops[] = {OpKind::Relu, OpKind::Exp, OpKind::Add, OpKind::Mul, OpKind::Linear};
    o.capabilities.setMissing(DeviceKind::Cuda, ops[rng.below(5)]);
  }

  const int64_t b = std::array{1, 8, 64}[rng.below(3)], s = std::array{16, 128, 512}[rng.below(3)];
  const double pinRate = std::array{0.0, 0.2, 0.5}[rng.below(3)];
  auto device = [&] { return devices[rng.below(static_cast<int>(devices.size()))]; };
  auto pin = [&]() -> std::optional<Device> {
    if (rng.chance(pinRate)) return device();
    return std::nullopt;
  };
  Graph g("random");
  int free = 0;
  auto param = [&](Shape shape) {
    std::optional<Device> p = pin();
    free += !p;
    return g.addParam(g.uniqueName("p"), TensorData::zeros(DType::F32, shape), {}, p, {});
  };
  auto node = [&](OpKind op, std::vector<ValueId> in, std::vector<NamedAttr> attrs = {}) {
    std::optional<Device> p = pin();
    free += !p;
    return addOp(g, op, std::move(in), p, std::move(attrs));
  };
  std::vector<ValueId> acts, scalars;
  for (int i = 0, n = 1 + rng.below(2); i < n; ++i)
    acts.push_back(g.addInput("x" + std::to_string(i), {DType::F32, {b, s}}, device(), {}));
  auto act = [&] { return acts[rng.below(static_cast<int>(acts.size()))]; };
  const int nodes = 3 + rng.below(8);
  for (int i = 0; i < nodes && free + 2 <= maxFree; ++i) {
    switch (rng.below(8)) {
      case 0: acts.push_back(node(OpKind::Relu, {act()})); break;
      case 1: acts.push_back(node(OpKind::Exp, {act()})); break;
      case 2: acts.push_back(node(OpKind::Add, {act(), act()})); break;
      case 3: acts.push_back(node(OpKind::Mul, {act(), param({s})})); break;
      case 4: acts.push_back(node(OpKind::Linear, {act(), param({s, s})})); break;
      case 5: scalars.push_back(node(OpKind::Sum, {act()})); break;
      case 6:
        if (!scalars.empty()) {
          acts.push_back(node(OpKind::Add, {act(), scalars[rng.below(int(scalars.size()))]}));
          break;
        }
        [[fallthrough]];
      default: {
        ValueId c = node(OpKind::Constant, {}, {{"value", TensorData::zeros(DType::F32, {s})}});
        acts.push_back(node(OpKind::Mul, {act(), c}));
      }
    }
  }
  auto output = [&](ValueId v) {
    std::optional<Device> p;
    if (rng.chance(0.3)) p = device();
    g.addOutput(v, p, {});
  };
  output(acts.back());
  if (!scalars.empty() && rng.chance(0.5)) output(scalars.back());
  if (acts.size() > 2 && rng.chance(0.5)) output(acts[acts.size() / 2]);
  return {std::move(g), o};
}

// The cost model's estimate of `g` with its values on `dev`: every node's compute (a constant's
// is nothing) and one transfer per value and other device that reads it, except a weight's (a
// param's or a constant's), which is copied once at load and costs nothing per run. Written from
// the objective's definition, not from the pass.
double estimate(const Graph &g, const CompileOptions &o, const std::vector<Device> &dev) {
  double e = 0;
  std::vector<TensorType> types;
  for (NodeId id : g.order()) {
    const Node &n = g.node(id);
    if (n.op == OpKind::Constant) continue;
    const Value &r = g.value(n.result);
    if (!o.capabilities.supports(dev[n.result], n.op, r.type.dtype)) return INFINITY;
    types.clear();
    for (ValueId v : n.operands) types.push_back(g.value(v).type);
    e += o.cost.computeSeconds(dev[n.result], opCost(n.info(), types, n.attrs, r.type));
  }
  std::vector<std::vector<NodeId>> users = g.users();
  for (ValueId v = 0; v < static_cast<ValueId>(g.valueCount()); ++v) {
    const Value &val = g.value(v);
    if (val.kind == ValueKind::Param ||
        (val.kind == ValueKind::Result && g.producer(v)->op == OpKind::Constant))
      continue;
    std::vector<Device> to;
    for (NodeId u : users[v]) to.push_back(dev[g.node(u).result]);
    for (const OutputDecl &out : g.outputs())
      if (out.value == v && out.pin) to.push_back(*out.pin);
    std::sort(to.begin(), to.end());
    to.erase(std::unique(to.begin(), to.end()), to.end());
    for (Device d : to)
      e += o.cost.transferSeconds(dev[v], d, static_cast<double>(g.value(v).type.byteSize()));
  }
  return e;
}

struct Assignments {
  std::vector<Device> fixed;  // per value: the start (fixed values: their device)
  std::vector<ValueId> free;
};

// Fixed devices (inputs, pins; a pin without a kernel falls back to cpu) and the free values.
Assignments assignments(const Graph &g, const CompileOptions &o) {
  Assignments a{std::vector<Device>(g.valueCount(), o.target), {}};
  for (const InputDecl &in : g.inputs()) a.fixed[in.value] = in.device;
  for (const ParamDecl &p : g.params()) {
    if (p.pin)
      a.fixed[p.value] = *p.pin;
    else
      a.free.push_back(p.value);
  }
  for (NodeId id : g.order()) {
    const Node &n = g.node(id);
    if (!n.pinDevice) {
      a.free.push_back(n.result);
      continue;
    }
    bool ok = o.capabilities.supports(*n.pinDevice, n.op, g.value(n.result).type.dtype);
    a.fixed[n.result] = ok ? *n.pinDevice : Device::cpu();
  }
  return a;
}

double bruteForce(const Graph &g, const CompileOptions &o) {
  Assignments a = assignments(g, o);
  const size_t k = o.devices.size();
  double best = INFINITY;
  std::vector<size_t> digits(a.free.size(), 0);
  std::vector<Device> dev = a.fixed;
  while (true) {
    for (size_t i = 0; i < a.free.size(); ++i) dev[a.free[i]] = o.devices[digits[i]];
    best = std::min(best, estimate(g, o, dev));
    size_t i = 0;
    while (i < digits.size() && ++digits[i] == k) digits[i++] = 0;
    if (i == digits.size()) break;
  }
  return best;
}

std::vector<Device> placedDevices(const Graph &original, const Graph &placed) {
  std::vector<Device> dev(original.valueCount());
  for (ValueId v = 0; v < static_cast<ValueId>(dev.size()); ++v)
    dev[v] = placed.value(v).device.value_or(Device::cpu());
  return dev;
}

TEST(AutoOptimum, TwoDevicesMatchBruteForce) {
  const std::vector<std::vector<Device>> pairs = {{Device::cpu(), Device::cuda(0)},
                                                  {Device::cpu(), Device::cpu(1)},
                                                  {Device::cuda(0), Device::cuda(1)}};
  int checked = 0, withTransfers = 0, crossing = 0;
  for (uint64_t seed = 1; seed <= 600; ++seed) {
    RandomCase c = randomCase(seed, pairs[seed % pairs.size()], 12);
    CompileResult r = compile(c.graph, c.options);
    if (!r.ok()) {
      // Only a pin without a kernel anywhere it may run: checked by the Story7 tests.
      EXPECT_NE(text(r).find("no kernel"), std::string::npos) << "seed " << seed << text(r);
      continue;
    }
    expectConsistent(r.graph);
    double got = estimate(c.graph, c.options, placedDevices(c.graph, r.graph));
    double best = bruteForce(c.graph, c.options);
    ASSERT_TRUE(std::isfinite(best)) << "seed " << seed;
    EXPECT_NEAR(got, best, 1e-9 * best) << "seed " << seed << "\n" << printGraph(r.graph);
    ++checked;
    withTransfers += r.stats.transfers > 0;
    // Graphs where the optimum is not "everything free on one device".
    std::set<Device> used;
    for (ValueId v : assignments(c.graph, c.options).free) used.insert(*r.graph.value(v).device);
    crossing += used.size() > 1;
  }
  EXPECT_GE(checked, 500);
  EXPECT_GE(withTransfers, checked / 4);
  EXPECT_GE(crossing, checked / 10);
}

TEST(AutoOptimum, MoreDevicesAreNeverWorseThanTheTarget) {
  int checked = 0, optimal = 0, better = 0;
  for (uint64_t seed = 1; seed <= 300; ++seed) {
    std::vector<Device> devices = {Device::cpu(), Device::cuda(0), Device::cuda(1)};
    if (seed % 2) devices.push_back(Device::cpu(1));
    RandomCase c = randomCase(seed * 7919, devices, seed % 2 ? 6 : 8);
    CompileResult r = compile(c.graph, c.options);
    if (!r.ok()) continue;
    expectConsistent(r.graph);
    // The start: every free value on the target (a node without a kernel there on cpu).
    Assignments a = assignments(c.graph, c.options);
    std::vector<Device> start = a.fixed;
    for (ValueId v : a.free) {
      const Node *n = c.graph.producer(v);
      if (n &&
          !c.options.capabilities.supports(c.options.target, n->op, c.graph.value(v).type.dtype))
        start[v] = Device::cpu();
    }
    double got = estimate(c.graph, c.options, placedDevices(c.graph, r.graph));
    double target = estimate(c.graph, c.options, start);
    double best = bruteForce(c.graph, c.options);
    EXPECT_LE(got, target * (1 + 1e-9)) << "seed " << seed;
    EXPECT_GE(got, best * (1 - 1e-9)) << "seed " << seed;
    ++checked;
    optimal += got <= best * (1 + 1e-9);
    better += got < target * (1 - 1e-9);
  }
  EXPECT_GE(checked, 250);
  EXPECT_GE(better, checked / 4);
  // Expansion moves are a heuristic; on these small graphs they nearly always find the optimum.
  EXPECT_GE(optimal, checked * 9 / 10) << optimal << " of " << checked;
}

TEST(AutoOptimum, AutoIsIdempotentOnRandomGraphs) {
  for (uint64_t seed = 1; seed <= 200; ++seed) {
    RandomCase c =
        randomCase(seed * 31,
                   seed % 3 ? std::vector<Device>{Device::cpu(), Device::cuda(0)}
                            : std::vector<Device>{Device::cpu(), Device::cuda(0), Device::cpu(1)},
                   12);
    CompileResult r = compile(c.graph, c.options);
    if (!r.ok()) continue;
    expectIdempotent(r, c.options);
  }
}

// ---- budgets as constraints of auto, against brute force ----------------------------------

// What the budgets see of a plan, from their definition: one per-run copy per value that is no
// weight (a param or a constant) and other device that reads it (a node or a pinned output),
// each forbidden when its direction is set to `error`, and the bytes they copy.
struct Copies {
  int forbidden = 0;
  double bytes = 0;
};

Copies copiesOf(const Graph &g, const CompileOptions &o, const std::vector<Device> &dev) {
  Copies c;
  std::vector<std::vector<NodeId>> users = g.users();
  for (ValueId v = 0; v < static_cast<ValueId>(g.valueCount()); ++v) {
    const Value &val = g.value(v);
    if (val.kind == ValueKind::Param ||
        (val.kind == ValueKind::Result && g.producer(v)->op == OpKind::Constant))
      continue;
    std::set<Device> to;
    for (NodeId u : users[v]) to.insert(dev[g.node(u).result]);
    for (const OutputDecl &out : g.outputs())
      if (out.value == v && out.pin) to.insert(*out.pin);
    to.erase(dev[v]);
    for (Device d : to) {
      c.forbidden += o.budgets.action(transferDirection(dev[v], d)) == BudgetAction::Error;
      c.bytes += static_cast<double>(val.type.byteSize());
    }
  }
  return c;
}

struct Constrained {
  double best = INFINITY;           // the cheapest plan within the budgets (INFINITY: none)
  int fewestForbidden = INT32_MAX;  // over every plan a kernel allows
  double fewestBytes = INFINITY;    // over the plans without forbidden copies
};

Constrained bruteForceWithin(const Graph &g, const CompileOptions &o) {
  Assignments a = assignments(g, o);
  const size_t k = o.devices.size();
  Constrained c;
  std::vector<size_t> digits(a.free.size(), 0);
  std::vector<Device> dev = a.fixed;
  while (true) {
    for (size_t i = 0; i < a.free.size(); ++i) dev[a.free[i]] = o.devices[digits[i]];
    if (const double e = estimate(g, o, dev); std::isfinite(e)) {
      const Copies copies = copiesOf(g, o, dev);
      c.fewestForbidden = std::min(c.fewestForbidden, copies.forbidden);
      if (copies.forbidden == 0) {
        c.fewestBytes = std::min(c.fewestBytes, copies.bytes);
        const auto cap = o.budgets.maxTransferBytes;
        if (!cap || copies.bytes <= static_cast<double>(*cap)) c.best = std::min(c.best, e);
      }
    }
    size_t i = 0;
    while (i < digits.size() && ++digits[i] == k) digits[i++] = 0;
    if (i == digits.size()) break;
  }
  return c;
}

// Each direction that the devices have set to `error` with probability 0.4 (at least one).
void randomDirections(Random &rng, CompileOptions &o) {
  std::vector<TransferDirection> present;
  for (Device a : o.devices)
    for (Device b : o.devices)
      if (a != b) present.push_back(transferDirection(a, b));
  std::sort(present.begin(), present.end());
  present.erase(std::unique(present.begin(), present.end()), present.end());
  bool any = false;
  for (TransferDirection d : present) {
    if (!rng.chance(0.4)) continue;
    any = true;
    if (d == TransferDirection::H2D) o.budgets.h2d = BudgetAction::Error;
    if (d == TransferDirection::D2H) o.budgets.d2h = BudgetAction::Error;
    if (d == TransferDirection::D2D) o.budgets.d2d = BudgetAction::Error;
    if (d == TransferDirection::H2H) o.budgets.h2h = BudgetAction::Error;
  }
  if (!any) return randomDirections(rng, o);
}

std::vector<const Diagnostic *> budgetErrors(const CompileResult &r) {
  std::vector<const Diagnostic *> out;
  for (const Diagnostic &d : r.diagnostics)
    if (d.severity == Severity::Error && d.code == "budget") out.push_back(&d);
  return out;
}

// "cost / constrained optimum: median 1, 90% 1.02, max 1.3 (n=250)".
std::string ratios(std::vector<double> r) {
  if (r.empty()) return "no cases";
  std::sort(r.begin(), r.end());
  char buf[160];
  std::snprintf(buf, sizeof buf, "median %.4g, 90%% %.4g, 99%% %.4g, max %.4g (n=%zu)",
                r[r.size() / 2], r[r.size() * 9 / 10], r[r.size() * 99 / 100], r.back(), r.size());
  return buf;
}

int proven_ = 0, unproven_ = 0;  // budget errors that name the pins forcing the copy, or not

// Runs auto under the case's budgets and checks it against brute force: a plan within the budgets
// whenever one exists (its cost's ratio to the cheapest such plan into `ratio`), else a budget
// error per forbidden copy the fewest possible need, each saying what forces it. Returns whether
// brute force found a plan within the budgets (-1: the case does not compile for other reasons).
int checkWithinBudgets(uint64_t seed, const RandomCase &c, std::vector<double> &ratio, bool exact) {
  CompileResult r = compile(c.graph, c.options);
  const Constrained want = bruteForceWithin(c.graph, c.options);
  if (!r.ok() && budgetErrors(r).empty()) {
    EXPECT_NE(text(r).find("no kernel"), std::string::npos) << "seed " << seed << text(r);
    return -1;
  }
  if (std::isfinite(want.best)) {
    EXPECT_TRUE(r.ok()) << "seed " << seed << ": a plan within the budgets exists\n"
                        << text(r) << printGraph(c.graph);
    if (!r.ok()) return 1;
    expectConsistent(r.graph);
    const std::vector<Device> dev = placedDevices(c.graph, r.graph);
    const Copies copies = copiesOf(c.graph, c.options, dev);
    EXPECT_EQ(copies.forbidden, 0) << "seed " << seed << "\n" << printGraph(r.graph);
    if (const auto cap = c.options.budgets.maxTransferBytes; cap && exact) {
      EXPECT_LE(copies.bytes, static_cast<double>(*cap)) << "seed " << seed;
    }
    const double got = estimate(c.graph, c.options, dev);
    EXPECT_GE(got, want.best * (1 - 1e-9)) << "seed " << seed;
    ratio.push_back(got / want.best);
    if (seed % 4 == 0) expectIdempotent(r, c.options);
    return 1;
  }
  if (want.fewestForbidden > 0) {
    // No plan without a forbidden copy: one error per copy of the plan with the fewest.
    EXPECT_FALSE(r.ok()) << "seed " << seed;
    std::vector<const Diagnostic *> errors = budgetErrors(r);
    if (exact) {
      EXPECT_EQ(static_cast<int>(errors.size()), want.fewestForbidden)
          << "seed " << seed << text(r);
      for (const Diagnostic *d : errors)
        EXPECT_NE(d->message.find(" is forced"), std::string::npos)
            << "seed " << seed << text(r) << printGraph(c.graph) << "target "
            << c.options.target.str();
    } else {
      EXPECT_GE(static_cast<int>(errors.size()), want.fewestForbidden) << "seed " << seed;
    }
    for (const Diagnostic *d : errors)
      (d->message.find(" is forced") != std::string::npos ? proven_ : unproven_)++;
  }
  return 0;
}

TEST(AutoBudgets, TwoDevicesFindTheCheapestPlanWithoutForbiddenCopiesOrSayWhatForcesOne) {
  const std::vector<std::vector<Device>> pairs = {{Device::cpu(), Device::cuda(0)},
                                                  {Device::cpu(), Device::cpu(1)},
                                                  {Device::cuda(0), Device::cuda(1)}};
  int feasible = 0, infeasible = 0, steered = 0;
  std::vector<double> ratio;
  for (uint64_t seed = 1; seed <= 600; ++seed) {
    RandomCase c = randomCase(seed * 104729, pairs[seed % pairs.size()], 12);
    Random rng{seed};
    randomDirections(rng, c.options);
    const int within = checkWithinBudgets(seed, c, ratio, true);
    if (within < 0) continue;
    (within ? feasible : infeasible)++;
    if (within) {
      // The unconstrained optimum copies in a forbidden direction: the budgets changed the plan.
      CompileOptions free = c.options;
      free.budgets = {};
      CompileResult r = compile(c.graph, free);
      steered += r.ok() && copiesOf(c.graph, c.options, placedDevices(c.graph, r.graph)).forbidden;
    }
  }
  std::printf("two devices: %d within the budgets (%d steered off a forbidden copy), %d forced; "
              "cost / constrained optimum: %s\n",
              feasible, steered, infeasible, ratios(ratio).c_str());
  // Exact: the cut's optimum with forbidden copies priced above every plan.
  for (double x : ratio) EXPECT_NEAR(x, 1, 1e-9);
  EXPECT_GE(feasible, 200);
  EXPECT_GE(infeasible, 50);
  EXPECT_GE(steered, 10);
}

TEST(AutoBudgets, MoreDevicesNeverKeepAForbiddenCopyAPlanAvoids) {
  int feasible = 0, infeasible = 0;
  proven_ = unproven_ = 0;
  std::vector<double> ratio;
  for (uint64_t seed = 1; seed <= 300; ++seed) {
    std::vector<Device> devices = {Device::cpu(), Device::cuda(0), Device::cuda(1)};
    if (seed % 2) devices.push_back(Device::cpu(1));
    RandomCase c = randomCase(seed * 7907, devices, seed % 2 ? 6 : 8);
    Random rng{seed * 3};
    randomDirections(rng, c.options);
    const int within = checkWithinBudgets(seed, c, ratio, false);
    if (within >= 0) (within ? feasible : infeasible)++;
  }
  std::printf("more devices: %d within the budgets, %d forced (errors: %d proven by arc "
              "consistency, %d not); cost / constrained optimum: %s\n",
              feasible, infeasible, proven_, unproven_, ratios(ratio).c_str());
  EXPECT_GE(feasible, 100);
  EXPECT_GE(infeasible, 20);
  // Expansion moves are a heuristic; most plans are the constrained optimum.
  const auto optimal =
      std::count_if(ratio.begin(), ratio.end(), [](double x) { return x < 1 + 1e-9; });
  EXPECT_GE(optimal, static_cast<long>(ratio.size() * 8 / 10));
}

// A cap on per-run bytes between the fewest a plan can copy and what the cheapest plan copies.
TEST(AutoBudgets, AByteCapIsMetWheneverAPlanMeetsIt) {
  int binding = 0, met = 0, unmeetable = 0, missed = 0;
  std::vector<double> ratio, ratioMore;
  for (uint64_t seed = 1; seed <= 800; ++seed) {
    const bool two = seed % 3 != 0;
    std::vector<Device> devices =
        two ? std::vector<Device>{Device::cpu(), Device::cuda(0)}
            : std::vector<Device>{Device::cpu(), Device::cuda(0), Device::cpu(1)};
    RandomCase c = randomCase(seed * 15485863, devices, two ? 12 : 7);
    Random rng{seed * 5};
    if (rng.chance(0.3)) randomDirections(rng, c.options);
    CompileResult unconstrained = compile(c.graph, c.options);
    if (!unconstrained.ok()) continue;
    const double bytes =
        copiesOf(c.graph, c.options, placedDevices(c.graph, unconstrained.graph)).bytes;
    const Constrained all = bruteForceWithin(c.graph, c.options);
    if (bytes == 0 || !std::isfinite(all.fewestBytes) || bytes <= all.fewestBytes) continue;
    // Sometimes one byte under the fewest possible: no plan meets it.
    const bool possible = all.fewestBytes == 0 || rng.chance(0.8);
    const double cap = possible ? all.fewestBytes + rng.chance(0.5) * (bytes - all.fewestBytes) / 2
                                : all.fewestBytes - 1;
    c.options.budgets.maxTransferBytes = static_cast<int64_t>(cap);
    ++binding;
    CompileResult r = compile(c.graph, c.options);
    ASSERT_TRUE(r.ok()) << "seed " << seed << text(r);  // placement alone: the cap steers it
    const std::vector<Device> dev = placedDevices(c.graph, r.graph);
    const Copies copies = copiesOf(c.graph, c.options, dev);
    EXPECT_EQ(copies.forbidden, 0) << "seed " << seed;
    EXPECT_EQ(r.stats.autoFewestTransferBytes >= 0, true) << "seed " << seed;
    const Constrained want = bruteForceWithin(c.graph, c.options);
    if (!std::isfinite(want.best)) {
      ++unmeetable;
      // The plan with the fewest bytes, so that the budget pass names what cannot be avoided.
      if (two) {
        EXPECT_EQ(copies.bytes, all.fewestBytes) << "seed " << seed;
        EXPECT_EQ(r.stats.autoFewestTransferBytes, static_cast<int64_t>(all.fewestBytes));
        EXPECT_TRUE(r.stats.autoFewestExact);
      }
      continue;
    }
    const bool within = copies.bytes <= cap;
    if (two) {
      EXPECT_TRUE(within) << "seed " << seed << " cap " << cap << "\n" << printGraph(r.graph);
    }
    if (!within) {
      ++missed;
      continue;
    }
    ++met;
    const double got = estimate(c.graph, c.options, dev);
    EXPECT_GE(got, want.best * (1 - 1e-9)) << "seed " << seed;
    (two ? ratio : ratioMore).push_back(got / want.best);
  }
  std::printf("byte caps: %d binding, %d met, %d missed (more than two devices), %d no plan "
              "meets; cost / constrained optimum, two devices: %s; more: %s\n",
              binding, met, missed, unmeetable, ratios(ratio).c_str(),
              ratioMore.empty() ? "-" : ratios(ratioMore).c_str());
  EXPECT_GE(binding, 120);
  EXPECT_GE(unmeetable, 10);
  EXPECT_LE(missed, binding / 20);
}

}  // namespace
}  // namespace ferry
