#include "service/transaction_calls.h"

#include <spdlog/spdlog.h>

#include <chrono>

#include "detectors/base/sync_point.h"
#include "service/kafka/client.h"

namespace fraud::service {
namespace {

constexpr int kOffsetsTimeoutMs = 10'000;
// librdkafka asks commit and abort to take the remaining transaction time (-1): other timeouts
// risk desynchronising its transaction state machine.
constexpr int kRemainingTransactionTime = -1;
// How long a retriable error of send_offsets_to_transaction is retried before the transaction
// is aborted instead (well inside the default transaction.timeout.ms, 60 s).
constexpr auto kRetryPatience = std::chrono::seconds(5);
// How long the flush before the offsets waits for a partition leader that is away (a broker
// down, a leader election) before the transaction is aborted: inside the default
// transaction.timeout.ms (60 s). Aborting sooner races the failover: the coordinator may then
// refuse the abort itself (INVALID_TXN_STATE), which is fatal to the producer.
constexpr auto kFlushPatience = std::chrono::seconds(45);

// A commit slower than this is logged with where its time went.
constexpr auto kSlowCommit = std::chrono::seconds(1);

std::string errorText(const rd_kafka_error_t* error) { return rd_kafka_error_string(error); }

}  // namespace

TransactionResult commitTransaction(rd_kafka_t* producer,
                                    const rd_kafka_topic_partition_list_t* offsets,
                                    const rd_kafka_consumer_group_metadata_t* group) {
  // librdkafka's contract for transactional calls: a retriable error may be retried as it is
  // (the coordinator moved: "not coordinator"), one that requires an abort is aborted, a fatal
  // one ends the producer. Aborting on a retriable error instead races the coordinator's
  // failover, and the broker may then refuse the abort itself (INVALID_TXN_STATE, fatal).
  const auto started = std::chrono::steady_clock::now();
  const auto give_up_at = started + kRetryPatience;
  // The records first, then the offsets (KIP-447's order): input offsets pending in an open
  // transaction then always come with that transaction's changelog records on the broker, so a
  // later owner's restore, which waits for open transactions, never takes the changelog of an
  // older commit with the input position of a newer one.
  while (const auto err = rd_kafka_flush(producer, kOffsetsTimeoutMs)) {
    // Timed out: a leader is away; a refused record shows as an abort the offsets call asks for.
    const bool patient = err == RD_KAFKA_RESP_ERR__TIMED_OUT &&
                         std::chrono::steady_clock::now() < started + kFlushPatience;
    spdlog::warn("flush before the offsets: {}; {}", rd_kafka_err2str(err),
                 patient ? "still waiting" : "aborting");
    if (!patient) return TransactionResult::kAborted;
  }
  FRAUD_SYNC_POINT(kRecordsFlushedSyncPoint);
  while (offsets != nullptr && offsets->cnt > 0) {
    kafka::KafkaError e(
        rd_kafka_send_offsets_to_transaction(producer, offsets, group, kOffsetsTimeoutMs));
    if (!e) break;
    spdlog::warn("send offsets to transaction: {}", errorText(e.get()));
    if (rd_kafka_error_is_fatal(e.get())) return TransactionResult::kFatal;
    if (rd_kafka_error_txn_requires_abort(e.get())) return TransactionResult::kAborted;
    if (!rd_kafka_error_is_retriable(e.get()) || std::chrono::steady_clock::now() > give_up_at) {
      return TransactionResult::kAborted;
    }
  }
  // Commit flushes the transaction's records first; their delivery reports run on this thread.
  const auto offsets_sent = std::chrono::steady_clock::now();
  while (true) {
    kafka::KafkaError e(rd_kafka_commit_transaction(producer, kRemainingTransactionTime));
    if (!e) {
      const auto done = std::chrono::steady_clock::now();
      if (done - started > kSlowCommit) {
        using Ms = std::chrono::milliseconds;
        spdlog::warn(
            "slow commit: {} ms (offsets {} ms, flush and commit {} ms); alerts wait for it",
            std::chrono::duration_cast<Ms>(done - started).count(),
            std::chrono::duration_cast<Ms>(offsets_sent - started).count(),
            std::chrono::duration_cast<Ms>(done - offsets_sent).count());
      }
      return TransactionResult::kCommitted;
    }
    if (rd_kafka_error_is_fatal(e.get())) {
      spdlog::error(
          "commit transaction: {} (fatal to this producer: it is replaced, or the service stops)",
          errorText(e.get()));
      return TransactionResult::kFatal;
    }
    if (rd_kafka_error_txn_requires_abort(e.get())) {
      spdlog::warn("commit transaction: {}; aborting and reprocessing", errorText(e.get()));
      return TransactionResult::kAborted;
    }
    spdlog::warn("commit transaction: {}; retrying", errorText(e.get()));
  }
}

TransactionResult abortTransaction(rd_kafka_t* producer) {
  while (true) {
    kafka::KafkaError e(rd_kafka_abort_transaction(producer, kRemainingTransactionTime));
    if (!e) return TransactionResult::kAborted;
    if (rd_kafka_error_is_fatal(e.get())) {
      spdlog::critical("abort transaction: {}", errorText(e.get()));
      return TransactionResult::kFatal;
    }
    spdlog::warn("abort transaction: {}; retrying", errorText(e.get()));
  }
}

}  // namespace fraud::service
