// The measured lateness of a partition goes with the partition: once the task manager drops a
// revoked (or lost) partition, its gauges leave /metrics and its figures leave the board, so
// /v1/partitions and /v1/lateness do not show another owner's partition, and a partition
// assigned here again starts from nothing.
#include <gtest/gtest.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

#include <sstream>
#include <string>

#include "service/lateness_board.h"
#include "service/task_manager.h"
#include "tests/support/service_fakes.h"
#include "tests/support/temp_state_db.h"

namespace fraud::service {
namespace {

using testing::FakeInput;
using testing::FakeRestorer;
using testing::TaskHarness;
using testing::TempStateDb;
using testing::txJson;

constexpr int64_t kNow = 1'700'000'000'000;

class LatenessRevocationTest : public ::testing::Test {
 protected:
  LatenessRevocationTest() : tasks_(harness_.context, db_, input_, restorer_) {
    harness_.context.lateness = &board_;
    harness_.context.wall_clock_ms = [this] { return now_; };
    board_.publishTo(registry_);
  }

  // Assigns and activates `p`, then feeds it one prompt record and, once the board publishes
  // again, one 30 s late.
  void assignAndFeed(int32_t p) {
    tasks_.assign({p});
    restorer_.complete(p, restorer_.lastTicket(p), state::PartitionCheckpoint{0, std::nullopt, 0});
    ASSERT_EQ(tasks_.activateRestored(), std::vector<int32_t>{p});
    const std::string card = "card-000" + std::to_string(p);
    int64_t offset = 0;
    for (const int64_t event_time : {kNow - 1'000, kNow - 31'000}) {
      const std::string value =
          txJson("tx-" + std::to_string(p) + "-" + std::to_string(offset), card, "DE", event_time);
      InputRecord record;
      record.offset = offset++;
      record.key = card;
      record.value = value;
      record.timestamp_ms = kNow;
      ASSERT_EQ(tasks_.task(p)->process(record), PartitionTask::Processed::kDone);
      now_ += LatenessBoard::kPublishEveryMs;
    }
  }

  [[nodiscard]] std::string metricsText() const {
    std::ostringstream out;
    prometheus::TextSerializer().Serialize(out, registry_.Collect());
    return out.str();
  }

  TempStateDb db_;
  TaskHarness harness_;
  FakeInput input_;
  FakeRestorer restorer_;
  prometheus::Registry registry_;
  LatenessBoard board_{LatenessOptions{}};
  TaskManager tasks_;
  int64_t now_ = kNow;
};

TEST_F(LatenessRevocationTest, RevokedPartitionsGaugesAndFiguresAreGone) {
  assignAndFeed(3);
  assignAndFeed(5);
  const std::string before = metricsText();
  ASSERT_NE(before.find(R"(fraud_partition_late_dropped_ratio{partition="3"})"), std::string::npos)
      << before;
  ASSERT_NE(
      before.find(
          R"(fraud_partition_lateness_seconds{against="stream_time",partition="3",quantile="1"} 30)"),
      std::string::npos)
      << before;
  ASSERT_TRUE(board_.report(3, now_));
  ASSERT_EQ(board_.merged(now_).records, 4u);

  tasks_.remove({3});

  const std::string after = metricsText();
  EXPECT_EQ(after.find(R"(partition="3")"), std::string::npos) << after;
  // The partition still held keeps every gauge.
  EXPECT_NE(after.find(R"(fraud_partition_late_dropped_ratio{partition="5"})"), std::string::npos)
      << after;
  EXPECT_NE(after.find(R"(fraud_partition_advised_grace_seconds{kept="0.999",partition="5"})"),
            std::string::npos)
      << after;
  EXPECT_FALSE(board_.report(3, now_)) << "/v1/partitions would show it";
  EXPECT_TRUE(board_.report(5, now_));
  EXPECT_EQ(board_.merged(now_).records, 2u) << "/v1/lateness would count it";
}

TEST_F(LatenessRevocationTest, PartitionAssignedAgainStartsFromNothing) {
  assignAndFeed(3);
  tasks_.remove({3});
  assignAndFeed(3);
  const auto report = board_.report(3, now_);
  ASSERT_TRUE(report);
  EXPECT_EQ(report->records, 2u) << "only the records of the new assignment";
  const std::string text = metricsText();
  EXPECT_NE(
      text.find(
          R"(fraud_partition_lateness_seconds{against="stream_time",partition="3",quantile="1"} 30)"),
      std::string::npos)
      << text;
}

}  // namespace
}  // namespace fraud::service
