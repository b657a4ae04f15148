#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "detectors/base/mutex.h"
#include "detectors/base/status.h"
#include "detectors/card_ref.h"
#include "detectors/card_state.h"
#include "detectors/key_routing.h"
#include "detectors/partition_detector.h"
#include "detectors/record_codec.h"
#include "detectors/record_pipeline.h"
#include "service/config.h"
#include "service/input_offsets.h"
#include "service/lateness_board.h"
#include "service/metrics.h"
#include "service/recent_alerts.h"
#include "service/record_collector.h"
#include "service/transaction_sink.h"
#include "state/card_state_copy.h"
#include "state/live_card_store.h"
#include "state/partition_checkpoint.h"

namespace fraud::service {

// One input record as a task sees it, apart from librdkafka's message type.
struct InputRecord {
  int64_t offset = 0;
  std::string_view key;
  std::optional<std::string_view> value;  // none: a tombstone (null value)
  std::optional<int64_t> timestamp_ms;    // the record's own timestamp, when it has one
};

// What every task of one ingest thread shares: configuration, the card hasher, where outputs
// go and the counters of the current commit interval. All owned by the caller; single thread.
struct TaskContext {
  const ServiceConfig& config;
  RecordCollector& output;
  detectors::RecordPipeline& pipeline;  // decode, skew check, card_ref, detect, render
  IntervalMetrics& interval;
  size_t max_dead_letter_bytes;            // the dead-letter topic's record limit
  std::function<int64_t()> wall_clock_ms;  // detected_at and lateness
  // Where alerts go when not in `output`'s transaction (--alert-delivery immediate).
  AlertSink* alerts = nullptr;
  LatenessBoard* lateness = nullptr;      // measured lateness, when set (the console, /metrics)
  RecentAlerts* recent_alerts = nullptr;  // detected alerts, when set (the console)
  // The input topic's partitioning as its producers apply it, when known: each record's key is
  // checked against the partition it is in (docs/rule.md §9, misrouted records). None: no check.
  std::optional<detectors::TopicPartitioning> input_partitioning = std::nullopt;
};

// A task's state as its readers see it: plain data (StateQuery turns it into the API's answer).
struct TaskStatus {
  int32_t partition = 0;
  bool active = false;            // false: restoring
  double restore_progress = 0;    // 0..1; 1 once active
  uint64_t restored_records = 0;  // changelog records applied by the restore
  // The rest only when active.
  std::optional<int64_t> stream_time_ms;         // ST(p); none before the first record
  std::optional<double> event_time_lag_seconds;  // the given wall clock minus ST(p)
  int64_t next_offset = -1;                      // the next input offset to process
  std::optional<int64_t> high_watermark;         // the input partition's end, when set
  std::optional<int64_t> offset_lag;             // high_watermark - next_offset, at least 0
  uint64_t cards = 0;                            // cards held in state
  // Records processed here whose key maps to another partition (docs/rule.md §9), since this
  // instance took the partition; back to the committed count when the task rewinds.
  uint64_t misrouted_records = 0;
};

// One card as a task holds it.
struct HeldCard {
  enum class Outcome { kFound, kNotFound, kRestoring };
  Outcome outcome = Outcome::kNotFound;       // kRestoring: restoring, or the state is unreadable
  std::optional<detectors::CardState> state;  // with kFound
  std::optional<int64_t> stream_time_ms;      // with kFound: the partition's stream time
};

// One assigned input partition (Kafka Streams' StreamTask): its detector over its card store,
// its input position and the checkpoints it has prepared and committed.
//
// Its commit phase, one Phase checked at every step (moveTo(): an illegal step is a bug, fatal
// in debug builds, logged and counted in release, where the step is made all the same):
//
//               activate()            process()             prepareCommit()
//  kRestoring ────────────► kClean ─────────────► kDirty ─────────────────► kPrepared
//      ▲                     ▲  ▲                   ▲                        │    │
//      │                     │  └── markCommitted() ┼────────────────────────┘    │ process()
//      │                     │                      │                             ▼
//      │                     │                      └─── markCommitted() ─── kPreparedDirty
//      │                     └── rewind(): from every active phase
//      └── restart(): from every phase (kRestoring too: a restore asked for again)
//
// kDirty and kPreparedDirty stay as they are for each further record; kClean stays kClean on a
// rewind. A prepared task is part of the commit in flight, and only of that one: the commit
// coordinator keeps no list of its own, it tells each task the result (markCommitted(), or
// rewind() after an abort) and a task that is not prepared has nothing to learn from it (it was
// restarted since, or processed nothing). A second prepareCommit() before the result
// (kPreparedDirty to kPrepared) would lose the first commit's checkpoint: it is illegal.
//
// Thread-safety: the ingest thread calls everything; status(), lookup(), tryLookupCached(),
// phase(), active(), the progress and watermark setters may be called from any thread. What those
// readers see is guarded by the task's lock (FRAUD_GUARDED_BY(mu_)), which the ingest thread
// takes to read it too (once a record, and once a commit in the accessors), so a reader never
// meets a half-reset task. The lookups copy the card under that lock into a
// state::CardStateCopy (no allocation) and build the answer's CardState after releasing it.
class PartitionTask {
 public:
  enum class Processed { kDone, kSkipped, kStoreFailed };
  enum class Phase {
    kRestoring,      // no store: its state is brought up from the changelog (restoreTicket())
    kClean,          // active: all it processed is committed, no commit in flight
    kDirty,          // active, records processed that no commit carries yet
    kPrepared,       // its changes and checkpoint are in the commit in flight
    kPreparedDirty,  // ... and records processed since, for the next commit
  };
  [[nodiscard]] static bool isTransitionValid(Phase from, Phase to);
  [[nodiscard]] static std::string_view phaseName(Phase phase);
  // An illegal step is a bug: fatal in a debug build, counted in release as
  // base::Invariant::kTaskCommitPhase.

  // Starts kRestoring.
  PartitionTask(int32_t partition, const TaskContext& context, uint64_t restore_ticket);
  // Closes the store (its committed batches written first), logging a write it refused.
  ~PartitionTask();
  PartitionTask(const PartitionTask&) = delete;
  PartitionTask& operator=(const PartitionTask&) = delete;

  [[nodiscard]] int32_t partition() const { return partition_; }
  [[nodiscard]] Phase phase() const { return phase_.load(); }
  // Any phase but kRestoring.
  [[nodiscard]] bool active() const { return phase_.load() != Phase::kRestoring; }
  [[nodiscard]] uint64_t restoreTicket() const FRAUD_EXCLUDES(mu_);
  [[nodiscard]] int64_t nextOffset() const FRAUD_EXCLUDES(mu_);
  // Processed records since the last prepareCommit() (kDirty, kPreparedDirty).
  [[nodiscard]] bool dirty() const;
  [[nodiscard]] state::PartitionCheckpoint committed() const FRAUD_EXCLUDES(mu_);

  // Restored: consume from `checkpoint` over `store`, which holds that checkpoint's state
  // (kRestoring to kClean). False (and still restoring) when the store cannot be read: rebuild
  // the partition.
  [[nodiscard]] bool activate(std::unique_ptr<state::LiveCardStore> store,
                              const state::PartitionCheckpoint& checkpoint,
                              uint64_t restored_records);
  // Back to kRestoring under a new ticket: the store is closed (its committed batches written
  // first) and dropped with the detector.
  void restart(uint64_t restore_ticket);

  // One record of this partition, in partition order (kClean to kDirty, kPrepared to
  // kPreparedDirty). Records before nextOffset() (fetched before a seek) and records of a
  // restoring task are skipped. kStoreFailed: the local state could not be read; nothing may
  // commit until the partition is rebuilt.
  [[nodiscard]] Processed process(const InputRecord& record);

  // kDirty to kPrepared: sends the changed card states and the checkpoint record to the
  // changelog, remembers the checkpoint the commit reaches (inFlight()) and returns the input
  // position it commits; nothing when no record was processed since the last call.
  [[nodiscard]] std::optional<InputOffset> prepareCommit(RecordCollector& output,
                                                         const std::string& changelog_topic);
  // What markCommitted() did.
  struct CommitApplied {
    // The input position this task's part of the commit reached; none when it had none.
    std::optional<InputOffset> committed;
    // With a hand-off: ok, or the error of an earlier background write the disk refused.
    base::Status written;
  };
  // The commit in flight went through, told to every task in one walk. A prepared task's
  // checkpoint becomes the committed one and its card changes may go to disk (kPrepared to
  // kClean, kPreparedDirty to kDirty); any other task has nothing to learn from it (it was
  // rewound or restarted since it prepared one: that commit no longer describes its state).
  // `checkpoint_record_offset`: where the broker put this task's checkpoint record (a restore
  // continues after it); without it, a restore re-reads a little more of the changelog.
  // `hand_off`: the committed state also goes to the background writer (every active task,
  // prepared or not), without waiting.
  [[nodiscard]] CommitApplied markCommitted(
      std::optional<int64_t> checkpoint_record_offset = std::nullopt, bool hand_off = false);
  // The checkpoint of the commit prepared and not yet marked committed, if any (kPrepared,
  // kPreparedDirty).
  [[nodiscard]] std::optional<state::PartitionCheckpoint> inFlight() const FRAUD_EXCLUDES(mu_);
  // State, stream time and position back to the last committed checkpoint (waiting for its
  // background writes): every active phase to kClean. kDone: done locally (seek the input to
  // nextOffset()); kRestore: the disk could not take the committed state (restart() and
  // restore from the changelog); kRebuild: the local state cannot be read (clear the partition
  // and restore it).
  enum class Rewound { kDone, kRestore, kRebuild };
  [[nodiscard]] Rewound rewind();
  // Writes the committed state to disk and waits for it: ok (restoring: nothing to write), or
  // the disk's error. Uncommitted changes are never written.
  [[nodiscard]] base::Status persist();

  // Any thread. `now_s`: the wall clock, in seconds, for event_time_lag_seconds.
  [[nodiscard]] TaskStatus status(double now_s) const;
  // The card as held, read through to the store below on a cache miss (RocksDB I/O, under the
  // task's lock): waits for the lock.
  [[nodiscard]] HeldCard lookup(const detectors::CardRef& card_ref) const;
  // The same answer when it needs neither a wait nor the store below: the lock is free
  // (try_lock: the ingest thread or a lookup() may hold it across a RocksDB read), and the
  // task is restoring, or the card's state (or its absence) is in the store's cache and its
  // encoding fits `copy`. Nothing otherwise: ask lookup(). For an HTTP I/O thread.
  [[nodiscard]] std::optional<HeldCard> tryLookupCached(const detectors::CardRef& card_ref,
                                                        state::CardStateCopy& copy) const;
  [[nodiscard]] uint64_t cardCount() const;
  void setRestoreProgress(double progress) { restore_progress_.store(progress); }
  void setHighWatermark(int64_t offset) { high_watermark_.store(offset); }

 private:
  void reject(const InputRecord& record, detectors::RejectReason reason);
  // docs/rule.md §9: where the record's key belongs, under the context's input partitioning.
  [[nodiscard]] detectors::KeyRouting routeOf(const InputRecord& record) const;
  // A misrouted record, processed: counted for the metric, logged rate-limited (no key: it is
  // the card).
  void countMisrouted(const InputRecord& record, int32_t key_partition);

  // What a lookup reads under the lock: with kFound, the stream time (the state is in the copy).
  struct Peek {
    enum class Kind { kFound, kNotFound, kRestoring, kNotCached, kTooLarge };
    Kind kind = Kind::kNotFound;
    std::optional<int64_t> stream_time_ms;
  };
  // Under mu_. Allocates nothing but what a read through the cache (`read_through`) allocates.
  [[nodiscard]] Peek peekLocked(const detectors::CardRef& card_ref, state::CardStateCopy& copy,
                                bool read_through) const FRAUD_REQUIRES(mu_);
  // After the lock: the answer for a peek of kFound, kNotFound or kRestoring.
  [[nodiscard]] static HeldCard heldCard(const Peek& peek, const state::CardStateCopy& copy);

  const int32_t partition_;
  const TaskContext& context_;
  const std::string source_partition_;  // decimal, for dead-letter headers
  std::string alert_json_;              // reused for every alert

  // The one place phase_ changes, under mu_; an illegal step is reported as a bug (and made all
  // the same).
  void moveTo(Phase next) FRAUD_REQUIRES(mu_);
  // Closes and drops the store (restart, destruction), logging a final write it refused.
  void closeStore() FRAUD_REQUIRES(mu_);

  // Where a commit leaves the task: its checkpoint, and the misrouted records processed up to
  // it (docs/rule.md §9: status() shows them; a rewind goes back to the committed count).
  struct Mark {
    state::PartitionCheckpoint checkpoint;
    uint64_t misrouted = 0;
  };

  mutable base::Mutex mu_;
  // Written under mu_ only, with the members it makes valid; read without it by active() and
  // phase().
  std::atomic<Phase> phase_{Phase::kRestoring};
  std::unique_ptr<state::LiveCardStore> store_ FRAUD_GUARDED_BY(mu_);
  std::unique_ptr<detectors::PartitionDetector> detector_ FRAUD_GUARDED_BY(mu_);
  uint64_t restore_ticket_ FRAUD_GUARDED_BY(mu_);
  // Where processing is: the next input offset, the misrouted records processed (status()).
  int64_t next_offset_ FRAUD_GUARDED_BY(mu_) = -1;
  uint64_t misrouted_ FRAUD_GUARDED_BY(mu_) = 0;
  // The commit in flight's (valid in kPrepared and kPreparedDirty only); the checkpoint's
  // changelog_next_offset is learnt when it commits.
  Mark prepared_ FRAUD_GUARDED_BY(mu_);
  // What the last committed transaction covered. Its changes reach disk through the store
  // (LiveCardStore, whose change log owns the committed batches and what was handed off).
  Mark committed_ FRAUD_GUARDED_BY(mu_);
  // The ingest thread's own: the last misrouted-record log line, and the records since.
  std::optional<int64_t> misrouted_logged_ms_;
  uint64_t misrouted_unlogged_ = 0;

  std::atomic<int64_t> high_watermark_{-1};
  std::atomic<double> restore_progress_{0};
  std::atomic<uint64_t> restored_records_{0};
};

}  // namespace fraud::service
