// runtime/session.cpp — device runtimes from the registry, kernels prepared, weights uploaded and
// load steps run once, a pool of workspaces with their pointer tables and streams, input checks,
// the step loop, and the check of what crossed devices against the plan.
#include "runtime/session.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <new>
#include <optional>
#include <span>
#include <string_view>
#include <unordered_map>

#include "runtime/copies_in_flight.h"
#include "runtime/output_cache.h"

namespace ferry {

namespace {

using Clock = std::chrono::steady_clock;

double seconds(Clock::time_point from, Clock::time_point to) {
  return std::chrono::duration<double>(to - from).count();
}

double secondsSince(Clock::time_point t) { return seconds(t, Clock::now()); }

// "'x', 'b'": the names of `slots`, the first `atMost` of them and how many more.
std::string names(const Executable &exe, const std::vector<int32_t> &slots,
                  size_t atMost = SIZE_MAX) {
  std::string s;
  for (size_t i = 0; i < slots.size() && i < atMost; ++i)
    s += (s.empty() ? "'" : ", '") + exe.slots[static_cast<size_t>(slots[i])].name + "'";
  if (slots.size() > atMost) s += " and " + std::to_string(slots.size() - atMost) + " more";
  return s.empty() ? "none" : s;
}

// How many of the model's inputs an unknown input's error lists: every such error listing them
// all made the errors of a run with many wrong names grow with the square of the inputs.
constexpr size_t kInputsListed = 10;

// The devices of `exe` by kind: how many each kind's backend must drive (the highest index + 1).
std::map<DeviceKind, int> devicesByKind(const Executable &exe) {
  std::map<DeviceKind, int> count;
  for (Device d : exe.devices) count[d.kind] = std::max(count[d.kind], d.index + 1);
  return count;
}

}  // namespace

struct Session::State {
  Executable exe;
  Options options;
  bool moveInputs = false;
  // One runtime per device kind the executable uses.
  std::vector<std::pair<DeviceKind, std::unique_ptr<DeviceRuntime>>> runtimes;
  std::vector<DeviceRuntime *> runtimeOfSlot;
  std::vector<std::unique_ptr<PreparedKernel>> kernels;  // per step; null for transfers
  // Per slot: the memory of a weight or loaded slot, on the slot's device (null for the others,
  // and once released: nothing a run reads).
  std::vector<std::byte *> held;
  std::vector<int32_t> workspaceOfSlot;  // index into exe.workspaces, -1 for weights and loaded
  // Slots in the caller's memory (Slot::external): per slot its index among `externals` (-1 for
  // the others), and per external slot where a run writes its pointer in a workspace's tables,
  // uses[useStart[e] .. useStart[e + 1]): an entry of `operands`, or ~step for a step's result.
  std::vector<int32_t> externalOf, externals;
  std::vector<size_t> useStart;
  std::vector<int64_t> uses;
  // Input slots by name (views of exe's slot names), so that a run matches each given input in
  // constant time; a name listed twice keeps its first slot, as Executable::findInput does.
  // Outputs likewise, to their first index in exe.outputs.
  std::unordered_map<std::string_view, int32_t> inputSlot;
  std::unordered_map<std::string_view, size_t> outputIndex;
  std::shared_ptr<OutputCache> outputCache;
  // The weights and loaded slots held in host memory, by start (their bytes, [begin, end)), and
  // per entry the furthest end up to it and its slot: so that an output a caller gives is checked
  // against them in O(log n) (a run must not write over what it reads).
  std::vector<const std::byte *> heldBegin, heldFurthestEnd;
  std::vector<int32_t> heldFurthestSlot;
  // The held slot whose bytes overlap [begin, end), or -1.
  int32_t heldOverlapping(const std::byte *begin, const std::byte *end) const {
    const auto at = std::lower_bound(heldBegin.begin(), heldBegin.end(), end,
                                     std::less<const std::byte *>());
    if (at == heldBegin.begin()) return -1;
    const auto i = static_cast<size_t>(at - heldBegin.begin()) - 1;
    return std::less<const std::byte *>()(begin, heldFurthestEnd[i]) ? heldFurthestSlot[i] : -1;
  }
  LoadStats loadStats;
  std::vector<size_t> argStart;  // per step: its operands' first entry in a workspace's table

  // A step runs on its result's device: that device's runtime and workspace.
  DeviceRuntime &runtimeOf(const Step &step) const {
    return *runtimeOfSlot[static_cast<size_t>(step.result)];
  }
  size_t workspaceOf(const Step &step) const {
    return static_cast<size_t>(workspaceOfSlot[static_cast<size_t>(step.result)]);
  }
  size_t weightBytes = 0, workspaceBytes = 0;

  // One run's memory: a block and a stream per entry of exe.workspaces, and every step's
  // operand pointers (flat, from argStart) and result and scratch pointers into them. Per
  // external slot, the run's memory for it and how it got it (bound, how).
  enum class Bound : uint8_t { None, Lent, Allocated };
  struct Workspace {
    std::vector<std::byte *> base;
    std::vector<Stream> streams;
    std::vector<Stream> copyStreams;  // per entry of exe.workspaces; null handle: none
    // Host workspaces registered with a runtime (DeviceRuntime::registerHost), to unregister.
    std::vector<std::pair<DeviceRuntime *, std::byte *>> registered;
    CopiesInFlight inFlight;  // the copies on copyStreams not yet known to be done
    std::vector<const std::byte *> operands;
    std::vector<std::byte *> results, scratch;
    std::vector<std::byte *> bound;
    std::vector<Bound> how;
  };
  mutable std::mutex poolMutex;
  mutable std::vector<std::unique_ptr<Workspace>> all;  // every workspace made, in use or idle
  mutable std::vector<Workspace *> idle;

  ~State() {
    for (const auto &ws : all) releaseWorkspace(*ws);
    for (size_t s = 0; s < held.size(); ++s) releaseHeld(s);
  }

  void releaseHeld(size_t slot) {
    if (!held[slot]) return;
    const Device d = exe.slots[slot].device;
    runtime(d).release(d, held[slot]);
    held[slot] = nullptr;
  }

  DeviceRuntime &runtime(Device d) const {
    for (const auto &[kind, r] : runtimes)
      if (kind == d.kind) return *r;
    FERRY_CHECK(false) << "no device runtime for " << d.str() << " (create() checked the devices)";
    return *runtimes.front().second;
  }

  void releaseWorkspace(Workspace &ws) const {
    for (const auto &[rt, host] : ws.registered) rt->unregisterHost(host);
    for (size_t i = 0; i < ws.streams.size(); ++i)
      runtime(exe.workspaces[i].device).destroyStream(ws.streams[i]);
    for (size_t i = 0; i < ws.copyStreams.size(); ++i)
      runtime(exe.workspaces[i].device).destroyStream(ws.copyStreams[i]);
    for (size_t i = 0; i < ws.base.size(); ++i)
      runtime(exe.workspaces[i].device).release(exe.workspaces[i].device, ws.base[i]);
  }

  std::byte *address(const Workspace &ws, int32_t slot) const {
    if (const int32_t e = externalOf[static_cast<size_t>(slot)]; e >= 0)
      return ws.bound[static_cast<size_t>(e)];
    const int32_t w = workspaceOfSlot[static_cast<size_t>(slot)];
    if (w < 0) return held[static_cast<size_t>(slot)];
    return ws.base[static_cast<size_t>(w)] + exe.slots[static_cast<size_t>(slot)].offset;
  }

  Stream streamOf(const Workspace &ws, int32_t slot) const {
    const int32_t w = workspaceOfSlot[static_cast<size_t>(slot)];
    return w >= 0 ? ws.streams[static_cast<size_t>(w)]
                  : Stream{nullptr, exe.slots[static_cast<size_t>(slot)].device};
  }
  // The copy stream of a slot's device in `ws` (a null handle when it has none: load steps, a
  // runtime without copy streams).
  Stream copyStreamOf(const Workspace &ws, int32_t slot) const {
    const int32_t w = workspaceOfSlot[static_cast<size_t>(slot)];
    return w >= 0 && static_cast<size_t>(w) < ws.copyStreams.size()
               ? ws.copyStreams[static_cast<size_t>(w)]
               : Stream{nullptr, exe.slots[static_cast<size_t>(slot)].device};
  }

  Expected<Workspace *> acquire() const;
  void registerHostWorkspaces(Workspace &ws) const;
  Status makeTables(Workspace &ws) const;
  Status checkOwned(const Step &step, const std::string &which,
                    std::span<const std::byte *const> operands, const std::byte *result) const;
  // With `packBudget`: tell the kernel which operands are weights or loaded slots, where they
  // are, and what copies of them it may keep (StepSpec::constants, packBudget).
  Expected<std::unique_ptr<PreparedKernel>> prepare(const Step &step, std::string_view which,
                                                    uint64_t *packBudget = nullptr) const;
  Status findExternalUses();
  Status uploadWeights();
  Status load();
  Status transfer(Workspace &ws, const Step &step) const;
  Status awaitCopies(Workspace &ws, size_t step) const;
  // Waits for every stream of `ws`, its copy streams first (the copies in flight are then done).
  Status synchronize(Workspace &ws) const {
    Status first;
    for (size_t i = 0; i < ws.copyStreams.size(); ++i) {
      if (!ws.copyStreams[i].handle) continue;
      if (Status s = runtime(exe.workspaces[i].device).synchronize(ws.copyStreams[i]); first.ok())
        first = s;
      ws.inFlight.forget(ws.copyStreams[i]);
    }
    for (size_t i = 0; i < ws.streams.size(); ++i)
      if (Status s = runtime(exe.workspaces[i].device).synchronize(ws.streams[i]); first.ok())
        first = s;
    return first;
  }
  Status checkArguments(const std::vector<NamedTensor> &given,
                        const std::vector<NamedTensor> &givenOutputs, bool outputsOnDevice,
                        std::vector<const Tensor *> &bySlot,
                        std::vector<const Tensor *> &outputs, RunStats &stats) const;
  bool lend(Workspace &ws, size_t e, const std::byte *host) const;
  Status bindCopy(Workspace &ws, size_t e, const std::byte *host, size_t bytes) const;
  void patchTables(Workspace &ws) const;
  void unbind(Workspace &ws) const;
};

Expected<Session::State::Workspace *> Session::State::acquire() const {
  {
    std::lock_guard<std::mutex> lock(poolMutex);
    if (!idle.empty()) {
      Workspace *ws = idle.back();
      idle.pop_back();
      return ws;
    }
  }
  auto ws = std::make_unique<Workspace>();
  Workspace *const made = ws.get();
  // Room first, so that each device allocation is recorded in `ws` without allocating.
  ws->base.reserve(exe.workspaces.size());
  ws->streams.reserve(exe.workspaces.size());
  ws->copyStreams.reserve(exe.workspaces.size());
  ws->bound.assign(externals.size(), nullptr);
  ws->how.assign(externals.size(), Bound::None);
  auto make = [&]() -> Status {
    for (const ferry::Workspace &w : exe.workspaces) {
      Expected<std::byte *> p = runtime(w.device).allocate(w.device, w.bytes);
      if (!p) return p.status();
      ws->base.push_back(*p);
    }
    registerHostWorkspaces(*ws);
    for (const ferry::Workspace &w : exe.workspaces) {
      Expected<Stream> stream = runtime(w.device).createStream(w.device);
      if (!stream) return stream.status();
      ws->streams.push_back(*stream);
      Expected<Stream> copy = runtime(w.device).createCopyStream(w.device);
      if (!copy) return copy.status();
      ws->copyStreams.push_back(*copy);
    }
    return makeTables(*ws);
  };
  try {
    if (Status s = make(); !s.ok()) {
      releaseWorkspace(*ws);
      return s;
    }
    std::lock_guard<std::mutex> lock(poolMutex);
    // Room in `idle` for every workspace, so that giving one back (a destructor) never allocates.
    idle.reserve(all.size() + 1);
    all.push_back(std::move(ws));
  } catch (const std::bad_alloc &) {
    releaseWorkspace(*ws);  // still owned: push_back leaves its argument alone when it throws
    throw;
  }
  return made;
}

// The workspaces in host memory, registered with each runtime that a transfer step copies them
// to or from (DeviceRuntime::registerHost), so that those copies run while the host goes on.
void Session::State::registerHostWorkspaces(Workspace &ws) const {
  std::vector<std::pair<Device, DeviceRuntime *>> crossings;  // host device, the other side
  for (const Step &step : exe.steps) {
    if (step.op != OpKind::Transfer) continue;
    const Device from = exe.slots[static_cast<size_t>(step.operands[0])].device;
    const Device to = exe.slots[static_cast<size_t>(step.result)].device;
    DeviceRuntime &a = runtime(from), &b = runtime(to);
    if (&a == &b || a.hostAccessible() == b.hostAccessible()) continue;
    const auto crossing = a.hostAccessible() ? std::pair{from, &b} : std::pair{to, &a};
    if (std::find(crossings.begin(), crossings.end(), crossing) == crossings.end())
      crossings.push_back(crossing);
  }
  for (size_t i = 0; i < exe.workspaces.size(); ++i)
    for (const auto &[host, rt] : crossings)
      if (exe.workspaces[i].device == host && exe.workspaces[i].bytes > 0 &&
          rt->registerHost(ws.base[i], exe.workspaces[i].bytes))
        ws.registered.emplace_back(rt, ws.base[i]);
}

// Every step's pointers in this workspace, once; with checkPlan, each is checked to lie in its
// step's device's memory (a missing transfer would read another device's bytes).
Status Session::State::makeTables(Workspace &ws) const {
  ws.operands.resize(argStart.empty() ? 0 : argStart.back());
  ws.results.resize(exe.steps.size());
  ws.scratch.resize(exe.steps.size());
  for (size_t i = 0; i < exe.steps.size(); ++i) {
    const Step &step = exe.steps[i];
    for (size_t o = 0; o < step.operands.size(); ++o)
      ws.operands[argStart[i] + o] = address(ws, step.operands[o]);
    ws.results[i] = address(ws, step.result);
    ws.scratch[i] = step.plan.scratchBytes == 0
                        ? nullptr
                        : ws.base[workspaceOf(step)] + step.scratchOffset;
    if (!options.checkPlan || step.op == OpKind::Transfer) continue;
    FERRY_TRY(checkOwned(step, "step " + std::to_string(i),
                         {ws.operands.data() + argStart[i], step.operands.size()}, ws.results[i]));
  }
  return Status();
}

// Whether a step's result and operands lie in its device's memory (`which` names the step).
Status Session::State::checkOwned(const Step &step, const std::string &which,
                                  std::span<const std::byte *const> operands,
                                  const std::byte *result) const {
  const Slot &r = exe.slots[static_cast<size_t>(step.result)];
  DeviceRuntime &rt = runtimeOf(step);
  auto notOwned = [&](const std::string &what) {
    return makeError("internal",
                     which + " ('" + std::string(opInfo(step.op).name) + "' %" + r.name +
                         ") runs on " + r.device.str() + " but " + what + " is not in " +
                         r.device.str() + "'s memory: a transfer is missing",
                     step.loc);
  };
  // The caller's memory (external slots) is lent for one run at a time: its device is the one
  // the run's checks found the caller's tensor on, and the runtime's copies check it then.
  if (!r.external && !rt.owns(r.device, result, r.type.byteSize())) return notOwned("its result");
  for (size_t o = 0; o < step.operands.size(); ++o) {
    const Slot &s = exe.slots[static_cast<size_t>(step.operands[o])];
    if (s.device != r.device ||
        (!s.external && !rt.owns(r.device, operands[o], s.type.byteSize())))
      return notOwned("operand " + std::to_string(o) + " %" + s.name);
  }
  return Status();
}

namespace {

// Work on `later` waits for what was issued on `earlier` so far (both of `rt`'s streams).
Status orderStreams(DeviceRuntime &rt, Stream earlier, Stream later) {
  if (earlier.handle == later.handle) return Status();
  Expected<Event> e = rt.recordEvent(earlier);
  if (!e) return e.status();
  Status s = rt.waitEvent(later, *e);
  rt.destroyEvent(*e);
  return s;
}

}  // namespace

// A transfer step: within one runtime, straight between its devices' memory; between two
// runtimes, through whichever side the host can address (the other uploads or downloads), or
// through host staging memory when neither can be.
//
// Order: within one runtime the copy runs on the destination's stream after what the source's
// stream wrote, and the source's stream goes on only once the copy has read (the memory plan may
// give the source's bytes to a later step there): events, no host wait. Between the host and a
// runtime with copy streams (DeviceRuntime::createCopyStream), the copy runs on the device's copy
// stream after what its kernel stream has issued so far, and is kept in the workspace's
// CopiesInFlight: later work waits for it only where it touches the same bytes, so the copy
// overlaps the kernels and the host work that do not need it. Without copy streams the host orders: the
// source's stream is finished before the copy is issued, and the copy before the transfer
// returns (an asynchronous upload may read its host source late; a download's host bytes are read
// next), except an upload that has read its host bytes when it returns
// (DeviceRuntime::uploadReadsHostOnIssue): the destination's stream orders the rest.
Status Session::State::transfer(Workspace &ws, const Step &step) const {
  const int32_t from = step.operands[0], to = step.result;
  const Slot &f = exe.slots[static_cast<size_t>(from)], &t = exe.slots[static_cast<size_t>(to)];
  const size_t bytes = t.type.byteSize();
  const std::byte *source = address(ws, from);
  std::byte *destination = address(ws, to);
  DeviceRuntime &src = runtime(f.device), &dst = runtime(t.device);
  const Stream in = streamOf(ws, from), out = streamOf(ws, to);
  // A copy still in flight may write what this one reads, or touch what it writes.
  if (!ws.inFlight.empty()) {
    FERRY_TRY(ws.inFlight.await(nullptr, Stream{}, source, bytes, false));
    FERRY_TRY(ws.inFlight.await(nullptr, Stream{}, destination, bytes, true));
  }
  if (&src == &dst) {
    FERRY_TRY(orderStreams(src, in, out));
    FERRY_TRY(src.copy(f.device, source, t.device, destination, bytes, out));
    return orderStreams(src, out, in);
  }
  if (src.hostAccessible()) {
    FERRY_TRY(src.synchronize(in));
    const bool readsOnIssue = dst.uploadReadsHostOnIssue(source);
    if (const Stream copy = copyStreamOf(ws, to); copy.handle) {
      FERRY_TRY(orderStreams(dst, out, copy));  // what the kernels did with these bytes before
      FERRY_TRY(dst.upload(source, t.device, destination, bytes, copy));
      return ws.inFlight.add(dst, copy, {destination, destination + bytes, true},
                             readsOnIssue ? CopiesInFlight::Range{}
                                          : CopiesInFlight::Range{source, source + bytes});
    }
    FERRY_TRY(dst.upload(source, t.device, destination, bytes, out));
    // Done with the host's bytes: the device copies (and computes) on while the host goes on.
    if (readsOnIssue) return Status();
    return dst.synchronize(out);
  }
  if (dst.hostAccessible()) {
    FERRY_TRY(dst.synchronize(out));  // nothing there still reads the bytes about to be written
    if (const Stream copy = copyStreamOf(ws, from); copy.handle) {
      FERRY_TRY(orderStreams(src, in, copy));  // after the kernels that wrote the source
      FERRY_TRY(src.download(f.device, source, destination, bytes, copy));
      return ws.inFlight.add(src, copy, {source, source + bytes},
                             {destination, destination + bytes, true});
    }
    FERRY_TRY(src.synchronize(in));
    FERRY_TRY(src.download(f.device, source, destination, bytes, in));
    return src.synchronize(in);
  }
  FERRY_TRY(src.synchronize(in));
  Expected<std::byte *> staging = src.allocateHost(bytes);
  if (!staging) return staging.status();
  Status s = src.download(f.device, source, *staging, bytes, in);
  if (s.ok()) s = src.synchronize(in);
  if (s.ok()) s = dst.synchronize(out);
  if (s.ok()) s = dst.upload(*staging, t.device, destination, bytes, out);
  if (s.ok()) s = dst.synchronize(out);
  src.releaseHost(*staging);
  return s;
}

// Orders step i, about to be launched on its device's stream, after the copies in flight it
// conflicts with: it reads its operands and writes its result and scratch.
Status Session::State::awaitCopies(Workspace &ws, size_t i) const {
  const Step &step = exe.steps[i];
  DeviceRuntime &rt = runtimeOf(step);
  const Stream on = ws.streams[workspaceOf(step)];
  for (size_t o = 0; o < step.operands.size(); ++o)
    FERRY_TRY(ws.inFlight.await(&rt, on, ws.operands[argStart[i] + o],
                                exe.slots[static_cast<size_t>(step.operands[o])].type.byteSize(),
                                false));
  FERRY_TRY(ws.inFlight.await(&rt, on, ws.results[i],
                              exe.slots[static_cast<size_t>(step.result)].type.byteSize(), true));
  if (ws.scratch[i]) FERRY_TRY(ws.inFlight.await(&rt, on, ws.scratch[i], step.plan.scratchBytes, true));
  return Status();
}

Session::Session(std::unique_ptr<State> state) : state_(std::move(state)) {}
Session::Session(Session &&) noexcept = default;
Session &Session::operator=(Session &&) noexcept = default;
Session::~Session() = default;

const Executable &Session::executable() const { return state_->exe; }
const LoadStats &Session::loadStats() const { return state_->loadStats; }
size_t Session::weightBytes() const { return state_->weightBytes; }
size_t Session::workspaceBytes() const { return state_->workspaceBytes; }

const Tensor *RunResult::find(std::string_view name) const {
  for (const NamedTensor &o : outputs)
    if (o.name == name) return &o.tensor;
  return nullptr;
}

// Running out of host memory anywhere in create() or run() is an error, never an exception: the
// State made so far is released as the exception unwinds (its destructor releases what it holds,
// and every allocation is recorded in it as it is made), and a failed run's workspace goes back
// to the pool, whole.
Expected<Session> Session::create(Executable exe, Options options) {
  std::string name;  // the executable's, kept: it moves into the session
  return catchOutOfMemory([&] { return "creating a session for '" + name + "'"; },
                          [&] {
                            name = exe.name;
                            return make(std::move(exe), std::move(options));
                          });
}

Expected<RunResult> Session::run(const std::vector<NamedTensor> &inputs,
                                 const RunOptions &options) const {
  return run(inputs, {}, options);
}

Expected<Session> Session::make(Executable exe, Options options) {
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
                                     describeBackends(registry) + ")");
    if (!entry->device)
      return makeError("internal", "the registry entry for " + first.str() + " (" +
                                       entry->description + ") has no way to make its device runtime");
    Expected<std::unique_ptr<DeviceRuntime>> runtime =
        entry->device(DeviceOptions{.devices = devices, .checked = options.checkPlan});
    if (!runtime) return runtime.status();
    if (!*runtime)  // an app's registry entry that made nothing
      return makeError("internal", "the backend for " + first.str() + " (" + entry->description +
                                       ") made no device runtime");
    for (Device d : exe.devices) {
      const std::span<const Device> driven = (*runtime)->devices();
      if (d.kind == kind && std::find(driven.begin(), driven.end(), d) == driven.end())
        return makeError("device", "the executable '" + exe.name + "' runs on " + d.str() +
                                       ", which its backend (" + entry->description +
                                       ") does not drive");
    }
    st->runtimes.emplace_back(kind, std::move(runtime).value());
  }
  st->options = std::move(options);
  st->moveInputs = st->options.moveInputs.value_or(exe.placement == PlacementPolicy::Auto);

  st->exe = std::move(exe);
  const Executable &plan = st->exe;
  st->workspaceOfSlot.assign(plan.slots.size(), -1);
  for (size_t s = 0; s < plan.slots.size(); ++s) {
    st->runtimeOfSlot.push_back(&st->runtime(plan.slots[s].device));
    if (plan.slots[s].kind != SlotKind::Input && plan.slots[s].kind != SlotKind::Activation)
      continue;
    for (size_t w = 0; w < plan.workspaces.size(); ++w)
      if (plan.workspaces[w].device == plan.slots[s].device)
        st->workspaceOfSlot[s] = static_cast<int32_t>(w);
  }
  for (const Workspace &w : plan.workspaces) st->workspaceBytes += w.bytes;
  st->inputSlot.reserve(plan.inputs.size());
  for (int32_t s : plan.inputs) st->inputSlot.emplace(plan.slots[static_cast<size_t>(s)].name, s);
  st->outputCache = std::make_shared<OutputCache>(2 * plan.outputs.size());
  st->outputIndex.reserve(plan.outputs.size());
  for (size_t i = 0; i < plan.outputs.size(); ++i)
    st->outputIndex.emplace(plan.slots[static_cast<size_t>(plan.outputs[i])].name, i);

  size_t args = 0;
  for (const Step &step : plan.steps) {
    st->argStart.push_back(args);
    args += step.operands.size();
  }
  st->argStart.push_back(args);
  FERRY_TRY(st->findExternalUses());

  st->held.assign(plan.slots.size(), nullptr);
  FERRY_TRY(st->uploadWeights());
  FERRY_TRY(st->load());

  // Kernels: each step's plan prepared once by its device's runtime, after the weights and the
  // load steps, so that a kernel may pack the weights it reads (StepSpec::constants).
  uint64_t packBudget = st->options.maxPackedWeightBytes;
  for (const Step &step : plan.steps) {
    if (step.op == OpKind::Transfer) {
      st->kernels.emplace_back();
      continue;
    }
    Expected<std::unique_ptr<PreparedKernel>> kernel =
        st->prepare(step, "step", packBudget > 0 ? &packBudget : nullptr);
    if (!kernel) return kernel.status();
    st->kernels.push_back(std::move(*kernel));
  }
  st->loadStats.packedWeightBytes = static_cast<int64_t>(st->options.maxPackedWeightBytes - packBudget);
  return Session(std::move(st));
}

// The external slots (the caller's memory) and where each one's pointer goes in a workspace's
// tables. Their devices' runtimes must be able to use host memory in place.
Status Session::State::findExternalUses() {
  externalOf.assign(exe.slots.size(), -1);
  for (size_t s = 0; s < exe.slots.size(); ++s) {
    if (!exe.slots[s].external) continue;
    const DeviceRuntime &rt = *runtimeOfSlot[s];
    if (!rt.hostAccessible())
      return makeError("device", "the executable '" + exe.name + "' keeps %" + exe.slots[s].name +
                                     " in the caller's memory on " + exe.slots[s].device.str() +
                                     ", but that device's runtime cannot use host memory in place");
    externalOf[s] = static_cast<int32_t>(externals.size());
    externals.push_back(static_cast<int32_t>(s));
  }
  // Counted, then filled: uses[useStart[e] ..) for each external slot e.
  useStart.assign(externals.size() + 1, 0);
  auto each = [&](auto &&visit) {
    for (size_t i = 0; i < exe.steps.size(); ++i) {
      const Step &step = exe.steps[i];
      for (size_t o = 0; o < step.operands.size(); ++o)
        if (const int32_t e = externalOf[static_cast<size_t>(step.operands[o])]; e >= 0)
          visit(static_cast<size_t>(e), static_cast<int64_t>(argStart[i] + o));
      if (const int32_t e = externalOf[static_cast<size_t>(step.result)]; e >= 0)
        visit(static_cast<size_t>(e), ~static_cast<int64_t>(i));
    }
  };
  each([&](size_t e, int64_t) { ++useStart[e + 1]; });
  for (size_t e = 0; e < externals.size(); ++e) useStart[e + 1] += useStart[e];
  uses.resize(useStart.back());
  std::vector<size_t> next(useStart.begin(), useStart.end() - 1);
  each([&](size_t e, int64_t use) { uses[next[e]++] = use; });
  return Status();
}

Expected<std::unique_ptr<PreparedKernel>> Session::State::prepare(const Step &step,
                                                                  std::string_view which,
                                                                  uint64_t *packBudget) const {
  const Slot &result = exe.slots[static_cast<size_t>(step.result)];
  if (step.plan.kernel.empty())
    return makeError("device",
                     std::string(which) + " '" + std::string(opInfo(step.op).name) + "' %" +
                         result.name + " on " + result.device.str() +
                         " has no kernel: the executable was compiled by a build without a " +
                         (result.device.isHost() ? std::string("cpu") : std::string("cuda")) +
                         " target",
                     step.loc);
  std::vector<TensorType> types;
  std::vector<const std::byte *> constants;
  bool anyConstant = false;
  for (int32_t o : step.operands) {
    const Slot &s = exe.slots[static_cast<size_t>(o)];
    types.push_back(s.type);
    const bool constant = packBudget && (s.kind == SlotKind::Weight || s.kind == SlotKind::Loaded);
    constants.push_back(constant ? held[static_cast<size_t>(o)] : nullptr);
    anyConstant = anyConstant || constants.back() != nullptr;
  }
  StepSpec spec{opInfo(step.op), step.attrs, types, result.type, result.device, step.loc,
                step.body.empty() ? nullptr : &step.body};
  if (anyConstant) {
    spec.constants = constants;
    spec.packBudget = packBudget;
  }
  return runtimeOf(step).prepare(step.plan, spec);
}

// Weights: read in place where the runtime can (the CPU's, on the executable's own bytes: a
// mapped file's, a parsed param's), so that a weight exists once in memory; else uploaded once
// from host memory, like model.to(device).
Status Session::State::uploadWeights() {
  for (size_t slot = 0; slot < exe.slots.size(); ++slot) {
    const Slot &s = exe.slots[slot];
    if (s.kind != SlotKind::Weight) continue;
    const TensorData &data = exe.weights[static_cast<size_t>(s.weight)];
    DeviceRuntime &rt = *runtimeOfSlot[slot];
    if (std::byte *lent = rt.borrowHost(s.device, data.bytes().data(), data.byteSize())) {
      held[slot] = lent;
      continue;
    }
    Expected<std::byte *> p = rt.allocate(s.device, data.byteSize());
    if (!p) return p.status();
    held[slot] = *p;
    FERRY_TRY(rt.upload(data.bytes().data(), s.device, held[slot], data.byteSize(),
                        Stream{nullptr, s.device}));
  }
  return Status();
}

// Load steps, once, in order, on each device's null stream: a transfer is a copy (counted, as a
// run counts its own), any other step its kernel, prepared for this one launch, with scratch of
// its own. Then every device is synchronized, so that no run starts before the loading is done;
// the copies are checked against the plan (checkPlan); and a weight or loaded slot that no run
// reads is released (a weight pinned to one device and used only on another keeps one copy).
Status Session::State::load() {
  const Clock::time_point start = Clock::now();
  for (size_t slot = 0; slot < exe.slots.size(); ++slot) {
    const Slot &s = exe.slots[slot];
    if (s.kind != SlotKind::Loaded) continue;
    Expected<std::byte *> p = runtimeOfSlot[slot]->allocate(s.device, s.type.byteSize());
    if (!p) return p.status();
    held[slot] = *p;
  }
  Workspace none;  // load steps read and write held slots only
  std::vector<const std::byte *> operands;
  for (size_t i = 0; i < exe.loadSteps.size(); ++i) {
    const Step &step = exe.loadSteps[i];
    ++loadStats.steps;
    if (step.op == OpKind::Transfer) {
      FERRY_TRY(transfer(none, step));
      ++loadStats.transfers;
      loadStats.transferBytes +=
          static_cast<int64_t>(exe.slots[static_cast<size_t>(step.result)].type.byteSize());
      continue;
    }
    Expected<std::unique_ptr<PreparedKernel>> kernel = prepare(step, "load step");
    if (!kernel) return kernel.status();
    operands.clear();
    for (int32_t o : step.operands) operands.push_back(address(none, o));
    std::byte *result = address(none, step.result);
    if (options.checkPlan)
      FERRY_TRY(checkOwned(step, "load step " + std::to_string(i), operands, result));
    const Device d = exe.slots[static_cast<size_t>(step.result)].device;
    DeviceRuntime &rt = runtimeOf(step);
    std::byte *scratch = nullptr;
    if (step.plan.scratchBytes > 0) {
      Expected<std::byte *> p = rt.allocate(d, step.plan.scratchBytes);
      if (!p) return p.status();
      scratch = *p;
    }
    const Stream stream{nullptr, d};
    Status s = rt.launch(**kernel, KernelArgs{operands, result, scratch}, stream);
    if (s.ok()) s = rt.synchronize(stream);  // the scratch is free once the kernel is done
    if (scratch) rt.release(d, scratch);
    FERRY_TRY(s);
  }
  for (Device d : exe.devices) FERRY_TRY(runtime(d).synchronize(Stream{nullptr, d}));
  loadStats.seconds = secondsSince(start);
  if (options.checkPlan && (loadStats.transfers != exe.planLoadTransfers ||
                            loadStats.transferBytes != exe.planLoadTransferBytes))
    return makeError("internal",
                     "loading '" + exe.name + "': the session copied " +
                         std::to_string(loadStats.transfers) + " tensors between devices (" +
                         std::to_string(loadStats.transferBytes) + " bytes), but the plan has " +
                         std::to_string(exe.planLoadTransfers) + " load-time transfers (" +
                         std::to_string(exe.planLoadTransferBytes) + " bytes)");

  std::vector<uint8_t> read(exe.slots.size(), 0);
  for (const Step &step : exe.steps)
    for (int32_t o : step.operands) read[static_cast<size_t>(o)] = 1;
  for (int32_t o : exe.outputs) read[static_cast<size_t>(o)] = 1;
  std::vector<std::pair<const std::byte *, size_t>> ranges;  // (begin, slot)
  for (size_t slot = 0; slot < exe.slots.size(); ++slot) {
    if (!held[slot]) continue;
    if (!read[slot]) {
      releaseHeld(slot);
      continue;
    }
    weightBytes += exe.slots[slot].type.byteSize();
    if (runtimeOfSlot[slot]->hostAccessible() && exe.slots[slot].type.byteSize() > 0)
      ranges.emplace_back(held[slot], slot);
  }
  std::sort(ranges.begin(), ranges.end(), [](const auto &a, const auto &b) {
    return std::less<const std::byte *>()(a.first, b.first);
  });
  for (const auto &[begin, slot] : ranges) {
    const std::byte *end = begin + exe.slots[slot].type.byteSize();
    heldBegin.push_back(begin);
    const bool further = heldFurthestEnd.empty() ||
                         std::less<const std::byte *>()(heldFurthestEnd.back(), end);
    heldFurthestEnd.push_back(further ? end : heldFurthestEnd.back());
    heldFurthestSlot.push_back(further ? static_cast<int32_t>(slot) : heldFurthestSlot.back());
  }
  return Status();
}

// Every problem with the given inputs and outputs, reported together: unknown or repeated names,
// wrong dtypes, shapes and devices, missing inputs, outputs that cannot be written (a read-only
// view) or that share memory with an input or another output.
Status Session::State::checkArguments(const std::vector<NamedTensor> &given,
                                      const std::vector<NamedTensor> &givenOutputs,
                                      bool outputsOnDevice, std::vector<const Tensor *> &bySlot,
                                      std::vector<const Tensor *> &outputs,
                                      RunStats &stats) const {
  DiagnosticEngine diags;
  for (const NamedTensor &in : given) {
    const auto found = inputSlot.find(in.name);
    if (found == inputSlot.end()) {
      diags.error("input", {},
                  "unknown input '" + in.name + "': the model's inputs are " +
                      names(exe, exe.inputs, kInputsListed));
      continue;
    }
    const int32_t slot = found->second;
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

  for (const NamedTensor &out : givenOutputs) {
    const auto found = outputIndex.find(out.name);
    if (found == outputIndex.end()) {
      diags.error("output", {},
                  "unknown output '" + out.name + "': the model's outputs are " +
                      names(exe, exe.outputs, kInputsListed));
      continue;
    }
    const size_t i = found->second;
    const Slot &s = exe.slots[static_cast<size_t>(exe.outputs[i])];
    if (outputs[i]) {
      diags.error("output", {}, "output '" + out.name + "' is given twice");
      continue;
    }
    outputs[i] = &out.tensor;
    const Tensor &t = out.tensor;
    if (t.dtype() != s.type.dtype || t.shape() != s.type.shape)
      diags.error("output", {},
                  "the tensor given for output '" + out.name + "' is " + t.type().str() +
                      ", but the output is " + s.type.str());
    const Device returned = outputsOnDevice ? s.device : Device::cpu();
    if (t.device() != returned)
      diags.error("output", {},
                  "the tensor given for output '" + out.name + "' is on " + t.device().str() +
                      ", but the output is returned on " + returned.str() +
                      (outputsOnDevice ? " (outputsOnDevice)" : ""));
    if (t.data().isView())
      diags
          .error("output", {},
                 "the tensor given for output '" + out.name +
                     "' is a read-only view of bytes it does not own (a mapped file's)")
          .fix("give a tensor with storage of its own (clone() it once, before the runs)");
    else if (const int32_t w = t.byteSize() == 0 ? -1
                                                 : heldOverlapping(t.bytes().data(),
                                                                   t.bytes().data() + t.byteSize());
             w >= 0)
      diags
          .error("output", {},
                 "the tensor given for output '" + out.name + "' shares memory with the weight %" +
                     exe.slots[static_cast<size_t>(w)].name + ", which the run reads")
          .fix("give each output storage of its own");
  }
  // No given output may share a byte with an input or another given output: a kernel would read
  // what it writes. Sorted by start, a range overlaps another iff it starts before the furthest
  // end so far: O(n log n).
  if (!givenOutputs.empty()) {
    struct Range {
      const std::byte *begin, *end;
      const std::string *name;
      bool output;
    };
    std::vector<Range> ranges;
    for (const NamedTensor &in : given)
      if (in.tensor.byteSize() > 0)
        ranges.push_back({in.tensor.bytes().data(),
                          in.tensor.bytes().data() + in.tensor.byteSize(), &in.name, false});
    for (size_t i = 0; i < outputs.size(); ++i)  // each output once, by the model's name
      if (outputs[i] && outputs[i]->byteSize() > 0)
        ranges.push_back({outputs[i]->bytes().data(),
                          outputs[i]->bytes().data() + outputs[i]->byteSize(),
                          &exe.slots[static_cast<size_t>(exe.outputs[i])].name, true});
    std::sort(ranges.begin(), ranges.end(), [](const Range &a, const Range &b) {
      return std::less<const std::byte *>()(a.begin, b.begin);
    });
    const Range *furthest = nullptr;
    for (const Range &r : ranges) {
      if (furthest && std::less<const std::byte *>()(r.begin, furthest->end) &&
          (r.output || furthest->output)) {
        const Range &out = r.output ? r : *furthest, &other = r.output ? *furthest : r;
        diags
            .error("output", {},
                   "the tensor given for output '" + *out.name + "' shares memory with " +
                       (other.output ? "output '" : "input '") + *other.name + "'")
            .fix("give each output storage of its own");
      }
      if (!furthest || std::less<const std::byte *>()(furthest->end, r.end)) furthest = &r;
    }
  }
  return diags.hasErrors() ? Status(diags.take()) : Status();
}

// External slot `e` of this run reads or writes the caller's `host` bytes in place, when its
// device's runtime can use them so.
bool Session::State::lend(Workspace &ws, size_t e, const std::byte *host) const {
  const int32_t slot = externals[e];
  const Slot &s = exe.slots[static_cast<size_t>(slot)];
  std::byte *p = runtimeOfSlot[static_cast<size_t>(slot)]->borrowHost(s.device, host,
                                                                      s.type.byteSize());
  if (!p) return false;
  ws.bound[e] = p;
  ws.how[e] = Bound::Lent;
  return true;
}

// External slot `e` of this run in memory of its own on its device, holding a copy of `host`'s
// `bytes` when `host` is set: an input moved from another device or not aligned as kernels read,
// or an output whose buffer the runtime could not use in place (copied out after the run).
Status Session::State::bindCopy(Workspace &ws, size_t e, const std::byte *host,
                                size_t bytes) const {
  const int32_t slot = externals[e];
  const Slot &s = exe.slots[static_cast<size_t>(slot)];
  DeviceRuntime &rt = *runtimeOfSlot[static_cast<size_t>(slot)];
  Expected<std::byte *> p = rt.allocate(s.device, s.type.byteSize());
  if (!p) return p.status();
  ws.bound[e] = *p;
  ws.how[e] = Bound::Allocated;
  if (!host) return Status();
  return rt.upload(host, s.device, *p, bytes, Stream{nullptr, s.device});
}

// Each external slot's memory of this run, written where the steps find it.
void Session::State::patchTables(Workspace &ws) const {
  for (size_t e = 0; e < externals.size(); ++e)
    for (size_t u = useStart[e]; u < useStart[e + 1]; ++u) {
      const int64_t use = uses[u];
      if (use >= 0)
        ws.operands[static_cast<size_t>(use)] = ws.bound[e];
      else
        ws.results[static_cast<size_t>(~use)] = ws.bound[e];
    }
}

// Gives back what the run lent or allocated for its external slots.
void Session::State::unbind(Workspace &ws) const {
  for (size_t e = 0; e < externals.size(); ++e) {
    if (ws.how[e] != Bound::None) {
      const Device d = exe.slots[static_cast<size_t>(externals[e])].device;
      runtimeOfSlot[static_cast<size_t>(externals[e])]->release(d, ws.bound[e]);
    }
    ws.bound[e] = nullptr;
    ws.how[e] = Bound::None;
  }
}

Expected<RunResult> Session::run(const std::vector<NamedTensor> &inputs,
                                 const std::vector<NamedTensor> &outputs,
                                 const RunOptions &options) const {
  return catchOutOfMemory([&] { return "running '" + state_->exe.name + "'"; },
                          [&] { return runOnce(inputs, outputs, options); });
}

Expected<RunResult> Session::runOnce(const std::vector<NamedTensor> &inputs,
                                     const std::vector<NamedTensor> &givenOutputs,
                                     const RunOptions &runOptions) const {
  const State &st = *state_;
  const Executable &exe = st.exe;
  const Clock::time_point start = Clock::now();
  RunResult result;
  result.outputs.reserve(exe.outputs.size());
  RunStats &stats = result.stats;
  std::vector<const Tensor *> bySlot(exe.slots.size(), nullptr);
  std::vector<const Tensor *> given(exe.outputs.size(), nullptr);
  if (Status s = st.checkArguments(inputs, givenOutputs, runOptions.outputsOnDevice, bySlot,
                                   given, stats);
      !s.ok())
    return s;

  Expected<State::Workspace *> acquired = st.acquire();
  if (!acquired) return acquired.status();
  State::Workspace &ws = **acquired;
  struct GiveBack {
    const State &st;
    State::Workspace *ws;
    bool synchronized = false;
    ~GiveBack() {
      // A run that failed part way may have work in flight that reads or writes its memory
      // (the caller's tensors too): it finishes before the workspace is unbound and reused.
      if (!synchronized) (void)st.synchronize(*ws);
      st.unbind(*ws);
      std::lock_guard<std::mutex> lock(st.poolMutex);
      st.idle.push_back(ws);
    }
  } giveBack{st, &ws};

  // What crossed devices in this run, counted here where the copies are issued: the input
  // moves and the transfer steps.
  int copies = 0;
  int64_t copiedBytes = 0;
  const Clock::time_point inputCopy = Clock::now();
  stats.inputCopyStart = seconds(start, inputCopy);
  // Inputs: read where the caller's tensor is (external slots), else copied into the workspace;
  // an input moved to another device is a copy either way.
  for (int32_t slot : exe.inputs) {
    const Tensor &t = *bySlot[static_cast<size_t>(slot)];
    const Slot &s = exe.slots[static_cast<size_t>(slot)];
    const bool moved = t.device() != s.device;
    if (moved) {
      ++copies;
      copiedBytes += static_cast<int64_t>(t.byteSize());
    }
    const int32_t e = st.externalOf[static_cast<size_t>(slot)];
    if (e >= 0 && !moved && st.lend(ws, static_cast<size_t>(e), t.bytes().data())) continue;
    stats.inputCopyBytes += static_cast<int64_t>(t.byteSize());
    if (e >= 0) {
      FERRY_TRY(st.bindCopy(ws, static_cast<size_t>(e), t.bytes().data(), t.byteSize()));
      continue;
    }
    FERRY_TRY(st.runtimeOfSlot[static_cast<size_t>(slot)]->upload(
        t.bytes().data(), s.device, st.address(ws, slot), t.byteSize(), st.streamOf(ws, slot)));
  }
  stats.inputCopySeconds = secondsSince(inputCopy);

  // Outputs: the caller's tensors, or storage for this run from the output cache (not zeroed:
  // the run writes every byte), and an external slot's step writes them in place.
  for (size_t i = 0; i < exe.outputs.size(); ++i) {
    const int32_t slot = exe.outputs[i];
    const Slot &s = exe.slots[static_cast<size_t>(slot)];
    if (given[i]) {
      result.outputs.push_back({s.name, *given[i]});
    } else {
      try {
        result.outputs.push_back(
            {s.name, Tensor(TensorData::fromStorage(s.type, st.outputCache->take(s.type.byteSize())),
                            runOptions.outputsOnDevice ? s.device : Device::cpu())});
      } catch (const std::bad_alloc &) {
        // The session stays usable: this run's workspace goes back to the pool as it returns.
        return TensorData::outOfMemory(s.type,
                                       "run of '" + exe.name + "': output '" + s.name + "'");
      }
    }
    const int32_t e = st.externalOf[static_cast<size_t>(slot)];
    if (e < 0 || ws.how[static_cast<size_t>(e)] != State::Bound::None) continue;
    if (!st.lend(ws, static_cast<size_t>(e),
                 result.outputs.back().tensor.data().mutableBytes().data()))
      FERRY_TRY(st.bindCopy(ws, static_cast<size_t>(e), nullptr, 0));
  }
  st.patchTables(ws);

  if (runOptions.profile) {
    stats.stepSeconds.resize(exe.steps.size());
    stats.stepStarts.resize(exe.steps.size());
  }
  for (size_t i = 0; i < exe.steps.size(); ++i) {
    Clock::time_point t;
    if (runOptions.profile) {
      t = Clock::now();
      stats.stepStarts[i] = seconds(start, t);
    }
    const Step &step = exe.steps[i];
    if (step.op == OpKind::Transfer) {
      FERRY_TRY(st.transfer(ws, step));
      ++copies;
      copiedBytes +=
          static_cast<int64_t>(exe.slots[static_cast<size_t>(step.result)].type.byteSize());
    } else {
      if (!ws.inFlight.empty()) FERRY_TRY(st.awaitCopies(ws, i));
      FERRY_TRY(st.runtimeOf(step).launch(
          *st.kernels[i],
          KernelArgs{{ws.operands.data() + st.argStart[i], step.operands.size()},
                     ws.results[i],
                     ws.scratch[i]},
          ws.streams[st.workspaceOf(step)]));
    }
    if (runOptions.profile) {
      FERRY_TRY(st.runtimeOf(step).synchronize(ws.streams[st.workspaceOf(step)]));
      stats.stepSeconds[i] = secondsSince(t);
    }
  }
  giveBack.synchronized = true;  // the streams are finished, or failed and not waited for again
  FERRY_TRY(st.synchronize(ws));
  stats.transfers = copies;
  stats.transferBytes = copiedBytes;
  // Counted where issued, the copies can only differ from the plan through a bug in the
  // session or in the executable's counts; the check stays cheap and catches both.
  if (st.options.checkPlan && (copies != exe.planTransfers + stats.inputMoves ||
                               copiedBytes != exe.planTransferBytes + stats.inputMoveBytes))
    return makeError("internal", "run of '" + exe.name + "': the session copied " +
                                     std::to_string(copies) + " tensors between devices (" +
                                     std::to_string(copiedBytes) + " bytes), but the plan has " +
                                     std::to_string(exe.planTransfers) + " transfers (" +
                                     std::to_string(exe.planTransferBytes) + " bytes) and " +
                                     std::to_string(stats.inputMoves) + " inputs were moved (" +
                                     std::to_string(stats.inputMoveBytes) + " bytes)");

  // Outputs written in place are done; the others (in the workspace, an input, a weight, a
  // second output of one value, memory the runtime could not lend) are copied out.
  for (size_t i = 0; i < exe.outputs.size(); ++i) {
    const int32_t slot = exe.outputs[i];
    const Slot &s = exe.slots[static_cast<size_t>(slot)];
    std::byte *to = result.outputs[i].tensor.data().mutableBytes().data();
    const std::byte *from = st.address(ws, slot);
    if (from != to) {
      FERRY_TRY(st.runtimeOfSlot[static_cast<size_t>(slot)]->download(
          s.device, from, to, s.type.byteSize(), Stream{nullptr, s.device}));
      stats.outputCopyBytes += static_cast<int64_t>(s.type.byteSize());
    }
  }
  stats.seconds = secondsSince(start);
  return result;
}

}  // namespace ferry
