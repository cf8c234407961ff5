// runtime/session.cpp — backends from the registry, weights uploaded once, a pool of
// workspaces, input checks, the step loop, and the check of what crossed devices against the
// plan.
#include "runtime/session.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <mutex>

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

// The devices of `exe` by kind: how many each kind's backend must drive (the highest index + 1).
std::map<DeviceKind, int> devicesByKind(const Executable &exe) {
  std::map<DeviceKind, int> count;
  for (Device d : exe.devices) count[d.kind] = std::max(count[d.kind], d.index + 1);
  return count;
}

std::string describe(const std::vector<BackendEntry> &registry) {
  std::string s;
  for (const BackendEntry &e : registry) s += (s.empty() ? "" : "; ") + e.description;
  return s.empty() ? "none" : s;
}

}  // namespace

struct Session::State {
  Executable exe;
  Options options;
  bool moveInputs = false;
  // One backend per device kind the executable uses, and each slot's (by its device).
  std::vector<std::pair<DeviceKind, std::unique_ptr<Backend>>> backends;
  std::vector<Backend *> backendOfSlot;
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
    for (size_t w = 0; w < weights.size(); ++w)
      if (weights[w]) backend(weightDevices[w]).release(weightDevices[w], weights[w]);
    for (const auto &ws : all)
      for (size_t i = 0; i < ws->base.size(); ++i)
        backend(exe.workspaces[i].device).release(exe.workspaces[i].device, ws->base[i]);
  }

  Backend &backend(Device d) const {
    for (const auto &[kind, b] : backends)
      if (kind == d.kind) return *b;
    FERRY_CHECK(false) << "no backend for " << d.str() << " (create() checked the devices)";
    return *backends.front().second;
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
      Expected<std::byte *> p = backend(w.device).allocate(w.device, w.bytes);
      if (!p) {
        for (size_t i = 0; i < ws->base.size(); ++i)
          backend(exe.workspaces[i].device).release(exe.workspaces[i].device, ws->base[i]);
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

  TensorView view(const Workspace &ws, int32_t slot) const {
    const Slot &s = exe.slots[static_cast<size_t>(slot)];
    return {address(ws, slot), &s.type, s.device};
  }

  // A transfer step: one backend's copy, or between two backends through host memory.
  Status transfer(const TensorView &from, const TensorView &to, Traffic &traffic) const {
    Backend &source = backend(from.device), &destination = backend(to.device);
    if (&source == &destination) return source.copy(from, to, &traffic);
    std::vector<std::byte> staging(from.bytes());
    FERRY_TRY(source.download(from, staging));
    return destination.upload(staging, from.device, to, &traffic);
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
  const std::vector<BackendEntry> &registry =
      options.backends.empty() ? builtinBackends() : options.backends;
  auto st = std::make_unique<State>();
  for (const auto &[kind, devices] : devicesByKind(exe)) {
    const Device first = *std::find_if(exe.devices.begin(), exe.devices.end(),
                                       [kind = kind](Device d) { return d.kind == kind; });
    const BackendEntry *entry = findBackend(registry, kind);
    if (!entry)
      return makeError("device", "the executable '" + exe.name + "' runs on " + first.str() +
                                     ", and this build of ferry has no backend for it (backends: " +
                                     describe(registry) + ")");
    if (!entry->make)
      return makeError("internal", "the registry entry for " + first.str() + " (" +
                                       entry->description + ") has no way to make its backend");
    Expected<std::unique_ptr<Backend>> backend =
        entry->make(BackendOptions{.devices = devices, .checked = options.checkPlan});
    if (!backend) return backend.status();
    if (!*backend)  // an app's registry entry that made nothing
      return makeError("internal", "the backend for " + first.str() + " (" + entry->description +
                                       ") made no backend object");
    for (Device d : exe.devices) {
      const std::span<const Device> driven = (*backend)->devices();
      if (d.kind == kind && std::find(driven.begin(), driven.end(), d) == driven.end())
        return makeError("device", "the executable '" + exe.name + "' runs on " + d.str() +
                                       ", which its backend (" + entry->description +
                                       ") does not drive");
    }
    st->backends.emplace_back(kind, std::move(backend).value());
  }
  st->options = std::move(options);
  st->moveInputs = st->options.moveInputs.value_or(exe.placement == PlacementPolicy::Auto);

  st->workspaceOfSlot.assign(exe.slots.size(), -1);
  for (size_t s = 0; s < exe.slots.size(); ++s) {
    st->backendOfSlot.push_back(&st->backend(exe.slots[s].device));
    if (exe.slots[s].kind == SlotKind::Weight) continue;
    for (size_t w = 0; w < exe.workspaces.size(); ++w)
      if (exe.workspaces[w].device == exe.slots[s].device)
        st->workspaceOfSlot[s] = static_cast<int32_t>(w);
  }
  for (const Workspace &w : exe.workspaces) st->workspaceBytes += w.bytes;

  // Weights: uploaded once from host memory, like model.to(device).
  st->exe = std::move(exe);
  st->weights.assign(st->exe.weights.size(), nullptr);
  st->weightDevices.assign(st->exe.weights.size(), Device::cpu());
  for (size_t slot = 0; slot < st->exe.slots.size(); ++slot) {
    const Slot &s = st->exe.slots[slot];
    if (s.kind != SlotKind::Weight) continue;
    const TensorData &data = st->exe.weights[static_cast<size_t>(s.weight)];
    std::byte *&dst = st->weights[static_cast<size_t>(s.weight)];
    if (dst) continue;  // two slots never share a weight, but be safe
    Backend &backend = *st->backendOfSlot[slot];
    Expected<std::byte *> p = backend.allocate(s.device, data.byteSize());
    if (!p) return p.status();
    dst = *p;
    st->weightDevices[static_cast<size_t>(s.weight)] = s.device;
    FERRY_TRY(backend.upload(data.bytes(), Device::cpu(), {dst, &s.type, s.device}, nullptr));
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

  // What the backends copied between devices in this run: the input moves and the transfer
  // steps, counted where the bytes move (Backend::upload, Backend::copy).
  Traffic traffic;
  const Clock::time_point inputCopy = Clock::now();
  stats.inputCopyStart = seconds(start, inputCopy);
  for (int32_t slot : exe.inputs) {
    const Tensor &t = *bySlot[static_cast<size_t>(slot)];
    FERRY_TRY(st.backendOfSlot[static_cast<size_t>(slot)]->upload(t.bytes(), t.device(),
                                                                  st.view(ws, slot), &traffic));
  }
  stats.inputCopySeconds = secondsSince(inputCopy);

  stats.stepSeconds.resize(exe.steps.size());
  stats.stepStarts.resize(exe.steps.size());
  std::vector<TensorView> operands;
  for (size_t i = 0; i < exe.steps.size(); ++i) {
    const Clock::time_point t = Clock::now();
    stats.stepStarts[i] = seconds(start, t);  // the read that times the step, not another one
    const Step &step = exe.steps[i];
    const TensorView out = st.view(ws, step.result);
    operands.clear();
    for (int32_t o : step.operands) operands.push_back(st.view(ws, o));
    Status s = step.op == OpKind::Transfer
                   ? st.transfer(operands[0], out, traffic)
                   : st.backendOfSlot[static_cast<size_t>(step.result)]->run(
                         KernelCall{opInfo(step.op), step.attrs, operands, out, step.loc});
    if (!s.ok()) return s;
    stats.stepSeconds[i] = secondsSince(t);
  }
  stats.transfers = traffic.copies;
  stats.transferBytes = traffic.bytes;
  // A backend an app supplies (Options::backends) can miscount: the run fails with an error the
  // app gets back, not an abort, though with ferry's own backends it means a bug in ferry.
  if (st.options.checkPlan && (traffic.copies != exe.planTransfers + stats.inputMoves ||
                               traffic.bytes != exe.planTransferBytes + stats.inputMoveBytes))
    return makeError("internal", "run of '" + exe.name + "': the backends copied " +
                                     std::to_string(traffic.copies) + " tensors between devices (" +
                                     std::to_string(traffic.bytes) + " bytes), but the plan has " +
                                     std::to_string(exe.planTransfers) + " transfers (" +
                                     std::to_string(exe.planTransferBytes) + " bytes) and " +
                                     std::to_string(stats.inputMoves) + " inputs were moved (" +
                                     std::to_string(stats.inputMoveBytes) + " bytes)");

  for (int32_t slot : exe.outputs) {
    const Slot &s = exe.slots[static_cast<size_t>(slot)];
    TensorData data(s.type.dtype, s.type.shape);
    FERRY_TRY(st.backendOfSlot[static_cast<size_t>(slot)]->download(st.view(ws, slot),
                                                                    data.mutableBytes()));
    result.outputs.push_back(
        {s.name, Tensor(std::move(data), runOptions.outputsOnDevice ? s.device : Device::cpu())});
  }
  stats.seconds = secondsSince(start);
  return result;
}

}  // namespace ferry
