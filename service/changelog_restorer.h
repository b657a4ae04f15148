#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "detectors/base/mutex.h"
#include "service/kafka/admin.h"
#include "service/kafka/client.h"
#include "service/partition_leases.h"
#include "service/restore_job.h"
#include "service/restore_queue.h"
#include "state/state_db.h"

namespace fraud::service {

// Brings partitions' local state up to what the changelog topic holds (read_committed), from
// each local checkpoint onward, on its own thread and its own consumer. A restore ends at the
// changelog's high watermark as it was when the restore began, not at its last stable offset: a
// transaction left open (by a departed owner, killed mid-commit) is waited for until it is
// aborted (TransactionFencer, or the broker's transaction timeout), and the changes committed
// after it are restored too. Partitions queued
// together are read together (one assignment), and each is reported as soon as it is done.
// The changelog partition of an input partition has the same number. A partition whose
// changelog holds nothing past the local checkpoint is done after one offsets request.
//
// Hostile changelog records never stop a restore: a card record that does not decode is
// counted and its card dropped (as if erased); a checkpoint record that does not decode or is
// out of bounds is counted and not adopted; a local checkpoint that is either makes the
// partition rebuild from the changelog's start (RestoreJob says what each leaves). One
// partition's restore, from its start to its result, is a RestoreJob; this class runs them: the
// queue, the thread, the consumer, leases and reporting. The active role's results go through
// a second thread, the warmer, which builds each partition's store with its card cache warmed
// (RestoreResult::store) while the restorer reads on and the ingest thread processes the rest.
//
// Two roles. The active restorer brings up partitions assigned here, before they are consumed.
// The standby restorer (--standby-replicas) catches up warm copies of partitions owned
// elsewhere, round after round (StandbyReplicas), so that a partition that moves here later
// restores only the changelog's tail. Both write the same database: a restore holds the
// partition's lease (PartitionLeases) while it reads the checkpoint and writes cards; the
// active one waits for it, the standby one gives the partition up for that round (`busy`), and
// never takes a partition it was told to cancel.
//
// Only the latest restore of a partition runs and is reported: one queued again (revoked and
// assigned again, under the eager protocol) supersedes the one running, which is abandoned
// within a batch (kConsumeWaitMs and the batch's records), its lease released; the new one runs
// in the next round, which starts as soon as the running round has no job left (at once when
// every partition of it was assigned again).
//
// Thread-safety: the RestoreQueue methods may be called from any thread; start() and stop()
// from the owning thread.
class ChangelogRestorer final : public RestoreQueue {
 public:
  enum class Role { kActive, kStandby };
  struct Options {
    Role role = Role::kActive;
    // Shared by the active and the standby restorer of one database; null: a set of its own.
    PartitionLeases* leases = nullptr;
  };

  ChangelogRestorer(const kafka::KafkaProperties& kafka, std::string changelog_topic,
                    state::StateDb& db, Options options);
  // The active role, with leases of its own.
  ChangelogRestorer(const kafka::KafkaProperties& kafka, std::string changelog_topic,
                    state::StateDb& db)
      : ChangelogRestorer(kafka, std::move(changelog_topic), db, Options{}) {}
  ~ChangelogRestorer() override;

  // Starts the thread; an error when the consumer cannot be created.
  [[nodiscard]] base::Status start();
  void stop() FRAUD_EXCLUDES(mu_);

  void enqueue(const std::vector<std::pair<int32_t, uint64_t>>& partition_tickets) override
      FRAUD_EXCLUDES(mu_);
  void cancel(int32_t partition) override FRAUD_EXCLUDES(mu_);
  [[nodiscard]] std::vector<RestoreResult> takeCompleted() override FRAUD_EXCLUDES(mu_);
  [[nodiscard]] std::optional<double> progress(int32_t partition) const override
      FRAUD_EXCLUDES(mu_);

 private:
  void loop() FRAUD_EXCLUDES(mu_);
  void restore(const std::vector<std::pair<int32_t, uint64_t>>& partitions) FRAUD_EXCLUDES(mu_);
  // Reads the jobs' changelog offsets, begins each and assigns those left to the consumer; how
  // many it assigned.
  [[nodiscard]] size_t assign(std::map<int32_t, RestoreJob>& jobs) FRAUD_EXCLUDES(mu_);
  // Applies the assigned jobs' records until `remaining` of them end, are cancelled, or stop().
  void consume(std::map<int32_t, RestoreJob>& jobs, size_t remaining) FRAUD_EXCLUDES(mu_);
  // Takes the job's lease (standby: only when free and not cancelled) and begins it. False when
  // the job ended there.
  [[nodiscard]] bool prepare(RestoreJob& job, int64_t low, int64_t high) FRAUD_EXCLUDES(mu_);
  // Hands a result to takeCompleted(), unless it is stale (wanted() no longer); an active
  // restore's through the warmer first, which builds its store.
  void report(RestoreResult result) FRAUD_EXCLUDES(mu_);
  // To takeCompleted(); the partition is no longer wanted.
  void publish(RestoreResult result) FRAUD_REQUIRES(mu_);
  // The warmer's thread: builds each finished active restore's store (RestoreResult::store).
  void warmLoop() FRAUD_EXCLUDES(mu_);
  // Whether `ticket` is the one `partition` is to be restored under: the latest enqueued, not
  // cancelled, not reported yet.
  [[nodiscard]] bool wanted(int32_t partition, uint64_t ticket) const FRAUD_REQUIRES(mu_);

  kafka::KafkaProperties kafka_;
  std::string topic_;
  state::StateDb& db_;
  Role role_;
  std::unique_ptr<PartitionLeases> own_leases_;
  PartitionLeases& leases_;
  kafka::KafkaHandle consumer_;
  kafka::KafkaHandle end_offsets_;  // read_uncommitted: asks for high watermarks
  std::thread thread_;
  std::thread warmer_;  // the active role's

  mutable base::Mutex mu_;
  std::condition_variable wake_;
  std::condition_variable warm_wake_;
  std::deque<RestoreResult> to_warm_ FRAUD_GUARDED_BY(mu_);
  bool stopping_ FRAUD_GUARDED_BY(mu_) = false;
  std::deque<std::pair<int32_t, uint64_t>> queue_ FRAUD_GUARDED_BY(mu_);
  std::vector<RestoreResult> completed_ FRAUD_GUARDED_BY(mu_);
  std::map<int32_t, double> progress_ FRAUD_GUARDED_BY(mu_);
  // Per partition, the ticket of its restore to come or running: set by enqueue(), dropped by
  // cancel() and by the report. A job under another ticket is stale: abandoned, never reported.
  std::map<int32_t, uint64_t> wanted_ FRAUD_GUARDED_BY(mu_);
};

}  // namespace fraud::service
