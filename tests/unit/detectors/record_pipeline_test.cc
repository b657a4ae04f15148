// The record pipeline shared by the live service, replay and verify (docs/rule.md §1–§6).
#include "detectors/record_pipeline.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <vector>

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
  EXPECT_FALSE(
      p.process(record("a", "card-1", "DE", 1000), std::nullopt, detector_, json).detected.alert);
  EXPECT_FALSE(
      p.process(record("b", "card-1", "FR", 2000), std::nullopt, detector_, json).detected.alert);
  EXPECT_TRUE(json.empty());
  const auto outcome = p.process(record("c", "card-1", "IT", 3000), std::nullopt, detector_, json);
  ASSERT_TRUE(outcome.detected.alert);
  ASSERT_TRUE(outcome.alert_key);
  EXPECT_EQ(outcome.alert_key->idempotency_key, outcome.alert_key->alert_id + ":1");
  EXPECT_EQ(outcome.detected.alert->card_ref, hasher_.hash("card-1"));
  EXPECT_EQ(outcome.alert_json_size, json.size());
  EXPECT_THAT(json, HasSubstr(R"("idempotency_key":")" + outcome.alert_key->idempotency_key));
  EXPECT_THAT(json, HasSubstr(R"("detected_at":42)"));
  EXPECT_EQ(p.counts().records, 3u);
  EXPECT_EQ(p.counts().alerts, 1u);
}

TEST_F(RecordPipelineTest, RejectionsComeBackWithTheirReasonAndAreCounted) {
  auto p = pipeline(300'000);
  std::string json;
  EXPECT_EQ(p.process("not json", 0, detector_, json).rejected, RejectReason::kInvalidJson);
  EXPECT_EQ(p.process("", std::nullopt, detector_, json).rejected, RejectReason::kInvalidJson);
  EXPECT_EQ(
      p.process(R"({"tx_id":"a","card":"card-9","country":"DE"})", 0, detector_, json).rejected,
      RejectReason::kMissingField);
  // docs/rule.md §1: beyond the record timestamp plus the allowed skew.
  const auto future = p.process(record("f", "card-9", "DE", 400'001), 100'000, detector_, json);
  EXPECT_EQ(future.rejected, RejectReason::kFutureEventTime);
  EXPECT_EQ(p.process(record("g", "card-9", "DE", 400'000), 100'000, detector_, json).rejected,
            std::nullopt);
  EXPECT_EQ(p.counts().rejected[static_cast<size_t>(RejectReason::kInvalidJson)], 2u);
  EXPECT_EQ(p.counts().rejected[static_cast<size_t>(RejectReason::kFutureEventTime)], 1u);
  EXPECT_EQ(p.counts().accepted, 1u);
  EXPECT_EQ(p.counts().records, 5u);
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
  for (const auto& r : records) (void)single.process(r, std::nullopt, detector_, single_json);

  state::MemoryCardStore store;
  PartitionDetector detector(options_, store);
  auto batched = pipeline();
  std::string batched_json;
  for (size_t start = 0; start < records.size(); start += RecordPipeline::kSlots) {
    const size_t n = std::min(RecordPipeline::kSlots, records.size() - start);
    for (size_t i = 0; i < n; ++i) {
      (void)batched.prepare(i, records[start + i], std::nullopt, store);
    }
    batched.warm(n, store);
    for (size_t i = 0; i < n; ++i) {
      batched.warmAhead(i, n, store);
      (void)batched.detect(i, detector, batched_json);
    }
  }
  EXPECT_FALSE(single_json.empty());
  EXPECT_EQ(batched_json, single_json);
  EXPECT_EQ(batched.counts().summaryJson(), single.counts().summaryJson());
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

TEST_F(RecordPipelineTest, TakeCountsReturnsTheIntervalAndStartsAgain) {
  auto p = pipeline();
  std::string json;
  (void)p.process("x", std::nullopt, detector_, json);
  EXPECT_EQ(p.takeCounts().records, 1u);
  EXPECT_EQ(p.counts().records, 0u);
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
