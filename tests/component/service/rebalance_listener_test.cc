// RebalanceListener under both rebalance protocols, with a recording consumer, a fake
// transaction sink and real tasks over RocksDB: what each assignment, revocation and loss does
// to the consumer, the tasks, the commit and the local checkpoints.
#include "service/rebalance_listener.h"

#include <gtest/gtest.h>
#include <prometheus/registry.h>

#include <optional>

#include "tests/support/commit_harness.h"

namespace fraud::service {
namespace {

using testing::CommitHarness;

class RecordingConsumer final : public ConsumerAssignment {
 public:
  explicit RecordingConsumer(bool is_cooperative) : cooperative_(is_cooperative) {}
  bool cooperative() const override { return cooperative_; }
  bool assignmentLost() const override { return lost; }
  void incrementalAssign(const std::vector<int32_t>& partitions) override {
    calls.push_back("+" + join(partitions));
  }
  void incrementalUnassign(const std::vector<int32_t>& partitions) override {
    calls.push_back("-" + join(partitions));
  }
  void assign(const std::vector<int32_t>& partitions) override {
    calls.push_back("=" + join(partitions));
  }
  base::Status subscribe() override {
    calls.push_back("subscribe");
    return {};
  }
  base::Status rejoin() override {
    calls.push_back("rejoin");
    return rejoin_error ? base::Status::failed(*rejoin_error) : base::Status();
  }

  bool lost = false;
  std::optional<std::string> rejoin_error;  // rejoin() refused with this reason
  std::vector<std::string> calls;  // "+0,1" incremental assign, "-1" unassign, "=0,1" eager

 private:
  static std::string join(const std::vector<int32_t>& partitions) {
    std::string s;
    for (const int32_t p : partitions) s += (s.empty() ? "" : ",") + std::to_string(p);
    return s;
  }
  bool cooperative_;
};

class RebalanceListenerTest : public ::testing::TestWithParam<bool> {
 protected:
  RebalanceListenerTest()
      : consumer_(GetParam()),
        metrics_(registry_),
        query_(h_.config, hasher_, h_.db),
        listener_(consumer_, h_.tasks, h_.commits, query_, metrics_) {}

  // Assigned and restored.
  void take(const std::vector<int32_t>& partitions) {
    listener_.onAssigned(partitions);
    for (const int32_t p : partitions) {
      h_.restorer.complete(p, h_.restorer.lastTicket(p), state::PartitionCheckpoint{});
    }
    ASSERT_EQ(h_.tasks.activateRestored().size(), partitions.size());
  }
  double rebalances(const std::string& kind) {
    return metrics_.rebalances.Add({{"kind", kind}}).Value();
  }

  CommitHarness h_;
  detectors::CardHasher hasher_{testing::kTestKey};
  RecordingConsumer consumer_;
  prometheus::Registry registry_;
  ServiceMetrics metrics_;
  StateQuery query_;
  RebalanceListener listener_;
};

INSTANTIATE_TEST_SUITE_P(Protocols, RebalanceListenerTest, ::testing::Values(true, false),
                         [](const auto& test) { return test.param ? "Cooperative" : "Eager"; });

TEST_P(RebalanceListenerTest, AssignedPartitionsGetRestoringTasksAndTheConsumerItsSet) {
  listener_.onAssigned({0, 1});
  EXPECT_EQ(h_.tasks.partitions(), (std::vector<int32_t>{0, 1}));
  EXPECT_FALSE(h_.tasks.task(0)->active()) << "restoring until its restore completes";
  EXPECT_EQ(consumer_.calls, (std::vector<std::string>{GetParam() ? "+0,1" : "=0,1"}));
  EXPECT_TRUE(query_.joined());
  EXPECT_EQ(rebalances("assign"), 1);
  EXPECT_EQ(metrics_.assigned_partitions.Value(), 2);
}

TEST_P(RebalanceListenerTest, ARevocationCommitsAndPersistsFirst) {
  take({0, 1});
  h_.feed(0, 0);
  h_.feed(0, 1);
  consumer_.calls.clear();
  listener_.onRevoked({0});
  ASSERT_EQ(h_.sink.commits.size(), 1u) << "what partition 0 did is committed";
  const auto checkpoint = h_.db->checkpoint(0);
  ASSERT_TRUE(checkpoint.has_value()) << "and written locally: a later owner restores less";
  EXPECT_EQ(checkpoint->next_offset, 2);
  if (GetParam()) {
    EXPECT_EQ(h_.tasks.partitions(), std::vector<int32_t>{1}) << "only the revoked one goes";
    EXPECT_EQ(consumer_.calls, std::vector<std::string>{"-0"});
  } else {
    EXPECT_TRUE(h_.tasks.partitions().empty()) << "eager: every task goes";
    EXPECT_EQ(consumer_.calls, std::vector<std::string>{"="});
  }
  EXPECT_EQ(rebalances("revoke"), 1);
}

TEST_P(RebalanceListenerTest, ALostPartitionCommitsNothing) {
  take({0});
  h_.feed(0, 0);
  consumer_.lost = true;
  listener_.onRevoked({0});
  EXPECT_TRUE(h_.sink.commits.empty()) << "another member may own it already";
  EXPECT_EQ(h_.sink.aborts, 1);
  EXPECT_FALSE(h_.db->checkpoint(0).has_value());
  EXPECT_TRUE(h_.tasks.partitions().empty());
  EXPECT_EQ(rebalances("lost"), 1);
}

TEST_P(RebalanceListenerTest, AnEagerReassignmentGivesTheConsumerTheWholeSet) {
  take({0});
  consumer_.calls.clear();
  listener_.onAssigned({2});
  EXPECT_EQ(consumer_.calls, (std::vector<std::string>{GetParam() ? "+2" : "=0,2"}));
  EXPECT_EQ(h_.tasks.partitions(), (std::vector<int32_t>{0, 2}));
}

TEST_P(RebalanceListenerTest, ClosingEveryTaskDirtyThenReopeningRestoresThemAgain) {
  take({0, 1});
  h_.feed(1, 0);
  const size_t restores = h_.restorer.queued.size();
  const auto held = listener_.closeAllDirty();
  EXPECT_EQ(held, (std::vector<int32_t>{0, 1}));
  EXPECT_TRUE(h_.tasks.partitions().empty());
  EXPECT_TRUE(h_.sink.commits.empty()) << "nothing uncommitted survives";
  listener_.reopen(held);
  EXPECT_EQ(h_.tasks.partitions(), (std::vector<int32_t>{0, 1}));
  EXPECT_EQ(h_.restorer.queued.size(), restores + 2) << "each restored from its checkpoint";
  EXPECT_TRUE(consumer_.calls.size() == 1u) << "the consumer's assignment is left alone";
}

TEST_P(RebalanceListenerTest, AfterAFenceTheMemberRejoinsAndTakesOnlyTheNewAssignment) {
  take({0, 1});
  h_.feed(0, 0);
  (void)listener_.closeAllDirty();
  consumer_.calls.clear();
  ASSERT_TRUE(listener_.rejoin().ok());
  EXPECT_EQ(consumer_.calls, std::vector<std::string>{"rejoin"});
  EXPECT_TRUE(h_.tasks.partitions().empty()) << "nothing reopened before the new assignment";
  EXPECT_FALSE(query_.joined()) << "not ready until the group answers";
  // The rejoin's revocation of what the consumer still had: no task, so nothing is committed,
  // aborted or persisted.
  listener_.onRevoked({0, 1});
  EXPECT_TRUE(h_.sink.commits.empty());
  EXPECT_EQ(h_.sink.aborts, 0);
  EXPECT_FALSE(h_.db->checkpoint(0).has_value());
  // The group gives this member partition 1 only: only it gets a task.
  listener_.onAssigned({1});
  EXPECT_EQ(h_.tasks.partitions(), std::vector<int32_t>{1});
  EXPECT_TRUE(query_.joined());
}

TEST_P(RebalanceListenerTest, ARefusedRejoinIsTheConsumersErrorAndLeavesNothingHeld) {
  take({0, 1});
  (void)listener_.closeAllDirty();
  consumer_.rejoin_error = "Local: Invalid argument or configuration";
  const base::Status rejoined = listener_.rejoin();
  ASSERT_FALSE(rejoined.ok());
  EXPECT_EQ(rejoined.message(), "Local: Invalid argument or configuration");
  EXPECT_TRUE(h_.tasks.partitions().empty());
  EXPECT_FALSE(query_.joined());
}

}  // namespace
}  // namespace fraud::service
