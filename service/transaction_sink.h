#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <map>
#include <optional>
#include <string_view>

#include "service/input_offsets.h"
#include "service/record_collector.h"

namespace fraud::service {

// How a transaction ended: kCommitted; kAborted, its records thrown away (the caller processes
// its input again); kFatal, the producer failed and nothing commits again until it is replaced.
enum class TransactionResult { kCommitted, kAborted, kFatal };

// A finished commit, with what the caller needs to move its checkpoints on.
struct FinishedCommit {
  TransactionResult result = TransactionResult::kAborted;
  // When committed: where the broker put each changelog partition's checkpoint record of this
  // transaction (RecordCollector::sendCheckpoint), by partition; a partition whose
  // acknowledgement is missing is absent.
  std::map<int32_t, int64_t> checkpoint_offsets;
  // From the start of the commit to its result (committed ones only).
  std::chrono::duration<double> duration{};
};

// Where the stream thread's transactional output goes (Kafka Streams' StreamsProducer under
// exactly-once): records are collected into the open transaction (RecordCollector), and a
// commit carries them with the input offsets. One commit is in flight at a time; records sent
// while it is are held and go into the next transaction. Implemented by TransactionalOutput;
// tests use tests/support/fake_sinks.h.
//
// Thread-safety: the ingest thread only.
class TransactionSink : public RecordCollector {
 public:
  // Records were sent (or held) since the last commit started.
  [[nodiscard]] virtual bool hasOpenWork() const = 0;
  [[nodiscard]] virtual bool committing() const = 0;
  // Bytes held while a commit is in flight (keys, values, headers).
  [[nodiscard]] virtual size_t heldBytes() const = 0;
  // Outputs could not be written since the last successful commit.
  [[nodiscard]] virtual bool blocked() const = 0;

  // Starts committing the open transaction with these input offsets (may be empty). Not while
  // a commit is in flight. Never waits.
  virtual void startCommit(InputOffsets offsets) = 0;
  // The in-flight commit once it is through (waiting for it when `wait`), else nothing.
  [[nodiscard]] virtual std::optional<FinishedCommit> finishCommit(bool wait) = 0;
  // Aborts the open transaction (no commit in flight) and drops the held records.
  // `outputs_failed` when the reason is that outputs could not be written (blocked()).
  [[nodiscard]] virtual TransactionResult abort(bool outputs_failed) = 0;

  // Serves the producer's delivery reports without waiting, unless a commit in flight does.
  virtual void serveDeliveries() = 0;
  // A clean stop: waits up to `timeout_ms` for what is queued. Otherwise (after a fatal error)
  // drops what is queued, so that no record waits for a transaction that never commits.
  virtual void drain(int timeout_ms) = 0;
  virtual void discardQueued() = 0;
};

// Where alerts go when they are produced the moment they are detected (--alert-delivery
// immediate), outside the transaction: the alert topic is the sink's, the partition its
// producer's partitioner's (by key). Implemented by ImmediateAlertOutput; tests use
// tests/support/fake_sinks.h.
//
// Thread-safety: the ingest thread only.
class AlertSink {
 public:
  virtual ~AlertSink() = default;
  // Sends one alert now. A failure is the sink's to count and to report at the next commit's
  // precondition (the commit then aborts and the alert is sent again).
  virtual void sendAlert(std::string_view key, std::string_view value,
                         std::initializer_list<RecordCollector::Header> headers) = 0;
  // Serves delivery reports without waiting.
  virtual void serveDeliveries() = 0;
};

}  // namespace fraud::service
