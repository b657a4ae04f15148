// The record pipeline shared by the live service, replay and verify (docs/rule.md §1–§6).
#include "detectors/record_pipeline.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "detectors/outcome_counts.h"
#include "detectors/record_headers.h"
#include "state/memory_card_store.h"

namespace fraud::detectors {
namespace {

using ::testing::HasSubstr;

int64_t fixedClock() { return 42; }

std::string record(const std::string& tx_id, const std::string& card, const char* country,
                   int64_t t) {
  return R"({"tx_id":")" + tx_id + R"(","card":")" + card + R"(","country":")" + country +
         R"(","event_time":)" + std::to_string(t) + "}";
}

class RecordPipelineTest : public ::testing::Test {
 protected:
  RecordPipeline pipeline(std::optional<int64_t> skew = std::nullopt) {
    return RecordPipeline(PipelineOptions{skew, &fixedClock}, hasher_);
  }
  CardHasher hasher_{"record-pipeline-test-key"};
  DetectorOptions options_;
  state::MemoryCardStore store_;
  PartitionDetector detector_{options_, store_};
};

TEST_F(RecordPipelineTest, ThirdCountryRendersTheAlertWithItsKey) {
  auto p = pipeline();
  std::string json;
  OutcomeCounts counts;
  auto first = p.process(record("a", "card-1", "DE", 1000), std::nullopt, detector_, json);
  counts.count(first);
  EXPECT_FALSE(first.detected.alert);
  auto second = p.process(record("b", "card-1", "FR", 2000), std::nullopt, detector_, json);
  counts.count(second);
  EXPECT_FALSE(second.detected.alert);
  EXPECT_TRUE(json.empty());
  const auto outcome = p.process(record("c", "card-1", "IT", 3000), std::nullopt, detector_, json);
  counts.count(outcome);
  ASSERT_TRUE(outcome.detected.alert);
  ASSERT_TRUE(outcome.alert_key);
  EXPECT_EQ(outcome.alert_key->idempotency_key, outcome.alert_key->alert_id + ":1");
  EXPECT_EQ(outcome.detected.alert->card_ref, hasher_.hash("card-1"));
  EXPECT_EQ(outcome.alert_json_size, json.size());
  EXPECT_THAT(json, HasSubstr(R"("idempotency_key":")" + outcome.alert_key->idempotency_key));
  EXPECT_THAT(json, HasSubstr(R"("detected_at":42)"));
  EXPECT_EQ(counts.records, 3u);
  EXPECT_EQ(counts.alerts, 1u);
  EXPECT_EQ(counts.incidents, 1u);
}

// The live task needs the record's card (to compare with the Kafka key) and event time (for
// lateness) without reading the pipeline's slot back: the outcome carries them.
TEST_F(RecordPipelineTest, OutcomeCarriesTheCardAndEventTimeOfAnAcceptedRecord) {
  auto p = pipeline();
  std::string json;
  const std::string value = record("a", "card-7", "DE", 1234);
  const auto outcome = p.process(value, std::nullopt, detector_, json);
  ASSERT_FALSE(outcome.rejected);
  EXPECT_EQ(outcome.card, "card-7");
  EXPECT_EQ(outcome.event_time, 1234);
  EXPECT_EQ(outcome.detected.outcome, Outcome::kAccepted);
  // A late record still says what it was.
  (void)p.process(record("b", "card-8", "DE", 10'000'000), std::nullopt, detector_, json);
  const auto late = p.process(record("c", "card-9", "FR", 1'000), std::nullopt, detector_, json);
  EXPECT_EQ(late.detected.outcome, Outcome::kLateDropped);
  EXPECT_EQ(late.card, "card-9");
  EXPECT_EQ(late.event_time, 1'000);
}

TEST_F(RecordPipelineTest, RejectionsComeBackWithTheirReasonAndCountOnce) {
  auto p = pipeline(300'000);
  std::string json;
  OutcomeCounts counts;
  auto run = [&](std::string_view value, std::optional<int64_t> timestamp) {
    auto outcome = p.process(value, timestamp, detector_, json);
    counts.count(outcome);
    return outcome.rejected;
  };
  EXPECT_EQ(run("not json", 0), RejectReason::kInvalidJson);
  EXPECT_EQ(run("", std::nullopt), RejectReason::kInvalidJson);
  EXPECT_EQ(run(R"({"tx_id":"a","card":"card-9","country":"DE"})", 0), RejectReason::kMissingField);
  // docs/rule.md §1: beyond the record timestamp plus the allowed skew.
  EXPECT_EQ(run(record("f", "card-9", "DE", 400'001), 100'000), RejectReason::kFutureEventTime);
  EXPECT_EQ(run(record("g", "card-9", "DE", 400'000), 100'000), std::nullopt);
  EXPECT_EQ(counts.rejected[static_cast<size_t>(RejectReason::kInvalidJson)], 2u);
  EXPECT_EQ(counts.rejected[static_cast<size_t>(RejectReason::kMissingField)], 1u);
  EXPECT_EQ(counts.rejected[static_cast<size_t>(RejectReason::kFutureEventTime)], 1u);
  EXPECT_EQ(counts.accepted, 1u);
  EXPECT_EQ(counts.records, 5u) << "one count a record";
}

// Replay has no record timestamps, and a record without one (or a pipeline without a skew) is
// not checked: the check can only reject what it can compare.
TEST_F(RecordPipelineTest, NoTimestampOrNoSkewMeansNoFutureCheck) {
  std::string json;
  auto without_skew = pipeline();
  EXPECT_FALSE(
      without_skew.process(record("a", "card-9", "DE", 9'000'000), 0, detector_, json).rejected);
  auto with_skew = pipeline(0);
  EXPECT_FALSE(
      with_skew.process(record("b", "card-9", "DE", 9'000'001), std::nullopt, detector_, json)
          .rejected);
}

// A timestamp near the top of int64 must not overflow into a negative bound that rejects all.
TEST_F(RecordPipelineTest, HugeTimestampDoesNotOverflowTheSkewBound) {
  auto p = pipeline(300'000);
  std::string json;
  const auto outcome = p.process(record("a", "card-9", "DE", 1000),
                                 std::numeric_limits<int64_t>::max() - 10, detector_, json);
  EXPECT_FALSE(outcome.rejected);
  EXPECT_FALSE(isFutureEventTime(1000, std::numeric_limits<int64_t>::max(), 300'000));
  EXPECT_TRUE(isFutureEventTime(1000, std::numeric_limits<int64_t>::min(), 300'000));
}

// Replay's batching: all slots prepared, then detected in order, gives what one at a time gives.
TEST_F(RecordPipelineTest, BatchedPrepareThenDetectEqualsOneAtATime) {
  std::vector<std::string> records;
  const char* countries[] = {"DE", "FR", "IT", "ES", "PL"};
  for (int i = 0; i < 200; ++i) {
    records.push_back(i % 17 == 0 ? std::string("{broken")
                                  : record("t" + std::to_string(i), "card-" + std::to_string(i % 7),
                                           countries[i % 5], 1000 + i * 100));
  }
  auto single = pipeline();
  std::string single_json;
  OutcomeCounts single_counts;
  for (const auto& r : records) {
    single_counts.count(single.process(r, std::nullopt, detector_, single_json));
  }

  state::MemoryCardStore store;
  PartitionDetector detector(options_, store);
  auto batched = pipeline();
  std::string batched_json;
  OutcomeCounts batched_counts;
  for (size_t start = 0; start < records.size(); start += RecordPipeline::kSlots) {
    const size_t n = std::min(RecordPipeline::kSlots, records.size() - start);
    for (size_t i = 0; i < n; ++i) {
      (void)batched.prepare(i, records[start + i], std::nullopt, store);
    }
    batched.warm(n, store);
    for (size_t i = 0; i < n; ++i) {
      batched.warmAhead(i, n, store);
      batched_counts.count(batched.detect(i, detector, batched_json));
    }
  }
  EXPECT_FALSE(single_json.empty());
  EXPECT_EQ(batched_json, single_json);
  EXPECT_EQ(batched_counts.summaryJson(), single_counts.summaryJson());
  EXPECT_EQ(single_counts.records, records.size());
}

// The live task recreates its detector on a rewind; the pipeline keeps working with the new one.
TEST_F(RecordPipelineTest, WorksWithADetectorTheCallerReplaces) {
  auto p = pipeline();
  std::string json;
  (void)p.process(record("a", "card-9", "DE", 1000), std::nullopt, detector_, json);
  (void)p.process(record("b", "card-9", "FR", 2000), std::nullopt, detector_, json);
  state::MemoryCardStore fresh_store;
  PartitionDetector fresh(options_, fresh_store);
  EXPECT_FALSE(
      p.process(record("c", "card-9", "IT", 3000), std::nullopt, fresh, json).detected.alert);
  EXPECT_EQ(fresh_store.cardCount(), 1u);
}

TEST(RecordHeaders, NamesAreTheOnesTheSpecAndConsumersUse) {
  EXPECT_EQ(headers::kIdempotencyKey, "idempotency-key");
  EXPECT_EQ(headers::kRejectReason, "reject-reason");
  EXPECT_EQ(headers::kSourceTopic, "source-topic");
  EXPECT_EQ(headers::kSourcePartition, "source-partition");
  EXPECT_EQ(headers::kSourceOffset, "source-offset");
  EXPECT_EQ(headers::kOriginalSize, "original-size");
  EXPECT_EQ(headers::kTruncated, "truncated");
}

}  // namespace
}  // namespace fraud::detectors
