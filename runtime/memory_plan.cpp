// runtime/memory_plan.cpp — best-fit offsets over the steps, as a simulated allocator.
#include "runtime/memory_plan.h"

#include <algorithm>
#include <map>
#include <set>

#include "ir/status.h"

namespace ferry {

size_t planOffsets(std::span<const Lifetime> tensors, size_t alignment,
                   std::vector<size_t> &offsets) {
  FERRY_CHECK(alignment > 0 && (alignment & (alignment - 1)) == 0) << "alignment " << alignment;
  const size_t n = tensors.size();
  offsets.assign(n, 0);
  // Events: allocations at `first`, releases after the allocations of `last`.
  std::vector<size_t> byFirst(n), byLast(n);
  for (size_t i = 0; i < n; ++i) {
    FERRY_CHECK(tensors[i].first <= tensors[i].last) << "lifetime of tensor " << i;
    byFirst[i] = byLast[i] = i;
  }
  std::stable_sort(byFirst.begin(), byFirst.end(),
                   [&](size_t a, size_t b) { return tensors[a].first < tensors[b].first; });
  std::stable_sort(byLast.begin(), byLast.end(),
                   [&](size_t a, size_t b) { return tensors[a].last < tensors[b].last; });

  std::map<size_t, size_t> freeByOffset;           // offset -> size
  std::set<std::pair<size_t, size_t>> freeBySize;  // (size, offset), for best fit
  size_t end = 0;
  auto rounded = [&](size_t bytes) {
    // Zero-byte tensors still get a distinct, aligned block, so views never alias.
    return std::max(alignment, (bytes + alignment - 1) / alignment * alignment);
  };
  auto take = [&](size_t bytes) {
    auto fit = freeBySize.lower_bound({bytes, 0});
    if (fit == freeBySize.end()) {
      // Grow at the end, absorbing a free block that touches it.
      size_t at = end;
      if (!freeByOffset.empty()) {
        auto last = std::prev(freeByOffset.end());
        if (last->first + last->second == end) {
          at = last->first;
          freeBySize.erase({last->second, last->first});
          freeByOffset.erase(last);
        }
      }
      end = at + bytes;
      return at;
    }
    const auto [size, at] = *fit;
    freeBySize.erase(fit);
    freeByOffset.erase(at);
    if (size > bytes) {
      freeByOffset[at + bytes] = size - bytes;
      freeBySize.insert({size - bytes, at + bytes});
    }
    return at;
  };
  auto give = [&](size_t at, size_t bytes) {
    auto next = freeByOffset.lower_bound(at);
    if (next != freeByOffset.end() && at + bytes == next->first) {
      bytes += next->second;
      freeBySize.erase({next->second, next->first});
      next = freeByOffset.erase(next);
    }
    if (next != freeByOffset.begin()) {
      auto prev = std::prev(next);
      if (prev->first + prev->second == at) {
        at = prev->first;
        bytes += prev->second;
        freeBySize.erase({prev->second, prev->first});
        freeByOffset.erase(prev);
      }
    }
    freeByOffset[at] = bytes;
    freeBySize.insert({bytes, at});
  };

  size_t a = 0, r = 0;
  while (a < n || r < n) {
    const int64_t step = a < n ? std::min(tensors[byFirst[a]].first, tensors[byLast[r]].last)
                               : tensors[byLast[r]].last;
    for (; a < n && tensors[byFirst[a]].first == step; ++a)
      offsets[byFirst[a]] = take(rounded(tensors[byFirst[a]].bytes));
    for (; r < n && tensors[byLast[r]].last == step; ++r)
      give(offsets[byLast[r]], rounded(tensors[byLast[r]].bytes));
  }
  return end;
}

}  // namespace ferry
