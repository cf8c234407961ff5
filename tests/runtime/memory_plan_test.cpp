// tests/runtime/memory_plan_test.cpp — workspace offsets: tensors alive at once never overlap,
// the rest reuse memory.
#include <gtest/gtest.h>

#include <random>

#include "runtime/memory_plan.h"

namespace ferry {
namespace {

bool overlapInTime(const Lifetime &a, const Lifetime &b) {
  return a.first <= b.last && b.first <= a.last;
}

void expectNoConflicts(const std::vector<Lifetime> &t, const std::vector<size_t> &off, size_t total,
                       size_t align) {
  ASSERT_EQ(off.size(), t.size());
  for (size_t i = 0; i < t.size(); ++i) {
    EXPECT_EQ(off[i] % align, 0u) << i;
    EXPECT_LE(off[i] + t[i].bytes, total) << i;
    for (size_t j = 0; j < i; ++j) {
      if (!overlapInTime(t[i], t[j])) continue;
      const size_t ei = off[i] + std::max<size_t>(t[i].bytes, 1),
                   ej = off[j] + std::max<size_t>(t[j].bytes, 1);
      EXPECT_TRUE(ei <= off[j] || ej <= off[i])
          << "tensors " << i << " and " << j << " are alive together and share bytes";
    }
  }
}

TEST(MemoryPlan, AChainReusesTheBlocksOfDeadTensors) {
  // x0 -> x1 -> x2 -> x3, each read only by the next step: two blocks suffice.
  std::vector<Lifetime> t = {{1000, -1, 0}, {1000, 0, 1}, {1000, 1, 2}, {1000, 2, 3}};
  std::vector<size_t> off;
  const size_t total = planOffsets(t, 64, off);
  expectNoConflicts(t, off, total, 64);
  EXPECT_EQ(total, 2 * 1024u);
  EXPECT_EQ(off[2], off[0]);  // x2 takes x0's block once x0 is dead
}

TEST(MemoryPlan, TensorsAliveTogetherGetDisjointBytes) {
  std::vector<Lifetime> t = {{100, 0, 5}, {200, 1, 2}, {50, 2, 4}, {0, 3, 3}, {300, 3, 5}};
  std::vector<size_t> off;
  const size_t total = planOffsets(t, 64, off);
  expectNoConflicts(t, off, total, 64);
}

TEST(MemoryPlan, RandomLifetimesNeverConflictAndStayWithinTheSumOfSizes) {
  std::mt19937_64 rng(7);
  for (int round = 0; round < 200; ++round) {
    std::vector<Lifetime> t(1 + rng() % 40);
    size_t sum = 0;
    for (Lifetime &l : t) {
      l.bytes = rng() % 5000;
      l.first = static_cast<int64_t>(rng() % 30) - 1;
      l.last = l.first + static_cast<int64_t>(rng() % 10);
      sum += (std::max<size_t>(l.bytes, 1) + 63) / 64 * 64;
    }
    std::vector<size_t> off;
    const size_t total = planOffsets(t, 64, off);
    expectNoConflicts(t, off, total, 64);
    EXPECT_LE(total, sum);
  }
}

}  // namespace
}  // namespace ferry
