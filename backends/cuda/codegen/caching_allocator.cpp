// backends/cuda/codegen/caching_allocator.cpp — rounding, best-fit reuse, the out-of-memory retry
// and the cache limit of CachingAllocator.
#include "backends/cuda/codegen/caching_allocator.h"

#include <cstdint>
#include <cstdio>
#include <iterator>
#include <limits>
#include <new>

namespace ferry::cuda {

namespace {

constexpr size_t kMinBlock = 512;
constexpr size_t kLargeFrom = size_t{1} << 20;
constexpr size_t kLargeRound = size_t{2} << 20;

size_t roundUp(size_t n, size_t multiple) { return (n + multiple - 1) / multiple * multiple; }

// Bytes in binary units: "512 B", "3.0 MiB".
std::string binaryBytes(size_t n) {
  const char *unit[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(n);
  size_t i = 0;
  while (v >= 1024 && i + 1 < std::size(unit)) v /= 1024, ++i;
  char buf[32];
  std::snprintf(buf, sizeof buf, i == 0 ? "%.0f %s" : "%.1f %s", v, unit[i]);
  return buf;
}

bool isOutOfMemory(const Status &s) {
  for (const Diagnostic &d : s.diagnostics())
    if (d.code == "memory") return true;
  return false;
}

}  // namespace

CachingAllocator::CachingAllocator(RawMemory &raw, std::string deviceName, Options options)
    : raw_(raw), deviceName_(std::move(deviceName)), options_(options) {}

CachingAllocator::~CachingAllocator() {
  trimCacheLocked(0);
  // Blocks still handed out are the caller's leak; freed all the same, so that the device gets
  // back everything it lent.
  for (auto &[p, block] : live_) raw_.free(const_cast<std::byte *>(p));
}

size_t CachingAllocator::roundedSize(size_t bytes) {
  if (bytes < kLargeFrom) return bytes == 0 ? kMinBlock : roundUp(bytes, kMinBlock);
  if (bytes > std::numeric_limits<size_t>::max() - kLargeRound) return 0;  // no such block
  return roundUp(bytes, kLargeRound);
}

Expected<std::byte *> CachingAllocator::allocate(size_t bytes) {
  const size_t size = roundedSize(bytes);
  std::lock_guard lock(mutex_);
  if (size == 0)
    return makeError("memory", "out of memory on " + deviceName_ + ": " + std::to_string(bytes) +
                                   " bytes asked for, more than any device has");

  // 1. Reuse: the smallest cached block in [size, 2 * size].
  auto hit = cached_.lower_bound(size);
  if (hit != cached_.end() && hit->first - size <= size) {
    const size_t blockSize = hit->first;
    std::byte *p = hit->second;
    try {
      live_.emplace(p, LiveBlock{blockSize, bytes});
    } catch (const std::bad_alloc &) {  // the block stays cached
      return makeError("memory", "out of host memory for the bookkeeping of " +
                                     binaryBytes(blockSize) + " on " + deviceName_);
    }
    cached_.erase(hit);
    stats_.cachedBytes -= blockSize;
    stats_.inUseBytes += blockSize;
    ++stats_.cacheHits;
    return p;
  }

  // 2. Raw; when the device is full, once more after the cache has gone back to raw.
  Expected<std::byte *> got = raw_.allocate(size);
  size_t freed = 0;
  if (!got.ok() && isOutOfMemory(got.status())) {
    freed = trimCacheLocked(0);
    if (freed > 0) got = raw_.allocate(size);
  }
  if (!got.ok()) {
    if (!isOutOfMemory(got.status())) return got;
    Diagnostic d;
    d.code = "memory";
    d.message = "out of memory on " + deviceName_ + ": " + binaryBytes(bytes) + " asked for, " +
                binaryBytes(stats_.inUseBytes) + " in use by this allocator (" +
                binaryBytes(freed) + (freed > 0 ? " cached, freed before retrying)" : " cached)");
    // Raw's own words (cudaMalloc's error) as notes.
    for (const Diagnostic &cause : got.status().diagnostics()) d.note(cause.message);
    return d;
  }
  std::byte *p = *got;
  FERRY_CHECK(p != nullptr) << "RawMemory::allocate of " << size << " bytes on " << deviceName_
                            << " returned null without an error";
  ++stats_.rawAllocations;
  try {
    auto [it, fresh] = live_.emplace(p, LiveBlock{size, bytes});
    FERRY_CHECK(fresh) << "RawMemory::allocate on " << deviceName_ << " returned "
                       << static_cast<const void *>(p) << ", a block already handed out";
  } catch (const std::bad_alloc &) {  // without its entry the block would leak
    raw_.free(p);
    ++stats_.rawFrees;
    return makeError("memory", "out of host memory for the bookkeeping of " + binaryBytes(size) +
                                   " on " + deviceName_);
  }
  stats_.inUseBytes += size;
  return p;
}

void CachingAllocator::release(std::byte *p) {
  std::lock_guard lock(mutex_);
  auto it = live_.find(p);
  FERRY_CHECK(it != live_.end()) << "release of " << static_cast<const void *>(p)
                                 << ", not a live allocation of " << deviceName_
                                 << " (never allocated, or released already)";
  const size_t size = it->second.size;
  live_.erase(it);
  stats_.inUseBytes -= size;
  try {
    cached_.emplace(size, p);
    stats_.cachedBytes += size;
  } catch (const std::bad_alloc &) {  // no room to remember it: the device gets it back
    raw_.free(p);
    ++stats_.rawFrees;
    return;
  }
  trimCacheLocked(options_.maxCachedBytes);
}

bool CachingAllocator::owns(const std::byte *p, size_t bytes) const {
  std::lock_guard lock(mutex_);
  auto it = live_.upper_bound(p);  // the first block starting after p
  if (it == live_.begin()) return false;
  --it;
  // Addresses as integers: p may lie outside every block, where pointer arithmetic is undefined.
  const auto start = reinterpret_cast<uintptr_t>(it->first);
  const auto at = reinterpret_cast<uintptr_t>(p);
  const size_t requested = it->second.requested;
  return at - start <= requested && bytes <= requested - (at - start);
}

void CachingAllocator::emptyCache() {
  std::lock_guard lock(mutex_);
  trimCacheLocked(0);
}

CachingAllocator::Stats CachingAllocator::stats() const {
  std::lock_guard lock(mutex_);
  return stats_;
}

size_t CachingAllocator::trimCacheLocked(size_t limit) {
  size_t freed = 0;
  while (stats_.cachedBytes > limit) {
    auto largest = std::prev(cached_.end());
    raw_.free(largest->second);
    ++stats_.rawFrees;
    stats_.cachedBytes -= largest->first;
    freed += largest->first;
    cached_.erase(largest);
  }
  return freed;
}

}  // namespace ferry::cuda
