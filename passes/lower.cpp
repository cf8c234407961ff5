// passes/lower.cpp — lowering: slots and steps from the compiled graph, kernel plans from the
// targets, workspaces from the lifetimes.
//   1. slots     inputs, then each node's operands and result; params and constants are weights;
//                a transfer or cast of a weight (passes/load_time.h) is a load step, its result a
//                loaded slot held with the weights: Session::create runs it once
//   2. plans     each step but a transfer asks its device kind's target for its kernel plan
//   3. memory    per device, the lifetimes of inputs, activations and step scratch are packed
//                into one workspace (runtime/memory_plan.h); weights and loaded slots are not in it
//   4. counts    the plan's transfers and their bytes, per run and at load, then
//                Executable::validate()
#include "passes/lower.h"

#include <algorithm>
#include <map>
#include <memory>

#include "backends/registry.h"
#include "ir/printer.h"
#include "passes/load_time.h"
#include "runtime/memory_plan.h"

namespace ferry {

namespace {

Status lowerError(const std::string &message, Location loc = {}) {
  return makeError("lower", message, loc);
}

// Slots, steps and weights as they are built from the graph.
class Lowering {
 public:
  Lowering(const Graph &g, Executable &exe, const std::vector<BackendEntry> &backends)
      : g_(g), exe_(exe), slotOf_(g.valueCount(), -1), weights_(weightValues(g)) {
    for (const BackendEntry &e : backends)
      if (e.target) targets_.emplace_back(e.kind, e.target());
  }

  Status run() {
    for (const InputDecl &in : g_.inputs()) {
      Expected<int32_t> s = slot(in.value);
      if (!s) return s.status();
      exe_.inputs.push_back(*s);
    }
    for (NodeId id : g_.order()) {
      const Node &n = g_.node(id);
      if (n.op == OpKind::Constant) {
        // Computed once: the constant's value is a weight of the result's type.
        const TensorData &value = std::get<TensorData>(n.attrs.at(0));
        const Value &r = g_.value(n.result);
        if (value.type() != r.type)
          return lowerError("constant " + valueRef(r.name) + " holds " + value.type().str() +
                                " but its result is " + r.type.str(),
                            n.loc);
        Expected<int32_t> s = addSlot(n.result, SlotKind::Weight);
        if (!s) return s.status();
        exe_.slots[static_cast<size_t>(*s)].weight = static_cast<int32_t>(exe_.weights.size());
        exe_.weights.push_back(value);
        continue;
      }
      if (n.group >= 0) {
        // A fused group is one step, made where its root is (every member before it); the other
        // members' results live inside the kernel and get no slot.
        if (g_.groups()[static_cast<size_t>(n.group)].root == id)
          if (Status s = fusedStep(g_.groups()[static_cast<size_t>(n.group)]); !s.ok()) return s;
        continue;
      }
      Step step{n.op, n.attrs, {}, -1, n.loc, n.inserted};
      for (ValueId v : n.operands) {
        Expected<int32_t> s = slot(v);
        if (!s) return s.status();
        step.operands.push_back(*s);
      }
      // A transfer or cast of a weight gives the same bytes in every run: done once, at load.
      const bool load = runsAtLoad(n, weights_);
      Expected<int32_t> r = addSlot(n.result, load ? SlotKind::Loaded : SlotKind::Activation);
      if (!r) return r.status();
      step.result = *r;
      if (n.op != OpKind::Transfer) {
        Expected<KernelPlan> plan = planOf(step);
        if (!plan) return plan.status();
        step.plan = std::move(*plan);
      }
      (load ? exe_.loadSteps : exe_.steps).push_back(std::move(step));
    }
    for (const OutputDecl &out : g_.outputs()) {
      Expected<int32_t> s = slot(out.value);
      if (!s) return s.status();
      exe_.outputs.push_back(*s);
    }
    // Inputs and outputs on host memory are the caller's tensors: no copy in or out of the
    // workspace. An output that is an input, a weight or a loaded slot is still copied out.
    for (int32_t s : exe_.inputs) markExternal(s);
    for (int32_t s : exe_.outputs)
      if (exe_.slots[static_cast<size_t>(s)].kind == SlotKind::Activation) markExternal(s);
    return Status();
  }

 private:
  // The slot of an operand, input or output: made on first use for inputs and params.
  Expected<int32_t> slot(ValueId v) {
    if (slotOf_[static_cast<size_t>(v)] >= 0) return slotOf_[static_cast<size_t>(v)];
    const Value &val = g_.value(v);
    if (val.kind == ValueKind::Input) return addSlot(v, SlotKind::Input);
    if (val.kind == ValueKind::Param) {
      Expected<int32_t> s = addSlot(v, SlotKind::Weight);
      if (!s) return s;
      const TensorData &data = g_.paramOf(v).data;
      if (data.type() != val.type)
        return lowerError("param " + valueRef(val.name) + " holds " + data.type().str() +
                          " but is declared " + val.type.str());
      exe_.slots[static_cast<size_t>(*s)].weight = static_cast<int32_t>(exe_.weights.size());
      exe_.weights.push_back(data);
      return s;
    }
    return lowerError(valueRef(val.name) + " is read before the node that writes it");
  }

  Expected<int32_t> addSlot(ValueId v, SlotKind kind) {
    const Value &val = g_.value(v);
    if (!val.device)
      return lowerError(valueRef(val.name) +
                        " has no device: lower() takes a graph that compile() placed (the whole "
                        "pipeline, not stopped early)");
    const auto id = static_cast<int32_t>(exe_.slots.size());
    exe_.slots.push_back(Slot{val.name, val.type, *val.device, kind, -1, 0});
    slotOf_[static_cast<size_t>(v)] = id;
    return id;
  }

  // The step of a fusion group: the members as micro-ops, the anchor first (it reads no
  // member), the others in the graph's order; the values they read from outside are the
  // step's operands, each once.
  Status fusedStep(const FusionGroup &group) {
    const Node &named = g_.node(group.anchor >= 0 ? group.anchor : group.root);
    Step step{named.op, named.attrs, {}, -1, named.loc, false};
    std::vector<NodeId> members;
    if (group.anchor >= 0) members.push_back(group.anchor);
    for (NodeId m : group.members)
      if (m != group.anchor) members.push_back(m);
    std::vector<ValueId> operandValues, bodyValues;  // bodyValues[j]: micro-op j's value
    for (NodeId id : members) {
      const Node &n = g_.node(id);
      const Value &r = g_.value(n.result);
      MicroOp m{n.op, n.attrs, {}, r.type, r.name, n.loc};
      for (ValueId v : n.operands) {
        auto inner = std::find(bodyValues.begin(), bodyValues.end(), v);
        if (inner != bodyValues.end()) {
          m.args.push_back(~static_cast<int32_t>(inner - bodyValues.begin()));
          continue;
        }
        auto known = std::find(operandValues.begin(), operandValues.end(), v);
        if (known == operandValues.end()) {
          Expected<int32_t> s = slot(v);
          if (!s) return s.status();
          operandValues.push_back(v);
          step.operands.push_back(*s);
          known = operandValues.end() - 1;
        }
        m.args.push_back(static_cast<int32_t>(known - operandValues.begin()));
      }
      step.body.push_back(std::move(m));
      bodyValues.push_back(n.result);
    }
    Expected<int32_t> r = addSlot(g_.node(group.root).result, SlotKind::Activation);
    if (!r) return r.status();
    step.result = *r;
    Expected<KernelPlan> plan = planOf(step);
    if (!plan) return plan.status();
    step.plan = std::move(*plan);
    exe_.steps.push_back(std::move(step));
    return Status();
  }

  const Target *targetOf(Device d) const {
    for (const auto &[kind, t] : targets_)
      if (kind == d.kind) return t.get();
    return nullptr;
  }

  void markExternal(int32_t s) {
    Slot &slot = exe_.slots[static_cast<size_t>(s)];
    const Target *target = targetOf(slot.device);
    if (target && target->hostMemory()) slot.external = true;
  }

  // The kernel plan of a step from its device kind's target.
  Expected<KernelPlan> planOf(const Step &step) {
    const Slot &result = exe_.slots[static_cast<size_t>(step.result)];
    const Target *target = targetOf(result.device);
    if (!target) return KernelPlan{};  // Session::create refuses it, naming the step
    types_.clear();
    for (int32_t o : step.operands) types_.push_back(exe_.slots[static_cast<size_t>(o)].type);
    return target->lower(StepSpec{opInfo(step.op), step.attrs, types_, result.type, result.device,
                                  step.loc, step.body.empty() ? nullptr : &step.body});
  }

  const Graph &g_;
  Executable &exe_;
  std::vector<int32_t> slotOf_;
  std::vector<std::pair<DeviceKind, std::unique_ptr<Target>>> targets_;
  std::vector<TensorType> types_;
  std::vector<uint8_t> weights_;  // per value: a weight (load_time.h)
};

// Workspace offsets per device: inputs live from before the first step, outputs to after the
// last one. Inputs and outputs in the caller's memory (Slot::external) take none, but their
// device still gets a workspace (its streams run the steps), of 0 bytes if nothing else is there.
void planWorkspaces(Executable &exe) {
  const auto steps = static_cast<int64_t>(exe.steps.size());
  const auto [first, last] = exe.slotLifetimes();
  // Per device: its slots, then its steps with scratch (as ~step index).
  std::map<Device, std::vector<int64_t>> byDevice;
  for (size_t s = 0; s < exe.slots.size(); ++s) {
    const Slot &slot = exe.slots[s];
    if (slot.kind != SlotKind::Input && slot.kind != SlotKind::Activation) continue;
    std::vector<int64_t> &pieces = byDevice[slot.device];
    if (!slot.external) pieces.push_back(static_cast<int64_t>(s));
  }
  for (int64_t i = 0; i < steps; ++i) {
    const Step &st = exe.steps[static_cast<size_t>(i)];
    if (st.plan.scratchBytes > 0)
      byDevice[exe.slots[static_cast<size_t>(st.result)].device].push_back(~i);
  }
  for (const auto &[device, pieces] : byDevice) {
    std::vector<Lifetime> lifetimes;
    for (int64_t p : pieces) {
      if (p < 0) {
        const int64_t step = ~p;
        lifetimes.push_back({exe.steps[static_cast<size_t>(step)].plan.scratchBytes, step, step});
        continue;
      }
      const auto s = static_cast<size_t>(p);
      lifetimes.push_back({exe.slots[s].type.byteSize(), first[s], std::max(first[s], last[s])});
    }
    std::vector<size_t> offsets;
    const size_t bytes = planOffsets(lifetimes, Executable::kAlignment, offsets);
    for (size_t i = 0; i < pieces.size(); ++i) {
      if (pieces[i] < 0)
        exe.steps[static_cast<size_t>(~pieces[i])].scratchOffset = offsets[i];
      else
        exe.slots[static_cast<size_t>(pieces[i])].offset = offsets[i];
    }
    exe.workspaces.push_back({device, bytes});
  }
}

Expected<Executable> lowerGraph(const Graph &compiled, const CompileOptions &options,
                                const std::vector<BackendEntry> &backends) {
  Executable exe;
  exe.name = compiled.name();
  exe.placement = options.placement;
  if (Status s = Lowering(compiled, exe, backends).run(); !s.ok()) return s;
  planWorkspaces(exe);
  for (const Slot &s : exe.slots)
    if (std::find(exe.devices.begin(), exe.devices.end(), s.device) == exe.devices.end())
      exe.devices.push_back(s.device);
  std::sort(exe.devices.begin(), exe.devices.end());
  for (const Step &st : exe.steps)
    if (st.op == OpKind::Transfer) {
      ++exe.planTransfers;
      exe.planTransferBytes +=
          static_cast<int64_t>(exe.slots[static_cast<size_t>(st.result)].type.byteSize());
    }
  for (const Step &st : exe.loadSteps)
    if (st.op == OpKind::Transfer) {
      ++exe.planLoadTransfers;
      exe.planLoadTransferBytes +=
          static_cast<int64_t>(exe.slots[static_cast<size_t>(st.result)].type.byteSize());
    }
  if (Status s = exe.validate(); !s.ok()) return s;
  return exe;
}

}  // namespace

Expected<Executable> lower(const Graph &compiled, const CompileOptions &options,
                           const std::vector<BackendEntry> &backends) {
  return catchOutOfMemory([&] { return "lowering '" + compiled.name() + "'"; },
                          [&] { return lowerGraph(compiled, options, backends); });
}

Capabilities backendCapabilities(const std::vector<BackendEntry> &backends) {
  Capabilities c;
  for (const BackendEntry &entry : backends) {
    if (!entry.target) continue;
    const std::unique_ptr<Target> target = entry.target();
    if (target->fuses()) c.setFuses(entry.kind);
    for (const OpInfo &op : allOps())
      for (DType t : kAllDTypes) {
        const KernelCapability k = target->capability(op.kind, t);
        if (!k.supported)
          c.setMissing(entry.kind, op.kind, t);
        else if (k.costFactor != 1)
          c.setCostFactor(entry.kind, op.kind, t, k.costFactor);
      }
  }
  return c;
}

void useBackendCapabilities(CompileOptions &options, const std::vector<BackendEntry> &backends) {
  Capabilities table = backendCapabilities(backends);
  table.merge(options.capabilities);  // the caller's gaps and factors on top
  options.capabilities = std::move(table);
}

namespace {

Expected<Executable> compileAndLower(Graph graph, CompileOptions options,
                                     std::vector<Diagnostic> *warnings,
                                     const std::vector<BackendEntry> &backends) {
  useBackendCapabilities(options, backends);
  CompileResult r = compile(std::move(graph), options);
  if (!r.ok()) return Status(std::move(r.diagnostics));
  if (!options.stopAfter.empty())
    return makeError("options",
                     "build() runs the whole pipeline; stopAfter is '" + options.stopAfter + "'");
  if (warnings)
    for (Diagnostic &d : r.diagnostics) warnings->push_back(std::move(d));
  return lower(r.graph, options, backends);
}

}  // namespace

Expected<Executable> build(Graph graph, CompileOptions options, std::vector<Diagnostic> *warnings,
                           const std::vector<BackendEntry> &backends) {
  std::string name;  // the graph's, kept: the graph moves into compile()
  return catchOutOfMemory([&] { return "building '" + name + "'"; },
                          [&] {
                            name = graph.name();
                            return compileAndLower(std::move(graph), std::move(options), warnings,
                                                   backends);
                          });
}

}  // namespace ferry
