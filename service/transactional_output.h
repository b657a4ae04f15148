#pragma once

#include <prometheus/histogram.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "detectors/base/mutex.h"
#include "detectors/base/status.h"
#include "service/kafka/admin.h"
#include "service/kafka/client.h"
#include "service/transaction_sink.h"

namespace fraud::service {

// The service's outputs (alerts, dead letters, changelog records) written in Kafka
// transactions by one transactional producer.
//
// A commit runs on the committer thread, which lives as long as this object: the ingest thread
// goes on processing records meanwhile, and what it sends then is held in memory (counted by
// heldBytes(), which the caller bounds) and sent in the next transaction once the commit is
// through. So the broker's time to acknowledge a transaction overlaps with processing.
//
// After a fatal error (the producer failed for good: fenced by another instance with our
// transactional id, or a transaction state the broker refused) nothing is sent and every call
// reports kFatal, until the stream thread recovers: detachProducer() drops everything of the
// failed producer, attachProducer() goes on with its replacement (ProducerRecovery).
//
// Thread-safety: every public method is for the ingest thread only; the committer thread is
// internal. The two meet only in a commit's request and result, under mu_ (and the delivery
// reports, in the checkpoint ledger under its own lock); the lifecycle below is the ingest
// thread's alone.
//
// The lifecycle, one State checked at every step (moveTo(): an illegal step is a bug, fatal in
// debug builds and logged in release):
//
//                  send(): begin ok
//        kIdle ─────────────────────────► kOpen ──── a record lost ────► kDoomed
//        │ ▲ ▲  begin refused:               │                             │
//        │ │ │  kRefused (nothing open)      │ startCommit()               │ startCommit():
//        │ │ │  or kDoomed (must abort)      ▼                             │ the committer
//        │ │ └──────── committed ──────── kCommitting ◄────────────────────┘ only aborts
//        │ │            or aborted         ▲  │ fatal
//        │ │                               │  ▼
//        │ └──── attachProducer() ────── kFatal ◄──── a fatal begin or abort, from the others
//        │                                    startCommit() from kFatal ends it as fatal at once
//        └── startCommit() with nothing sent: kCommitting, committed at once (kRefused: aborted)
//
// abort() takes kOpen, kDoomed and kRefused back to kIdle (kFatal stays). Records sent while
// kCommitting are held, and go out in the next transaction once it is committed (kIdle, then
// kOpen again).
class TransactionalOutput final : public TransactionSink {
 public:
  enum class State {
    kIdle,        // no transaction: the next send begins one
    kOpen,        // a transaction begun, every record sent so far in it
    kDoomed,      // begun, a record lost: it can only abort
    kRefused,     // the begin was refused, nothing open, records lost: the commit aborts
    kCommitting,  // the committer has the transaction (or its result is ready)
    kFatal,       // the producer failed for good: nothing is sent until attachProducer()
  };
  [[nodiscard]] static bool isTransitionValid(State from, State to);
  [[nodiscard]] static std::string_view stateName(State state);

  using Header = RecordCollector::Header;
  using Result = TransactionResult;
  // The consumer group's metadata, sent with each transaction's input offsets (KIP-447).
  using GroupSource = std::function<kafka::GroupMetadata()>;

  // Installs the delivery-report callback that reports checkpoint offsets to finishCommit();
  // call on the producer's configuration before creating the producer.
  static void installDeliveryReports(rd_kafka_conf_t* conf);
  // The offsets as librdkafka's list, each with the metadata.
  [[nodiscard]] static kafka::PartitionList partitionList(const InputOffsets& offsets);

  // `producer` must have transactions initialised and outlive this object (or its
  // detachProducer()). `group` is read at each commit that carries offsets (none: no offsets
  // are ever committed, only records).
  explicit TransactionalOutput(rd_kafka_t* producer, GroupSource group = nullptr);

  // Times the records sent to `topic` (the alerts): from send() to the start of the commit that
  // carries them, and that commit's duration. Call before the first send().
  void timeRecordsOf(const std::string& topic, prometheus::Histogram& commit_wait,
                     prometheus::Histogram& commit);
  // Asked on the committer thread before a transaction's offsets are sent: kRetry aborts the
  // transaction (--alert-delivery immediate: an alert of these records was not acknowledged),
  // kFatal ends it as fatal (the alerts' producer failed for good). Call before the first
  // send().
  void setCommitPrecondition(std::function<CommitReadiness()> precondition);
  ~TransactionalOutput() override;
  TransactionalOutput(const TransactionalOutput&) = delete;
  TransactionalOutput& operator=(const TransactionalOutput&) = delete;

  // Sends a record in the open transaction (beginning one when none is), or holds it while a
  // commit is in flight.
  void send(const std::string& topic, int32_t partition, std::string_view key,
            std::optional<std::string_view> value, std::initializer_list<Header> headers) override;
  void sendCheckpoint(const std::string& topic, int32_t partition, std::string_view key,
                      std::string_view value) override;

  [[nodiscard]] bool hasOpenWork() const override {
    return state_ == State::kOpen || state_ == State::kDoomed || state_ == State::kRefused ||
           !held_.empty();
  }
  [[nodiscard]] bool committing() const override { return state_ == State::kCommitting; }
  [[nodiscard]] size_t heldBytes() const override { return held_bytes_; }

  // A transaction that cannot commit (a record was lost) is aborted instead, and
  // finishCommit() reports kAborted.
  void startCommit(InputOffsets offsets) override;
  // After kCommitted, the held records go out in a new transaction. After kAborted the
  // transaction is aborted and the held records are dropped: the caller rewinds its input.
  [[nodiscard]] std::optional<FinishedCommit> finishCommit(bool wait) override;
  [[nodiscard]] Result abort(bool outputs_failed) override;
  // The committer thread serves the reports while a commit is in flight.
  void serveDeliveries() override;
  void drain(int timeout_ms) override;
  void discardQueued() override;

  // After a fatal error, no commit in flight: drops what the failed producer still holds (its
  // queue purged, the reports of what was dropped served) and everything of the failed
  // transaction; the output stays fatal, holding no producer, until attachProducer().
  void detachProducer();
  // Goes on with `producer` (transactions initialised, outliving this object or the next
  // detachProducer()): nothing open, nothing held, no longer fatal.
  void attachProducer(rd_kafka_t* producer);

  [[nodiscard]] bool blocked() const override { return blocked_; }
  [[nodiscard]] bool fatal() const { return state_ == State::kFatal; }
  [[nodiscard]] State state() const { return state_; }

 private:
  struct HeldRecord {
    std::string topic;
    int32_t partition;
    std::string key;
    std::optional<std::string> value;
    std::vector<std::pair<std::string, std::string>> headers;
    bool checkpoint;
  };
  // Where delivery reports of checkpoint records land (any thread that serves the producer's
  // reports): owned by the output, never by a task, so a report served late (after a fatal
  // error, once the tasks are gone) writes into live memory.
  struct CheckpointLedger {
    base::Mutex mu;
    // This transaction's, by changelog partition.
    std::map<int32_t, int64_t> acknowledged FRAUD_GUARDED_BY(mu);
  };
  // What the committer needs of one commit, handed over under mu_.
  struct CommitRequest {
    rd_kafka_t* producer = nullptr;
    kafka::PartitionList offsets;
    kafka::GroupMetadata group;
    bool abort_only = false;  // a record was lost: the committer only aborts
    std::function<CommitReadiness()> precondition;
  };

  // The one place state_ changes; an illegal step is reported as a bug (and made all the same).
  void moveTo(State next);
  // Begins a transaction unless one is open (or doomed); on librdkafka's refusal, the state it
  // leaves (fatal, doomed or refused) and its reason, not logged: the caller logs it.
  [[nodiscard]] base::Status beginIfClosed();
  void enqueue(const std::string& topic, int32_t partition, std::string_view key,
               std::optional<std::string_view> value, std::initializer_list<Header> headers,
               bool checkpoint);
  void produce(const char* topic, int32_t partition, std::string_view key,
               std::optional<std::string_view> value, rd_kafka_headers_t* headers, bool checkpoint);
  void committerLoop();
  void publish(Result result) FRAUD_EXCLUDES(mu_);

  using TimePoint = std::chrono::steady_clock::time_point;
  void observeCommitted(std::chrono::duration<double> duration);
  void sendHeld();

  // The ingest thread's own; the committer gets the producer and the precondition with each
  // request.
  rd_kafka_t* producer_;
  const std::string* timed_topic_ = nullptr;
  prometheus::Histogram* commit_wait_ = nullptr;
  prometheus::Histogram* commit_histogram_ = nullptr;
  std::vector<TimePoint> open_times_;        // timed records of the open transaction
  std::vector<TimePoint> committing_times_;  // ... of the transaction being committed
  std::vector<TimePoint> held_times_;        // ... held while it commits
  std::function<CommitReadiness()> precondition_;
  State state_ = State::kIdle;
  bool blocked_ = false;  // a send waited for room or failed since the last commit
  std::chrono::steady_clock::time_point commit_started_;
  std::vector<HeldRecord> held_;
  size_t held_bytes_ = 0;
  CheckpointLedger ledger_;
  GroupSource group_;

  base::Mutex mu_;
  std::condition_variable wake_;  // a request, or stopping
  std::condition_variable done_;  // a result
  std::optional<CommitRequest> request_ FRAUD_GUARDED_BY(mu_);
  std::optional<Result> result_ FRAUD_GUARDED_BY(mu_);
  bool stopping_ FRAUD_GUARDED_BY(mu_) = false;
  std::thread committer_;  // started last: it reads the members above
};

}  // namespace fraud::service
