// PartitionTask over a LiveCardStore on memory (the layers the service runs, over a memory
// storage in place of RocksDB): records in, alerts and dead letters out, checkpoints.
#include "service/partition_task.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <limits>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "service/changelog_format.h"
#include "state/live_card_store.h"
#include "tests/support/fake_sinks.h"
#include "tests/support/memory_card_source.h"
#include "tests/support/service_fakes.h"
#include "tests/unit/service/partition_task_fixture.h"

namespace fraud::service {
namespace {

using testing::RecordingAlertSink;
using testing::RecordingCollector;
using testing::TaskHarness;
using testing::txJson;

// --alert-delivery immediate: alerts go to their own collector at once; dead letters and the
// changelog stay in the transaction's.
TEST_F(PartitionTaskTest, ImmediateDeliverySendsAlertsApartFromTheTransaction) {
  RecordingAlertSink immediate;
  harness_.context.alerts = &immediate;
  EXPECT_EQ(feed(0, txJson("t1", "card-0001", "FR", 1'000)), PartitionTask::Processed::kDone);
  EXPECT_EQ(feed(1, txJson("t2", "card-0001", "DE", 2'000)), PartitionTask::Processed::kDone);
  EXPECT_EQ(feed(2, txJson("t3", "card-0001", "ES", 3'000)), PartitionTask::Processed::kDone);
  EXPECT_EQ(feed(3, "not json"), PartitionTask::Processed::kDone);
  ASSERT_EQ(immediate.alerts.size(), 1u) << "only the alert";
  EXPECT_EQ(immediate.alerts[0].key, harness_.hasher.hash("card-0001").hex());
  EXPECT_EQ(immediate.alerts[0].headers.count("idempotency-key"), 1u);
  EXPECT_TRUE(harness_.output.on(harness_.config.alerts_topic).empty());
  EXPECT_EQ(harness_.output.on(harness_.config.dlq_topic).size(), 1u);
  harness_.context.alerts = nullptr;
}

TEST_F(PartitionTaskTest, ThirdCountryRaisesAnAlertWithItsIdempotencyKey) {
  EXPECT_EQ(feed(0, txJson("t1", "card-0001", "FR", 1'000)), PartitionTask::Processed::kDone);
  EXPECT_EQ(feed(1, txJson("t2", "card-0001", "DE", 2'000)), PartitionTask::Processed::kDone);
  EXPECT_EQ(feed(2, txJson("t3", "card-0001", "ES", 3'000)), PartitionTask::Processed::kDone);
  const auto alerts = harness_.output.on(harness_.config.alerts_topic);
  ASSERT_EQ(alerts.size(), 1u);
  EXPECT_EQ(alerts[0].key, harness_.hasher.hash("card-0001").hex());
  EXPECT_EQ(alerts[0].headers.at("idempotency-key").size(), 34u);  // 32 hex, ':', revision
  EXPECT_NE(alerts[0].value->find(R"("trigger_tx_id":"t3")"), std::string::npos);
  EXPECT_EQ(alerts[0].value->find("card-0001"), std::string::npos) << "no clear card in alerts";
  EXPECT_EQ(task_.nextOffset(), 3);
}

TEST_F(PartitionTaskTest, PoisonRecordsGoToTheDeadLetterTopicWithTheirReason) {
  EXPECT_EQ(feed(0, std::nullopt), PartitionTask::Processed::kDone);        // tombstone
  EXPECT_EQ(feed(1, std::string_view()), PartitionTask::Processed::kDone);  // empty value
  EXPECT_EQ(feed(2, "\xff\xfe{}"), PartitionTask::Processed::kDone);        // not UTF-8
  EXPECT_EQ(feed(3, R"({"tx_id":"t","card":"card-0001"})"), PartitionTask::Processed::kDone);
  const auto letters = harness_.output.on(harness_.config.dlq_topic);
  ASSERT_EQ(letters.size(), 4u);
  EXPECT_FALSE(letters[0].value.has_value()) << "a tombstone stays a tombstone";
  EXPECT_EQ(letters[0].headers.at("reject-reason"), "invalid_json");
  EXPECT_EQ(letters[1].headers.at("reject-reason"), "invalid_json");
  EXPECT_EQ(letters[2].headers.at("reject-reason"), "invalid_json");
  EXPECT_EQ(letters[2].value, std::string("\xff\xfe{}"));
  EXPECT_EQ(letters[3].headers.at("reject-reason"), "missing_field");
  for (size_t i = 0; i < letters.size(); ++i) {
    EXPECT_EQ(letters[i].headers.at("source-topic"), harness_.config.input_topic);
    EXPECT_EQ(letters[i].headers.at("source-partition"), std::to_string(kPartition));
    EXPECT_EQ(letters[i].headers.at("source-offset"), std::to_string(i));
    EXPECT_EQ(letters[i].headers.count("truncated"), 0u);
  }
  EXPECT_EQ(harness_.interval.tally.outcomes.rejected[0], 3u);
  EXPECT_EQ(task_.nextOffset(), 4);
}

// Every outcome is counted once, in the interval's tally: the pipeline counts nothing itself, so
// a record counted by both (or twice by the task) shows as records above what was fed.
TEST_F(PartitionTaskTest, EveryRecordIsCountedOnceWhateverItsOutcome) {
  LatenessBoard board{LatenessOptions{}};
  harness_.context.lateness = &board;
  int64_t offset = 0;
  auto feedNext = [&](std::optional<std::string_view> value, std::string_view key,
                      std::optional<int64_t> timestamp = std::nullopt) {
    EXPECT_EQ(feed(offset++, value, key, timestamp), PartitionTask::Processed::kDone);
  };
  const std::string t1 = txJson("t1", "card-0001", "FR", 1'000);
  feedNext(t1, "card-0001");
  feedNext(txJson("t2", "card-0001", "DE", 2'000), "card-0001");
  feedNext(txJson("t3", "card-0001", "ES", 3'000), "card-0001");  // the alert
  feedNext(t1, "card-0001");                                      // a duplicate
  feedNext(txJson("t4", "card-0002", "FR", 1'000'000), "card-0002");
  feedNext(txJson("t5", "card-0003", "FR", 1'000), "card-0003");  // late
  feedNext("not json", "card-0004");
  feedNext(std::nullopt, "card-0005");                                    // a tombstone
  feedNext(txJson("t6", "card-0006", "FR", 10'000'000), "card-0006", 0);  // future
  feedNext(txJson("t7", "card-0007", "FR", 1'000'001), "another-key");    // key mismatch
  harness_.context.lateness = nullptr;

  const auto& counts = harness_.interval.tally.outcomes;
  EXPECT_EQ(counts.records, 10u) << "one count a record";
  EXPECT_EQ(counts.accepted, 5u);
  EXPECT_EQ(counts.duplicate, 1u);
  EXPECT_EQ(counts.late_dropped, 1u);
  EXPECT_EQ(counts.alerts, 1u);
  EXPECT_EQ(counts.incidents, 1u);
  EXPECT_EQ(counts.rejected[static_cast<size_t>(detectors::RejectReason::kInvalidJson)], 2u);
  EXPECT_EQ(counts.rejected[static_cast<size_t>(detectors::RejectReason::kFutureEventTime)], 1u);
  EXPECT_EQ(counts.records, counts.accepted + counts.duplicate + counts.late_dropped + 3)
      << "the identity of docs/rule.md §6";
  EXPECT_EQ(harness_.interval.tally.key_mismatch, 1u) << "only t7's key differs from its card";
  EXPECT_EQ(harness_.output.on(harness_.config.alerts_topic).size(), 1u);
  EXPECT_EQ(harness_.output.on(harness_.config.dlq_topic).size(), 3u);
  // Lateness is measured once per valid record, from the outcome's event time.
  const auto lateness = board.report(kPartition, 1'700'000'000'000);
  ASSERT_TRUE(lateness.has_value());
  EXPECT_EQ(lateness->records, 7u);
  EXPECT_EQ(lateness->late_dropped, 1u);
  EXPECT_EQ(task_.nextOffset(), 10);
}

class SmallDeadLetterLimitTest : public PartitionTaskTest {
 protected:
  SmallDeadLetterLimitTest() : PartitionTaskTest(/*max_dead_letter_bytes=*/64 * 1024) {}
};

TEST_F(SmallDeadLetterLimitTest, OversizedRejectedRecordIsCutToFitAndSaysSo) {
  const std::string huge(1'000'100, 'x');  // invalid JSON, larger than the topic takes
  EXPECT_EQ(feed(7, huge, "k"), PartitionTask::Processed::kDone);
  const auto letters = harness_.output.on(harness_.config.dlq_topic);
  ASSERT_EQ(letters.size(), 1u);
  const auto& letter = letters[0];
  size_t header_bytes = 0;
  for (const auto& [name, value] : letter.headers) header_bytes += name.size() + value.size();
  EXPECT_LE(letter.key.size() + letter.value->size() + header_bytes, 64u * 1024);
  EXPECT_EQ(*letter.value, huge.substr(0, letter.value->size())) << "a prefix of the original";
  EXPECT_EQ(letter.headers.at("truncated"), "true");
  EXPECT_EQ(letter.headers.at("original-size"), "1000100");
  EXPECT_EQ(letter.headers.at("source-offset"), "7");
  EXPECT_EQ(letter.headers.at("reject-reason"), "invalid_json");
  EXPECT_EQ(harness_.interval.tally.dead_letters_truncated, 1u);
}

TEST_F(PartitionTaskTest, RecordTimestampNearInt64MaxDoesNotOverflowTheSkewCheck) {
  // timestamp + max_future_skew_ms would overflow: the event is not in the future of it.
  EXPECT_EQ(feed(0, txJson("t1", "card-0001", "FR", 1'000), "card-0001",
                 std::numeric_limits<int64_t>::max()),
            PartitionTask::Processed::kDone);
  EXPECT_TRUE(harness_.output.on(harness_.config.dlq_topic).empty());
  // And a record stamped far before its event is rejected as future_event_time.
  EXPECT_EQ(feed(1, txJson("t2", "card-0001", "FR", 10'000'000), "card-0001", 0),
            PartitionTask::Processed::kDone);
  const auto letters = harness_.output.on(harness_.config.dlq_topic);
  ASSERT_EQ(letters.size(), 1u);
  EXPECT_EQ(letters[0].headers.at("reject-reason"), "future_event_time");
}

TEST_F(PartitionTaskTest, RecordsBeforeThePositionAreSkipped) {
  EXPECT_EQ(feed(0, txJson("t1", "card-0001", "FR", 1'000)), PartitionTask::Processed::kDone);
  EXPECT_EQ(feed(0, txJson("t1", "card-0001", "FR", 1'000)), PartitionTask::Processed::kSkipped);
  EXPECT_EQ(harness_.interval.tally.outcomes.accepted, 1u);
}

TEST_F(PartitionTaskTest, CommitCarriesChangesAndCheckpointAndPersistWaitsForIt) {
  ASSERT_EQ(feed(0, txJson("t1", "card-0001", "FR", 1'000)), PartitionTask::Processed::kDone);
  EXPECT_TRUE(task_.persist().ok());
  EXPECT_EQ(storage_->batches_written, 0u) << "dirty state never reaches disk";
  RecordingCollector changelog;
  const auto position = task_.prepareCommit(changelog, "changelog");
  ASSERT_TRUE(position.has_value());
  EXPECT_EQ(position->partition, kPartition);
  EXPECT_EQ(position->next_offset, 1);
  ASSERT_TRUE(task_.inFlight().has_value());
  EXPECT_EQ(task_.inFlight()->stream_time, 1'000);
  ASSERT_EQ(changelog.sent.size(), 2u);
  EXPECT_EQ(changelog.sent[0].key, harness_.hasher.hash("card-0001").raw());
  EXPECT_EQ(changelog.sent[1].key, kChangelogCheckpointKey);
  EXPECT_EQ(changelog.sent[0].partition, kPartition);
  ASSERT_EQ(changelog.checkpoint_offsets.at(kPartition), 1);
  EXPECT_TRUE(task_.markCommitted(changelog.checkpoint_offsets.at(kPartition)).committed);
  EXPECT_FALSE(task_.inFlight().has_value());
  EXPECT_TRUE(task_.persist().ok());
  ASSERT_EQ(storage_->batches_written, 1u);
  EXPECT_EQ(storage_->checkpoint.next_offset, 1);
  EXPECT_EQ(storage_->checkpoint.stream_time, 1'000);
  EXPECT_EQ(storage_->checkpoint.changelog_next_offset, 2)
      << "after the checkpoint record's offset (1)";
  const detectors::CardState* stored = storage_->cards.find(harness_.hasher.hash("card-0001"));
  ASSERT_NE(stored, nullptr);
  EXPECT_EQ(stored->events.size(), 1u);
}

TEST_F(PartitionTaskTest, RewindReturnsToTheCommittedCheckpoint) {
  ASSERT_EQ(feed(0, txJson("t1", "card-0001", "FR", 1'000)), PartitionTask::Processed::kDone);
  RecordingCollector changelog;
  ASSERT_TRUE(task_.prepareCommit(changelog, "changelog"));
  ASSERT_TRUE(task_.markCommitted().committed);
  ASSERT_TRUE(task_.persist().ok());
  ASSERT_EQ(feed(1, txJson("t2", "card-0001", "DE", 2'000)), PartitionTask::Processed::kDone);
  ASSERT_EQ(task_.rewind(), PartitionTask::Rewound::kDone);
  EXPECT_EQ(task_.nextOffset(), 1);
  EXPECT_FALSE(task_.dirty());
  // t2 again: not a duplicate, since its first processing was rewound.
  ASSERT_EQ(feed(1, txJson("t2", "card-0001", "DE", 2'000)), PartitionTask::Processed::kDone);
  EXPECT_EQ(harness_.interval.tally.outcomes.duplicate, 0u);
}

TEST_F(PartitionTaskTest, RewindAfterACommitNotYetOnDiskReturnsToThatCommitLocally) {
  ASSERT_EQ(feed(0, txJson("t1", "card-0001", "FR", 1'000)), PartitionTask::Processed::kDone);
  RecordingCollector changelog;
  ASSERT_TRUE(task_.prepareCommit(changelog, "changelog"));
  ASSERT_TRUE(task_.markCommitted().committed);  // committed, not written
  ASSERT_EQ(feed(1, txJson("t2", "card-0001", "DE", 2'000)), PartitionTask::Processed::kDone);
  ASSERT_EQ(task_.rewind(), PartitionTask::Rewound::kDone)
      << "the committed batch goes to disk first, then the rewind";
  EXPECT_EQ(task_.nextOffset(), 1);
  ASSERT_EQ(storage_->batches_written, 1u);
  EXPECT_EQ(storage_->checkpoint.next_offset, 1);
  // t1 is still held (a duplicate), t2 was rewound (not one).
  ASSERT_EQ(feed(1, txJson("t1", "card-0001", "FR", 1'000)), PartitionTask::Processed::kDone);
  ASSERT_EQ(feed(2, txJson("t2", "card-0001", "DE", 2'000)), PartitionTask::Processed::kDone);
  EXPECT_EQ(harness_.interval.tally.outcomes.duplicate, 1u);
}

TEST_F(PartitionTaskTest, DiskRefusingTheCommittedStateMakesARewindAskForARestore) {
  ASSERT_EQ(feed(0, txJson("t1", "card-0001", "FR", 1'000)), PartitionTask::Processed::kDone);
  RecordingCollector changelog;
  ASSERT_TRUE(task_.prepareCommit(changelog, "changelog"));
  ASSERT_TRUE(task_.markCommitted().committed);
  storage_->fail_writes = "injected: no space left on device";
  const base::Status persisted = task_.persist();
  ASSERT_FALSE(persisted.ok());
  EXPECT_EQ(persisted.code(), base::StatusCode::kIoError);
  EXPECT_THAT(persisted.message(), ::testing::HasSubstr("no space left"));
  EXPECT_EQ(task_.rewind(), PartitionTask::Rewound::kRestore)
      << "the disk lacks the committed state: restore from changelog";
  EXPECT_EQ(storage_->batches_written, 0u) << "nothing half-written";
}

// What a reader of a task that is activated again and again saw, for ReadersNeverSeeAHalfResetTask.
// Activation i brings a store holding i % 4 cards (card-0001 among them from 1 on, its one event
// at i s), and the checkpoint {offset i, stream time i s} with i records restored.
class ActivationReader {
 public:
  static std::optional<int64_t> streamTimeOf(int64_t i) {
    return i == 0 ? std::nullopt : std::optional<int64_t>(i * 1'000);
  }

  ActivationReader(const PartitionTask& task, const detectors::CardRef& card)
      : task_(task), card_(card) {}

  // Reads the task's status and card once: a restoring task, or one activation whole, never
  // parts of two or a task without its store.
  void readOnce() {
    const TaskStatus status = task_.status(0);
    if (!status.active) {
      if (status.restore_progress != 0 || status.stream_time_ms || status.cards != 0 ||
          status.next_offset != -1) {
        violation("restoring, yet progress " + std::to_string(status.restore_progress) + ", " +
                  std::to_string(status.cards) + " cards, offset " +
                  std::to_string(status.next_offset));
      }
      ++restoring_seen;
    } else {
      const int64_t i = status.next_offset;
      if (status.restore_progress != 1 || status.restored_records != static_cast<uint64_t>(i) ||
          status.stream_time_ms != streamTimeOf(i) ||
          status.cards != static_cast<uint64_t>(i % 4)) {
        violation("activation " + std::to_string(i) + " seen with " +
                  std::to_string(status.restored_records) + " records restored, " +
                  std::to_string(status.cards) + " cards, stream time " +
                  std::to_string(status.stream_time_ms.value_or(-1)));
      }
      ++active_seen;
    }
    const HeldCard held = task_.lookup(card_);
    if (held.outcome == HeldCard::Outcome::kFound) {
      if (!held.state || held.state->events.size() != 1 || !held.stream_time_ms ||
          held.state->events.back().time != *held.stream_time_ms) {
        violation("a card of one activation with the stream time of another");
      }
      ++found_seen;
    } else if (held.state || held.stream_time_ms) {
      violation("a card not found, with state");
    }
    if (const auto cached = task_.tryLookupCached(card_, copy_)) {
      if (cached->outcome == HeldCard::Outcome::kFound &&
          (!cached->state || cached->state->events.size() != 1 || !cached->stream_time_ms ||
           cached->state->events.back().time != *cached->stream_time_ms)) {
        violation("inline: a card of one activation with the stream time of another");
      }
      ++inline_seen;
    }
    if (task_.cardCount() > 3) violation("more cards than any activation holds");
  }
  // Whether it has met each kind of moment often.
  [[nodiscard]] bool sawEnough() const {
    return restoring_seen.load() >= 50 && active_seen.load() >= 50 && found_seen.load() >= 50;
  }

  std::atomic<uint64_t> restoring_seen{0};
  std::atomic<uint64_t> active_seen{0};
  std::atomic<uint64_t> found_seen{0};
  std::atomic<uint64_t> inline_seen{0};  // answers of tryLookupCached()
  std::vector<std::string> violations;   // the reader thread's; read after it joined

 private:
  void violation(const std::string& what) {
    if (violations.size() < 10) violations.push_back(what);
  }
  state::CardStateCopy copy_;  // the reader thread's

  const PartitionTask& task_;
  detectors::CardRef card_;
};

// The API reads status and cards while the ingest thread restarts and re-activates the task
// (an abort's rewind to a restore).
TEST_F(PartitionTaskTest, ReadersNeverSeeAHalfResetTask) {
  const auto card = harness_.hasher.hash("card-0001");
  auto storageOf = [&](int64_t i) {
    auto storage = std::make_unique<state::MemoryCardSource>();
    for (int64_t c = 0; c < i % 4; ++c) {
      const auto ref = c == 0 ? card : harness_.hasher.hash("card-other-" + std::to_string(c));
      storage->cards.modify(ref).events.push_back(
          detectors::Event{i * 1'000, detectors::Country::of('F', 'R'), "t"});
    }
    return storage;
  };

  ActivationReader seen(task_, card);
  std::atomic<bool> done{false};
  std::thread reader([&] {
    while (!done.load()) seen.readOnce();
  });
  // Until the reader has met each kind of moment often, at least 1000 activations.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  int64_t i = 0;
  bool activated = true;
  while (activated && std::chrono::steady_clock::now() < deadline &&
         (i < 1'000 || !seen.sawEnough())) {
    ++i;
    task_.restart(static_cast<uint64_t>(i) + 1);
    activated = task_.activate(liveStore(storageOf(i)),
                               state::PartitionCheckpoint{i, ActivationReader::streamTimeOf(i), 0},
                               static_cast<uint64_t>(i));
  }
  done.store(true);
  reader.join();
  EXPECT_TRUE(activated) << "activation " << i;
  EXPECT_TRUE(task_.active());
  EXPECT_THAT(seen.violations, ::testing::IsEmpty());
  EXPECT_GE(seen.restoring_seen.load(), 50u) << "the reader never met a restoring task";
  EXPECT_GE(seen.active_seen.load(), 50u);
  EXPECT_GE(seen.found_seen.load(), 50u);
  EXPECT_GT(seen.inline_seen.load(), 0u) << "tryLookupCached() never answered";
}

}  // namespace
}  // namespace fraud::service
