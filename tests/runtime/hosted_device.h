// tests/runtime/hosted_device.h — a second device kind for Session tests on a machine with one
// kind of hardware: a device runtime and a target that keep the kind's memory in CPU arenas and
// run the CPU kernels, optionally with queued streams that run work only when it is waited for.
#pragma once

#include <algorithm>
#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

#include "backends/cpu/cpu_device.h"
#include "backends/cpu/cpu_target.h"
#include "backends/registry.h"

namespace ferry {

// A device runtime for devices `kind:0..N-1` that keeps their memory in a CPU device's virtual
// devices cpu:0..N-1 and runs the CPU kernels: what a second backend looks like to the Session,
// on a machine without one. Unless `hostAccessible`, the Session must treat its memory as a
// GPU's: transfers go through its upload/download or host staging, never plain host access.
// When `queued`, its streams are queues (below), as a GPU's are.
class HostedDevice final : public DeviceRuntime {
 public:
  HostedDevice(DeviceKind kind, int devices, bool hostAccessible, bool queued = false)
      : kind_(kind),
        hostAccessible_(hostAccessible),
        queued_(queued),
        inner_(CpuDevice::Options{devices, true}) {
    for (int i = 0; i < devices; ++i) devices_.push_back({kind, i});
  }

  std::span<const Device> devices() const override { return devices_; }
  Expected<std::byte *> allocate(Device d, size_t bytes) override {
    return inner_.allocate(inner(d), bytes);
  }
  void release(Device d, std::byte *data) override { inner_.release(inner(d), data); }
  Expected<std::byte *> allocateHost(size_t bytes) override {
    ++staged;
    return DeviceRuntime::allocateHost(bytes);
  }
  bool hostAccessible() const override { return hostAccessible_; }
  std::byte *borrowHost(Device d, const std::byte *host, size_t bytes) override {
    return lendsHost ? inner_.borrowHost(inner(d), host, bytes) : nullptr;
  }
  bool owns(Device d, const std::byte *data, size_t bytes) const override {
    return d.kind == kind_ && inner_.owns(inner(d), data, bytes);
  }
  Status copy(Device from, const std::byte *source, Device to, std::byte *destination,
              size_t bytes, Stream s) override {
    return issue(s, [=, this] { return inner_.copy(inner(from), source, inner(to), destination, bytes, Stream{}); });
  }
  Status upload(const std::byte *host, Device to, std::byte *destination, size_t bytes,
                Stream s) override {
    ++uploads;
    if (registered(host)) ++uploadsFromRegistered;
    if (uploadReadsHostOnIssue(host)) {  // as a GPU's staged upload: the bytes are taken now, copied later
      auto taken = std::make_shared<std::vector<std::byte>>(host, host + bytes);
      return issue(s, [=, this] {
        return inner_.upload(taken->data(), inner(to), destination, bytes, Stream{});
      });
    }
    return issue(s, [=, this] { return inner_.upload(host, inner(to), destination, bytes, Stream{}); });
  }
  bool uploadReadsHostOnIssue(const std::byte *host) const override {
    return readsHostOnIssue && !registered(host);
  }
  bool registerHost(std::byte *host, size_t bytes) override {
    if (!pinsHost) return false;
    registered_.push_back({host, host + bytes});
    ++registrations;
    return true;
  }
  void unregisterHost(std::byte *host) override {
    auto it = std::find_if(registered_.begin(), registered_.end(),
                           [&](const auto &r) { return r.first == host; });
    FERRY_CHECK(it != registered_.end()) << "unregisterHost of memory never registered";
    registered_.erase(it);
    --registrations;
  }
  Status download(Device from, const std::byte *source, std::byte *host, size_t bytes,
                  Stream s) override {
    ++downloads;
    return issue(s, [=, this] { return inner_.download(inner(from), source, host, bytes, Stream{}); });
  }
  Expected<std::unique_ptr<PreparedKernel>> prepare(const KernelPlan &plan,
                                                    const StepSpec &step) override {
    return inner_.prepare(plan, StepSpec{step.op, step.attrs, step.operands, step.result,
                                         inner(step.device), step.loc});
  }
  Status launch(const PreparedKernel &kernel, const KernelArgs &args, Stream s) override {
    std::vector<const std::byte *> operands(args.operands.begin(), args.operands.end());
    {
      std::lock_guard lock(launchedMutex_);
      launched.push_back(operands);
    }
    return issue(s, [this, &kernel, operands = std::move(operands), result = args.result,
                     scratch = args.scratch] {
      return inner_.launch(kernel, KernelArgs{operands, result, scratch}, Stream{});
    });
  }

  // Streams, when queued: work issued on a stream runs only when something waits for it (a
  // synchronize, an event another stream waits for, work on the null stream of the device), so
  // a session that forgets to order two streams reads what was not written yet.
  Expected<Stream> createStream(Device d) override {
    if (!queued_) return Stream{nullptr, d};
    queues_.push_back(std::make_unique<Queue>(d));
    return Stream{queues_.back().get(), d};
  }
  Expected<Stream> createCopyStream(Device d) override {
    if (!copyStreams || !queued_) return Stream{nullptr, d};
    queues_.push_back(std::make_unique<Queue>(d));
    queues_.back()->copies = true;
    return Stream{queues_.back().get(), d};
  }
  Expected<Event> recordEvent(Stream s) override {
    if (!s.handle) return Event{};
    auto *q = static_cast<Queue *>(s.handle);
    marks_.push_back(std::make_unique<Mark>(Mark{q, q->work.size()}));
    return Event{marks_.back().get()};
  }
  Status waitEvent(Stream s, Event e) override {
    if (!e.handle) return Status();
    const Mark m = *static_cast<Mark *>(e.handle);
    return issue(s, [this, m] { return run(*m.queue, m.upto); });
  }
  Status synchronize(Stream s) override {
    ++synchronizes;
    if (!s.handle) return Status();
    auto *q = static_cast<Queue *>(s.handle);
    if (!q->copies) ++kernelStreamSynchronizes;
    if (eager)  // every other stream first runs all it was given, as far ahead as it may
      for (auto &other : queues_)
        if (other.get() != q) FERRY_TRY(run(*other, other->work.size()));
    return run(*q, q->work.size());
  }

  static inline std::atomic<int> uploads = 0, downloads = 0, staged = 0, synchronizes = 0;
  /// Synchronizes of a kernels' stream (createStream's, not a copy stream): the host waiting
  /// for the device's kernels.
  static inline std::atomic<int> kernelStreamSynchronizes = 0;
  /// Work issued on a copy stream (copies, and the waits for the kernels' stream before them).
  static inline std::atomic<int> copyStreamWork = 0;
  /// Work queued on a stream and not run yet, over every queued runtime.
  static inline std::atomic<int> notRun = 0;
  /// Whether upload() takes the host's bytes when issued (uploadReadsHostOnIssue), as the CUDA
  /// runtime's does, instead of when its queued copy runs.
  bool readsHostOnIssue = false;
  /// Whether registerHost() takes host memory (as CUDA's page-locking): an upload from it reads
  /// the host's bytes when its queued copy runs, not when issued, whatever readsHostOnIssue says.
  bool pinsHost = false;
  /// Host ranges registered now, over every runtime, and uploads from them so far.
  static inline std::atomic<int> registrations = 0, uploadsFromRegistered = 0;
  /// Whether createCopyStream() gives a queue of its own (when queued), as the CUDA runtime's
  /// does; off, transfers run on the kernels' stream.
  bool copyStreams = false;
  /// When queued: whether a synchronize first runs everything queued on the other streams (the
  /// order in which a stream the host does not wait for races ahead), instead of only what the
  /// waited-for stream needs. The two are the extreme orders a GPU may run a run's work in: the
  /// first finds work that reads bytes before they are written, the second work that writes
  /// bytes before a slower stream has read them.
  bool eager = false;
  /// Whether borrowHost() lends host memory in place, as the CPU's runtime does (off: as a
  /// GPU's, which uploads).
  bool lendsHost = false;
  /// The operand pointers of every launch, in the order they were issued (read it once the
  /// runs are done).
  std::vector<std::vector<const std::byte *>> launched;

 private:
  struct Queue {
    explicit Queue(Device d) : device(d) {}
    Device device;
    std::vector<std::function<Status()>> work;
    size_t done = 0;
    bool copies = false;  // made by createCopyStream
  };
  struct Mark {
    Queue *queue;
    size_t upto;
  };

  // Runs `q`'s work up to item `upto` (what waits for it may be queued work of its own).
  Status run(Queue &q, size_t upto) {
    Status first;
    while (q.done < upto) {
      --notRun;
      Status s = q.work[q.done++]();
      if (first.ok() && !s.ok()) first = s;
    }
    return first;
  }

  // Work on a stream is queued; on the null stream it runs now, after everything queued on the
  // device's streams (as CUDA's legacy default stream waits for the others).
  Status issue(Stream s, std::function<Status()> work) {
    if (s.handle) {
      if (static_cast<Queue *>(s.handle)->copies) ++copyStreamWork;
      ++notRun;
      static_cast<Queue *>(s.handle)->work.push_back(std::move(work));
      return Status();
    }
    for (auto &q : queues_)
      if (q->device == s.device) FERRY_TRY(run(*q, q->work.size()));
    return work();
  }

  Device inner(Device d) const {
    FERRY_CHECK(d.kind == kind_) << d.str() << " is not a device of this runtime";
    return Device::cpu(d.index);
  }

  bool registered(const std::byte *host) const {
    for (const auto &[begin, end] : registered_)
      if (host >= begin && host < end) return true;
    return false;
  }

  std::vector<std::pair<const std::byte *, const std::byte *>> registered_;
  std::mutex launchedMutex_;
  DeviceKind kind_;
  bool hostAccessible_, queued_;
  CpuDevice inner_;
  std::vector<std::unique_ptr<Queue>> queues_;
  std::vector<std::unique_ptr<Mark>> marks_;
  std::vector<Device> devices_;
};

// The CPU target's plans, for the hosted kind's devices: it runs the CPU kernels.
class HostedTarget final : public Target {
 public:
  explicit HostedTarget(DeviceKind kind) : kind_(kind) {}
  DeviceKind kind() const override { return kind_; }
  std::string_view description() const override { return "hosted"; }
  KernelCapability capability(OpKind op, DType dtype) const override {
    return cpu_.capability(op, dtype);
  }
  Expected<KernelPlan> lower(const StepSpec &step) const override {
    return cpu_.lower(StepSpec{step.op, step.attrs, step.operands, step.result,
                               Device::cpu(step.device.index), step.loc});
  }

 private:
  DeviceKind kind_;
  CpuTarget cpu_;
};

// How a hosted runtime's streams behave (HostedDevice's fields of the same names).
struct HostedStreams {
  bool queued = false, readsHostOnIssue = false, copyStreams = false, eager = false,
       pinsHost = false;
};

inline BackendEntry hosted(DeviceKind kind, bool hostAccessible = false, HostedStreams streams = {}) {
  return {kind, "hosted " + Device{kind, 0}.str(),
          [kind] { return std::unique_ptr<Target>(std::make_unique<HostedTarget>(kind)); },
          [kind, hostAccessible, streams](const DeviceOptions &o) -> Expected<std::unique_ptr<DeviceRuntime>> {
            auto d = std::make_unique<HostedDevice>(kind, o.devices, hostAccessible, streams.queued);
            d->readsHostOnIssue = streams.readsHostOnIssue;
            d->copyStreams = streams.copyStreams;
            d->eager = streams.eager;
            d->pinsHost = streams.pinsHost;
            return std::unique_ptr<DeviceRuntime>(std::move(d));
          }};
}

}  // namespace ferry
