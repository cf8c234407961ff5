// runtime/copies_in_flight.cpp — the copies a run has in flight (copies_in_flight.h).
#include "runtime/copies_in_flight.h"

#include <functional>

namespace ferry {

Status CopiesInFlight::add(DeviceRuntime &runtime, Stream stream, Range a, Range b) {
  if (copies_.size() == kMax) FERRY_TRY(finishAll());
  Expected<Event> done = runtime.recordEvent(stream);
  if (!done) return done.status();
  copies_.push_back(Copy{&runtime, stream, *done, {a, b}, nullptr});  // room reserved
  return Status();
}

Status CopiesInFlight::await(DeviceRuntime *runtime, Stream on, const std::byte *begin,
                             size_t bytes, bool writes) {
  const std::byte *end = begin + bytes;
  const std::less<const std::byte *> less;
  auto conflicts = [&](const Copy &c) {
    for (const Range &r : c.ranges)
      if ((writes || r.writes) && less(begin, r.end) && less(r.begin, end)) return true;
    return false;
  };
  for (size_t i = 0; i < copies_.size();) {
    Copy &c = copies_[i];
    if ((on.handle && on.handle == c.stream.handle) || !conflicts(c)) {
      ++i;
    } else if (on.handle && runtime == c.runtime) {
      if (c.waitedBy != on.handle) FERRY_TRY(runtime->waitEvent(on, c.done));
      c.waitedBy = on.handle;
      ++i;
    } else {
      const Stream copy = c.stream;
      Status s = c.runtime->synchronize(copy);
      forget(copy);  // c and the rest of its stream's copies
      FERRY_TRY(s);
      i = 0;
    }
  }
  return Status();
}

void CopiesInFlight::forget(Stream stream) {
  for (size_t i = 0; i < copies_.size();) {
    if (copies_[i].stream.handle != stream.handle) {
      ++i;
      continue;
    }
    copies_[i].runtime->destroyEvent(copies_[i].done);
    copies_[i] = copies_.back();
    copies_.pop_back();
  }
}

Status CopiesInFlight::finishAll() {
  Status first;
  while (!copies_.empty()) {
    const Copy &c = copies_.back();
    const Stream copy = c.stream;
    if (Status s = c.runtime->synchronize(copy); first.ok()) first = s;
    forget(copy);
  }
  return first;
}

void CopiesInFlight::forgetAll() {
  for (const Copy &c : copies_) c.runtime->destroyEvent(c.done);
  copies_.clear();
}

}  // namespace ferry
