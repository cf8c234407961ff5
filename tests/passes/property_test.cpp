// tests/passes/property_test.cpp — random graphs through compile() under every policy: placement
// and dtype invariants, strict rejections against an independent oracle, and values against the
// reference interpreter.
//
// Each seed makes one graph (tests/common/random_graph.h) over {cpu, cpu:1} or {cpu, cpu:1,
// cpu:2} with random device pins, input devices, dtype pins, mixed dtypes and scalar literals,
// and compiles it under all 8 policy combinations (placement strict|auto x dtype
// strict|promote|autocast=f16|autocast=bf16), and under auto with the budget h2h=error (dtype
// strict and autocast=f16). Then:
//   1. invariants  every operand on its node's device (transfers excepted), data operands of the
//                  dtype the op's rule needs, no value transferred twice to one device, pins and
//                  declared input devices kept, output types unchanged, verify() ok
//   2. rejections  under placement=strict a device error exactly when the oracle below finds a
//                  conflict; under auto never one (every pin is on an available device)
//   3. values      the reference interpreter on the original and on the compiled graph with the
//                  same inputs: equal exactly when no cast was inserted, else within the
//                  precision of the narrowest float dtype either graph computes in (for graphs
//                  of well-conditioned ops with small values, where that bound holds)
//   4. dumps       (every 8th seed) the compiled graph prints, reads back as itself and
//                  recompiles to the same statements; compile() leaves the original's data alone
//   5. load time   the statistics count transfers of weights (params pinned elsewhere, constants,
//                  their copies and casts) apart, as done once at load, and only those: checked
//                  against the graph by the test's own reading of DESIGN.md
//   6. budgets     auto under h2h=error (every device is a host, so every per-run copy is one)
//                  compiles without a per-run copy exactly when the oracle below finds a plan
//                  without one, and otherwise is rejected with budget errors that each say what
//                  forces the copy
// The seeds are split into shards, one ctest each, so that `ctest -j2` runs them side by side.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "backends/reference/interpreter.h"
#include "common/random_graph.h"
#include "common/value_check.h"
#include "ir/parser.h"
#include "ir/printer.h"
#include "ir/verifier.h"
#include "passes/compile.h"

namespace ferry {
namespace {

constexpr int kGraphs = 10000;
constexpr int kShards = 4;
// A shard stops after this many failing compiles (each prints its graph).
constexpr int kMaxFailures = 5;

const std::vector<OpKind> &kWellConditioned = testutil::wellConditionedOps();

struct Policy {
  PlacementPolicy placement;
  DTypePolicy dtype;
  bool noHostCopies = false;  // the budget h2h=error
};

std::vector<Policy> allPolicies() {
  std::vector<Policy> out;
  for (PlacementPolicy p : {PlacementPolicy::Strict, PlacementPolicy::Auto})
    for (const DTypePolicy &d : {DTypePolicy{DTypePolicy::Kind::Strict, DType::F16},
                                 DTypePolicy{DTypePolicy::Kind::Promote, DType::F16},
                                 DTypePolicy{DTypePolicy::Kind::Autocast, DType::F16},
                                 DTypePolicy{DTypePolicy::Kind::Autocast, DType::BF16}})
      out.push_back({p, d});
  out.push_back({PlacementPolicy::Auto, {DTypePolicy::Kind::Strict, DType::F16}, true});
  out.push_back({PlacementPolicy::Auto, {DTypePolicy::Kind::Autocast, DType::F16}, true});
  return out;
}

std::string policyName(const Policy &p) {
  return "placement=" + std::string(placementPolicyName(p.placement)) + " dtype=" + p.dtype.str() +
         (p.noHostCopies ? " transfers h2h=error" : "");
}

// ---- the oracle ------------------------------------------------------------------------------

// Strict placement as DESIGN.md states it, written from the text and not from
// passes/placement.cpp:
//   forward   inputs sit on their declared device; pinned params and nodes on their pin; a
//             transfer on its `to`; an unpinned node takes its operands' device — those that
//             have one must agree, and a pinned node's must equal its pin
//   backward  values still without a device (unpinned params and constants, nodes fed only by
//             them) take their consumers' device, which must agree; a transfer does not
//             constrain its operand; with no consumer node, an output pin, else the target
//   outputs   a pinned output is handed over on its pin ("outputs stay where they are computed
//             unless the user pins them"): a pin is a request, never a conflict
// Returns one line per conflict (empty: strict placement must accept the graph).
std::vector<std::string> strictConflicts(const Graph &g, Device target) {
  std::vector<std::optional<Device>> dev(g.valueCount());
  std::vector<std::string> conflicts;
  auto name = [&](ValueId v) { return "%" + g.value(v).name; };
  for (const InputDecl &in : g.inputs()) dev[in.value] = in.device;
  for (const ParamDecl &p : g.params()) dev[p.value] = p.pin;

  for (NodeId id : g.order()) {
    const Node &n = g.node(id);
    std::optional<Device> d = n.pinDevice;
    if (n.op == OpKind::Transfer) {
      dev[n.result] = attrDevice(n.info(), n.attrs, "to");
      continue;
    }
    for (ValueId o : n.operands) {
      if (!dev[o]) continue;
      if (!d)
        d = dev[o];
      else if (*d != *dev[o])
        conflicts.push_back("operands of " + name(n.result) + " on " + d->str() + " and " +
                            dev[o]->str());
    }
    dev[n.result] = d;
  }

  std::vector<std::vector<NodeId>> users = g.users();
  std::vector<std::optional<Device>> outputPin(g.valueCount());
  for (const OutputDecl &o : g.outputs())
    if (o.pin && !outputPin[o.value]) outputPin[o.value] = o.pin;
  auto fromConsumers = [&](ValueId v) {
    std::optional<Device> d;
    for (NodeId u : users[v]) {
      const Node &n = g.node(u);
      if (n.op == OpKind::Transfer) continue;
      Device c = *dev[n.result];
      if (!d)
        d = c;
      else if (*d != c)
        conflicts.push_back(name(v) + " is used on " + d->str() + " and " + c.str());
    }
    dev[v] = d ? d : outputPin[v] ? outputPin[v] : target;
  };
  std::span<const NodeId> order = g.order();
  for (auto it = order.rbegin(); it != order.rend(); ++it)
    if (ValueId r = g.node(*it).result; !dev[r]) fromConsumers(r);
  for (const ParamDecl &p : g.params())
    if (!dev[p.value]) fromConsumers(p.value);
  return conflicts;
}

// Whether a plan without a per-run copy exists on host devices that all have every kernel,
// written from DESIGN.md and not from the passes: a weight (a param, a constant, or a transfer,
// cast or identity of a weight) is copied at load, never per run; any other value is copied per
// run to each other device that reads it. So a plan without one puts every value that is not a
// weight where each node reading it runs: the values joined by such reads share a device, and
// each such group may hold at most one device that placement cannot choose (an input's
// declaration, a node's pin, a transfer's `to`, an output's pin).
bool planWithoutCopies(const Graph &g) {
  const size_t n = g.valueCount();
  std::vector<size_t> parent(n);
  for (size_t v = 0; v < n; ++v) parent[v] = v;
  auto root = [&](size_t v) {
    while (parent[v] != v) v = parent[v] = parent[parent[v]];
    return v;
  };
  std::vector<uint8_t> weight(n, 0);
  for (const ParamDecl &p : g.params()) weight[p.value] = 1;
  std::vector<std::optional<Device>> fixed(n);
  for (const InputDecl &in : g.inputs()) fixed[in.value] = in.device;
  for (NodeId id : g.order()) {
    const Node &node = g.node(id);
    const bool copyOfWeight =
        (node.op == OpKind::Transfer || node.op == OpKind::Cast || node.op == OpKind::Identity) &&
        weight[node.operands[0]];
    if (node.op == OpKind::Constant || copyOfWeight) {
      weight[node.result] = 1;
      continue;
    }
    if (node.op == OpKind::Transfer)
      fixed[node.result] = attrDevice(node.info(), node.attrs, "to");
    else if (node.pinDevice)
      fixed[node.result] = node.pinDevice;
    for (ValueId o : node.operands)
      if (!weight[o]) parent[root(o)] = root(node.result);
  }
  std::vector<std::vector<Device>> held(n);
  auto hold = [&](size_t v, Device d) { held[root(v)].push_back(d); };
  for (size_t v = 0; v < n; ++v)
    if (fixed[v] && !weight[v]) hold(v, *fixed[v]);
  for (const OutputDecl &o : g.outputs())
    if (o.pin && !weight[o.value]) hold(o.value, *o.pin);
  for (const std::vector<Device> &devices : held)
    for (Device d : devices)
      if (d != devices.front()) return false;
  return true;
}

// ---- values ----------------------------------------------------------------------------------

using testutil::compareOutputs;
using testutil::randomInputs;
using testutil::unitRoundoff;
using testutil::valueScale;

// ---- invariants ------------------------------------------------------------------------------

// Every broken invariant of a successfully compiled graph, one line each.
std::vector<std::string> brokenInvariants(const Graph &original, const Graph &g) {
  std::vector<std::string> broken;
  auto name = [&](ValueId v) { return "%" + g.value(v).name; };
  if (Status s = verify(g); !s.ok()) broken.push_back("verify: " + s.message());
  std::set<std::pair<ValueId, Device>> transferred;
  for (NodeId id : g.order()) {
    const Node &n = g.node(id);
    const OpInfo &op = n.info();
    const Value &r = g.value(n.result);
    if (!r.device) {
      broken.push_back(name(n.result) + " has no device");
      continue;
    }
    if (n.pinDevice && *n.pinDevice != *r.device)
      broken.push_back(name(n.result) + " pinned to " + n.pinDevice->str() + " is on " +
                       r.device->str());
    if (n.op == OpKind::Transfer) {
      Device to = attrDevice(op, n.attrs, "to");
      if (to != *r.device) broken.push_back(name(n.result) + ": transfer's result not on its `to`");
      if (!transferred.insert({n.operands[0], to}).second)
        broken.push_back(name(n.operands[0]) + " is transferred to " + to.str() + " twice");
    } else {
      for (ValueId o : n.operands)
        if (g.value(o).device != r.device)
          broken.push_back("operand " + name(o) + " of " + name(n.result) + " is on " +
                           (g.value(o).device ? g.value(o).device->str() : "no device") +
                           ", the node on " + r.device->str());
    }
    std::vector<DType> data;
    for (size_t i = 0; i < n.operands.size(); ++i)
      if (op.operand(i).role == OperandRole::Data)
        data.push_back(g.value(n.operands[i]).type.dtype);
    bool ok = true;
    if (op.dtypeRule == DTypeRule::Promote || op.dtypeRule == DTypeRule::PromoteFloat)
      ok = std::all_of(data.begin(), data.end(), [&](DType t) { return t == r.type.dtype; });
    else if (op.dtypeRule == DTypeRule::Compare)
      ok = std::all_of(data.begin(), data.end(), [&](DType t) { return t == data.front(); });
    if (!ok)
      broken.push_back("data operands of '" + std::string(op.name) + "' " + name(n.result) +
                       " have other dtypes than it computes in (" + r.type.str() + ")");
  }
  for (const InputDecl &in : g.inputs())
    if (g.value(in.value).device != in.device)
      broken.push_back("input " + name(in.value) + " moved off its declared " + in.device.str());
  for (const ParamDecl &p : g.params())
    if (p.pin && g.value(p.value).device != p.pin)
      broken.push_back("param " + name(p.value) + " is off its pin " + p.pin->str());
  if (g.outputs().size() != original.outputs().size()) {
    broken.push_back("the number of outputs changed");
  } else {
    for (size_t i = 0; i < g.outputs().size(); ++i) {
      const OutputDecl &o = g.outputs()[i];
      if (g.value(o.value).type != original.value(original.outputs()[i].value).type)
        broken.push_back("output " + std::to_string(i) + " changed its type to " +
                         g.value(o.value).type.str());
      if (o.pin && g.value(o.value).device != o.pin)
        broken.push_back("output " + name(o.value) + " is off its pin " + o.pin->str());
    }
  }
  return broken;
}

// ---- load time ---------------------------------------------------------------------------------

// "Weights move once" (DESIGN.md), written from the text: a transfer or cast whose operand is a
// compile-time constant — a param, a constant, or what such a transfer or cast (or an identity,
// which simplify leaves to carry an output's name) makes of one — runs once, at load. Returns a
// line per statistic that disagrees with the graph.
std::vector<std::string> loadTimeMismatches(const Graph &g, const CompileStats &st) {
  std::set<ValueId> constant;
  for (const ParamDecl &p : g.params()) constant.insert(p.value);
  int runTransfers = 0, loadTransfers = 0, loadCasts = 0;
  int64_t runBytes = 0, loadBytes = 0;
  for (NodeId id : g.order()) {
    const Node &n = g.node(id);
    const auto bytes = static_cast<int64_t>(g.value(n.result).type.byteSize());
    const bool ofConstant = n.operands.size() == 1 && constant.count(n.operands[0]) > 0;
    const bool moves = n.op == OpKind::Transfer || n.op == OpKind::Cast || n.op == OpKind::Identity;
    if (n.op == OpKind::Constant || (moves && ofConstant)) constant.insert(n.result);
    if (n.op == OpKind::Transfer && ofConstant) ++loadTransfers, loadBytes += bytes;
    if (n.op == OpKind::Transfer && !ofConstant) ++runTransfers, runBytes += bytes;
    if (n.op == OpKind::Cast && ofConstant) ++loadCasts;
  }
  std::vector<std::string> out;
  auto expect = [&](const char *what, int64_t got, int64_t want) {
    if (got != want)
      out.push_back(std::string(what) + ": the statistics say " + std::to_string(got) +
                    ", the graph has " + std::to_string(want));
  };
  expect("transfers per run", st.transfers, runTransfers);
  expect("bytes per run", st.transferBytes, runBytes);
  expect("transfers at load", st.loadTransfers, loadTransfers);
  expect("bytes at load", st.loadTransferBytes, loadBytes);
  expect("casts at load", st.loadCasts, loadCasts);
  int64_t directions = 0;
  for (TransferDirection d : kTransferDirections) directions += st.bytesOf(d);
  expect("per-run bytes over the directions", directions, runBytes);
  return out;
}

bool hasCode(const CompileResult &r, std::string_view code) {
  return std::any_of(r.diagnostics.begin(), r.diagnostics.end(), [&](const Diagnostic &d) {
    return d.severity == Severity::Error && d.code == code;
  });
}

// ---- the test --------------------------------------------------------------------------------

struct Tally {
  int graphs = 0, compiled = 0, deviceRejections = 0, dtypeRejections = 0;
  int oracleConflicts = 0, withTransfers = 0, withCasts = 0, exactChecks = 0;
  int withLoadTransfers = 0;                   // under auto: weights moved once, at load
  int budgetedCompiles = 0, budgetForced = 0;  // under auto with h2h=error
  int toleranceChecks = 0, withLiterals = 0;
  std::map<std::string, int> otherRejections;  // by diagnostic code
};

class Property : public ::testing::TestWithParam<int> {};

TEST_P(Property, RandomGraphsCompileSoundly) {
  const int shard = GetParam();
  const std::vector<Policy> policies = allPolicies();
  Tally tally;
  int failures = 0;
  for (int seed = shard; seed < kGraphs && failures < kMaxFailures; seed += kShards) {
    // The seed decides the devices, how many pins, and whether values are checked within a
    // tolerance (well-conditioned ops, small values) or only where no cast was inserted.
    std::vector<Device> devices{Device::cpu(), Device::cpu(1)};
    if (seed % 2) devices.push_back(Device::cpu(2));
    const bool conditioned = seed % 3 != 0;
    testutil::RandomGraphOptions gen{.maxNodes = 12,
                                     .insertedRate = 0,
                                     .devices = devices,
                                     .pinRate = (seed / 2) % 3 == 0   ? 0.0
                                                : (seed / 2) % 3 == 1 ? 0.3
                                                                      : 1.0,
                                     .firstDeviceBias = seed % 5 < 3 ? 0.8 : 0.0,
                                     .dtypePinRate = 0.1,
                                     .extremeValues = !conditioned,
                                     .compileReady = true};
    if (conditioned) gen.ops = kWellConditioned;
    const Graph g = testutil::randomGraph(static_cast<uint64_t>(seed), gen);
    ++tally.graphs;
    tally.withLiterals += std::any_of(g.order().begin(), g.order().end(),
                                      [&](NodeId n) { return g.node(n).literal.has_value(); });
    const std::vector<std::string> conflicts = strictConflicts(g, Device::cpu());
    tally.oracleConflicts += !conflicts.empty();
    const bool withoutCopies = planWithoutCopies(g);

    const std::map<std::string, TensorData> inputs = randomInputs(g, static_cast<uint64_t>(seed));
    Expected<std::vector<TensorData>> want = reference::run(g, inputs);
    double scale = -1;  // computed once, when a tolerance check needs it
    // Params share their data with the copies compile() gets: a pass must not write through.
    std::vector<TensorData> paramData;
    for (const ParamDecl &p : g.params()) paramData.push_back(p.data.clone());

    for (const Policy &policy : policies) {
      CompileOptions options;
      options.devices = devices;
      options.placement = policy.placement;
      options.dtype = policy.dtype;
      if (policy.noHostCopies) options.budgets.h2h = BudgetAction::Error;
      CompileResult r = compile(g, options);
      auto context = [&] {
        return "seed " + std::to_string(seed) + ", " + policyName(policy) + "\n" +
               renderText(r.diagnostics, {.snippet = false}) + "original:\n" + printGraph(g) +
               "compiled:\n" + printGraph(r.graph);
      };
      bool deviceError = hasCode(r, "device");
      if (hasCode(r, "internal")) {
        ADD_FAILURE() << "a pass left a broken graph: " << context();
        ++failures;
        continue;
      }
      if (policy.placement == PlacementPolicy::Strict && deviceError != !conflicts.empty()) {
        std::string why;
        for (const std::string &c : conflicts) why += "  " + c + "\n";
        ADD_FAILURE() << "strict placement " << (deviceError ? "rejected" : "accepted")
                      << " the graph; the oracle finds "
                      << (conflicts.empty() ? "no conflict\n" : "conflicts:\n" + why) << context();
        ++failures;
      } else if (policy.placement == PlacementPolicy::Auto && deviceError) {
        ADD_FAILURE() << "auto placement rejected the graph: " << context();
        ++failures;
      }
      if (policy.noHostCopies) {
        const bool budgetError = hasCode(r, "budget");
        bool explained = true;
        for (const Diagnostic &d : r.diagnostics)
          if (d.code == "budget")
            explained = explained && d.message.find(" is forced: ") != std::string::npos;
        if (budgetError == withoutCopies || !explained || (r.ok() && r.stats.transfers != 0)) {
          ADD_FAILURE() << "auto placement under h2h=error "
                        << (budgetError ? "rejected" : "accepted") << " the graph with "
                        << r.stats.transfers << " copies per run; the oracle finds "
                        << (withoutCopies ? "a plan without copies" : "no plan without copies")
                        << (explained ? "" : "; a budget error does not say what forces it") << "\n"
                        << context();
          ++failures;
          continue;
        }
        tally.budgetForced += budgetError;
        tally.budgetedCompiles += r.ok();
      }
      if (!r.ok()) {
        if (deviceError)
          ++tally.deviceRejections;
        else if (hasCode(r, "dtype"))
          ++tally.dtypeRejections;
        else
          for (const Diagnostic &d : r.diagnostics)
            if (d.severity == Severity::Error) ++tally.otherRejections[d.code];
        continue;
      }
      ++tally.compiled;

      std::vector<std::string> broken = brokenInvariants(g, r.graph);
      for (std::string &m : loadTimeMismatches(r.graph, r.stats)) broken.push_back(std::move(m));
      if (!broken.empty()) {
        std::string all;
        for (const std::string &b : broken) all += "  " + b + "\n";
        ADD_FAILURE() << "broken invariants:\n" << all << context();
        ++failures;
        continue;
      }
      tally.withTransfers += r.stats.transfers > 0;
      tally.withLoadTransfers +=
          policy.placement == PlacementPolicy::Auto && r.stats.loadTransfers > 0;
      tally.withCasts += r.stats.castsInserted > 0;
      if (seed % 8 == 0) {
        // A compiled dump reads back as itself: devices, inserted marks and all. (Statements
        // without an origin get their line in the dump on the first reading, hence the second.)
        const PrintOptions bare{.locations = false, .inlineLimit = INT64_MAX};
        const PrintOptions full{.locations = true, .inlineLimit = INT64_MAX};
        Expected<Graph> again = parseGraph(printGraph(r.graph, full), "compiled.fy");
        Expected<Graph> third =
            again.ok() ? parseGraph(printGraph(*again, full), "compiled.fy") : again;
        if (!third.ok() || printGraph(*again, bare) != printGraph(r.graph, bare) ||
            printGraph(*third, full) != printGraph(*again, full)) {
          ADD_FAILURE() << "the compiled dump does not read back as itself: "
                        << (third.ok() ? printGraph(*again, full) : third.status().message())
                        << context();
          ++failures;
        } else {
          CompileResult re = compile(std::move(*again), options);
          if (!re.ok() || printGraph(re.graph, bare) != printGraph(r.graph, bare)) {
            ADD_FAILURE() << "the compiled dump does not recompile to itself:\n"
                          << renderText(re.diagnostics, {.snippet = false})
                          << printGraph(re.graph, bare) << context();
            ++failures;
          }
        }
      }
      bool castInserted = r.stats.castsInserted > 0;
      double narrowest = 0;
      for (NodeId id : r.graph.order()) {
        const Node &n = r.graph.node(id);
        castInserted = castInserted || (n.inserted && n.op == OpKind::Cast);
        narrowest = std::max(narrowest, unitRoundoff(r.graph.value(n.result).type.dtype));
      }
      for (const ParamDecl &p : r.graph.params())
        narrowest = std::max(narrowest, unitRoundoff(r.graph.value(p.value).type.dtype));
      // The original may compute in a narrower dtype than the compiled graph (autocast keeps
      // softmax in f32 where the original rounds it to f16): both roundings count.
      for (NodeId id : g.order())
        narrowest = std::max(narrowest, unitRoundoff(g.value(g.node(id).result).type.dtype));
      if (castInserted && !conditioned) continue;
      Expected<std::vector<TensorData>> got = reference::run(r.graph, inputs);
      if (got.ok() != want.ok()) {
        ADD_FAILURE() << (got.ok() ? want : got).status().message() << context();
        ++failures;
        continue;
      }
      if (!want.ok()) continue;
      double tol = 0;
      if (castInserted) {
        if (scale < 0) scale = valueScale(g, inputs);
        tol = narrowest * scale * (8 + 4 * static_cast<double>(g.order().size()));
        ++tally.toleranceChecks;
      } else {
        ++tally.exactChecks;
      }
      std::string diff = compareOutputs(*want, *got, tol);
      if (!diff.empty()) {
        ADD_FAILURE() << "values differ: " << diff << "\n" << context();
        ++failures;
      }
    }
    for (size_t i = 0; i < paramData.size(); ++i)
      EXPECT_TRUE(g.params()[i].data == paramData[i])
          << "seed " << seed << ": compile() changed the data of the original's param %"
          << g.value(g.params()[i].value).name;
  }
  std::string other;
  for (const auto &[code, n] : tally.otherRejections) other += " " + code + "=" + std::to_string(n);
  std::printf("shard %d: %d graphs, %d compiles ok, rejected: %d device, %d dtype, other:%s; "
              "oracle conflicts %d; with transfers %d (auto, at load: %d), with casts %d; values "
              "checked exactly %d, within tolerance %d; with literals %d; auto under h2h=error: %d "
              "compiled without copies, %d rejected as forced\n",
              shard, tally.graphs, tally.compiled, tally.deviceRejections, tally.dtypeRejections,
              other.empty() ? " none" : other.c_str(), tally.oracleConflicts, tally.withTransfers,
              tally.withLoadTransfers, tally.withCasts, tally.exactChecks, tally.toleranceChecks,
              tally.withLiterals, tally.budgetedCompiles, tally.budgetForced);
  // Every shard exercises each outcome, so that a generator change cannot hollow the test out.
  EXPECT_EQ(tally.graphs, kGraphs / kShards);
  EXPECT_GT(tally.oracleConflicts, tally.graphs / 20);
  EXPECT_LT(tally.oracleConflicts, tally.graphs * 19 / 20);
  EXPECT_GT(tally.withTransfers, tally.graphs / 20);
  EXPECT_GT(tally.withLoadTransfers, tally.graphs / 20);
  EXPECT_GT(tally.withCasts, tally.graphs / 20);
  EXPECT_GT(tally.exactChecks, tally.graphs / 4);
  EXPECT_GT(tally.toleranceChecks, tally.graphs / 4);
  EXPECT_GT(tally.withLiterals, tally.graphs / 10);  // scalar literals, placed with their reader
  EXPECT_GT(tally.budgetedCompiles, tally.graphs / 4);
  EXPECT_GT(tally.budgetForced, tally.graphs / 20);
}

INSTANTIATE_TEST_SUITE_P(Shards, Property, ::testing::Range(0, kShards));

// The oracle itself, on graphs whose answer is known.
TEST(StrictOracle, FollowsTheDesign) {
  auto conflicts = [](const Graph &g) { return strictConflicts(g, Device::cpu()).size(); };
  auto node = [](Graph &g, OpKind op, std::vector<ValueId> in, std::optional<Device> pin,
                 std::string name) {
    std::vector<TensorType> types;
    for (ValueId v : in) types.push_back(g.value(v).type);
    Expected<Attrs> attrs = makeAttrs(opInfo(op), {}, {});
    TensorType t = std::get<TensorType>(inferType(opInfo(op), types, *attrs));
    return g.node(g.addNode({op, std::move(in), *attrs, pin, {}, {}}, std::move(name), t)).result;
  };
  const TensorType f32{DType::F32, {2}};
  auto param = [&](Graph &g, std::string name, std::optional<Device> pin) {
    return g.addParam(std::move(name), TensorData::zeros(DType::F32, {2}), {}, pin, {});
  };
  {
    // An input on cpu, a param pinned to cpu:1: the add conflicts.
    Graph g;
    ValueId x = g.addInput("x", f32, Device::cpu(), {});
    ValueId y = node(g, OpKind::Add, {x, param(g, "w", Device::cpu(1))}, {}, "y");
    g.addOutput(y, {}, {});
    EXPECT_EQ(conflicts(g), 1u);
  }
  {
    // An unpinned param follows its consumer, even through an unpinned relu.
    Graph g;
    ValueId x = g.addInput("x", f32, Device::cpu(1), {});
    ValueId r = node(g, OpKind::Relu, {param(g, "w", {})}, {}, "r");
    g.addOutput(node(g, OpKind::Add, {x, r}, {}, "y"), {}, {});
    EXPECT_EQ(conflicts(g), 0u);
  }
  {
    // ... but not to two devices at once.
    Graph g;
    ValueId a = g.addInput("a", f32, Device::cpu(), {});
    ValueId b = g.addInput("b", f32, Device::cpu(1), {});
    ValueId r = node(g, OpKind::Relu, {param(g, "w", {})}, {}, "r");
    g.addOutput(node(g, OpKind::Add, {a, r}, {}, "y"), {}, {});
    g.addOutput(node(g, OpKind::Add, {b, r}, {}, "z"), {}, {});
    EXPECT_EQ(conflicts(g), 1u);
  }
  {
    // A pinned node whose operand sits elsewhere (a pinned output elsewhere is no conflict: it
    // is handed over there); a user transfer makes it fine.
    Graph g;
    ValueId x = g.addInput("x", f32, Device::cpu(), {});
    ValueId y = node(g, OpKind::Relu, {x}, Device::cpu(1), "y");
    g.addOutput(y, Device::cpu(2), {});
    EXPECT_EQ(conflicts(g), 1u);
    Graph h;
    ValueId hx = h.addInput("x", f32, Device::cpu(), {});
    Expected<Attrs> to =
        makeAttrs(opInfo(OpKind::Transfer), std::vector<NamedAttr>{{"to", Device::cpu(1)}}, {});
    ValueId moved =
        h.node(h.addNode({OpKind::Transfer, {hx}, *to, {}, {}, {}}, "moved", f32)).result;
    h.addOutput(node(h, OpKind::Relu, {moved}, Device::cpu(1), "y"), Device::cpu(1), {});
    EXPECT_EQ(conflicts(h), 0u);
  }
}

}  // namespace
}  // namespace ferry
