// ir/large_vector.h — std::vector for the passes' large scratch arrays, on transparent huge pages.
#pragma once

#include <cstddef>
#include <vector>

namespace ferry {

/// Allocates `bytes`; from 2 MiB up, whole 2 MiB pages mapped for this array and marked for
/// transparent huge pages (madvise), below that from operator new. Throws std::bad_alloc.
void *allocateLarge(size_t bytes);
/// Frees what allocateLarge(bytes) returned.
void releaseLarge(void *p, size_t bytes) noexcept;

/// The allocator of LargeVector: large arrays on huge pages, small ones as usual. A compile of
/// a million-node graph writes several hundred MiB of fresh per-pass arrays (per value, per
/// node, the min-cut's arcs), and the kernel zeroes every page a process touches first: in 4 KiB
/// pages that ran at 1.4 GB/s on the CI box, in 2 MiB pages at 8 GB/s (bench/README.md). With
/// transparent huge pages off, or under the sanitizers (which track heap memory only), it is
/// operator new.
template <class T> struct HugePageAllocator {
  using value_type = T;
  HugePageAllocator() = default;
  template <class U> HugePageAllocator(const HugePageAllocator<U> &) {}
  T *allocate(size_t n) { return static_cast<T *>(allocateLarge(n * sizeof(T))); }
  void deallocate(T *p, size_t n) noexcept { releaseLarge(p, n * sizeof(T)); }
  friend bool operator==(const HugePageAllocator &, const HugePageAllocator &) { return true; }
};

/// A vector for arrays the size of the graph (one entry per value or node, edges of a cut).
template <class T> using LargeVector = std::vector<T, HugePageAllocator<T>>;

}  // namespace ferry
