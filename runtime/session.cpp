// runtime/session.cpp — weights uploaded once, a pool of workspaces, input checks, the step
// loop with its transfer accounting.
#include "runtime/session.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <mutex>

#include "backends/cpu/cpu_backend.h"

namespace ferry {

namespace {

using Clock = std::chrono::steady_clock;

double seconds(Clock::time_point from, Clock::time_point to) {
  return std::chrono::duration<double>(to - from).count();
}

double secondsSince(Clock::time_point t) { return seconds(t, Clock::now()); }

std::string names(const Executable &exe, const std::vector<int32_t> &slots) {
  std::string s;
  for (int32_t id : slots)
    s += (s.empty() ? "'" : ", '") + exe.slots[static_cast<size_t>(id)].name + "'";
  return s.empty() ? "none" : s;
}

}  // namespace

struct Session::State {
  Executable exe;
  Options options;
  bool moveInputs = false;
  std::unique_ptr<CpuBackend> cpu;
  std::vector<std::byte *> weights;      // per weight, on its slot's device
  std::vector<Device> weightDevices;     // that device, for the release
  std::vector<int32_t> workspaceOfSlot;  // index into exe.workspaces, -1 for weights
  size_t weightBytes = 0, workspaceBytes = 0;

  // One run's memory: a block per entry of exe.workspaces.
  struct Workspace {
    std::vector<std::byte *> base;
  };
  mutable std::mutex poolMutex;
  mutable std::vector<std::unique_ptr<Workspace>> all;  // every workspace made, in use or idle
  mutable std::vector<Workspace *> idle;

  ~State() {
    if (!cpu) return;
    for (size_t w = 0; w < weights.size(); ++w)
      if (weights[w]) cpu->release(weightDevices[w], weights[w]);
    for (const auto &ws : all)
      for (size_t i = 0; i < ws->base.size(); ++i)
        cpu->release(exe.workspaces[i].device, ws->base[i]);
  }

  Expected<Workspace *> acquire() const {
    {
      std::lock_guard<std::mutex> lock(poolMutex);
      if (!idle.empty()) {
        Workspace *ws = idle.back();
        idle.pop_back();
        return ws;
      }
    }
    auto ws = std::make_unique<Workspace>();
    for (const ferry::Workspace &w : exe.workspaces) {
      Expected<std::byte *> p = cpu->allocate(w.device, w.bytes);
      if (!p) {
        for (size_t i = 0; i < ws->base.size(); ++i)
          cpu->release(exe.workspaces[i].device, ws->base[i]);
        return p.status();
      }
      ws->base.push_back(*p);
    }
    std::lock_guard<std::mutex> lock(poolMutex);
    all.push_back(std::move(ws));
    return all.back().get();
  }

  void giveBack(Workspace *ws) const {
    std::lock_guard<std::mutex> lock(poolMutex);
    idle.push_back(ws);
  }

  std::byte *address(const Workspace &ws, int32_t slot) const {
    const Slot &s = exe.slots[static_cast<size_t>(slot)];
    if (s.kind == SlotKind::Weight) return weights[static_cast<size_t>(s.weight)];
    return ws.base[static_cast<size_t>(workspaceOfSlot[static_cast<size_t>(slot)])] + s.offset;
  }

  Status checkInputs(const std::vector<NamedTensor> &given, std::vector<const Tensor *> &bySlot,
                     RunStats &stats) const;
};

Session::Session(std::unique_ptr<State> state) : state_(std::move(state)) {}
Session::Session(Session &&) noexcept = default;
Session &Session::operator=(Session &&) noexcept = default;
Session::~Session() = default;

const Executable &Session::executable() const { return state_->exe; }
size_t Session::weightBytes() const { return state_->weightBytes; }
size_t Session::workspaceBytes() const { return state_->workspaceBytes; }

const Tensor *RunResult::find(std::string_view name) const {
  for (const NamedTensor &o : outputs)
    if (o.name == name) return &o.tensor;
  return nullptr;
}

Expected<Session> Session::create(Executable exe, Options options) {
  if (Status s = exe.validate(); !s.ok()) return s;
  int cpuDevices = 1;
  for (Device d : exe.devices) {
    if (!d.isHost())
      return makeError("device", "the executable '" + exe.name + "' runs on " + d.str() +
                                     ", and this build of ferry has no backend for it (only the "
                                     "cpu backend with virtual devices cpu:N)");
    cpuDevices = std::max(cpuDevices, d.index + 1);
  }
  auto st = std::make_unique<State>();
  st->options = options;
  st->moveInputs = options.moveInputs.value_or(exe.placement == PlacementPolicy::Auto);
  CpuBackend::Options cpuOptions;
  cpuOptions.devices = cpuDevices;
  cpuOptions.checkOwnership = options.checkPlan;
  st->cpu = std::make_unique<CpuBackend>(cpuOptions);

  st->workspaceOfSlot.assign(exe.slots.size(), -1);
  for (size_t s = 0; s < exe.slots.size(); ++s) {
    if (exe.slots[s].kind == SlotKind::Weight) continue;
    for (size_t w = 0; w < exe.workspaces.size(); ++w)
      if (exe.workspaces[w].device == exe.slots[s].device)
        st->workspaceOfSlot[s] = static_cast<int32_t>(w);
  }
  for (const Workspace &w : exe.workspaces) st->workspaceBytes += w.bytes;

  // Weights: uploaded once, like model.to(device).
  st->exe = std::move(exe);
  st->weights.assign(st->exe.weights.size(), nullptr);
  st->weightDevices.assign(st->exe.weights.size(), Device::cpu());
  for (const Slot &s : st->exe.slots) {
    if (s.kind != SlotKind::Weight) continue;
    const TensorData &data = st->exe.weights[static_cast<size_t>(s.weight)];
    std::byte *&dst = st->weights[static_cast<size_t>(s.weight)];
    if (dst) continue;  // two slots never share a weight, but be safe
    Expected<std::byte *> p = st->cpu->allocate(s.device, data.byteSize());
    if (!p) return p.status();
    dst = *p;
    st->weightDevices[static_cast<size_t>(s.weight)] = s.device;
    if (data.byteSize() > 0) std::memcpy(dst, data.bytes().data(), data.byteSize());
    st->weightBytes += data.byteSize();
  }
  return Session(std::move(st));
}

Status Session::State::checkInputs(const std::vector<NamedTensor> &given,
                                   std::vector<const Tensor *> &bySlot, RunStats &stats) const {
  DiagnosticEngine diags;
  for (const NamedTensor &in : given) {
    const int32_t slot = exe.findInput(in.name);
    if (slot < 0) {
      diags.error("input", {},
                  "unknown input '" + in.name + "': the model's inputs are " +
                      names(exe, exe.inputs));
      continue;
    }
    const Slot &s = exe.slots[static_cast<size_t>(slot)];
    if (bySlot[static_cast<size_t>(slot)]) {
      diags.error("input", {}, "input '" + in.name + "' is given twice");
      continue;
    }
    bySlot[static_cast<size_t>(slot)] = &in.tensor;
    const Tensor &t = in.tensor;
    if (t.dtype() != s.type.dtype)
      diags
          .error("input", {},
                 "input '" + in.name + "' has the wrong dtype: expected " +
                     std::string(dtypeName(s.type.dtype)) + ", got " +
                     std::string(dtypeName(t.dtype())))
          .fix("cast it to " + std::string(dtypeName(s.type.dtype)) + " before the run");
    if (t.shape() != s.type.shape)
      diags.error("input", {},
                  "input '" + in.name + "' has the wrong shape: expected " +
                      shapeStr(s.type.shape) + ", got " + shapeStr(t.shape()));
    if (t.device() != s.device) {
      if (moveInputs) {
        ++stats.inputMoves;
        stats.inputMoveBytes += static_cast<int64_t>(t.byteSize());
      } else {
        diags
            .error("input", {},
                   "input '" + in.name + "' is on " + t.device().str() +
                       ", but the model takes it on " + s.device.str() +
                       " (strict placement moves nothing implicitly)")
            .fix("move it first (tensor.to(" + s.device.str() +
                 ")), or run with Session::Options::moveInputs");
      }
    }
  }
  std::vector<int32_t> missing;
  for (int32_t slot : exe.inputs)
    if (!bySlot[static_cast<size_t>(slot)]) missing.push_back(slot);
  if (!missing.empty())
    diags.error("input", {},
                (missing.size() == 1 ? "input " : "inputs ") + names(exe, missing) +
                    (missing.size() == 1 ? " is" : " are") + " missing");
  return diags.hasErrors() ? Status(diags.take()) : Status();
}

Expected<RunResult> Session::run(const std::vector<NamedTensor> &inputs,
                                 const RunOptions &runOptions) const {
  const State &st = *state_;
  const Executable &exe = st.exe;
  const Clock::time_point start = Clock::now();
  RunResult result;
  RunStats &stats = result.stats;
  std::vector<const Tensor *> bySlot(exe.slots.size(), nullptr);
  if (Status s = st.checkInputs(inputs, bySlot, stats); !s.ok()) return s;

  Expected<State::Workspace *> acquired = st.acquire();
  if (!acquired) return acquired.status();
  State::Workspace &ws = **acquired;
  struct GiveBack {
    const State &st;
    State::Workspace *ws;
    ~GiveBack() { st.giveBack(ws); }
  } giveBack{st, &ws};

  int copies = 0;  // every copy between devices this run makes
  const Clock::time_point inputCopy = Clock::now();
  stats.inputCopyStart = seconds(start, inputCopy);
  for (int32_t slot : exe.inputs) {
    const Tensor &t = *bySlot[static_cast<size_t>(slot)];
    if (t.byteSize() > 0) std::memcpy(st.address(ws, slot), t.bytes().data(), t.byteSize());
    if (t.device() != exe.slots[static_cast<size_t>(slot)].device) ++copies;
  }
  stats.inputCopySeconds = secondsSince(inputCopy);

  stats.stepSeconds.resize(exe.steps.size());
  stats.stepStarts.resize(exe.steps.size());
  std::vector<TensorView> operands;
  for (size_t i = 0; i < exe.steps.size(); ++i) {
    const Clock::time_point t = Clock::now();
    stats.stepStarts[i] = seconds(start, t);  // the read that times the step, not another one
    const Step &step = exe.steps[i];
    const Slot &r = exe.slots[static_cast<size_t>(step.result)];
    const TensorView out{st.address(ws, step.result), &r.type, r.device};
    operands.clear();
    for (int32_t o : step.operands) {
      const Slot &s = exe.slots[static_cast<size_t>(o)];
      operands.push_back({st.address(ws, o), &s.type, s.device});
    }
    Status s;
    if (step.op == OpKind::Transfer) {
      s = st.cpu->copy(operands[0], out);
      ++copies;
      ++stats.transfers;
      stats.transferBytes += static_cast<int64_t>(r.type.byteSize());
    } else {
      s = st.cpu->run(KernelCall{opInfo(step.op), step.attrs, operands, out, step.loc});
    }
    if (!s.ok()) return s;
    stats.stepSeconds[i] = secondsSince(t);
  }
  stats.transfers += stats.inputMoves;
  stats.transferBytes += stats.inputMoveBytes;
  if (st.options.checkPlan) {
    FERRY_CHECK(copies == exe.planTransfers + stats.inputMoves)
        << "run of '" << exe.name << "' made " << copies << " copies between devices; the plan has "
        << exe.planTransfers << " transfers and " << stats.inputMoves << " inputs were moved";
  }

  for (int32_t slot : exe.outputs) {
    const Slot &s = exe.slots[static_cast<size_t>(slot)];
    TensorData data(s.type.dtype, s.type.shape);
    if (data.byteSize() > 0)
      std::memcpy(data.mutableBytes().data(), st.address(ws, slot), data.byteSize());
    result.outputs.push_back(
        {s.name, Tensor(std::move(data), runOptions.outputsOnDevice ? s.device : Device::cpu())});
  }
  stats.seconds = secondsSince(start);
  return result;
}

}  // namespace ferry
