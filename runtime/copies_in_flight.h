// runtime/copies_in_flight.h — the copies a run issued on copy streams (DeviceRuntime::
// createCopyStream) and does not yet know to be done: for each, the bytes it reads and writes
// (on its device and on the host) and the event recorded after it. Work about to be issued asks
// await() first: where it writes what a copy reads, or reads or writes what a copy writes, it is
// ordered after that copy (by an event on a stream of the copy's runtime, else by the host
// waiting for the copy stream); everything else overlaps the copy. One per workspace; a run
// starts and ends with it empty (docs/architecture.md, "Order across streams").
#pragma once

#include <cstddef>
#include <vector>

#include "backends/device.h"

namespace ferry {

class CopiesInFlight {
 public:
  /// Copies in flight at most; past it, the host waits for them all, so that await() stays
  /// linear in a run's steps.
  static constexpr size_t kMax = 64;

  /// A byte range a copy reads, or writes.
  struct Range {
    const std::byte *begin = nullptr, *end = nullptr;
    bool writes = false;
  };

  CopiesInFlight() { copies_.reserve(kMax); }  // no allocation in a run
  ~CopiesInFlight() { forgetAll(); }
  CopiesInFlight(const CopiesInFlight &) = delete;
  CopiesInFlight &operator=(const CopiesInFlight &) = delete;

  bool empty() const { return copies_.empty(); }

  /// Keeps the copy just issued on `stream` of `runtime`, which touches `a` and `b` (an empty
  /// range touches nothing): records the event after it.
  Status add(DeviceRuntime &runtime, Stream stream, Range a, Range b);

  /// Orders work about to be issued on `on`, of runtime `runtime`, that touches
  /// [begin, begin + bytes) (writing it, or only reading it), after the copies that conflict with
  /// it. A null `on` handle or `runtime`: work the host does now, or issues in an order only the
  /// host can keep; it waits on the host. Copies on `on` itself are in order already.
  Status await(DeviceRuntime *runtime, Stream on, const std::byte *begin, size_t bytes,
               bool writes);

  /// Forgets the copies on `stream`, which the caller has synchronized.
  void forget(Stream stream);
  /// Waits on the host for every copy stream in flight, then forgets them all.
  Status finishAll();

 private:
  struct Copy {
    DeviceRuntime *runtime;
    Stream stream;
    Event done;
    Range ranges[2];
    void *waitedBy;  // the stream that last waited for `done` (no second wait there)
  };
  void forgetAll();

  std::vector<Copy> copies_;
};

}  // namespace ferry
