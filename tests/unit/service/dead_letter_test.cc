#include "service/dead_letter.h"

#include <gtest/gtest.h>

#include <string>

namespace fraud::service {
namespace {

TEST(DeadLetter, RecordThatFitsIsKeptAsItCame) {
  const auto letter = fitDeadLetter("key", std::string_view("value"), 100, 10'000);
  EXPECT_FALSE(letter.truncated);
  EXPECT_EQ(letter.key, "key");
  EXPECT_EQ(letter.value, std::string_view("value"));
}

TEST(DeadLetter, OversizedValueIsCutAndTheKeyKept) {
  const std::string value(1'000'100, 'v');
  const auto letter = fitDeadLetter("key", value, 200, 1'000'000);
  ASSERT_TRUE(letter.truncated);
  EXPECT_EQ(letter.key, "key");
  EXPECT_EQ(letter.original_value_size, value.size());
  EXPECT_LE(letter.key.size() + letter.value->size() + 200 + kDeadLetterReserveBytes, 1'000'000u);
  EXPECT_GT(letter.value->size(), 990'000u) << "cut only as much as needed";
}

TEST(DeadLetter, OversizedKeyIsCutTooAndTheTombstoneStaysNull) {
  const std::string key(2'000'000, 'k');
  const auto letter = fitDeadLetter(key, std::nullopt, 100, 1'000'000);
  ASSERT_TRUE(letter.truncated);
  EXPECT_FALSE(letter.value.has_value());
  EXPECT_EQ(letter.original_key_size, key.size());
  EXPECT_LE(letter.key.size() + 100 + kDeadLetterReserveBytes, 1'000'000u);
}

TEST(DeadLetter, BothHugeShareTheBudget) {
  const std::string key(800'000, 'k');
  const std::string value(800'000, 'v');
  const auto letter = fitDeadLetter(key, value, 0, 1'000'000);
  ASSERT_TRUE(letter.truncated);
  EXPECT_LE(letter.key.size() + letter.value->size() + kDeadLetterReserveBytes, 1'000'000u);
  EXPECT_GT(letter.key.size(), 0u);
  EXPECT_GT(letter.value->size(), 0u);
}

TEST(DeadLetter, LimitBelowTheReserveLeavesNothingButNeverFails) {
  const auto letter = fitDeadLetter("key", std::string_view("value"), 10, 100);
  EXPECT_TRUE(letter.truncated);
  EXPECT_TRUE(letter.key.empty());
  EXPECT_TRUE(letter.value->empty());
}

}  // namespace
}  // namespace fraud::service
