// runtime/executable.cpp — an executable's lookups and the check of its consistency.
#include "runtime/executable.h"

#include <algorithm>

namespace ferry {

namespace {

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
    if (st.op == OpKind::Transfer) {
      if (!st.plan.kernel.empty() || st.plan.scratchBytes != 0 || !st.plan.payload.empty())
        return stepError(st, i, "is a copy between devices but has a kernel plan");
    } else {
      auto ws = std::find_if(workspaces.begin(), workspaces.end(),
                             [&](const Workspace &w) { return w.device == result.device; });
      if (st.plan.scratchBytes > 0 &&
          (ws == workspaces.end() || st.scratchOffset % kAlignment != 0 ||
           st.scratchOffset > ws->bytes || st.plan.scratchBytes > ws->bytes - st.scratchOffset))
        return stepError(st, i,
                         "has " + std::to_string(st.plan.scratchBytes) +
                             " bytes of scratch outside its device's workspace");
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
