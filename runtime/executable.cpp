// runtime/executable.cpp — an executable's lookups and the check of its consistency.
#include "runtime/executable.h"

#include <algorithm>
#include <map>
#include <string>
#include <optional>
#include <utility>
#include <vector>

namespace ferry {

namespace {

Status slotError(const Executable &exe, size_t s, const std::string &what) {
  return makeError("artifact",
                   "slot " + std::to_string(s) + " (%" + exe.slots[s].name + ") " + what);
}

// "step 3 ('matmul') <what>", or "step 3 ('matmul'): <what>" where `what` is a sentence of its
// own (`colon`).
Status stepError(const Step &st, size_t i, const std::string &what, bool load = false,
                 bool colon = false) {
  return makeError("artifact",
                   std::string(load ? "load step " : "step ") + std::to_string(i) + " ('" +
                       std::string(opInfo(st.op).name) + "')" + (colon ? ": " : " ") + what,
                   st.loc);
}

// What is wrong with `op` computing `result` from operands of `types` with `attrs`, by the op
// table, or "": the result has the type the op's shape and dtype rules give, and a promoting op's
// data operands already have the dtype it computes in (the dtype pass inserted the casts; kernels
// read them in that dtype: backends/cpu/kernels.h). Kernels size their loops and read their
// operands by these types, so a slot of the wrong size or dtype would be overrun or misread.
// `operandName(o)` names operand o in the message.
template <class Name>
std::string opTableError(const OpInfo &op, const Attrs &attrs, std::span<const TensorType> types,
                         const TensorType &result, const std::string &resultName,
                         Name operandName) {
  InferResult r = inferType(op, types, attrs);
  if (const auto *err = std::get_if<InferError>(&r)) return err->message;
  if (std::get<TensorType>(r) != result)
    return "writes " + resultName + " typed " + result.str() + " but '" + std::string(op.name) +
           "' gives " + std::get<TensorType>(r).str();
  const bool promotes = op.dtypeRule == DTypeRule::Promote ||
                        op.dtypeRule == DTypeRule::PromoteFloat ||
                        op.dtypeRule == DTypeRule::Compare;
  if (!promotes) return "";
  // A comparison computes in its operands' common dtype (its result is bool); the others in
  // their result's.
  std::optional<DType> compute;
  if (op.dtypeRule != DTypeRule::Compare) compute = result.dtype;
  for (size_t o = 0; o < types.size(); ++o) {
    if (op.operand(o).role != OperandRole::Data) continue;
    if (!compute) compute = types[o].dtype;
    if (types[o].dtype != *compute)
      return "operand " + std::to_string(o) + " (" + op.operand(o).name + ") " + operandName(o) +
             " is " + types[o].str() + ", but '" + std::string(op.name) + "' computes in " +
             std::string(dtypeName(*compute)) + ": a cast is missing";
  }
  return "";
}

// An op's operand count and attributes (count and kinds) as its row says, or "".
std::string arityError(const OpInfo &op, size_t operands, const Attrs &attrs) {
  const auto n = static_cast<int>(operands);
  if (n < op.minOperands || (op.maxOperands >= 0 && n > op.maxOperands))
    return "has " + std::to_string(n) + " operands";
  if (attrs.size() != op.attrs.size())
    return "has " + std::to_string(attrs.size()) + " attributes, not " +
           std::to_string(op.attrs.size());
  for (size_t a = 0; a < attrs.size(); ++a)
    if (attrKind(attrs[a]) != op.attrs[a].kind)
      return "attribute '" + std::string(op.attrs[a].name) + "' is a " +
             std::string(attrKindName(attrKind(attrs[a])));
  return "";
}

Status checkAgainstOpTable(const Executable &exe, const Step &st, size_t i, bool load) {
  std::vector<TensorType> types;
  types.reserve(st.operands.size());
  for (int32_t o : st.operands) types.push_back(exe.slots[static_cast<size_t>(o)].type);
  const Slot &result = exe.slots[static_cast<size_t>(st.result)];
  std::string why = opTableError(opInfo(st.op), st.attrs, types, result.type, "%" + result.name,
                                 [&](size_t o) {
                                   return "%" + exe.slots[static_cast<size_t>(st.operands[o])].name;
                                 });
  // "writes %h typed ..." continues the step's name; the op table's own messages are sentences.
  const bool sentence = why.rfind("writes ", 0) != 0;
  return why.empty() ? Status() : stepError(st, i, why, load, sentence);
}

// A fused step's body (backends/target.h, FusedBody): every micro-op against the op table over
// the types of what it reads; a GemmLike anchor first and only there, reading step operands;
// elementwise micro-ops after it, each of the result's shape; the last one's type the result's;
// the step's op the anchor's (or the last micro-op's). The CPU's fused kernel rests on each of
// these.
Status checkBody(const Executable &exe, const Step &st, size_t i) {
  const FusedBody &body = st.body;
  const Slot &result = exe.slots[static_cast<size_t>(st.result)];
  auto bodyError = [&](size_t j, const std::string &what) {
    return makeError("artifact",
                     "step " + std::to_string(i) + " (fused '" +
                         std::string(opInfo(st.op).name) + "'), micro-op " + std::to_string(j) +
                         " ('" + std::string(opInfo(body[j].op).name) + "' %" + body[j].name +
                         "): " + what,
                     body[j].loc);
  };
  if (body.size() < 2)
    return stepError(st, i, "is fused but its body has " + std::to_string(body.size()) + " micro-op",
                     false, true);
  if (st.attrs.size() != opInfo(st.op).attrs.size())
    return stepError(st, i, "has " + std::to_string(st.attrs.size()) + " attributes, not " +
                                std::to_string(opInfo(st.op).attrs.size()));
  std::vector<TensorType> types;
  for (size_t j = 0; j < body.size(); ++j) {
    const MicroOp &m = body[j];
    const OpInfo &op = opInfo(m.op);
    if (std::string why = arityError(op, m.args.size(), m.attrs); !why.empty())
      return bodyError(j, why);
    const bool anchor = j == 0 && op.is(OpTrait::GemmLike);
    if (!anchor && (!op.is(OpTrait::Elementwise) || m.op == OpKind::Transfer))
      return bodyError(j, j == 0 ? "a body starts with a GemmLike or an elementwise op"
                                 : "only elementwise ops follow a body's first micro-op");
    if (std::string why = typeLimitError(m.type.dtype, m.type.shape); !why.empty())
      return bodyError(j, "is " + m.type.str() + ", which " + why);
    if (m.type.shape != result.type.shape)
      return bodyError(j, "is " + m.type.str() + ", not of the step's shape " +
                              result.type.str());
    types.clear();
    for (int32_t a : m.args) {
      if (argIsMicroOp(a)) {
        if (anchor || microOpOf(a) >= j)
          return bodyError(j, "reads micro-op " + std::to_string(microOpOf(a)) +
                                  (anchor ? ", but an anchor reads step operands only"
                                          : ", which is not an earlier one"));
        types.push_back(body[microOpOf(a)].type);
      } else {
        if (static_cast<size_t>(a) >= st.operands.size())
          return bodyError(j, "reads operand " + std::to_string(a) + " of " +
                                  std::to_string(st.operands.size()));
        types.push_back(exe.slots[static_cast<size_t>(st.operands[static_cast<size_t>(a)])].type);
      }
    }
    std::string why = opTableError(op, m.attrs, types, m.type, "%" + m.name, [&](size_t o) {
      const int32_t a = m.args[o];
      return argIsMicroOp(a) ? "%" + body[microOpOf(a)].name
                             : "%" + exe.slots[static_cast<size_t>(st.operands[static_cast<size_t>(a)])].name;
    });
    if (!why.empty()) return bodyError(j, why);
  }
  if (body.back().type != result.type)
    return bodyError(body.size() - 1, "gives " + body.back().type.str() + " but the step writes %" +
                                          result.name + " typed " + result.type.str());
  const OpKind named = opInfo(body[0].op).is(OpTrait::GemmLike) ? body[0].op : body.back().op;
  if (st.op != named)
    return stepError(st, i, "is fused, but its op is not its body's anchor or last op '" +
                                std::string(opInfo(named).name) + "'",
                     false, true);
  return Status();
}

// The copies a list of steps makes between devices: its transfer steps and their bytes.
std::pair<int, int64_t> transfersOf(const Executable &exe, const std::vector<Step> &steps) {
  std::pair<int, int64_t> n{0, 0};
  for (const Step &st : steps)
    if (st.op == OpKind::Transfer) {
      ++n.first;
      n.second += static_cast<int64_t>(exe.slots[static_cast<size_t>(st.result)].type.byteSize());
    }
  return n;
}

// The memory plan's promise (runtime/memory_plan.h), checked: two pieces of a workspace (slots,
// step scratch) live at the same step never share a byte, else a kernel reads what it writes.
// Lifetimes as lowering plans them: an input from before the first step, an output to after the
// last, a slot from the step writing it to the last step reading it, scratch for its step. A sweep
// in step order over the live pieces sorted by offset: O(n log n). Run after the steps are checked.
Status checkLiveSlotsApart(const Executable &exe) {
  struct Piece {
    int64_t first, last;
    size_t begin, end;  // bytes [begin, end) of the workspace
    Device device;
    std::string name;  // "%h", or "the scratch of step 3"
  };
  const auto steps = static_cast<int64_t>(exe.steps.size());
  const auto [first, last] = exe.slotLifetimes();
  std::vector<Piece> pieces;
  for (size_t s = 0; s < exe.slots.size(); ++s) {
    const Slot &slot = exe.slots[s];
    if ((slot.kind != SlotKind::Input && slot.kind != SlotKind::Activation) || slot.external ||
        slot.type.byteSize() == 0)
      continue;
    pieces.push_back({first[s], std::max(first[s], last[s]), slot.offset,
                      slot.offset + slot.type.byteSize(), slot.device, "%" + slot.name});
  }
  for (int64_t i = 0; i < steps; ++i) {
    const Step &st = exe.steps[static_cast<size_t>(i)];
    if (st.plan.scratchBytes > 0)
      pieces.push_back({i, i, st.scratchOffset, st.scratchOffset + st.plan.scratchBytes,
                        exe.slots[static_cast<size_t>(st.result)].device,
                        "the scratch of step " + std::to_string(i)});
  }
  std::vector<size_t> byFirst(pieces.size());
  for (size_t i = 0; i < pieces.size(); ++i) byFirst[i] = i;
  std::sort(byFirst.begin(), byFirst.end(),
            [&](size_t a, size_t b) { return pieces[a].first < pieces[b].first; });
  // Live pieces by (device, begin); those whose last step is before `now` leave first.
  std::map<std::pair<Device, size_t>, size_t> live;
  std::multimap<int64_t, std::map<std::pair<Device, size_t>, size_t>::iterator> byLast;
  for (size_t i : byFirst) {
    const Piece &p = pieces[i];
    while (!byLast.empty() && byLast.begin()->first < p.first) {
      live.erase(byLast.begin()->second);
      byLast.erase(byLast.begin());
    }
    auto clash = [&](size_t j) {
      const Piece &q = pieces[j];
      const int64_t step = std::max(p.first, q.first);
      std::string at = "step " + std::to_string(step);
      if (step >= 0 && step < steps)
        at += " ('" + std::string(opInfo(exe.steps[static_cast<size_t>(step)].op).name) + "')";
      return makeError("artifact", q.name + " and " + p.name + " are both live at " + at +
                                       " but share bytes " +
                                       std::to_string(std::max(p.begin, q.begin)) + " to " +
                                       std::to_string(std::min(p.end, q.end)) +
                                       " of the workspace on " + p.device.str());
    };
    auto next = live.lower_bound({p.device, p.begin});
    if (next != live.end() && next->first.first == p.device && pieces[next->second].begin < p.end)
      return clash(next->second);
    if (next != live.begin()) {
      auto prev = std::prev(next);
      if (prev->first.first == p.device && pieces[prev->second].end > p.begin)
        return clash(prev->second);
    }
    auto [it, fresh] = live.emplace(std::make_pair(p.device, p.begin), i);
    if (!fresh) return clash(it->second);
    byLast.emplace(p.last, it);
  }
  return Status();
}

}  // namespace

std::string stepOpName(const Step &step) {
  if (step.body.empty()) return std::string(opInfo(step.op).name);
  std::string name;
  std::vector<OpKind> seen;
  for (const MicroOp &m : step.body) {
    if (std::find(seen.begin(), seen.end(), m.op) != seen.end()) continue;
    seen.push_back(m.op);
    name += (name.empty() ? "" : "+") + std::string(opInfo(m.op).name);
  }
  return name;
}

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

Executable::Lifetimes Executable::slotLifetimes() const {
  const auto n = static_cast<int64_t>(steps.size());
  Lifetimes l{std::vector<int64_t>(slots.size(), 0), std::vector<int64_t>(slots.size(), -1)};
  for (int32_t s : inputs) l.first[static_cast<size_t>(s)] = -1;
  for (int64_t i = 0; i < n; ++i) {
    const Step &st = steps[static_cast<size_t>(i)];
    const auto r = static_cast<size_t>(st.result);
    l.first[r] = i;
    l.last[r] = std::max(l.last[r], i);
    for (int32_t o : st.operands) l.last[static_cast<size_t>(o)] = i;
  }
  for (int32_t s : outputs) l.last[static_cast<size_t>(s)] = n;
  return l;
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
    // First: byte sizes below are computed from the type.
    if (std::string why = typeLimitError(slot.type.dtype, slot.type.shape); !why.empty())
      return slotError(*this, s, "is " + slot.type.str() + ", which " + why);
    if (slot.external && slot.kind != SlotKind::Input && slot.kind != SlotKind::Activation)
      return slotError(*this, s, "is a weight or loaded slot in the caller's memory");
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
    if (slot.kind == SlotKind::Loaded) continue;  // held with the weights, written by a load step
    // Inputs and activations: their device's workspace holds them, or its streams run the steps
    // reading and writing them in the caller's memory.
    auto ws = std::find_if(workspaces.begin(), workspaces.end(),
                           [&](const Workspace &w) { return w.device == slot.device; });
    if (ws == workspaces.end()) return slotError(*this, s, "has no workspace on its device");
    if (slot.external) {  // an input, or an output (checked below)
      if (slot.offset != 0)
        return slotError(*this, s, "is in the caller's memory but has a workspace offset");
      continue;
    }
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
  // A load step reads weights and loaded slots only and writes a loaded slot; a run's step
  // writes an activation. Load steps come first: a run may read what they wrote.
  auto checkStep = [&](const Step &st, size_t i, bool load) -> Status {
    const bool fused = !st.body.empty();
    if (fused && (load || st.op == OpKind::Transfer))
      return stepError(st, i, load ? "is fused, but a load step is one node" : "is a fused transfer",
                       load);
    if (!fused)
      if (std::string why = arityError(opInfo(st.op), st.operands.size(), st.attrs); !why.empty())
        return stepError(st, i, why, load);
    const SlotKind writes = load ? SlotKind::Loaded : SlotKind::Activation;
    if (!inRange(st.result) || slots[static_cast<size_t>(st.result)].kind != writes)
      return stepError(st, i, load ? "writes no loaded slot" : "writes no activation slot", load);
    const Slot &result = slots[static_cast<size_t>(st.result)];
    for (int32_t o : st.operands) {
      if (!inRange(o) || !written[static_cast<size_t>(o)])
        return stepError(st, i, "reads slot " + std::to_string(o) + " before it is written", load);
      const Slot &from = slots[static_cast<size_t>(o)];
      if (load && from.kind != SlotKind::Weight && from.kind != SlotKind::Loaded)
        return stepError(st, i, "reads %" + from.name + ", which is not a weight", load);
      if (st.op != OpKind::Transfer && from.device != result.device)
        return stepError(st, i,
                         "reads %" + from.name + " on " + from.device.str() + " but runs on " +
                             result.device.str(),
                         load);
    }
    if (st.op == OpKind::Transfer && st.operands.size() == 1) {
      const Slot &from = slots[static_cast<size_t>(st.operands[0])];
      if (from.type != result.type || std::get<Device>(st.attrs[0]) != result.device)
        return stepError(st, i,
                         "moves " + from.type.str() + " to " + result.type.str() + " on " +
                             result.device.str(),
                         load);
      // Every transfer step is a copy between devices: the plan's counts rest on it.
      if (from.device == result.device)
        return stepError(st, i, "moves %" + from.name + " from " + from.device.str() + " to itself",
                         load);
    }
    if (st.op == OpKind::Transfer) {
      if (!st.plan.kernel.empty() || st.plan.scratchBytes != 0 || !st.plan.payload.empty())
        return stepError(st, i, "is a copy between devices but has a kernel plan", load);
    } else if (load) {
      if (st.scratchOffset != 0)
        return stepError(st, i, "has a scratch offset, but a load step's scratch is its own", load);
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
    FERRY_TRY(fused ? checkBody(*this, st, i) : checkAgainstOpTable(*this, st, i, load));
    if (written[static_cast<size_t>(st.result)])
      return stepError(st, i, "writes %" + result.name + " a second time", load);
    written[static_cast<size_t>(st.result)] = true;
    return Status();
  };
  for (size_t i = 0; i < loadSteps.size(); ++i) FERRY_TRY(checkStep(loadSteps[i], i, true));
  for (size_t s = 0; s < nslots; ++s)
    if (slots[s].kind == SlotKind::Loaded && !written[s])
      return slotError(*this, s, "is a loaded slot that no load step writes");
  for (size_t i = 0; i < steps.size(); ++i) FERRY_TRY(checkStep(steps[i], i, false));
  std::vector<bool> output(nslots, false);
  for (int32_t s : outputs) {
    if (!inRange(s) || !written[static_cast<size_t>(s)])
      return makeError("artifact", "output slot " + std::to_string(s) + " is never written");
    output[static_cast<size_t>(s)] = true;
  }
  for (size_t s = 0; s < nslots; ++s)
    if (slots[s].external && slots[s].kind == SlotKind::Activation && !output[s])
      return slotError(*this, s, "is an activation in the caller's memory but no output");
  // A workspace ends where its last slot or scratch block ends, each block rounded as the memory
  // plan rounds it (runtime/memory_plan.h): a size beyond that only an edited file can give, and
  // Session::create would allocate it.
  for (const Workspace &w : workspaces) {
    auto end = [](size_t offset, size_t bytes) {
      return offset + std::max(kAlignment, (bytes + kAlignment - 1) / kAlignment * kAlignment);
    };
    size_t need = 0;
    for (const Slot &slot : slots)
      if ((slot.kind == SlotKind::Input || slot.kind == SlotKind::Activation) &&
          !slot.external && slot.device == w.device)
        need = std::max(need, end(slot.offset, slot.type.byteSize()));
    for (const Step &st : steps)
      if (st.plan.scratchBytes > 0 && slots[static_cast<size_t>(st.result)].device == w.device)
        need = std::max(need, end(st.scratchOffset, st.plan.scratchBytes));
    if (w.bytes > need)
      return makeError("artifact", "the workspace on " + w.device.str() + " is " +
                                       std::to_string(w.bytes) +
                                       " bytes, but its slots and scratch end at byte " +
                                       std::to_string(need));
  }
  FERRY_TRY(checkLiveSlotsApart(*this));
  // The plan's counts are what Session checks its copies against: they must be the steps'.
  const auto [transfers, transferBytes] = transfersOf(*this, steps);
  if (transfers != planTransfers || transferBytes != planTransferBytes)
    return makeError("artifact", "the plan counts " + std::to_string(planTransfers) +
                                     " transfers of " + std::to_string(planTransferBytes) +
                                     " bytes, the steps make " + std::to_string(transfers) +
                                     " of " + std::to_string(transferBytes));
  const auto [loads, loadBytes] = transfersOf(*this, loadSteps);
  if (loads != planLoadTransfers || loadBytes != planLoadTransferBytes)
    return makeError("artifact", "the plan counts " + std::to_string(planLoadTransfers) +
                                     " load-time transfers of " +
                                     std::to_string(planLoadTransferBytes) +
                                     " bytes, the load steps make " + std::to_string(loads) +
                                     " of " + std::to_string(loadBytes));
  return Status();
}

}  // namespace ferry
