// backends/device.h — the run-time half of a backend: memory on its devices, copies, streams
// and events, and kernels prepared once and launched many times. The compile-time half is
// backends/target.h.
//
// The runtime (runtime/session.h) owns the plan: which bytes each value lives in, in which order
// steps run, which copies cross devices (it counts them where it issues them). A device runtime
// only does what it is told, on memory it allocated. Required slots are pure virtual; the
// asynchronous ones have synchronous defaults, which is all the CPU needs:
//
//   required   devices, allocate/release, copy/upload/download, prepare, launch
//   optional   allocateHost/releaseHost (pinned staging memory; default: aligned host memory),
//              uploadReadsHostOnIssue (an upload is done with its host bytes on return),
//              createCopyStream (a second stream per device for transfers; default: none),
//              registerHost/unregisterHost (host memory copied to and from faster; default:
//              cannot),
//              hostAccessible (its memory is plain host memory; default false), borrowHost
//              (host memory used in place: a weight, a run's input or output, without a copy;
//              default: cannot), owns (for
//              checked runs; default: can't tell), createStream/destroyStream, recordEvent/
//              waitEvent, synchronize (default: one null stream, every call already finished)
//
// Errors: a broken contract (a plan another target wrote, a kernel name this runtime does not
// have, types the kernel was not made for) is found by prepare(), once, when a Session is
// created, with code "internal". launch() then fails only for what data alone can reveal (an
// index out of range), with code "runtime" at the step's location; on an asynchronous device
// such an error may surface at synchronize() instead, still naming the step.
//
// Pointers handed to a runtime are dense, row-major tensors in memory it allocated (or, for
// upload/download, an app's host buffer).
#pragma once

#include <cstddef>
#include <memory>
#include <new>
#include <string>
#include <span>

#include "backends/target.h"

namespace ferry {

/// A queue of work on one device; `handle` is the runtime's own (null: the synchronous default).
struct Stream {
  void *handle = nullptr;
  Device device;
};

/// A point in a stream that another stream can wait for (null: already reached).
struct Event {
  void *handle = nullptr;
};

/// The memory one launch reads and writes: operand pointers in the step's operand order, the
/// result, and the step's planned scratch (KernelPlan::scratchBytes; null when 0).
struct KernelArgs {
  std::span<const std::byte *const> operands;
  std::byte *result = nullptr;
  std::byte *scratch = nullptr;
};

/// A kernel made ready by DeviceRuntime::prepare: functions resolved, attributes parsed,
/// shapes and strides computed, modules loaded. Immutable once made; many runs in flight may
/// launch it at once.
class PreparedKernel {
 public:
  virtual ~PreparedKernel() = default;
};

class DeviceRuntime {
 public:
  virtual ~DeviceRuntime() = default;

  /// The devices this runtime drives, all of one kind.
  virtual std::span<const Device> devices() const = 0;

  /// `bytes` of memory on `device`, 64-byte aligned; an error with code "memory" when the
  /// device has no room. Zero bytes give a valid, distinct pointer.
  virtual Expected<std::byte *> allocate(Device device, size_t bytes) = 0;
  /// Returns memory from allocate(); anything else is a bug and fails loudly.
  virtual void release(Device device, std::byte *data) = 0;

  /// Host memory for staging copies to and from this runtime's devices (page-locked where that
  /// makes copies faster); default: 64-byte aligned host memory.
  virtual Expected<std::byte *> allocateHost(size_t bytes) {
    auto *p = static_cast<std::byte *>(
        ::operator new(bytes == 0 ? 1 : bytes, std::align_val_t{64}, std::nothrow));
    if (!p) return makeError("memory", "out of host memory: " + std::to_string(bytes) + " bytes");
    return p;
  }
  virtual void releaseHost(std::byte *data) { ::operator delete(data, std::align_val_t{64}); }

  /// Whether this runtime's device memory is plain host memory (the CPU's arenas): then the
  /// runtime may read and write it directly in copies between runtimes.
  virtual bool hostAccessible() const { return false; }
  /// Host memory that `device` uses in place as `bytes` of its own memory until release() of
  /// the pointer returned (which then frees nothing): how a Session uses a weight the host
  /// already holds (a saved executable's mapped file, a parsed param) without copying it, and,
  /// for one run, an input the caller holds or the caller's buffer an output is written to
  /// (Slot::external). A weight or input is only read; an output is written by its step. owns()
  /// counts the memory as the device's. Null when this runtime cannot use it in place — the
  /// default, a GPU's: the Session then allocates and uploads (or downloads). The CPU's lends
  /// 64-byte-aligned host memory.
  virtual std::byte *borrowHost(Device, const std::byte *, size_t) { return nullptr; }
  /// Whether [data, data + bytes) lies in one live allocation on `device`; checked runs
  /// (Session::Options::checkPlan) use it. Default: true (this runtime cannot tell).
  virtual bool owns(Device, const std::byte *, size_t) const { return true; }

  /// Makes the host memory [host, host + bytes) faster to copy to and from this runtime's
  /// devices until unregisterHost(host): CUDA page-locks it (cudaHostRegister), so that its
  /// copies are DMA that runs while the host goes on, not staged through other pinned memory. The
  /// Session registers the CPU's workspaces with the runtimes its transfers cross to. False when
  /// the runtime cannot (the default), and the copies take their usual path.
  virtual bool registerHost(std::byte * /*host*/, size_t /*bytes*/) { return false; }
  virtual void unregisterHost(std::byte * /*host*/) {}

  // Copies, each of `bytes` bytes. With a null stream they are finished on return; on a stream
  // they may still be running until the stream is synchronized (the source must stay valid).

  /// Between two allocations of this runtime, on the same device or on two of its devices.
  virtual Status copy(Device from, const std::byte *source, Device to, std::byte *destination,
                      size_t bytes, Stream stream) = 0;
  /// From host memory into an allocation on `to`.
  virtual Status upload(const std::byte *host, Device to, std::byte *destination, size_t bytes,
                        Stream stream) = 0;
  /// Whether upload() from `host` has read all of its host source when it returns, also on a
  /// stream where the copy itself may still be running (the CUDA runtime's copies from pageable
  /// memory, through pinned staging buffers): then the Session goes on without waiting for an
  /// upload in a transfer step, and the CPU computes while the device copies and computes.
  /// Default: no (an asynchronous upload may read the host late, as a GPU's DMA from pinned
  /// memory does; the Session then keeps the host from writing those bytes until the copy is
  /// done).
  virtual bool uploadReadsHostOnIssue(const std::byte * /*host*/) const { return false; }
  /// From an allocation on `from` into host memory.
  virtual Status download(Device from, const std::byte *source, std::byte *host, size_t bytes,
                          Stream stream) = 0;

  /// Turns a plan that this runtime's target wrote into a ready kernel, once per Session.
  virtual Expected<std::unique_ptr<PreparedKernel>> prepare(const KernelPlan &plan,
                                                            const StepSpec &step) = 0;
  /// Runs a prepared kernel on `stream` (see the file comment for errors).
  virtual Status launch(const PreparedKernel &kernel, const KernelArgs &args, Stream stream) = 0;

  // Streams and events. The defaults: every device has one synchronous null stream.
  virtual Expected<Stream> createStream(Device device) { return Stream{nullptr, device}; }
  /// A stream for the transfer steps between this runtime's `device` and the host, beside the
  /// one its kernels run on (createStream), so that a copy overlaps kernels that do not need
  /// it; the Session orders the two with events. A null handle (the default): transfers run on
  /// the kernels' stream.
  virtual Expected<Stream> createCopyStream(Device device) { return Stream{nullptr, device}; }
  virtual void destroyStream(Stream) {}
  virtual Expected<Event> recordEvent(Stream) { return Event{}; }
  virtual Status waitEvent(Stream, Event) { return Status(); }
  virtual void destroyEvent(Event) {}
  /// Waits until everything issued on `stream` is done; an error a kernel or copy raised on it.
  virtual Status synchronize(Stream) { return Status(); }
};

}  // namespace ferry
