// tests/ir/shared_text_test.cpp — SharedText (reason details) and FileName (interned paths): the
// two ways the IR shares text between the values and nodes of large graphs.
#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

#include "ir/diagnostics.h"
#include "ir/shared_text.h"

namespace ferry {
namespace {

TEST(SharedText, CopiesShareOneTextAndCompareByContent) {
  const std::string_view text = "cost model: cpu 35 \u00b5s vs cuda:0 1.2 \u00b5s";
  SharedText a(text);
  SharedText b = a;
  EXPECT_EQ(a.view().data(), b.view().data()) << "a copy shares the text";
  EXPECT_EQ(b, "cost model: cpu 35 \u00b5s vs cuda:0 1.2 \u00b5s");
  EXPECT_EQ(a, SharedText(std::string(a.view()))) << "equal texts made separately compare equal";
  EXPECT_FALSE(a == SharedText("cost model"));
  EXPECT_EQ(a.size(), a.view().size());

  a.clear();
  EXPECT_TRUE(a.empty());
  EXPECT_EQ(a, "");
  EXPECT_EQ(b.str(), "cost model: cpu 35 \u00b5s vs cuda:0 1.2 \u00b5s") << "the copy outlives";

  SharedText c;
  c = b;
  b = SharedText("other");
  EXPECT_EQ(c, "cost model: cpu 35 \u00b5s vs cuda:0 1.2 \u00b5s");
  c = c;  // self-assignment keeps it
  EXPECT_EQ(c.size(), text.size());
  SharedText moved = std::move(c);
  EXPECT_TRUE(c.empty());  // NOLINT(bugprone-use-after-move): moved-from is empty by contract
  EXPECT_EQ(moved.size(), text.size());
}

TEST(SharedText, EmptyTextsAllocateNothingAndConcatenateAsStrings) {
  EXPECT_TRUE(SharedText("").empty());
  EXPECT_TRUE(SharedText(std::string()).empty());
  SharedText t("fold");
  EXPECT_EQ(t + " at a.fy:3", "fold at a.fy:3");
  EXPECT_EQ(std::string("why: ") + t, "why: fold");
  EXPECT_EQ("why: " + t, "why: fold");
  std::string withNul("a\0b", 3);
  EXPECT_EQ(SharedText(withNul).size(), 3u) << "the length is kept, not a C string";
}

TEST(SharedText, CopiesAcrossThreadsCountEveryHolder) {
  // Each thread makes and drops many copies of one text; ASan and TSan builds check that the
  // count never frees it early or twice.
  SharedText shared("shared by every thread");
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&] {
      std::vector<SharedText> copies;
      for (int i = 0; i < 10000; ++i) copies.push_back(shared);
      for (const SharedText &c : copies) ASSERT_EQ(c, "shared by every thread");
    });
  for (std::thread &t : threads) t.join();
  EXPECT_EQ(shared, "shared by every thread");
}

TEST(FileName, EqualNamesAreOneInternedString) {
  std::string path = "/home/user/model.cpp";
  FileName a(path), b(std::string_view("/home/user/model.cpp")), c("/home/user/other.cpp");
  EXPECT_EQ(a.view().data(), b.view().data()) << "interned: one copy per distinct name";
  EXPECT_EQ(a, b);
  EXPECT_FALSE(a == c);
  path[0] = 'X';  // the caller's string is not referenced
  EXPECT_EQ(a.view(), "/home/user/model.cpp");
  EXPECT_TRUE(FileName().empty());
  EXPECT_TRUE(FileName("").empty());
  EXPECT_EQ(FileName(""), FileName());
  Location loc{a, 3, 4};
  Location copy = loc;
  EXPECT_EQ(copy, loc);
  EXPECT_EQ(copy.str(), "/home/user/model.cpp:3:4");
  // A `.fy` or builder location copies two pointers and two ints; an imported node's name is
  // shared (counted), not interned, so a process that imports many models frees them.
  static_assert(sizeof(Location) == 24, "a Location is a file, a line, a column and a node");
  Location imported{a, 13, 0, SharedText("node 'Gemm_3' (#12, Gemm)")};
  Location shared = imported;
  EXPECT_EQ(shared.node.view().data(), imported.node.view().data());
  EXPECT_EQ(shared.str(), "/home/user/model.cpp: node 'Gemm_3' (#12, Gemm)");
}

TEST(FileName, InternsFromManyThreadsAtOnce) {
  std::vector<std::thread> threads;
  std::vector<const char *> seen(8);
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 1000; ++i) FileName("thread" + std::to_string(i % 50) + ".fy");
      seen[t] = FileName("same.fy").view().data();
    });
  for (std::thread &t : threads) t.join();
  for (const char *p : seen) EXPECT_EQ(p, seen[0]);
}

}  // namespace
}  // namespace ferry
