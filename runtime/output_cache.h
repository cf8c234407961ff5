// runtime/output_cache.h — internal to the Session (runtime/session.cpp): the storage of outputs
// a caller has released, reused by the next runs.
#pragma once

#include <cstddef>
#include <memory>
#include <mutex>
#include <new>
#include <utility>
#include <vector>

namespace ferry {

// Storage of outputs the caller has let go of, kept for the next runs: a 64 MB output made fresh
// in every run had its pages faulted in and zeroed by the kernel each time (more than the kernel
// itself took on an elementwise chain). A released block is kept while there is room (two runs'
// outputs, reserved up front: giving back never allocates), else freed; a block is reused for an
// output of exactly its size. It outlives the session while any output it gave does.
class OutputCache : public std::enable_shared_from_this<OutputCache> {
 public:
  explicit OutputCache(size_t maxBlocks) { free_.reserve(maxBlocks); }
  ~OutputCache() {
    for (const auto &[bytes, p] : free_) ::operator delete(p, kAlignment);
  }

  /// Storage of `bytes` (64-byte aligned), reused when a kept block has that size; throws
  /// std::bad_alloc as operator new does.
  std::shared_ptr<std::byte> take(size_t bytes) {
    std::byte *p = nullptr;
    {
      std::lock_guard lock(mutex_);
      for (size_t i = 0; i < free_.size(); ++i)
        if (free_[i].first == bytes) {
          p = free_[i].second;
          free_[i] = free_.back();
          free_.pop_back();
          break;
        }
    }
    if (!p) p = static_cast<std::byte *>(::operator new(bytes == 0 ? 1 : bytes, kAlignment));
    // Should the control block not be allocated, shared_ptr gives `p` to the deleter: kept.
    return std::shared_ptr<std::byte>(
        p, [cache = shared_from_this(), bytes](std::byte *q) { cache->give(q, bytes); });
  }

 private:
  static constexpr std::align_val_t kAlignment{64};

  void give(std::byte *p, size_t bytes) noexcept {
    {
      std::lock_guard lock(mutex_);
      if (free_.size() < free_.capacity()) {
        free_.emplace_back(bytes, p);
        return;
      }
    }
    ::operator delete(p, kAlignment);
  }

  std::mutex mutex_;
  std::vector<std::pair<size_t, std::byte *>> free_;
};

}  // namespace ferry
