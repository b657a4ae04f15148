#include "detectors/card_ref.h"

#include <gtest/gtest.h>

#include <string>

namespace fraud::detectors {
namespace {

TEST(CardHasher, MatchesRfc4231TestCase2) {
  const CardHasher hasher("Jefe");
  EXPECT_EQ(hasher.hash("what do ya want for nothing?").hex(),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
}

TEST(CardHasher, HashesKeysLongerThanTheBlockFirst) {
  const CardHasher hasher(std::string(131, '\xaa'));
  EXPECT_EQ(hasher.hash("Test Using Larger Than Block-Size Key - Hash Key First").hex(),
            "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54");
}

TEST(CardHasher, SameHasherGivesSameRefForRepeatedCalls) {
  const CardHasher hasher("test-key");
  // Expected value from Python's hmac module, an independent implementation.
  const std::string expected = "b9a296a413d12fc678c4027233b1926dccb9bc80f18f07061a9f429d8d8a09e7";
  EXPECT_EQ(hasher.hash("4111111111111111").hex(), expected);
  EXPECT_EQ(hasher.hash("4111111111111111").hex(), expected);
  EXPECT_NE(hasher.hash("4111111111111112").hex(), expected);
}

TEST(AlertId, IsFirst32HexOfSha256OfRefColonStart) {
  const auto ref =
      CardRef::fromHex("b9a296a413d12fc678c4027233b1926dccb9bc80f18f07061a9f429d8d8a09e7");
  ASSERT_TRUE(ref.has_value());
  EXPECT_EQ(alertId(*ref, 1700000000000), "f54a1336b61e275d3431e5d65e8aadaf");
}

TEST(CardRef, HexRoundTripsAndRejectsOtherText) {
  const std::string hex = "00ff10ab" + std::string(56, '7');
  const auto ref = CardRef::fromHex(hex);
  ASSERT_TRUE(ref.has_value());
  EXPECT_EQ(ref->hex(), hex);
  EXPECT_FALSE(CardRef::fromHex("00FF10AB" + std::string(56, '7')));  // upper case
  EXPECT_FALSE(CardRef::fromHex(std::string(63, 'a')));
  EXPECT_FALSE(CardRef::fromHex(std::string(65, 'a')));
  EXPECT_FALSE(CardRef::fromHex(std::string(63, 'a') + "g"));
}

}  // namespace
}  // namespace fraud::detectors
