// The stream loop (StreamThread::run) over a scripted consumer, a fake transaction sink, a
// manual clock and card stores in memory: no broker, no mock cluster, no RocksDB, no sleeps.
// Every input record here is invalid JSON, so each one processed leaves exactly one dead letter
// naming its partition and offset: the dead letters committed say which records were processed,
// in which order, and how many times.
#include "service/stream_thread.h"

#include <gtest/gtest.h>
#include <prometheus/registry.h>

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "detectors/record_headers.h"
#include "detectors/record_pipeline.h"
#include "service/commit_coordinator.h"
#include "service/producer_recovery.h"
#include "service/rebalance_listener.h"
#include "service/state_query.h"
#include "service/task_manager.h"
#include "service/transactional_producer.h"
#include "state/live_card_store.h"
#include "tests/support/captured_log.h"
#include "tests/support/fake_sinks.h"
#include "tests/support/manual_clock.h"
#include "tests/support/memory_card_source.h"
#include "tests/support/scripted_consumer.h"
#include "tests/support/service_fakes.h"

namespace fraud::service {
namespace {

using namespace std::chrono_literals;
using testing::FakeTransactionSink;
using testing::ManualClock;
using testing::ScriptedConsumer;
using Offsets = std::vector<int64_t>;

// Card stores over memory (each a fresh, empty partition: the dead letters these tests read
// leave no card state behind).
class MemoryLocalState final : public LocalState {
 public:
  MemoryLocalState() { budget_.limit = int64_t{16} << 20; }
  std::unique_ptr<state::LiveCardStore> cardStore(int32_t partition) override {
    return std::make_unique<state::LiveCardStore>(std::make_unique<state::MemoryCardSource>(),
                                                  budget_, partition);
  }
  base::Status clearPartition(int32_t partition) override {
    cleared.push_back(partition);
    return {};
  }
  uint64_t diskBytes() override { return 0; }
  uint64_t cachedBytes() const override { return 0; }

  std::vector<int32_t> cleared;

 private:
  state::CacheBudget budget_;
};

// Completes every restore at once, from the partition's checkpoint in `checkpoints` (an empty
// partition when none).
class InstantRestorer final : public RestoreQueue {
 public:
  void enqueue(const std::vector<std::pair<int32_t, uint64_t>>& partition_tickets) override {
    for (const auto& [p, ticket] : partition_tickets) {
      RestoreResult result;
      result.partition = p;
      result.ticket = ticket;
      const auto it = checkpoints.find(p);
      result.checkpoint = it == checkpoints.end() ? state::PartitionCheckpoint{} : it->second;
      completed_.push_back(std::move(result));
      ++restores;
    }
  }
  void cancel(int32_t) override {}
  std::vector<RestoreResult> takeCompleted() override { return std::exchange(completed_, {}); }
  std::optional<double> progress(int32_t) const override { return std::nullopt; }

  std::map<int32_t, state::PartitionCheckpoint> checkpoints;
  int restores = 0;

 private:
  std::vector<RestoreResult> completed_;
};

CommitCoordinator::Options commitOptions() {
  CommitCoordinator::Options options;
  options.input_topic = "transactions";
  options.changelog_topic = "changelog";
  options.owner = "instance-a";
  options.commit_interval = 0ms;  // a commit after every batch that processed records
  return options;
}

// The stream thread and every unit it drives, wired as StreamProcessor wires them.
class StreamThreadTest : public ::testing::Test {
 protected:
  explicit StreamThreadTest(CommitCoordinator::Options options = commitOptions())
      : consumer_(stop_),
        context_{config_, sink_, pipeline_, interval_, 1'000'000, [] { return int64_t{0}; }},
        tasks_(context_, local_, consumer_, restorer_),
        commits_(std::move(options), sink_, tasks_, nullptr, nullptr, interval_, nullptr, clock_),
        query_(config_, hasher_, local_),
        rebalances_(consumer_, tasks_, commits_, query_, metrics_),
        recovery_(
            [this]() -> base::Status {
              ++producers_replaced_;
              return {};
            },
            nullptr, clock_),
        thread_(config_, StreamThread::Clients{&consumer_, &producer_, nullptr}, tasks_, commits_,
                rebalances_, interval_, restorer_, query_, local_, metrics_, clock_, &recovery_) {
    // librdkafka runs the revocation inside the close.
    consumer_.on_close = [this] {
      const std::vector<int32_t> held = tasks_.partitions();
      if (!held.empty()) rebalances_.onRevoked(held);
    };
  }

  // The first assignment comes inside the subscription's first poll; here inside subscribe().
  void assignOnJoin(const std::vector<int32_t>& partitions) {
    consumer_.on_subscribe = [this, partitions] { rebalances_.onAssigned(partitions); };
  }
  void append(int32_t p, int count) {
    for (int i = 0; i < count; ++i) consumer_.append(p, "not json " + std::to_string(i));
  }
  // Loop rounds that find nothing to fetch before the stop (a commit's result is taken there).
  void idleRounds(int n) {
    for (int i = 0; i < n; ++i) consumer_.whenIdle([] {});
  }
  [[nodiscard]] int run() { return thread_.run(stop_); }

  // The source offsets of partition p's dead letters in `records`, in order.
  [[nodiscard]] static Offsets deadLetterOffsets(const std::vector<testing::SentRecord>& records,
                                                 int32_t p) {
    Offsets offsets;
    for (const auto& r : records) {
      if (r.topic != "transactions.dlq") continue;
      if (r.headers.at(std::string(detectors::headers::kSourcePartition)) != std::to_string(p)) {
        continue;
      }
      offsets.push_back(std::stoll(r.headers.at(std::string(detectors::headers::kSourceOffset))));
    }
    return offsets;
  }
  [[nodiscard]] Offsets committedDeadLetters(int32_t p) const {
    return deadLetterOffsets(sink_.committed, p);
  }
  // Where partition p's committed input offset stands after the last committed transaction.
  [[nodiscard]] std::optional<int64_t> committedOffset(int32_t p) const {
    std::optional<int64_t> last;
    for (const auto& commit : sink_.commits) {
      for (const auto& o : commit.offsets) {
        if (o.partition == p) last = o.next_offset;
      }
    }
    return last;
  }

  std::atomic<bool> stop_{false};
  ServiceConfig config_;
  ManualClock clock_;
  prometheus::Registry registry_;
  ServiceMetrics metrics_{registry_};
  detectors::CardHasher hasher_{testing::kTestKey};
  detectors::RecordPipeline pipeline_{detectors::PipelineOptions{}, hasher_};
  FakeTransactionSink sink_;
  IntervalMetrics interval_;
  MemoryLocalState local_;
  InstantRestorer restorer_;
  ScriptedConsumer consumer_;
  TransactionalProducer producer_{{}, {}};  // never started: fatalError() says nothing
  TaskContext context_;
  TaskManager tasks_;
  CommitCoordinator commits_;
  StateQuery query_;
  RebalanceListener rebalances_;
  int producers_replaced_ = 0;
  ProducerRecovery recovery_;
  StreamThread thread_;
};

class NoCommitBeforeStopTest : public StreamThreadTest {
 protected:
  NoCommitBeforeStopTest()
      : StreamThreadTest([] {
          auto options = commitOptions();
          options.commit_interval = 1h;  // the manual clock never gets there
          return options;
        }()) {}
};

TEST_F(NoCommitBeforeStopTest, RecordsFetchedBeforeARewindInTheirBatchAreNotProcessed) {
  assignOnJoin({0, 1});
  append(0, 3);
  consumer_.whenIdle([this] { append(0, 3); });
  // Inside the poll about to fetch offset 5 of partition 0 (3 and 4 are in the batch already),
  // partition 1 is lost: what was processed since the last commit (0..2) is aborted and every
  // partition rewound to its committed offset, 0.
  consumer_.beforeFetch(0, 5, [this] {
    consumer_.lost = true;
    rebalances_.onRevoked({1});
    consumer_.lost = false;
  });

  EXPECT_EQ(run(), 0);

  EXPECT_EQ(sink_.aborts, 1);
  EXPECT_EQ(consumer_.timesFetched(0, 3), 2) << "fetched before the rewind, and again after it";
  EXPECT_EQ(consumer_.timesFetched(0, 4), 2);
  // Had 3 and 4 been processed from the stale batch, the task would have moved past 0..2.
  EXPECT_EQ(committedDeadLetters(0), (Offsets{0, 1, 2, 3, 4, 5}));
  EXPECT_EQ(committedOffset(0), 6);
}

class HeldInputTest : public StreamThreadTest {
 protected:
  HeldInputTest()
      : StreamThreadTest([] {
          auto options = commitOptions();
          options.max_held_records = 1;  // input waits past one record processed in a commit
          return options;
        }()) {}
};

TEST_F(HeldInputTest, HeldInputIsReleasedAfterTheCommit) {
  assignOnJoin({0});
  append(0, 2);
  sink_.hold_commits = true;  // the commit of 0..1 stays in flight until released below
  bool paused_while_held = false;
  consumer_.whenIdle([this] { append(0, 4); });  // 2..5, fetched while that commit is in flight
  consumer_.whenIdle([] {});                     // the end of the batch that fetched them
  consumer_.whenIdle([this, &paused_while_held] {
    // 2 and 3 were processed during the commit (3 passed the bound); 4 and 5 were dropped.
    paused_while_held = consumer_.paused(0);
    clock_.advance(250ms);
    sink_.hold_commits = false;
  });

  EXPECT_EQ(run(), 0);

  EXPECT_TRUE(paused_while_held) << "input paused while the commit was in flight";
  EXPECT_FALSE(consumer_.paused(0));
  // Released: the partition read again from the task's position, past 3.
  EXPECT_EQ(consumer_.seeks.back(), (std::pair<int32_t, int64_t>{0, 4}));
  EXPECT_EQ(consumer_.timesFetched(0, 4), 2);
  EXPECT_EQ(consumer_.timesFetched(0, 5), 2);
  EXPECT_EQ(committedDeadLetters(0), (Offsets{0, 1, 2, 3, 4, 5}));
  // The wait is measured on the injected clock.
  const auto families = registry_.Collect();
  double waited = -1;
  for (const auto& family : families) {
    if (family.name != "fraud_ingest_wait_seconds") continue;
    for (const auto& metric : family.metric) {
      for (const auto& label : metric.label) {
        if (label.name == "reason" && label.value == "held_output") {
          waited = metric.histogram.sample_sum;
        }
      }
    }
  }
  EXPECT_DOUBLE_EQ(waited, 0.25);
}

TEST_F(StreamThreadTest, RecoversFromAFatalProducerErrorFromTheCommittedCheckpoint) {
  assignOnJoin({0});
  append(0, 3);
  sink_.results = {TransactionResult::kFatal};  // the first commit fails for good
  idleRounds(3);

  EXPECT_EQ(run(), 0) << "recovered: the loop went on and stopped cleanly";

  EXPECT_EQ(producers_replaced_, 1);
  EXPECT_EQ(restorer_.restores, 2) << "the partition taken again, restored anew";
  // Closed dirty: the failed transaction's work is gone, 0..2 processed again and committed once.
  EXPECT_EQ(consumer_.timesFetched(0, 0), 2);
  EXPECT_EQ(committedDeadLetters(0), (Offsets{0, 1, 2}));
  EXPECT_EQ(committedOffset(0), 3);
  EXPECT_FALSE(commits_.fatal());
}

TEST_F(StreamThreadTest, ARevocationMidBatchDropsOnlyTheRevokedPartitionsRecords) {
  assignOnJoin({0, 1});
  append(0, 2);
  append(1, 2);
  // Fetched round robin: 0:0, 1:0, then the revocation of 1 inside the poll about to fetch 0:1.
  consumer_.beforeFetch(0, 1, [this] { rebalances_.onRevoked({1}); });

  EXPECT_EQ(run(), 0);

  EXPECT_EQ(consumer_.timesFetched(1, 0), 1) << "fetched before the revocation";
  EXPECT_FALSE(consumer_.assigned(1));
  EXPECT_EQ(tasks_.task(1), nullptr);
  EXPECT_EQ(committedDeadLetters(1), Offsets{}) << "not held here any more: not processed";
  // Partition 0 kept its position: what was fetched of it before the revocation is processed.
  EXPECT_EQ(consumer_.timesFetched(0, 0), 1);
  EXPECT_EQ(committedDeadLetters(0), (Offsets{0, 1}));
  EXPECT_EQ(sink_.aborts, 0);
}

TEST_F(StreamThreadTest, AFailedCommitRewindsThePartitionToItsCommittedOffset) {
  assignOnJoin({0});
  append(0, 2);
  consumer_.whenIdle([this] { append(0, 2); });
  idleRounds(3);
  sink_.results = {TransactionResult::kCommitted, TransactionResult::kAborted};

  EXPECT_EQ(run(), 0);

  // The second commit (2..3) aborted: back to the first one's offset, 2, and read again.
  ASSERT_GE(sink_.commits.size(), 3u);
  EXPECT_EQ(sink_.commits[1].offsets.at(0).next_offset, 4);
  EXPECT_EQ(consumer_.seeks.back(), (std::pair<int32_t, int64_t>{0, 2}));
  EXPECT_EQ(consumer_.timesFetched(0, 2), 2);
  EXPECT_EQ(consumer_.timesFetched(0, 3), 2);
  EXPECT_EQ(committedDeadLetters(0), (Offsets{0, 1, 2, 3}));
  EXPECT_EQ(committedOffset(0), 4);
}

TEST_F(StreamThreadTest, ShutdownCommitsLeavesAndDrainsWithinItsDeadline) {
  config_.shutdown_timeout_ms = 20'000;
  assignOnJoin({0});
  append(0, 3);
  sink_.hold_commits = true;  // still in flight at the stop: the stop waits for it
  consumer_.on_close = [this, close = consumer_.on_close] {
    clock_.advance(5s);  // the leave takes 5 s
    close();
  };

  EXPECT_EQ(run(), 0);

  EXPECT_EQ(committedDeadLetters(0), (Offsets{0, 1, 2}));
  EXPECT_TRUE(consumer_.closed);
  EXPECT_EQ(tasks_.taskCount(), 0u);
  EXPECT_FALSE(query_.joined());
  EXPECT_EQ(sink_.drained, 1);
  EXPECT_EQ(sink_.drain_timeout_ms, 15'000) << "what is left of the deadline";
}

TEST_F(StreamThreadTest, ARefusedSubscriptionIsLoggedOnceAndEndsTheRunWithStatusOne) {
  const fraud::testing::CapturedLog log;
  assignOnJoin({0});
  append(0, 1);
  consumer_.subscribe_error = "Local: Invalid argument or configuration";

  EXPECT_EQ(run(), 1);

  EXPECT_EQ(consumer_.subscribes, 1);
  EXPECT_EQ(consumer_.polls, 0) << "nothing consumed without a subscription";
  EXPECT_EQ(tasks_.taskCount(), 0u);
  EXPECT_EQ(log.count("cannot subscribe to"), 1u) << log.text();
  EXPECT_EQ(log.count("error cannot subscribe to transactions: Local: Invalid argument or "
                      "configuration"),
            1u)
      << log.text();
}

TEST_F(StreamThreadTest, AStopPastItsDeadlineReturnsOne) {
  config_.shutdown_timeout_ms = 1'000;
  assignOnJoin({0});
  append(0, 1);
  consumer_.on_close = [this] { clock_.advance(1'001ms); };

  EXPECT_EQ(run(), 1);

  EXPECT_EQ(sink_.drained, 1);
  EXPECT_EQ(sink_.drain_timeout_ms, 0);
}

}  // namespace
}  // namespace fraud::service
