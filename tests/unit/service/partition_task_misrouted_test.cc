// PartitionTask and misrouted records (docs/rule.md §9): a record whose key the producers'
// partitioner maps to another partition is processed as part of this one all the same, counted
// for the metric (per topic and partition) and for /v1/partitions (following commits and
// rewinds), and logged rate-limited without its key (the card).
#include <gtest/gtest.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <memory>
#include <sstream>
#include <string>

#include "detectors/partitioner.h"
#include "service/partition_task.h"
#include "tests/unit/service/partition_task_fixture.h"

namespace fraud::service {
namespace {

using testing::txJson;

constexpr int32_t kPartitions = 4;

// The first of "card-10000", "card-10001", ... that crc32 maps to `partition` of kPartitions.
std::string cardIn(int32_t partition) {
  for (int i = 0;; ++i) {
    std::string card = "card-" + std::to_string(10'000 + i);
    if (detectors::partitionCrc32(card, kPartitions) == partition) return card;
  }
}

// The task of partition kPartition (3) of a 4-partition input keyed with crc32; the default
// logger captured; a wall clock the test moves.
class PartitionTaskMisroutedTest : public PartitionTaskTest {
 protected:
  PartitionTaskMisroutedTest() {
    harness_.context.input_partitioning =
        detectors::TopicPartitioning{detectors::Partitioner::kCrc32, kPartitions};
    harness_.context.wall_clock_ms = [this] { return now_ms_; };
    previous_logger_ = spdlog::default_logger();
    auto logger = std::make_shared<spdlog::logger>(
        "test", std::make_shared<spdlog::sinks::ostream_sink_st>(log_));
    logger->set_pattern("%l %v");
    spdlog::set_default_logger(logger);
  }
  ~PartitionTaskMisroutedTest() override { spdlog::set_default_logger(previous_logger_); }

  // This interval's misrouted records of the input topic's partition kPartition.
  uint64_t tallied() const {
    uint64_t records = 0;
    for (const MisroutedCount& count : harness_.interval.tally.misrouted) {
      EXPECT_EQ(count.topic, harness_.config.input_topic);
      EXPECT_EQ(count.partition, kPartition);
      records += count.records;
    }
    return records;
  }
  uint64_t shown() const { return task_.status(0).misrouted_records; }

  int64_t now_ms_ = 1'700'000'000'000;
  std::ostringstream log_;
  std::shared_ptr<spdlog::logger> previous_logger_;
};

TEST_F(PartitionTaskMisroutedTest, ARecordOfPartitionTwoHereIsCountedAndStillProcessed) {
  const std::string elsewhere = cardIn(2);
  const std::string here = cardIn(kPartition);
  EXPECT_EQ(feed(0, txJson("t1", elsewhere, "FR", 1'000), elsewhere),
            PartitionTask::Processed::kDone);
  EXPECT_EQ(feed(1, txJson("t2", here, "DE", 1'001), here), PartitionTask::Processed::kDone);

  EXPECT_EQ(tallied(), 1u) << "the record in its own partition is not counted";
  EXPECT_EQ(shown(), 1u);
  // Processed as part of this partition: accepted, its card's state held here.
  EXPECT_EQ(harness_.interval.tally.outcomes.accepted, 2u);
  EXPECT_EQ(harness_.interval.tally.key_mismatch, 0u);
  EXPECT_EQ(task_.lookup(harness_.hasher.hash(elsewhere)).outcome, HeldCard::Outcome::kFound);
  EXPECT_EQ(task_.nextOffset(), 2);
}

TEST_F(PartitionTaskMisroutedTest, RejectedAndNullRecordsAreCheckedByTheirKeyToo) {
  const std::string elsewhere = cardIn(0);
  EXPECT_EQ(feed(0, "not json", elsewhere), PartitionTask::Processed::kDone);
  EXPECT_EQ(feed(1, std::nullopt, elsewhere), PartitionTask::Processed::kDone);
  EXPECT_EQ(tallied(), 2u);
  EXPECT_EQ(shown(), 2u);
  EXPECT_EQ(harness_.output.on(harness_.config.dlq_topic).size(), 2u) << "still dead letters";
}

TEST_F(PartitionTaskMisroutedTest, AKeylessRecordIsNotMisroutedButAKeyMismatch) {
  // Both partitioners spread keyless records: no partition is theirs. Such a record is
  // processed, and counted in fraud_key_mismatch_records_total (its key is not its card).
  EXPECT_EQ(feed(0, txJson("t1", cardIn(1), "FR", 1'000), ""), PartitionTask::Processed::kDone);
  EXPECT_EQ(tallied(), 0u);
  EXPECT_EQ(shown(), 0u);
  EXPECT_EQ(harness_.interval.tally.outcomes.accepted, 1u);
  EXPECT_EQ(harness_.interval.tally.key_mismatch, 1u);
}

TEST_F(PartitionTaskMisroutedTest, WithoutTheInputsPartitioningNothingIsChecked) {
  harness_.context.input_partitioning.reset();
  EXPECT_EQ(feed(0, txJson("t1", cardIn(1), "FR", 1'000), cardIn(1)),
            PartitionTask::Processed::kDone);
  EXPECT_EQ(tallied(), 0u);
  EXPECT_EQ(shown(), 0u);
}

TEST_F(PartitionTaskMisroutedTest, TheCountShownGoesBackToTheCommittedOneOnARewind) {
  const std::string elsewhere = cardIn(1);
  ASSERT_EQ(feed(0, txJson("t1", elsewhere, "FR", 1'000), elsewhere),
            PartitionTask::Processed::kDone);
  ASSERT_TRUE(task_.prepareCommit(harness_.output, harness_.config.changelog_topic).has_value());
  ASSERT_EQ(feed(1, txJson("t2", elsewhere, "DE", 1'001), elsewhere),
            PartitionTask::Processed::kDone);
  ASSERT_TRUE(task_.markCommitted().committed);  // the commit of the first record only
  ASSERT_EQ(feed(2, txJson("t3", elsewhere, "ES", 1'002), elsewhere),
            PartitionTask::Processed::kDone);
  EXPECT_EQ(shown(), 3u);
  ASSERT_EQ(task_.rewind(), PartitionTask::Rewound::kDone);
  EXPECT_EQ(shown(), 1u) << "the two uncommitted records will be processed again";
  ASSERT_EQ(feed(1, txJson("t2", elsewhere, "DE", 1'001), elsewhere),
            PartitionTask::Processed::kDone);
  EXPECT_EQ(shown(), 2u);
}

TEST_F(PartitionTaskMisroutedTest, TheLogIsRateLimitedAndNeverNamesTheCard) {
  const std::string elsewhere = cardIn(2);
  for (int64_t offset = 0; offset < 3; ++offset) {
    ASSERT_EQ(feed(offset, txJson("t" + std::to_string(offset), elsewhere, "FR", 1'000 + offset),
                   elsewhere),
              PartitionTask::Processed::kDone);
  }
  const std::string first = log_.str();
  EXPECT_EQ(first,
            "warning input " + harness_.config.input_topic +
                " partition 3: the record at offset 0 is misrouted: the crc32 partitioner "
                "(--partitioner) maps its key to partition 2 of 4; processed here, but its card's "
                "records are split between partitions and its rule sees only those of this one "
                "(docs/rule.md §9)\n")
      << "one line for the three records";
  now_ms_ += 60'000;
  ASSERT_EQ(feed(3, txJson("t3", elsewhere, "DE", 1'003), elsewhere),
            PartitionTask::Processed::kDone);
  const std::string second = log_.str().substr(first.size());
  EXPECT_NE(second.find("the record at offset 3 is misrouted"), std::string::npos) << second;
  EXPECT_NE(second.find("; 2 more misrouted here since the last such line"), std::string::npos)
      << second;
  EXPECT_EQ(log_.str().find(elsewhere), std::string::npos) << "never the key: it is the card";
  EXPECT_EQ(tallied(), 4u) << "every one counted";
}

}  // namespace
}  // namespace fraud::service
