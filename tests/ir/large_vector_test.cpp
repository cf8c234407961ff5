// tests/ir/large_vector_test.cpp — LargeVector: small arrays as usual, large ones on 2 MiB pages,
// both behaving as std::vector through growth, copies and frees.
#include <gtest/gtest.h>

#include <cstdint>
#include <numeric>

#include "ir/large_vector.h"

namespace ferry {
namespace {

TEST(LargeVector, GrowsCopiesAndFreesLikeAVector) {
  LargeVector<int32_t> v;
  for (int32_t i = 0; i < 3'000'000; ++i) v.push_back(i);  // crosses 2 MiB while growing
  EXPECT_EQ(v.size(), 3'000'000u);
  EXPECT_EQ(std::accumulate(v.begin(), v.end(), int64_t{0}), int64_t{2999999} * 3000000 / 2);
  LargeVector<int32_t> copy = v;
  copy[123] = -1;
  EXPECT_EQ(v[123], 123);
  v.assign(10, 7);  // shrinks its contents, keeps its storage
  v.shrink_to_fit();
  EXPECT_EQ(v, LargeVector<int32_t>(10, 7));
  LargeVector<double> zeros(1'000'000, 0.0);
  EXPECT_EQ(std::accumulate(zeros.begin(), zeros.end(), 0.0), 0.0);
}

TEST(LargeVector, LargeArraysStartOnA2MiBBoundary) {
  // The point of the allocator: an array from 2 MiB up can be backed by huge pages only if it is
  // aligned to them (where the platform supports them; elsewhere operator new's alignment).
  void *p = allocateLarge(size_t{5} << 20);
  ASSERT_NE(p, nullptr);
#if defined(__linux__) && !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
  EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % (size_t{2} << 20), 0u);
#endif
  auto *bytes = static_cast<unsigned char *>(p);
  for (size_t i = 0; i < (size_t{5} << 20); i += 4096) bytes[i] = static_cast<unsigned char>(i);
  EXPECT_EQ(bytes[4096 * 3], static_cast<unsigned char>(4096 * 3));
  releaseLarge(p, size_t{5} << 20);
  void *small = allocateLarge(100);
  ASSERT_NE(small, nullptr);
  releaseLarge(small, 100);
  EXPECT_THROW(allocateLarge(SIZE_MAX - 100), std::bad_alloc);
}

}  // namespace
}  // namespace ferry
