// backends/cuda/codegen/caching_allocator.h — a caching allocator of one device's memory: blocks
// released are kept and handed out again, so that steady-state runs never call the raw allocator.
//
// Why: cudaMalloc and cudaFree synchronize the device and cost on the order of a millisecond
// each; a run that allocates its workspace through them would stall every stream. Pure C++ over
// RawMemory (cudaMalloc/cudaFree in the CUDA backend, a fake in tests), so it builds and is
// tested on machines without the CUDA toolkit.
//
// Rules:
//   rounding  a request below 1 MiB rounds up to a multiple of 512 bytes, one of 1 MiB or more
//             to a multiple of 2 MiB; 0 bytes gets a block of 512 (a valid, distinct pointer).
//   reuse     the smallest cached block of at least the rounded size and at most twice it is
//             handed out whole (best fit; of equal sizes, the one cached first); otherwise raw
//             allocates a block of exactly the rounded size. Blocks are never split or merged.
//   OOM       when raw fails with code "memory", every cached block goes back to raw and the
//             allocation is tried once more (not when nothing was cached); if that fails too,
//             the error has code "memory" and names the device and the bytes asked for, in use
//             and freed from the cache. The allocator stays usable.
//   cache     release() caches the block; past Options::maxCachedBytes the largest cached
//             blocks go back to raw until the cache is within the limit.
//   alignment a block starts where raw's allocation starts: raw's alignment is kept (cudaMalloc:
//             256 bytes).
//
// release() must only be called once no stream still reads or writes the memory (the caller
// synchronizes first): the next allocate() may hand the block to other work at once.
//
// Thread-safe: one mutex guards everything, raw's calls included.
#pragma once

#include <cstddef>
#include <map>
#include <mutex>
#include <string>
#include <utility>

#include "ir/status.h"

namespace ferry::cuda {

/// The memory underneath the cache: one device's cudaMalloc/cudaFree in the CUDA backend.
struct RawMemory {
  virtual ~RawMemory() = default;
  /// `bytes` (> 0) of device memory; an error with code "memory" when the device has no room.
  virtual Expected<std::byte *> allocate(size_t bytes) = 0;
  /// Frees memory from allocate().
  virtual void free(std::byte *p) = 0;
};

class CachingAllocator {
 public:
  struct Options {
    /// Most bytes kept in cached (released, not freed) blocks; 0 caches nothing.
    size_t maxCachedBytes = size_t{1} << 32;
  };

  /// Counters since construction; byte counts are of whole (rounded) blocks.
  struct Stats {
    size_t inUseBytes = 0;      ///< in blocks handed out and not released
    size_t cachedBytes = 0;     ///< in released blocks kept for reuse
    size_t rawAllocations = 0;  ///< calls of RawMemory::allocate that succeeded
    size_t rawFrees = 0;        ///< calls of RawMemory::free
    size_t cacheHits = 0;       ///< allocations served from the cache
  };

  /// `deviceName` ("cuda:0") is for error messages. `raw` must outlive the allocator.
  CachingAllocator(RawMemory &raw, std::string deviceName)
      : CachingAllocator(raw, std::move(deviceName), Options{}) {}
  CachingAllocator(RawMemory &raw, std::string deviceName, Options options);
  /// Frees every block, cached and still handed out, back to raw.
  ~CachingAllocator();
  CachingAllocator(const CachingAllocator &) = delete;
  CachingAllocator &operator=(const CachingAllocator &) = delete;

  /// The size of the block a request of `bytes` gets (see the file comment); 0 when no block
  /// can be that large (within 2 MiB of SIZE_MAX).
  static size_t roundedSize(size_t bytes);

  /// A block of at least `bytes`: from the cache, or from raw (see the file comment for OOM).
  Expected<std::byte *> allocate(size_t bytes);
  /// Returns a block from allocate() to the cache; anything else (or a second release) is a
  /// bug and fails loudly. No stream may still use the memory.
  void release(std::byte *p);
  /// Whether [p, p + bytes) lies within the bytes asked for of one block handed out and not
  /// released (the rounding's padding is not counted). O(log blocks).
  bool owns(const std::byte *p, size_t bytes) const;
  /// Frees every cached block back to raw.
  void emptyCache();
  Stats stats() const;

 private:
  // A block handed out: its whole (rounded) size and the bytes asked for.
  struct LiveBlock {
    size_t size = 0;
    size_t requested = 0;
  };

  // Frees the cached blocks to raw, largest first, until at most `limit` bytes are cached;
  // returns the bytes freed. Called with mutex_ held.
  size_t trimCacheLocked(size_t limit);

  RawMemory &raw_;
  const std::string deviceName_;
  const Options options_;
  mutable std::mutex mutex_;
  std::map<const std::byte *, LiveBlock> live_;  // by start address, for owns() and release()
  std::multimap<size_t, std::byte *> cached_;    // by block size, for best fit
  Stats stats_;
};

}  // namespace ferry::cuda
