// The traffic model: deterministic under its seed, each kind of record at its rate, lateness as
// configured, and injected scenarios that the detector really alerts on (and nothing else).
#include "loadgen/traffic_model.h"

#include <gtest/gtest.h>

#include <array>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "detectors/card_ref.h"
#include "detectors/partition_detector.h"
#include "detectors/partitioner.h"
#include "detectors/record_codec.h"
#include "state/memory_card_store.h"

namespace fraud::loadgen {
namespace {

using detectors::EventTime;

constexpr EventTime kStart = 1'700'000'000'000;

TrafficOptions testOptions() {
  TrafficOptions options;
  options.seed = 42;
  options.start_time = kStart;
  options.cards = 100'000;
  options.fraud_rate = 40;
  return options;
}

std::vector<GeneratedRecord> generate(const TrafficOptions& options, size_t count) {
  TrafficModel model(options);
  std::vector<GeneratedRecord> records(count);
  for (auto& record : records) model.next(record);
  return records;
}

TEST(TrafficModel, SameSeedGivesTheSameRecordsByteForByte) {
  const auto a = generate(testOptions(), 100'000);
  const auto b = generate(testOptions(), 100'000);
  for (size_t i = 0; i < a.size(); ++i) {
    ASSERT_EQ(a[i].key, b[i].key) << i;
    ASSERT_EQ(a[i].value, b[i].value) << i;
    ASSERT_EQ(a[i].kind, b[i].kind) << i;
  }
}

TEST(TrafficModel, AnotherSeedGivesOtherRecords) {
  auto options = testOptions();
  const auto a = generate(options, 1000);
  options.seed = 43;
  const auto b = generate(options, 1000);
  int same = 0;
  for (size_t i = 0; i < a.size(); ++i) same += a[i].value == b[i].value ? 1 : 0;
  EXPECT_LT(same, 5);
}

TEST(TrafficModel, ClockAdvancesAtTheModelRate) {
  auto options = testOptions();
  options.model_rate = 4000;
  TrafficModel model(options);
  GeneratedRecord record;
  for (int i = 0; i < 4001; ++i) model.next(record);
  EXPECT_EQ(record.sent_at, kStart + 1000);
  EXPECT_EQ(model.clockAt(3), kStart + 0);  // 0.25 ms per record, floored
  EXPECT_EQ(model.clockAt(4), kStart + 1);
  options.model_rate = 20'000;
  const TrafficModel exact(options);
  for (uint64_t i = 0; i < 1'000'000; i += 20) ASSERT_EQ(exact.clockAt(i), kStart + i / 20);
  options.model_rate = 2.5;
  const TrafficModel fractional(options);
  EXPECT_EQ(fractional.clockAt(5), kStart + 2000);
}

TEST(TrafficModel, EachKindAppearsAtItsConfiguredRate) {
  auto options = testOptions();
  options.malformed_fraction = 0.01;
  options.duplicate_fraction = 0.02;
  options.beyond_grace_fraction = 0.005;
  const size_t n = 1'000'000;
  TrafficModel model(options);
  GeneratedRecord record;
  std::array<size_t, kRecordKindCount> kinds{};
  for (size_t i = 0; i < n; ++i) {
    model.next(record);
    ++kinds[static_cast<size_t>(record.kind)];
  }
  const auto share = [&](RecordKind kind) {
    return static_cast<double>(kinds[static_cast<size_t>(kind)]) / n;
  };
  EXPECT_NEAR(share(RecordKind::kMalformed), 0.01, 0.001);
  EXPECT_NEAR(share(RecordKind::kDuplicate), 0.02, 0.002);
  EXPECT_NEAR(share(RecordKind::kBeyondGrace), 0.005, 0.0007);
  // 40 scenarios a second over 50 s of model time, each of 3..7 records.
  const auto completed = model.takeCompletedScenarios();
  const auto open = model.takeOpenScenarios();
  const double scenarios = static_cast<double>(completed.size() + open.size());
  EXPECT_NEAR(scenarios, 2000, 150);
  size_t fraud_records = 0;
  for (const auto& s : completed) fraud_records += s.tx_ids.size();
  for (const auto& s : open) fraud_records += s.tx_ids.size();
  EXPECT_EQ(fraud_records, kinds[static_cast<size_t>(RecordKind::kFraud)]);
}

TEST(TrafficModel, EveryRecordDecodesAsItsKindSays) {
  auto options = testOptions();
  options.malformed_fraction = 0.02;
  options.rfc3339_fraction = 0.2;
  TrafficModel model(options);
  detectors::RecordDecoder decoder;
  GeneratedRecord record;
  std::set<std::string> tx_ids;
  for (int i = 0; i < 200'000; ++i) {
    model.next(record);
    const auto decoded = decoder.decode(record.value);
    if (record.kind == RecordKind::kMalformed) {
      ASSERT_FALSE(decoded.ok()) << record.value;
      ASSERT_EQ(decoded.rejected, record.rejection) << record.value;
      continue;
    }
    ASSERT_TRUE(decoded.ok()) << record.value;
    EXPECT_EQ(decoded.tx.card, record.key);
    EXPECT_EQ(decoded.tx.event_time, record.event_time);
    EXPECT_LE(record.event_time, record.sent_at);
    const bool fresh = tx_ids.insert(std::string(decoded.tx.tx_id)).second;
    EXPECT_EQ(fresh, record.kind != RecordKind::kDuplicate) << record.value;
  }
}

TEST(TrafficModel, LatenessStaysWithinMaxLatenessExceptBeyondGrace) {
  auto options = testOptions();
  options.max_lateness_ms = 90'000;
  options.beyond_grace_fraction = 0.01;
  const int64_t grace = options.detector.grace_ms;
  TrafficModel model(options);
  GeneratedRecord record;
  size_t organic = 0, over_a_second = 0, beyond = 0, beyond_late_enough = 0;
  int64_t longest = 0;
  for (int i = 0; i < 500'000; ++i) {
    model.next(record);
    const int64_t lateness = record.sent_at - record.event_time;
    ASSERT_GE(lateness, 0);
    if (record.kind == RecordKind::kBeyondGrace) {
      ++beyond;
      if (lateness > grace) ++beyond_late_enough;
    } else if (record.kind == RecordKind::kOrganic) {
      ++organic;
      ASSERT_LE(lateness, options.max_lateness_ms);
      if (lateness > 1000) ++over_a_second;
      longest = std::max(longest, lateness);
    } else if (record.kind == RecordKind::kFraud) {
      ASSERT_LE(lateness, 1000);
    }
  }
  EXPECT_EQ(beyond_late_enough, beyond);
  EXPECT_NEAR(beyond / 500'000.0, 0.01, 0.001);
  EXPECT_NEAR(over_a_second / double(organic), options.late_tail_fraction, 0.003);
  EXPECT_GT(longest, 60'000);  // the tail reaches far
}

// Runs the records through one detector per partition, as the service would, and returns the
// alerts by card_ref.
std::map<std::string, std::vector<detectors::Alert>> detect(
    const std::vector<GeneratedRecord>& records, const detectors::DetectorOptions& rule,
    const detectors::CardHasher& hasher) {
  constexpr int32_t kPartitions = 6;
  std::vector<std::unique_ptr<state::MemoryCardStore>> stores;
  std::vector<std::unique_ptr<detectors::PartitionDetector>> detectors_;
  for (int32_t p = 0; p < kPartitions; ++p) {
    stores.push_back(std::make_unique<state::MemoryCardStore>());
    detectors_.push_back(std::make_unique<detectors::PartitionDetector>(rule, *stores.back()));
  }
  detectors::RecordDecoder decoder;
  std::map<std::string, std::vector<detectors::Alert>> alerts;
  for (const auto& record : records) {
    const auto decoded = decoder.decode(record.value);
    if (!decoded.ok()) continue;
    const int32_t p = detectors::partitionCrc32(record.key, kPartitions);
    auto result =
        detectors_[static_cast<size_t>(p)]->process(hasher.hash(decoded.tx.card), decoded.tx);
    if (result.alert) alerts[result.alert->card_ref.hex()].push_back(*result.alert);
  }
  return alerts;
}

TEST(TrafficModel, InjectedScenariosAreAlertedAndNothingElseIs) {
  auto options = testOptions();
  options.duplicate_fraction = 0.01;
  options.beyond_grace_fraction = 0.002;
  TrafficModel model(options);
  std::vector<GeneratedRecord> records(400'000);
  for (auto& record : records) model.next(record);
  auto scenarios = model.takeCompletedScenarios();
  const size_t completed = scenarios.size();
  for (auto& open : model.takeOpenScenarios()) scenarios.push_back(std::move(open));

  const detectors::CardHasher hasher("model-test-key");
  const auto alerts = detect(records, options.detector, hasher);

  size_t must_alert = 0, escalating = 0;
  std::set<std::string> scenario_refs;
  for (const auto& scenario : scenarios) {
    const std::string ref = hasher.hash(scenario.card).hex();
    scenario_refs.insert(ref);
    if (!scenario.mustAlert(options.detector)) continue;
    ++must_alert;
    if (scenario.countries.size() > options.detector.threshold) ++escalating;
    const auto found = alerts.find(ref);
    ASSERT_NE(found, alerts.end()) << "scenario " << scenario.id << " raised no alert";
    // The recall rule verify applies: an alert whose window holds one of the scenario's times.
    bool covered = false;
    for (const auto& alert : found->second) {
      for (const EventTime t : scenario.event_times) {
        covered = covered || (alert.incident.start <= t && t <= alert.incident.end);
      }
    }
    EXPECT_TRUE(covered) << "scenario " << scenario.id;
  }
  EXPECT_GE(must_alert, completed);  // every completed scenario meets the rule
  EXPECT_GT(escalating, must_alert / 5);
  for (const auto& [ref, card_alerts] : alerts) {
    EXPECT_TRUE(scenario_refs.contains(ref)) << "ordinary traffic alerted on " << ref;
  }
  // Escalations reach the topic as later revisions.
  size_t revisions_above_one = 0;
  for (const auto& [ref, card_alerts] : alerts) {
    for (const auto& alert : card_alerts) revisions_above_one += alert.incident.revision > 1;
  }
  EXPECT_GT(revisions_above_one, 0u);
}

TEST(TrafficModel, ScenarioCardsAreNeverReused) {
  auto options = testOptions();
  options.cards = 2000;  // 1600 quiet cards for ~400 scenarios
  options.fraud_rate = 200;
  TrafficModel model(options);
  GeneratedRecord record;
  for (int i = 0; i < 40'000; ++i) model.next(record);
  auto scenarios = model.takeCompletedScenarios();
  for (auto& open : model.takeOpenScenarios()) scenarios.push_back(std::move(open));
  std::set<std::string> cards;
  for (const auto& s : scenarios) EXPECT_TRUE(cards.insert(s.card).second) << s.card;
  EXPECT_GT(scenarios.size(), 300u);
}

TEST(TrafficModel, ValidateReportsEveryProblem) {
  TrafficOptions options;
  options.model_rate = 0;
  options.duplicate_fraction = 2;
  options.detector.threshold = 0;
  EXPECT_GE(options.validate().size(), 3u);
  EXPECT_TRUE(TrafficOptions{}.validate().empty());
}

}  // namespace
}  // namespace fraud::loadgen
