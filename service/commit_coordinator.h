#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "service/clock.h"
#include "service/input_offsets.h"
#include "service/metrics.h"
#include "service/task_manager.h"
#include "service/transaction_sink.h"

namespace fraud::service {

// The life of the transaction (Kafka Streams' commit in StreamThread + TaskManager): when to
// commit, what a commit carries (every dirty task's card changes and checkpoint, and the input
// offsets), what follows its result (committed checkpoints move on; an abort rewinds every task),
// when the committed state may be persisted to local disk, and when input must wait.
//
// Invariants:
// - Local disk only ever takes committed state: each store writes a transaction's card changes
//   only once it committed, on the database's writer thread (the ingest thread never waits for
//   it in steady state), and nothing after a fatal error.
// - Output held while a commit is in flight stays under max_held_bytes: mustWait() says when the
//   ingest thread has to wait for the commit before processing more.
// - After a fatal error nothing commits, aborts or persists again; fatal() stays true, unless
//   the producer was what failed (producerFailed()) and the stream thread replaced it, closing
//   every task dirty first: resumeWithNewProducer() then starts afresh. A local checkpoint that
//   cannot be written stays fatal.
//
// The coordinator decides; the sink (TransactionSink: Kafka in the service, a fake in tests)
// carries. Offsets go to the sink as plain values and a finished commit comes back as one
// (FinishedCommit, with the acknowledged checkpoint-record offsets). Where a commit is, each
// task's phase says (PartitionTask::Phase: a task that prepared is kPrepared until it hears the
// result); the coordinator keeps no list of its own, and tells a result to every task in one
// walk (markCommitted(), or TaskManager::rewindAll() after an abort). What reached the disk,
// each task's store says (its change log).
//
// Thread-safety: ingest thread only.
class CommitCoordinator {
 public:
  struct Options {
    std::string input_topic;
    std::string changelog_topic;
    // Written as the metadata of every committed input offset: the instance id, so that a later
    // owner knows whose transaction may still be open (TransactionFencer).
    std::string owner;
    std::chrono::milliseconds commit_interval{50};
    std::chrono::milliseconds checkpoint_interval{1'000};  // 0: persist after every commit
    uint64_t cache_pressure_bytes = 0;    // persist early past this many cached bytes
    size_t max_held_bytes = 64 << 20;     // output held during a commit
    uint64_t max_held_records = 500'000;  // records processed during a commit
    // The mock cluster acknowledges transactional offsets without storing them: commit them
    // again outside the transaction (embedded mode only).
    bool commit_offsets_outside_transaction = false;
  };
  enum class Outcome { kNone, kCommitted, kAborted, kFatal };

  // `commit_offsets` commits offsets outside a transaction (used only with
  // commit_offsets_outside_transaction); `cached_bytes` reads the state cache's size; `clock`
  // times the commit and checkpoint intervals.
  CommitCoordinator(Options options, TransactionSink& output, TaskManager& tasks,
                    std::function<void(const InputOffsets&)> commit_offsets,
                    std::function<uint64_t()> cached_bytes, IntervalMetrics& interval,
                    ServiceMetrics* metrics, const Clock& clock = Clock::real());

  // A record was processed (its outputs sent to the output).
  void recordProcessed() { ++uncommitted_records_; }

  // The finished commit's result, without waiting; kNone while none finished.
  [[nodiscard]] Outcome poll();
  // Begins a commit when the interval has passed and records are pending. Never waits: a
  // commit's result is taken by poll(), which also hands the committed state to the disk
  // writer every checkpoint interval. Call once per loop.
  [[nodiscard]] Outcome maybeCommit();
  // The held output or the records processed during the in-flight commit passed their bound.
  [[nodiscard]] bool mustWait() const;
  // Waits for the in-flight commit.
  [[nodiscard]] Outcome waitForCommit();
  // Commits everything processed so far and waits for it (revocation, shutdown).
  [[nodiscard]] Outcome commitNow();
  // Throws away everything since the last commit (lost partitions, unreadable state): waits for
  // the in-flight commit, aborts the rest and rewinds every task.
  [[nodiscard]] Outcome abortUncommitted();
  // Writes the committed state of these partitions (every partition when empty) to disk and
  // waits for it. False on a disk failure or after a fatal error.
  [[nodiscard]] bool persist(const std::vector<int32_t>& partitions = {});

  [[nodiscard]] bool fatal() const { return failure_ != Failure::kNone; }
  // The fatal error is the producer's (fenced, a transaction state the broker refused, the
  // immediate alerts' producer failed): replacing the producers may cure it.
  [[nodiscard]] bool producerFailed() const { return failure_ == Failure::kProducer; }
  // After a producer failure, once every task is closed (a task still prepared for the failed
  // commit would take the next one's result as its own) and the producers are replaced (the
  // output attached to the new one): nothing uncommitted, nothing in flight, not fatal.
  void resumeWithNewProducer();
  [[nodiscard]] bool committing() const { return output_.committing(); }
  // Serves the output's delivery reports (between batches; a commit in flight serves its own).
  void serveDeliveries() { output_.serveDeliveries(); }
  // The last step of a stop: a clean one waits up to `timeout_ms` for what the output still
  // queues; otherwise what it queues is dropped, as nothing may commit any more.
  void closeOutput(bool clean, int timeout_ms) {
    if (clean) {
      output_.drain(timeout_ms);
    } else {
      output_.discardQueued();
    }
  }
  [[nodiscard]] bool blocked() const { return output_.blocked(); }
  // How long the poll loop may wait for input before the next commit is due.
  [[nodiscard]] int pollTimeoutMs(int idle_ms) const;

 private:
  void begin();
  [[nodiscard]] Outcome complete(const FinishedCommit& finished);
  // A transaction's result other than committed: kAborted rewinds every task, kFatal stops.
  [[nodiscard]] Outcome failed(TransactionResult result);
  [[nodiscard]] bool persistDue();

  Options options_;
  TransactionSink& output_;
  TaskManager& tasks_;
  std::function<void(const InputOffsets&)> commit_offsets_;
  std::function<uint64_t()> cached_bytes_;
  IntervalMetrics& interval_;  // flushed to metrics_ at every commit, cleared on abort
  ServiceMetrics* metrics_;    // may be null (tests)
  const Clock& clock_;

  // What failed for good, if anything: once set, only resumeWithNewProducer() clears it.
  enum class Failure {
    kNone,
    kProducer,  // the producer's (replacing it may cure it)
    kDisk,      // a local checkpoint could not be written
  };
  Failure failure_ = Failure::kNone;
  uint64_t uncommitted_records_ = 0;  // processed since the last commit began
  Clock::TimePoint last_commit_started_;
  Clock::TimePoint last_persist_;
};

}  // namespace fraud::service
