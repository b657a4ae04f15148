#include "loadgen/card_population.h"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <unordered_set>

#include "loadgen/countries.h"

namespace fraud::loadgen {
namespace {

bool luhnValid(const std::string& number) {
  unsigned sum = 0;
  for (size_t i = 0; i < number.size(); ++i) {
    unsigned d = static_cast<unsigned>(number[number.size() - 1 - i] - '0');
    if (i % 2 == 1) {
      d *= 2;
      if (d > 9) d -= 9;
    }
    sum += d;
  }
  return sum % 10 == 0;
}

// Test-only numbers (loadgen/README.md, "Card numbers"): no card network's prefix, and a check
// digit that fails Luhn, so no processor would accept one and no PAN scanner flags one.
TEST(CardPopulation, PansAreDistinctTestOnlyLuhnInvalidSixteenDigitNumbers) {
  for (const uint64_t seed : {3u, 7u}) {
    const CardPopulation population(200'000, seed, 3'600'000, 0.03);
    std::unordered_set<std::string> seen;
    for (uint32_t card = 0; card < population.size(); ++card) {
      const std::string pan = population.pan(card);
      ASSERT_EQ(pan.size(), 16u);
      ASSERT_EQ(pan.find_first_not_of("0123456789"), std::string::npos) << pan;
      ASSERT_EQ(pan.substr(0, 2), "00") << pan;
      ASSERT_FALSE(luhnValid(pan)) << pan;
      ASSERT_TRUE(seen.insert(pan).second) << "card " << card << " repeats " << pan;
    }
  }
}

TEST(CardPopulation, LargestPopulationStaysDistinct) {
  // The bijection holds for any 32-bit index: the largest indexes map to distinct numbers too.
  const CardPopulation population(UINT32_MAX, 1, 3'600'000, 0.03);
  std::unordered_set<std::string> seen;
  for (uint32_t card = UINT32_MAX - 100'000; card != 0; ++card) {
    ASSERT_TRUE(seen.insert(population.pan(card)).second) << card;
  }
  EXPECT_EQ(population.pan(UINT32_MAX).substr(0, 2), "00");
}

TEST(CardPopulation, LuhnCheckOfTheTestItselfAcceptsKnownValidNumbers) {
  // The helper above must be able to say "valid", or the Luhn-invalid assertion proves nothing.
  EXPECT_TRUE(luhnValid("4111111111111111"));
  EXPECT_TRUE(luhnValid("5105105105105100"));
  EXPECT_FALSE(luhnValid("4111111111111112"));
}

TEST(CardPopulation, ActivityIsSkewedByTier) {
  const CardPopulation population(1'000'000, 3, 3'600'000, 0.03);
  Xoshiro256 random(11);
  const int draws = 1'000'000;
  int hot = 0, quiet = 0;
  for (int i = 0; i < draws; ++i) {
    const uint32_t card = population.pickByActivity(random);
    ASSERT_LT(card, population.size());
    if (card < 10'000) ++hot;
    if (card >= 200'000) ++quiet;
  }
  // 1% of the cards make 20% of the traffic; the quietest 80% make 40%.
  EXPECT_NEAR(hot / double(draws), 0.20, 0.005);
  EXPECT_NEAR(quiet / double(draws), 0.40, 0.005);
  for (int i = 0; i < 1000; ++i) EXPECT_GE(population.pickQuiet(random), 200'000u);
}

TEST(CardPopulation, OrdinaryTravelNeverPutsThreeCountriesInOneWindow) {
  const int64_t window = 600'000;
  const int64_t period = 3'600'000;
  const CardPopulation population(10'000, 5, period, 0.5);  // much travel, to stress it
  int travelling = 0;
  for (uint32_t card = 0; card < 2'000; ++card) {
    const size_t home = population.homeCountry(card);
    for (int64_t start = 1'700'000'000'000; start < 1'700'000'000'000 + 6 * period;
         start += 60'000) {
      std::set<size_t> countries;
      for (int64_t t = start; t <= start + window; t += 10'000) {
        countries.insert(population.countryAt(card, t));
      }
      ASSERT_LE(countries.size(), 2u) << "card " << card << " at " << start;
      if (countries.count(home) == 0) ++travelling;
    }
  }
  EXPECT_GT(travelling, 0);  // the cards do travel
}

TEST(CardPopulation, SameSeedSameCardsOtherSeedOtherCards) {
  const CardPopulation a(1000, 1, 3'600'000, 0.03);
  const CardPopulation b(1000, 1, 3'600'000, 0.03);
  const CardPopulation c(1000, 2, 3'600'000, 0.03);
  int differing = 0;
  for (uint32_t card = 0; card < 1000; ++card) {
    EXPECT_EQ(a.pan(card), b.pan(card));
    EXPECT_EQ(a.homeCountry(card), b.homeCountry(card));
    if (a.pan(card) != c.pan(card)) ++differing;
  }
  EXPECT_GT(differing, 990);
}

}  // namespace
}  // namespace fraud::loadgen
