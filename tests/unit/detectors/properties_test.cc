// Properties of the detector over generated streams (seeded, so a failure reproduces).
#include <gtest/gtest.h>

#include <algorithm>
#include <deque>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "detectors/alert.h"
#include "detectors/partition_detector.h"
#include "state/memory_card_store.h"

namespace fraud::detectors {
namespace {

constexpr EventTime kStart = 1'700'000'000'000;

struct Record {
  std::string tx_id;
  std::string card;
  Country country;
  EventTime time = 0;
};

// Few cards and countries, so windows fill and incidents open, escalate and end.
std::vector<Record> generate(uint64_t seed, int count, int cards, int64_t step_ms) {
  static const Country kCountries[] = {Country::of('D', 'E'), Country::of('F', 'R'),
                                       Country::of('I', 'T'), Country::of('E', 'S'),
                                       Country::of('P', 'L')};
  std::mt19937_64 random(seed);
  std::vector<Record> records;
  for (int i = 0; i < count; ++i) {
    records.push_back({"tx-" + std::to_string(i),
                       "card-" + std::to_string(random() % static_cast<uint64_t>(cards)),
                       kCountries[random() % 5], kStart + i * step_ms});
  }
  return records;
}

// Runs `records` in order through a fresh detector; alerts as JSON with detected_at fixed.
std::vector<std::string> alertsOf(const std::vector<Record>& records,
                                  const DetectorOptions& options) {
  const CardHasher hasher("property-key");
  state::MemoryCardStore store;
  PartitionDetector detector(options, store);
  std::vector<std::string> alerts;
  for (const auto& r : records) {
    const auto result =
        detector.process(hasher.hash(r.card), Transaction{r.tx_id, r.card, r.country, r.time});
    if (!result.alert) continue;
    std::string json;
    appendAlertJson(json, *result.alert, AlertKey::of(*result.alert), options, 0);
    alerts.push_back(std::move(json));
  }
  return alerts;
}

TEST(DetectorProperties, SameInputTwiceGivesByteIdenticalAlerts) {
  DetectorOptions options;
  options.window_ms = 60'000;
  options.grace_ms = 20'000;
  for (uint64_t seed = 1; seed <= 5; ++seed) {
    auto records = generate(seed, 20'000, 300, 50);
    // Out of order within the grace, and some exact duplicates.
    std::mt19937_64 random(seed * 77);
    for (auto& r : records) r.time -= static_cast<EventTime>(random() % 20'000);
    for (int i = 0; i < 200; ++i) records.push_back(records[random() % records.size()]);
    const auto first = alertsOf(records, options);
    EXPECT_GT(first.size(), 100u);
    EXPECT_EQ(alertsOf(records, options), first) << "seed " << seed;
  }
}

TEST(DetectorProperties, StateStaysBoundedByTheLiveHorizonOverALongStream) {
  DetectorOptions options;
  options.window_ms = 10'000;
  options.grace_ms = 2'000;
  const CardHasher hasher("property-key");
  state::MemoryCardStore store;
  PartitionDetector detector(options, store);
  // 400k records over 100k cards, stream time 40x the horizon: cards come and go.
  const auto records = generate(7, 400'000, 100'000, 3);
  std::deque<std::pair<EventTime, std::string>> recent;  // accepted (time, card), oldest first
  size_t max_cards = 0;
  for (size_t i = 0; i < records.size(); ++i) {
    const auto& r = records[i];
    const auto ref = hasher.hash(r.card);
    if (detector.process(ref, Transaction{r.tx_id, r.card, r.country, r.time}).outcome ==
        Outcome::kAccepted) {
      recent.emplace_back(r.time, r.card);
    }
    const EventTime live_from = *detector.streamTime() - options.grace_ms - options.window_ms;
    // An incident may reach W past its card's last event, so a card can stay W longer.
    while (!recent.empty() && recent.front().first < live_from - options.window_ms) {
      recent.pop_front();
    }
    if (i % 1000 != 999) continue;
    std::set<std::string> live_cards;
    for (const auto& [time, card] : recent) live_cards.insert(card);
    EXPECT_LE(store.cardCount(), live_cards.size()) << "after record " << i;
    size_t events = 0;
    store.forEach([&](const CardRef&, const CardState& state) {
      EXPECT_GE(state.lastRelevantTime(), live_from) << "a dead card is still held";
      events += state.events.size();
    });
    EXPECT_LE(events, recent.size()) << "after record " << i;
    max_cards = std::max(max_cards, store.cardCount());
  }
  // A horizon of 12 s at 3 ms a record holds about 4,000 records: nowhere near 100k cards.
  EXPECT_LT(max_cards, 10'000u);
}

TEST(DetectorProperties, ArrivalOrderWithinGraceDoesNotDecideWhichCardsAlert) {
  DetectorOptions options;
  options.window_ms = 30'000;
  options.grace_ms = 10'000;
  for (uint64_t seed = 1; seed <= 5; ++seed) {
    const auto in_order = generate(seed, 10'000, 200, 20);
    auto with_duplicates = in_order;
    std::mt19937_64 random(seed * 31);
    for (int i = 0; i < 100; ++i) {
      with_duplicates.push_back(in_order[random() % in_order.size()]);  // exact copies
    }
    auto alertedCards = [&](const std::vector<Record>& records) {
      std::set<std::string> cards;
      const CardHasher hasher("property-key");
      state::MemoryCardStore store;
      PartitionDetector detector(options, store);
      for (const auto& r : records) {
        const auto result =
            detector.process(hasher.hash(r.card), Transaction{r.tx_id, r.card, r.country, r.time});
        EXPECT_NE(result.outcome, Outcome::kLateDropped) << "the order broke the grace";
        if (result.alert) cards.insert(r.card);
      }
      return cards;
    };
    // Sorting by time + U(0, G) delays no record more than G behind a later-stamped one.
    auto shuffle = [&](uint64_t order_seed) {
      std::mt19937_64 order(order_seed);
      std::vector<std::pair<EventTime, Record>> keyed;
      for (const auto& r : with_duplicates) {
        keyed.emplace_back(r.time + static_cast<EventTime>(order() % (options.grace_ms + 1)), r);
      }
      std::stable_sort(keyed.begin(), keyed.end(),
                       [](const auto& a, const auto& b) { return a.first < b.first; });
      std::vector<Record> shuffled;
      for (auto& [key, r] : keyed) shuffled.push_back(std::move(r));
      return shuffled;
    };
    const auto expected = alertedCards(in_order);
    EXPECT_GT(expected.size(), 10u);
    for (uint64_t order_seed = 1; order_seed <= 4; ++order_seed) {
      EXPECT_EQ(alertedCards(shuffle(seed * 100 + order_seed)), expected)
          << "seed " << seed << " order " << order_seed;
    }
  }
}

}  // namespace
}  // namespace fraud::detectors
