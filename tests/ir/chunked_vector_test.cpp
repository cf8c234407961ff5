// tests/ir/chunked_vector_test.cpp — the storage of values, nodes and params: elements never
// move while more are added, copies are deep, truncation destroys exactly the tail.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "ir/chunked_vector.h"

namespace ferry {
namespace {

TEST(ChunkedVector, ElementsNeverMoveWhileItGrowsAcrossChunks) {
  ChunkedVector<std::string, 2> v;  // chunks of 4: growth crosses many
  std::vector<const std::string *> where;
  for (int i = 0; i < 37; ++i) {
    where.push_back(&v.emplace_back("value number " + std::to_string(i)));
    for (int j = 0; j <= i; ++j)
      ASSERT_EQ(&v[static_cast<size_t>(j)], where[static_cast<size_t>(j)]);
  }
  EXPECT_EQ(v.size(), 37u);
  EXPECT_EQ(v.back(), "value number 36");
  int i = 0;
  for (const std::string &s : v) EXPECT_EQ(s, "value number " + std::to_string(i++));
  EXPECT_EQ(i, 37);
}

TEST(ChunkedVector, CopiesAreDeepAndMovesTakeTheStorage) {
  ChunkedVector<std::string, 2> a;
  for (int i = 0; i < 10; ++i) a.push_back(std::to_string(i));
  ChunkedVector<std::string, 2> b = a;
  b[3] = "changed";
  EXPECT_EQ(a[3], "3");
  const std::string *fifth = &a[5];
  ChunkedVector<std::string, 2> c = std::move(a);
  EXPECT_EQ(&c[5], fifth);
  EXPECT_TRUE(a.empty());  // NOLINT(bugprone-use-after-move): moved-from is empty by contract
  a = c;
  EXPECT_EQ(a.size(), 10u);
  EXPECT_EQ(a[9], "9");
}

TEST(ChunkedVector, TruncateDestroysTheTailAndGrowingReusesItsChunks) {
  auto counter = std::make_shared<int>(0);
  ChunkedVector<std::shared_ptr<int>, 2> v;
  for (int i = 0; i < 9; ++i) v.push_back(counter);
  EXPECT_EQ(counter.use_count(), 10);
  v.truncate(3);
  EXPECT_EQ(v.size(), 3u);
  EXPECT_EQ(counter.use_count(), 4);
  for (int i = 0; i < 6; ++i) v.push_back(counter);
  EXPECT_EQ(counter.use_count(), 10);
  v.clear();
  EXPECT_EQ(counter.use_count(), 1);
}

}  // namespace
}  // namespace ferry
