// tests/cuda/caching_allocator_test.cpp — CachingAllocator over a fake device: reuse, rounding,
// the out-of-memory retry and its error, the cache limit, owns(), release checks, threads.
#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <mutex>
#include <new>
#include <random>
#include <thread>
#include <vector>

#include "backends/cuda/codegen/caching_allocator.h"

namespace ferry::cuda {
namespace {

constexpr size_t kKiB = size_t{1} << 10;
constexpr size_t kMiB = size_t{1} << 20;
constexpr std::align_val_t kFakeAlignment{256};

// A device of `capacity` bytes backed by real host memory (256-byte aligned, like cudaMalloc's),
// counting its calls. Fails with code "memory" when full, or always with `failCode` when set.
class FakeDevice final : public RawMemory {
 public:
  explicit FakeDevice(size_t capacity = size_t{1} << 40) : capacity_(capacity) {}
  ~FakeDevice() override {
    for (auto &[p, bytes] : blocks_) ::operator delete(p, kFakeAlignment);
  }

  Expected<std::byte *> allocate(size_t bytes) override {
    std::lock_guard lock(mutex_);
    ++allocateCalls_;
    lastRequest_ = bytes;
    if (!failCode_.empty()) return makeError(failCode_, "fake device broken");
    if (bytes > capacity_ - used_) return makeError("memory", "fake device full");
    auto *p = static_cast<std::byte *>(::operator new(bytes, kFakeAlignment));
    blocks_.emplace(p, bytes);
    used_ += bytes;
    ++allocations_;
    return p;
  }

  void free(std::byte *p) override {
    std::lock_guard lock(mutex_);
    auto it = blocks_.find(p);
    FERRY_CHECK(it != blocks_.end()) << "fake device: free of an unknown pointer";
    used_ -= it->second;
    blocks_.erase(it);
    ::operator delete(p, kFakeAlignment);
    ++frees_;
  }

  void failWith(std::string code) { failCode_ = std::move(code); }
  size_t outstanding() const {
    std::lock_guard lock(mutex_);
    return blocks_.size();
  }
  size_t usedBytes() const {
    std::lock_guard lock(mutex_);
    return used_;
  }
  size_t allocateCalls() const {
    std::lock_guard lock(mutex_);
    return allocateCalls_;
  }
  size_t allocations() const {
    std::lock_guard lock(mutex_);
    return allocations_;
  }
  size_t frees() const {
    std::lock_guard lock(mutex_);
    return frees_;
  }
  size_t lastRequest() const {
    std::lock_guard lock(mutex_);
    return lastRequest_;
  }

 private:
  const size_t capacity_;
  mutable std::mutex mutex_;
  std::map<std::byte *, size_t> blocks_;
  size_t used_ = 0;
  size_t allocateCalls_ = 0, allocations_ = 0, frees_ = 0, lastRequest_ = 0;
  std::string failCode_;
};

std::byte *allocated(CachingAllocator &a, size_t bytes) {
  Expected<std::byte *> p = a.allocate(bytes);
  EXPECT_TRUE(p.ok()) << p.status().message();
  return p.ok() ? *p : nullptr;
}

TEST(CachingAllocator, ReusesAReleasedBlock) {
  FakeDevice device;
  CachingAllocator alloc(device, "cuda:0");
  std::byte *a = allocated(alloc, 1000);
  alloc.release(a);
  EXPECT_EQ(alloc.stats().cachedBytes, 1024u);
  std::byte *b = allocated(alloc, 1000);
  EXPECT_EQ(b, a);
  EXPECT_EQ(device.allocations(), 1u);
  CachingAllocator::Stats s = alloc.stats();
  EXPECT_EQ(s.rawAllocations, 1u);
  EXPECT_EQ(s.cacheHits, 1u);
  EXPECT_EQ(s.inUseBytes, 1024u);
  EXPECT_EQ(s.cachedBytes, 0u);
  EXPECT_EQ(s.rawFrees, 0u);
  alloc.release(b);
}

TEST(CachingAllocator, RoundsSizes) {
  EXPECT_EQ(CachingAllocator::roundedSize(0), 512u);
  EXPECT_EQ(CachingAllocator::roundedSize(1), 512u);
  EXPECT_EQ(CachingAllocator::roundedSize(512), 512u);
  EXPECT_EQ(CachingAllocator::roundedSize(513), 1024u);
  EXPECT_EQ(CachingAllocator::roundedSize(kMiB - 1), kMiB);
  EXPECT_EQ(CachingAllocator::roundedSize(kMiB), 2 * kMiB);
  EXPECT_EQ(CachingAllocator::roundedSize(3 * kMiB), 4 * kMiB);
  EXPECT_EQ(CachingAllocator::roundedSize(4 * kMiB), 4 * kMiB);
  EXPECT_EQ(CachingAllocator::roundedSize(SIZE_MAX), 0u);
}

TEST(CachingAllocator, SmallRequestsShareA512ByteBlock) {
  FakeDevice device;
  CachingAllocator alloc(device, "cuda:0");
  std::byte *a = allocated(alloc, 1);
  EXPECT_EQ(device.lastRequest(), 512u);
  alloc.release(a);
  std::byte *b = allocated(alloc, 500);
  EXPECT_EQ(b, a);
  alloc.release(b);
  std::byte *c = allocated(alloc, 512);
  EXPECT_EQ(c, a);
  EXPECT_EQ(device.allocations(), 1u);
  EXPECT_EQ(alloc.stats().cacheHits, 2u);
  alloc.release(c);
}

TEST(CachingAllocator, LargeRequestsRoundTo2MiB) {
  FakeDevice device;
  CachingAllocator alloc(device, "cuda:0");
  std::byte *a = allocated(alloc, 3 * kMiB);
  EXPECT_EQ(device.lastRequest(), 4 * kMiB);
  EXPECT_EQ(alloc.stats().inUseBytes, 4 * kMiB);
  alloc.release(a);
  // 3.5 MiB rounds to the same 4 MiB: the block is reused.
  EXPECT_EQ(allocated(alloc, 3 * kMiB + kMiB / 2), a);
  EXPECT_EQ(device.allocations(), 1u);
  alloc.release(a);
}

TEST(CachingAllocator, ZeroBytesGiveDistinctValidPointers) {
  FakeDevice device;
  CachingAllocator alloc(device, "cuda:0");
  std::byte *a = allocated(alloc, 0);
  std::byte *b = allocated(alloc, 0);
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  EXPECT_NE(a, b);
  EXPECT_TRUE(alloc.owns(a, 0));
  EXPECT_TRUE(alloc.owns(b, 0));
  EXPECT_FALSE(alloc.owns(a, 1));  // nothing was asked for
  // raw's (the fake's) 256-byte alignment is kept.
  EXPECT_EQ(reinterpret_cast<uintptr_t>(a) % 256, 0u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(b) % 256, 0u);
  EXPECT_EQ(alloc.stats().inUseBytes, 1024u);
  alloc.release(a);
  alloc.release(b);
}

TEST(CachingAllocator, BlockMoreThanTwiceTheRequestIsNotReused) {
  FakeDevice device;
  CachingAllocator alloc(device, "cuda:0");
  std::byte *big = allocated(alloc, 4 * kMiB);
  alloc.release(big);
  std::byte *small = allocated(alloc, 512);
  ASSERT_NE(small, big);
  EXPECT_EQ(device.allocations(), 2u);
  EXPECT_EQ(alloc.stats().cacheHits, 0u);
  EXPECT_EQ(alloc.stats().cachedBytes, 4 * kMiB);
  // Exactly twice the rounded size is still a fit.
  EXPECT_EQ(allocated(alloc, 2 * kMiB), big);
  EXPECT_EQ(alloc.stats().cacheHits, 1u);
  EXPECT_EQ(device.allocations(), 2u);
  alloc.release(small);
  alloc.release(big);
}

TEST(CachingAllocator, BestFitTakesTheSmallestSuitableBlock) {
  FakeDevice device;
  CachingAllocator alloc(device, "cuda:0");
  std::byte *b2048 = allocated(alloc, 2048);
  std::byte *b1024 = allocated(alloc, 1024);
  std::byte *b1536 = allocated(alloc, 1536);
  alloc.release(b2048);
  alloc.release(b1024);
  alloc.release(b1536);
  EXPECT_EQ(allocated(alloc, 1000), b1024);
  EXPECT_EQ(allocated(alloc, 700), b1536);
  EXPECT_EQ(allocated(alloc, 1024), b2048);
  EXPECT_EQ(device.allocations(), 3u);
  EXPECT_EQ(alloc.stats().cacheHits, 3u);
  alloc.release(b1024);
  alloc.release(b1536);
  alloc.release(b2048);
}

TEST(CachingAllocator, OutOfMemoryFreesTheCacheAndRetries) {
  FakeDevice device(8 * kMiB);
  CachingAllocator alloc(device, "cuda:0");
  std::byte *a = allocated(alloc, 4 * kMiB);
  std::byte *b = allocated(alloc, 4 * kMiB);
  alloc.release(a);
  alloc.release(b);
  // No cached block fits 6 MiB, and the device is full of cached ones.
  std::byte *c = allocated(alloc, 6 * kMiB);
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(device.allocateCalls(), 4u);  // a, b, the failed try, the retry
  EXPECT_EQ(device.outstanding(), 1u);
  CachingAllocator::Stats s = alloc.stats();
  EXPECT_EQ(s.rawFrees, 2u);
  EXPECT_EQ(s.rawAllocations, 3u);
  EXPECT_EQ(s.cachedBytes, 0u);
  EXPECT_EQ(s.inUseBytes, 6 * kMiB);
  alloc.release(c);
}

TEST(CachingAllocator, OutOfMemoryThatCannotBeMetSaysWhyAndLeavesTheAllocatorUsable) {
  FakeDevice device(8 * kMiB);
  CachingAllocator alloc(device, "cuda:1");
  std::byte *a = allocated(alloc, 4 * kMiB);
  alloc.release(allocated(alloc, 2 * kMiB));

  Expected<std::byte *> failed = alloc.allocate(6 * kMiB);
  ASSERT_FALSE(failed.ok());
  const Diagnostic &d = failed.status().diagnostics().at(0);
  EXPECT_EQ(d.code, "memory");
  EXPECT_EQ(d.message, "out of memory on cuda:1: 6.0 MiB asked for, 4.0 MiB in use by this "
                       "allocator (2.0 MiB cached, freed before retrying)");
  ASSERT_EQ(d.notes.size(), 1u);
  EXPECT_EQ(d.notes[0].message, "fake device full");
  EXPECT_EQ(device.allocateCalls(), 4u);  // a, the cached block, the failed try, the retry
  EXPECT_EQ(alloc.stats().cachedBytes, 0u);
  EXPECT_EQ(alloc.stats().inUseBytes, 4 * kMiB);

  // Nothing cached now: one try, no retry, and the message says so.
  Expected<std::byte *> again = alloc.allocate(5 * kMiB);
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.status().diagnostics().at(0).message,
            "out of memory on cuda:1: 5.0 MiB asked for, 4.0 MiB in use by this allocator "
            "(0 B cached)");
  EXPECT_EQ(device.allocateCalls(), 5u);

  // What fits still comes.
  std::byte *b = allocated(alloc, 2 * kMiB);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(alloc.stats().inUseBytes, 6 * kMiB);
  alloc.release(a);
  alloc.release(b);
}

TEST(CachingAllocator, OtherRawErrorsPassThroughAndKeepTheCache) {
  FakeDevice device;
  CachingAllocator alloc(device, "cuda:0");
  alloc.release(allocated(alloc, 512));
  device.failWith("runtime");
  Expected<std::byte *> failed = alloc.allocate(4 * kMiB);
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.status().diagnostics().at(0).code, "runtime");
  EXPECT_EQ(failed.status().diagnostics().at(0).message, "fake device broken");
  EXPECT_EQ(alloc.stats().cachedBytes, 512u);
  EXPECT_EQ(alloc.stats().rawFrees, 0u);
  // The cache still serves what fits it.
  std::byte *p = allocated(alloc, 100);
  EXPECT_NE(p, nullptr);
  alloc.release(p);
}

TEST(CachingAllocator, MaxCachedBytesTrimsTheLargestBlocks) {
  FakeDevice device;
  CachingAllocator alloc(device, "cuda:0", {.maxCachedBytes = 2 * kMiB});
  std::byte *a = allocated(alloc, 2 * kMiB);
  std::byte *b = allocated(alloc, 512 * kKiB);
  std::byte *c = allocated(alloc, kKiB);
  alloc.release(c);
  alloc.release(b);
  EXPECT_EQ(alloc.stats().rawFrees, 0u);
  alloc.release(a);  // 2 MiB + 513 KiB cached: the 2 MiB block goes back
  CachingAllocator::Stats s = alloc.stats();
  EXPECT_EQ(s.rawFrees, 1u);
  EXPECT_EQ(s.cachedBytes, 513 * kKiB);
  EXPECT_EQ(device.outstanding(), 2u);
  EXPECT_EQ(allocated(alloc, 512 * kKiB), b);
  EXPECT_EQ(alloc.stats().cacheHits, 1u);
  alloc.release(b);
}

TEST(CachingAllocator, ZeroMaxCachedBytesCachesNothing) {
  FakeDevice device;
  CachingAllocator alloc(device, "cuda:0", {.maxCachedBytes = 0});
  alloc.release(allocated(alloc, 100));
  EXPECT_EQ(device.outstanding(), 0u);
  EXPECT_EQ(alloc.stats().cachedBytes, 0u);
  EXPECT_EQ(alloc.stats().rawFrees, 1u);
}

TEST(CachingAllocator, OwnsRangesWithinLiveAllocationsOnly) {
  FakeDevice device;
  CachingAllocator alloc(device, "cuda:0");
  std::byte *a = allocated(alloc, 1000);
  std::byte *b = allocated(alloc, 4 * kMiB);
  EXPECT_TRUE(alloc.owns(a, 1000));
  EXPECT_TRUE(alloc.owns(a + 100, 900));
  EXPECT_TRUE(alloc.owns(a + 1000, 0));
  EXPECT_TRUE(alloc.owns(b + kMiB, kMiB));
  // Straddling an end: past the bytes asked for (the rounding's padding included), or before
  // the start.
  EXPECT_FALSE(alloc.owns(a + 100, 901));
  EXPECT_FALSE(alloc.owns(a + 500, 1000));
  EXPECT_FALSE(alloc.owns(reinterpret_cast<std::byte *>(reinterpret_cast<uintptr_t>(a) - 1), 2));
  EXPECT_FALSE(alloc.owns(b + 4 * kMiB - 1, 2));
  EXPECT_FALSE(alloc.owns(a, SIZE_MAX));
  std::byte elsewhere[16];
  EXPECT_FALSE(alloc.owns(elsewhere, 1));
  alloc.release(a);
  EXPECT_FALSE(alloc.owns(a, 1));  // cached, not live
  EXPECT_TRUE(alloc.owns(b, 4 * kMiB));
  alloc.release(b);
  EXPECT_FALSE(alloc.owns(b, 1));
}

TEST(CachingAllocator, EmptyCacheFreesCachedBlocksOnly) {
  FakeDevice device;
  CachingAllocator alloc(device, "cuda:0");
  std::byte *live = allocated(alloc, 1000);
  alloc.release(allocated(alloc, 3 * kMiB));
  alloc.release(allocated(alloc, 10));
  alloc.emptyCache();
  EXPECT_EQ(device.outstanding(), 1u);
  EXPECT_EQ(alloc.stats().cachedBytes, 0u);
  EXPECT_EQ(alloc.stats().rawFrees, 2u);
  EXPECT_TRUE(alloc.owns(live, 1000));
  alloc.release(live);
}

TEST(CachingAllocator, DestructorReturnsEverything) {
  FakeDevice device;
  {
    CachingAllocator alloc(device, "cuda:0");
    (void)allocated(alloc, 1000);  // never released: freed all the same
    alloc.release(allocated(alloc, 3 * kMiB));
    EXPECT_EQ(device.outstanding(), 2u);
  }
  EXPECT_EQ(device.outstanding(), 0u);
  EXPECT_EQ(device.usedBytes(), 0u);
  EXPECT_EQ(device.frees(), 2u);
}

TEST(CachingAllocatorDeathTest, ReleasingAnUnknownPointerDies) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  FakeDevice device;
  CachingAllocator alloc(device, "cuda:0");
  std::byte elsewhere[16];
  EXPECT_DEATH(alloc.release(elsewhere), "not a live allocation of cuda:0");
}

TEST(CachingAllocatorDeathTest, ReleasingTwiceDies) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  FakeDevice device;
  CachingAllocator alloc(device, "cuda:0");
  std::byte *p = allocated(alloc, 100);
  alloc.release(p);
  EXPECT_DEATH(alloc.release(p), "not a live allocation of cuda:0 \\(never allocated, or "
                                 "released already\\)");
}

// 4 threads each allocate and release 1000 blocks of random sizes, keeping up to 8 live. Each
// block carries its thread's and its own mark in its first and last byte, checked on release:
// a block handed out twice at once would be overwritten.
TEST(CachingAllocator, ThreadsShareOneAllocator) {
  constexpr int kThreads = 4, kIterations = 1000;
  FakeDevice device;
  {
    CachingAllocator alloc(device, "cuda:0");
    std::vector<std::thread> threads;
    std::vector<int> failures(kThreads, 0);
    for (int t = 0; t < kThreads; ++t)
      threads.emplace_back([&alloc, &failures, t] {
        std::mt19937 rng(static_cast<uint32_t>(t + 1));
        struct Live {
          std::byte *p;
          size_t bytes;
          std::byte mark;
        };
        std::vector<Live> live;
        auto releaseOne = [&](size_t i) {
          const Live l = live[i];
          if (l.bytes > 0 && (l.p[0] != l.mark || l.p[l.bytes - 1] != l.mark)) ++failures[t];
          if (!alloc.owns(l.p, l.bytes)) ++failures[t];
          alloc.release(l.p);
          live.erase(live.begin() + static_cast<ptrdiff_t>(i));
        };
        for (int i = 0; i < kIterations; ++i) {
          if (live.size() == 8 || (!live.empty() && rng() % 2 == 0))
            releaseOne(rng() % live.size());
          // Mostly small blocks, now and then a large one.
          const size_t bytes = rng() % 16 == 0 ? rng() % (3 * kMiB) : rng() % (8 * kKiB);
          Expected<std::byte *> p = alloc.allocate(bytes);
          if (!p.ok()) {
            ++failures[t];
            continue;
          }
          const auto mark = static_cast<std::byte>(t * 64 + i % 64);
          if (bytes > 0) (*p)[0] = (*p)[bytes - 1] = mark;
          live.push_back({*p, bytes, mark});
        }
        while (!live.empty()) releaseOne(live.size() - 1);
      });
    for (std::thread &th : threads) th.join();
    for (int t = 0; t < kThreads; ++t) EXPECT_EQ(failures[t], 0) << "thread " << t;

    CachingAllocator::Stats s = alloc.stats();
    EXPECT_EQ(s.rawAllocations + s.cacheHits, size_t{kThreads} * kIterations);
    EXPECT_GT(s.cacheHits, 0u);
    EXPECT_EQ(s.inUseBytes, 0u);
    EXPECT_EQ(s.rawAllocations, device.allocations());
    EXPECT_EQ(s.rawFrees, device.frees());
    EXPECT_EQ(device.outstanding(), s.rawAllocations - s.rawFrees);
    EXPECT_EQ(device.usedBytes(), s.cachedBytes);
  }
  EXPECT_EQ(device.outstanding(), 0u);
  EXPECT_EQ(device.usedBytes(), 0u);
}

}  // namespace
}  // namespace ferry::cuda
