// ir/large_vector.cpp — allocateLarge: mmap'd, 2 MiB-aligned regions marked MADV_HUGEPAGE.
#include "ir/large_vector.h"

#include <cstdint>
#include <new>

#if defined(__linux__) && !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
#include <sys/mman.h>
#define FERRY_HUGE_PAGES 1
#endif

namespace ferry {

namespace {
constexpr size_t kHugePage = size_t{2} << 20;

size_t roundUp(size_t bytes) { return (bytes + kHugePage - 1) & ~(kHugePage - 1); }
}  // namespace

void *allocateLarge(size_t bytes) {
#ifdef FERRY_HUGE_PAGES
  if (bytes >= kHugePage) {
    // Map one page more than needed and cut the ends off, so that the array starts on a 2 MiB
    // boundary and every page of it can be a huge page.
    const size_t size = roundUp(bytes);
    if (size < bytes) throw std::bad_alloc();  // overflow
    void *raw =
        mmap(nullptr, size + kHugePage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (raw == MAP_FAILED) throw std::bad_alloc();
    const auto start = reinterpret_cast<uintptr_t>(raw);
    const uintptr_t aligned = (start + kHugePage - 1) & ~(kHugePage - 1);
    if (aligned > start) munmap(raw, aligned - start);
    if (const uintptr_t end = aligned + size, mappedEnd = start + size + kHugePage; mappedEnd > end)
      munmap(reinterpret_cast<void *>(end), mappedEnd - end);
#ifdef MADV_HUGEPAGE
    // Advice only: where transparent huge pages are off this changes nothing.
    madvise(reinterpret_cast<void *>(aligned), size, MADV_HUGEPAGE);
#endif
    return reinterpret_cast<void *>(aligned);
  }
#endif
  return ::operator new(bytes);
}

void releaseLarge(void *p, size_t bytes) noexcept {
#ifdef FERRY_HUGE_PAGES
  if (bytes >= kHugePage) {
    munmap(p, roundUp(bytes));
    return;
  }
#endif
  ::operator delete(p);
}

}  // namespace ferry
