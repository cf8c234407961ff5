// ir/id_map.h — a flat hash map from 64-bit keys to ids, for the passes' per-compile lookups.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "ir/status.h"

namespace ferry {

/// Open addressing with linear probing over one array: no allocation per entry (a node-based
/// map allocated and freed one block per inserted cast), no deletion. Keys are packed tuples
/// such as (value id, dtype, device); the all-ones key marks a free slot and cannot be stored.
class IdMap {
 public:
  static constexpr uint64_t kFree = ~uint64_t{0};

  /// The id stored for `key`, inserting `id` first when there is none; `second` says whether it
  /// was inserted. The reference is valid until the next insertion.
  std::pair<int32_t &, bool> tryEmplace(uint64_t key, int32_t id) {
    FERRY_CHECK(key != kFree) << "IdMap key " << key;
    if (2 * (size_ + 1) > slots_.size()) grow();  // at most half full
    Slot &s = slots_[find(key)];
    const bool fresh = s.key == kFree;
    if (fresh) {
      s = {key, id};
      ++size_;
    }
    return {s.id, fresh};
  }
  /// The id stored for `key`, or nullptr.
  const int32_t *get(uint64_t key) const {
    if (slots_.empty()) return nullptr;
    const Slot &s = slots_[find(key)];
    return s.key == kFree ? nullptr : &s.id;
  }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  /// Room for `n` keys without growing.
  void reserve(size_t n) {
    while (2 * n > slots_.size()) grow();
  }

 private:
  struct Slot {
    uint64_t key = kFree;
    int32_t id = -1;
  };
  static uint64_t mix(uint64_t k) {  // the finaliser of splitmix64: every bit moves every bit
    k = (k ^ (k >> 30)) * 0xbf58476d1ce4e5b9ull;
    k = (k ^ (k >> 27)) * 0x94d049bb133111ebull;
    return k ^ (k >> 31);
  }
  size_t find(uint64_t key) const {
    const size_t mask = slots_.size() - 1;
    size_t i = mix(key) & mask;
    while (slots_[i].key != kFree && slots_[i].key != key) i = (i + 1) & mask;
    return i;
  }
  void grow() {
    std::vector<Slot> old = std::move(slots_);
    slots_.assign(old.empty() ? 64 : 2 * old.size(), Slot{});
    for (const Slot &s : old)
      if (s.key != kFree) slots_[find(s.key)] = s;
  }

  std::vector<Slot> slots_;
  size_t size_ = 0;
};

}  // namespace ferry
