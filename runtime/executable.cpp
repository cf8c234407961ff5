// runtime/executable.cpp — lowering a compiled graph to steps over slots, and checking an
// executable's consistency.
#include "runtime/executable.h"

#include <algorithm>
#include <map>

#include "runtime/backend_registry.h"
#include "runtime/memory_plan.h"

namespace ferry {

namespace {

Status lowerError(const std::string &message, Location loc = {}) {
  return makeError("lower", message, loc);
}

// Slots, steps and weights as they are built from the graph.
class Lowering {
 public:
  Lowering(const Graph &g, Executable &exe) : g_(g), exe_(exe), slotOf_(g.valueCount(), -1) {}

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
          return lowerError("constant %" + r.name + " holds " + value.type().str() +
                                " but its result is " + r.type.str(),
                            n.loc);
        Expected<int32_t> s = addSlot(n.result, SlotKind::Weight);
        if (!s) return s.status();
        exe_.slots[static_cast<size_t>(*s)].weight = static_cast<int32_t>(exe_.weights.size());
        exe_.weights.push_back(value);
        continue;
      }
      Step step{n.op, n.attrs, {}, -1, n.loc, n.inserted};
      for (ValueId v : n.operands) {
        Expected<int32_t> s = slot(v);
        if (!s) return s.status();
        step.operands.push_back(*s);
      }
      Expected<int32_t> r = addSlot(n.result, SlotKind::Activation);
      if (!r) return r.status();
      step.result = *r;
      exe_.steps.push_back(std::move(step));
    }
    for (const OutputDecl &out : g_.outputs()) {
      Expected<int32_t> s = slot(out.value);
      if (!s) return s.status();
      exe_.outputs.push_back(*s);
    }
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
        return lowerError("param %" + val.name + " holds " + data.type().str() +
                          " but is declared " + val.type.str());
      exe_.slots[static_cast<size_t>(*s)].weight = static_cast<int32_t>(exe_.weights.size());
      exe_.weights.push_back(data);
      return s;
    }
    return lowerError("%" + val.name + " is read before the node that writes it");
  }

  Expected<int32_t> addSlot(ValueId v, SlotKind kind) {
    const Value &val = g_.value(v);
    if (!val.device)
      return lowerError("%" + val.name +
                        " has no device: lower() takes a graph that compile() placed (the whole "
                        "pipeline, not stopped early)");
    const auto id = static_cast<int32_t>(exe_.slots.size());
    exe_.slots.push_back(Slot{val.name, val.type, *val.device, kind, -1, 0});
    slotOf_[static_cast<size_t>(v)] = id;
    return id;
  }

  const Graph &g_;
  Executable &exe_;
  std::vector<int32_t> slotOf_;
};

// Workspace offsets per device: inputs live from before the first step, outputs to after the
// last one.
void planWorkspaces(Executable &exe) {
  const auto steps = static_cast<int64_t>(exe.steps.size());
  std::vector<int64_t> first(exe.slots.size(), 0), last(exe.slots.size(), -1);
  for (int32_t s : exe.inputs) first[static_cast<size_t>(s)] = -1;
  for (int64_t i = 0; i < steps; ++i) {
    const Step &st = exe.steps[static_cast<size_t>(i)];
    first[static_cast<size_t>(st.result)] = i;
    last[static_cast<size_t>(st.result)] = std::max(last[static_cast<size_t>(st.result)], i);
    for (int32_t o : st.operands) last[static_cast<size_t>(o)] = i;
  }
  for (int32_t s : exe.outputs) last[static_cast<size_t>(s)] = steps;
  std::map<Device, std::vector<size_t>> byDevice;
  for (size_t s = 0; s < exe.slots.size(); ++s)
    if (exe.slots[s].kind != SlotKind::Weight) byDevice[exe.slots[s].device].push_back(s);
  for (const auto &[device, slots] : byDevice) {
    std::vector<Lifetime> lifetimes;
    for (size_t s : slots)
      lifetimes.push_back({exe.slots[s].type.byteSize(), first[s], std::max(first[s], last[s])});
    std::vector<size_t> offsets;
    const size_t bytes = planOffsets(lifetimes, Executable::kAlignment, offsets);
    for (size_t i = 0; i < slots.size(); ++i) exe.slots[slots[i]].offset = offsets[i];
    exe.workspaces.push_back({device, bytes});
  }
}

Status slotError(const Executable &exe, size_t s, const std::string &what) {
  return makeError("artifact",
                   "slot " + std::to_string(s) + " (%" + exe.slots[s].name + ") " + what);
}

Status stepError(const Step &st, size_t i, const std::string &what) {
  return makeError(
      "artifact",
      "step " + std::to_string(i) + " ('" + std::string(opInfo(st.op).name) + "') " + what, st.loc);
}

}  // namespace

int32_t Executable::findInput(std::string_view n) const {
  for (int32_t s : inputs)
    if (slots[static_cast<size_t>(s)].name == n) return s;
  return -1;
}

int32_t Executable::findOutput(std::string_view n) const {
  for (int32_t s : outputs)
    if (slots[static_cast<size_t>(s)].name == n) return s;
  return -1;
}

Expected<Executable> lower(const Graph &compiled, const CompileOptions &options) {
  Executable exe;
  exe.name = compiled.name();
  exe.placement = options.placement;
  if (Status s = Lowering(compiled, exe).run(); !s.ok()) return s;
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
  if (Status s = exe.validate(); !s.ok()) return s;
  return exe;
}

Capabilities backendCapabilities() {
  Capabilities c;
  for (const BackendEntry &entry : builtinBackends()) {
    Expected<std::unique_ptr<Backend>> backend = entry.make(BackendOptions{});
    if (!backend) continue;  // no such hardware here: Session::create says so
    for (const OpInfo &op : allOps())
      for (DType t : kAllDTypes) {
        const KernelCapability k = (*backend)->capability(op.kind, t);
        if (!k.supported)
          c.setMissing(entry.kind, op.kind, t);
        else if (k.costFactor != 1)
          c.setCostFactor(entry.kind, op.kind, t, k.costFactor);
      }
  }
  return c;
}

void useBackendCapabilities(CompileOptions &options) {
  Capabilities table = backendCapabilities();
  table.merge(options.capabilities);  // the caller's gaps and factors on top
  options.capabilities = std::move(table);
}

Expected<Executable> build(Graph graph, CompileOptions options, std::vector<Diagnostic> *warnings) {
  useBackendCapabilities(options);
  CompileResult r = compile(std::move(graph), options);
  if (!r.ok()) return Status(std::move(r.diagnostics));
  if (!options.stopAfter.empty())
    return makeError("options",
                     "build() runs the whole pipeline; stopAfter is '" + options.stopAfter + "'");
  if (warnings)
    for (Diagnostic &d : r.diagnostics) warnings->push_back(std::move(d));
  return lower(r.graph, options);
}

Status Executable::validate() const {
  const auto nslots = slots.size();
  auto inRange = [&](int32_t s) { return s >= 0 && static_cast<size_t>(s) < nslots; };
  std::vector<bool> written(nslots, false);
  for (size_t i = 0; i < devices.size(); ++i)
    if (i > 0 && !(devices[i - 1] < devices[i]))
      return makeError("artifact",
                       "the device list is not sorted and unique at " + devices[i].str());
  for (size_t i = 0; i < workspaces.size(); ++i) {
    if (std::find(devices.begin(), devices.end(), workspaces[i].device) == devices.end())
      return makeError("artifact", "a workspace is on " + workspaces[i].device.str() +
                                       ", not among the devices");
    for (size_t j = 0; j < i; ++j)
      if (workspaces[j].device == workspaces[i].device)
        return makeError("artifact", "two workspaces on " + workspaces[i].device.str());
  }
  for (size_t s = 0; s < nslots; ++s) {
    const Slot &slot = slots[s];
    if (slot.kind != SlotKind::Weight && slot.weight != -1)
      return slotError(*this, s, "is not a weight but names weight " + std::to_string(slot.weight));
    if (std::find(devices.begin(), devices.end(), slot.device) == devices.end())
      return slotError(*this, s, "is on " + slot.device.str() + ", not among the devices");
    if (slot.kind == SlotKind::Weight) {
      if (slot.weight < 0 || static_cast<size_t>(slot.weight) >= weights.size())
        return slotError(*this, s,
                         "names weight " + std::to_string(slot.weight) + " of " +
                             std::to_string(weights.size()));
      if (weights[static_cast<size_t>(slot.weight)].type() != slot.type)
        return slotError(*this, s,
                         "is " + slot.type.str() + " but its weight holds " +
                             weights[static_cast<size_t>(slot.weight)].type().str());
      written[s] = true;
      continue;
    }
    auto ws = std::find_if(workspaces.begin(), workspaces.end(),
                           [&](const Workspace &w) { return w.device == slot.device; });
    if (ws == workspaces.end()) return slotError(*this, s, "has no workspace on its device");
    if (slot.offset % kAlignment != 0 || slot.offset > ws->bytes ||
        slot.type.byteSize() > ws->bytes - slot.offset)
      return slotError(*this, s,
                       "lies outside its device's workspace of " + std::to_string(ws->bytes) +
                           " bytes");
  }
  for (int32_t s : inputs) {
    if (!inRange(s) || slots[static_cast<size_t>(s)].kind != SlotKind::Input)
      return makeError("artifact", "input " + std::to_string(s) + " is not an input slot");
    if (written[static_cast<size_t>(s)])
      return makeError("artifact", "input slot " + std::to_string(s) + " is listed twice");
    written[static_cast<size_t>(s)] = true;
  }
  for (size_t i = 0; i < steps.size(); ++i) {
    const Step &st = steps[i];
    const OpInfo &op = opInfo(st.op);
    const auto n = static_cast<int>(st.operands.size());
    if (n < op.minOperands || (op.maxOperands >= 0 && n > op.maxOperands))
      return stepError(st, i, "has " + std::to_string(n) + " operands");
    if (st.attrs.size() != op.attrs.size())
      return stepError(st, i,
                       "has " + std::to_string(st.attrs.size()) + " attributes, not " +
                           std::to_string(op.attrs.size()));
    for (size_t a = 0; a < st.attrs.size(); ++a)
      if (attrKind(st.attrs[a]) != op.attrs[a].kind)
        return stepError(st, i,
                         "attribute '" + std::string(op.attrs[a].name) + "' is a " +
                             std::string(attrKindName(attrKind(st.attrs[a]))));
    if (!inRange(st.result) || slots[static_cast<size_t>(st.result)].kind != SlotKind::Activation)
      return stepError(st, i, "writes no activation slot");
    const Slot &result = slots[static_cast<size_t>(st.result)];
    for (int32_t o : st.operands) {
      if (!inRange(o) || !written[static_cast<size_t>(o)])
        return stepError(st, i, "reads slot " + std::to_string(o) + " before it is written");
      if (st.op != OpKind::Transfer && slots[static_cast<size_t>(o)].device != result.device)
        return stepError(st, i,
                         "reads %" + slots[static_cast<size_t>(o)].name + " on " +
                             slots[static_cast<size_t>(o)].device.str() + " but runs on " +
                             result.device.str());
    }
    if (st.op == OpKind::Transfer && st.operands.size() == 1) {
      const Slot &from = slots[static_cast<size_t>(st.operands[0])];
      if (from.type != result.type || std::get<Device>(st.attrs[0]) != result.device)
        return stepError(st, i,
                         "moves " + from.type.str() + " to " + result.type.str() + " on " +
                             result.device.str());
      // Every transfer step is a copy between devices: the plan's counts rest on it.
      if (from.device == result.device)
        return stepError(st, i,
                         "moves %" + from.name + " from " + from.device.str() + " to itself");
    }
    if (written[static_cast<size_t>(st.result)])
      return stepError(st, i, "writes %" + result.name + " a second time");
    written[static_cast<size_t>(st.result)] = true;
  }
  for (int32_t s : outputs)
    if (!inRange(s) || !written[static_cast<size_t>(s)])
      return makeError("artifact", "output slot " + std::to_string(s) + " is never written");
  // The plan's counts are what Session checks its copies against: they must be the steps'.
  int transfers = 0;
  int64_t transferBytes = 0;
  for (const Step &st : steps)
    if (st.op == OpKind::Transfer) {
      ++transfers;
      transferBytes += static_cast<int64_t>(slots[static_cast<size_t>(st.result)].type.byteSize());
    }
  if (transfers != planTransfers || transferBytes != planTransferBytes)
    return makeError("artifact", "the plan counts " + std::to_string(planTransfers) +
                                     " transfers of " + std::to_string(planTransferBytes) +
                                     " bytes, the steps make " + std::to_string(transfers) +
                                     " of " + std::to_string(transferBytes));
  return Status();
}

}  // namespace ferry
