// tests/ir/id_map_test.cpp — IdMap against std::unordered_map through growth and collisions.
#include <gtest/gtest.h>

#include <cstdint>
#include <unordered_map>

#include "ir/id_map.h"

namespace ferry {
namespace {

TEST(IdMap, AgreesWithAMapThroughGrowth) {
  IdMap map;
  std::unordered_map<uint64_t, int32_t> model;
  uint64_t state = 3;
  for (int i = 0; i < 50'000; ++i) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    // Packed (value, dtype, device) keys as the passes make them, many sharing their low bits.
    const uint64_t key = (state >> 40) << 32 | (state & 0x7) << 24 | (i % 3);
    auto [id, fresh] = map.tryEmplace(key, i);
    auto [it, modelFresh] = model.try_emplace(key, i);
    ASSERT_EQ(fresh, modelFresh) << i;
    ASSERT_EQ(id, it->second) << i;
  }
  EXPECT_EQ(map.size(), model.size());
  for (const auto &[key, id] : model) {
    const int32_t *found = map.get(key);
    ASSERT_NE(found, nullptr);
    EXPECT_EQ(*found, id);
  }
  EXPECT_EQ(map.get(uint64_t{1} << 62), nullptr);
  EXPECT_EQ(IdMap().get(5), nullptr) << "an empty map has no slots to look in";
}

TEST(IdMap, TheReferenceWritesTheStoredId) {
  IdMap map;
  map.reserve(10);
  auto [id, fresh] = map.tryEmplace(42, -1);
  EXPECT_TRUE(fresh);
  id = 7;  // filled in once the thing it names exists
  EXPECT_EQ(*map.get(42), 7);
  EXPECT_FALSE(map.tryEmplace(42, 9).second);
  EXPECT_EQ(*map.get(42), 7);
}

TEST(IdMapDeathTest, TheFreeMarkerIsNotAKey) {
  IdMap map;
  EXPECT_DEATH(map.tryEmplace(IdMap::kFree, 1), "IdMap key");
}

}  // namespace
}  // namespace ferry
