// runtime/memory_plan.h — offsets in a workspace for tensors with known lifetimes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace ferry {

/// A tensor of `bytes`, written at step `first` and last read at step `last` (first <= last).
struct Lifetime {
  size_t bytes = 0;
  int64_t first = 0;
  int64_t last = 0;
};

/// Offsets (multiples of `alignment`) for `tensors` such that two tensors whose lifetimes
/// overlap (share a step) never share a byte; returns the workspace size they need.
///
/// Runs the steps in order as an allocator would: at step s, the tensors first written there
/// get the smallest free block they fit in (best fit; the workspace grows at its end when none
/// does), then the tensors last read at s give their blocks back, merged with free neighbours.
/// A tensor written and last read at the same step still never shares bytes with the others of
/// that step, since blocks are given back only after all of the step's allocations.
/// O(n log n) in the number of tensors.
size_t planOffsets(std::span<const Lifetime> tensors, size_t alignment,
                   std::vector<size_t> &offsets);

}  // namespace ferry
