#include "state/card_map.h"

#include <gtest/gtest.h>

#include <map>
#include <random>

namespace fraud::state {
namespace {

detectors::CardRef refOf(uint64_t n) {
  detectors::CardRef ref;
  std::mt19937_64 random(n);
  for (auto& b : ref.bytes) b = static_cast<uint8_t>(random());
  return ref;
}

TEST(CardMap, BehavesLikeAStdMapUnderRandomInsertsAndErases) {
  CardMap<int> map;
  std::map<detectors::CardRef, int> model;
  std::mt19937_64 random(7);
  for (int step = 0; step < 200'000; ++step) {
    const auto ref = refOf(random() % 5000);
    if (random() % 3 == 0) {
      EXPECT_EQ(map.erase(ref), model.erase(ref) == 1);
    } else {
      bool inserted = false;
      map.insert(ref, inserted) = step;
      EXPECT_EQ(inserted, model.count(ref) == 0);
      model[ref] = step;
    }
  }
  ASSERT_EQ(map.size(), model.size());
  for (const auto& [ref, value] : model) {
    const int* found = map.find(ref);
    ASSERT_NE(found, nullptr);
    EXPECT_EQ(*found, value);
  }
  size_t visited = 0;
  map.forEach([&](const detectors::CardRef& ref, int value) {
    ++visited;
    EXPECT_EQ(model.at(ref), value);
  });
  EXPECT_EQ(visited, model.size());
}

TEST(CardMap, KeysSharingAHomeSlotSurviveErasureOfEachOther) {
  // Same first eight bytes: same hash, so they probe the same run.
  CardMap<int> map;
  std::vector<detectors::CardRef> refs(5);
  for (size_t i = 0; i < refs.size(); ++i) refs[i].bytes[31] = static_cast<uint8_t>(i);
  for (size_t i = 0; i < refs.size(); ++i) {
    bool inserted = false;
    map.insert(refs[i], inserted) = static_cast<int>(i);
  }
  EXPECT_TRUE(map.erase(refs[1]));
  EXPECT_TRUE(map.erase(refs[3]));
  EXPECT_EQ(map.find(refs[1]), nullptr);
  EXPECT_EQ(*map.find(refs[0]), 0);
  EXPECT_EQ(*map.find(refs[2]), 2);
  EXPECT_EQ(*map.find(refs[4]), 4);
  EXPECT_FALSE(map.erase(refs[3]));
}

}  // namespace
}  // namespace fraud::state
