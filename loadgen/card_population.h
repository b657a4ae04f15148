#pragma once

#include <cstdint>
#include <string>

#include "detectors/transaction.h"
#include "loadgen/random.h"

namespace fraud::loadgen {

// The cards of the model, derived from (seed, card index) by hashing: nothing is stored per card.
//
// Activity is skewed in three tiers: 1% of the cards make 20% of the transactions, 19% make 40%,
// the remaining 80% make 40% (populations under 100 cards are uniform).
//
// Travel: time is cut into per-card periods of `travel_period_ms` (each card with its own phase);
// in each period a card is abroad in one destination with probability `travel_fraction`, else at
// home. As long as the period is longer than the detection window, any window holds at most two
// of a card's countries: ordinary traffic alone never reaches a threshold of 3.
class CardPopulation {
 public:
  CardPopulation(uint32_t cards, uint64_t seed, int64_t travel_period_ms, double travel_fraction);

  [[nodiscard]] uint32_t size() const { return cards_; }
  [[nodiscard]] uint32_t pickByActivity(Xoshiro256& random) const;
  // A card of the least active tier, where a card never comes near the per-card event cap.
  [[nodiscard]] uint32_t pickQuiet(Xoshiro256& random) const;

  // A 16-digit test-only number that no card network issues or accepts: prefix "00" (ISO/IEC
  // 7812 major industry identifier 0, no payment brand) and a check digit that fails Luhn
  // (loadgen/README.md, "Card numbers"). Distinct cards get distinct numbers.
  static constexpr size_t kPanLength = 16;
  void writePan(uint32_t card, char* out) const;
  [[nodiscard]] std::string pan(uint32_t card) const;

  // Index into the country table (countries.h).
  [[nodiscard]] size_t homeCountry(uint32_t card) const;
  [[nodiscard]] size_t countryAt(uint32_t card, detectors::EventTime t) const;

 private:
  uint32_t cards_;
  uint64_t seed_;
  int64_t travel_period_ms_;
  double travel_fraction_;
  uint32_t hot_end_;   // cards [0, hot_end_) are the hot tier
  uint32_t warm_end_;  // [hot_end_, warm_end_) warm, [warm_end_, cards_) quiet
  uint64_t pan_offset_;
};

}  // namespace fraud::loadgen
