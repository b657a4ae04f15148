#pragma once

#include <librdkafka/rdkafka.h>

#include <string_view>

#include "service/transaction_sink.h"

namespace fraud::service {

// librdkafka's transactional calls under its contract: a retriable error is retried as it is (the
// coordinator moved: "not coordinator"), one that requires an abort is aborted, a fatal one ends
// the producer. Aborting on a retriable error instead races the coordinator's failover, and the
// broker may then refuse the abort itself (INVALID_TXN_STATE, fatal). Each call may take up to
// the transaction's remaining time; TransactionalOutput runs them on its committer thread.
//
// Thread-safety: one caller at a time per producer (librdkafka's rule for transactional calls).

// The sync point (detectors/base/sync_point.h) between a commit's two phases: its records are
// on the broker, its offsets not yet sent. The live kill test holds a commit there.
inline constexpr std::string_view kRecordsFlushedSyncPoint = "commitTransaction:RecordsFlushed";

// Commits the open transaction: flushes its records (waiting for a partition leader that is
// away, up to well inside transaction.timeout.ms), passes kRecordsFlushedSyncPoint, sends
// `offsets` with `group` (none when `offsets` is null or empty), and commits. kAborted when the
// transaction must be aborted (the caller aborts it: abortTransaction()), kFatal when the
// producer failed for good.
[[nodiscard]] TransactionResult commitTransaction(rd_kafka_t* producer,
                                                  const rd_kafka_topic_partition_list_t* offsets,
                                                  const rd_kafka_consumer_group_metadata_t* group);

// Aborts the open transaction, retrying what librdkafka says may be retried: kAborted, or kFatal
// when the producer failed for good.
[[nodiscard]] TransactionResult abortTransaction(rd_kafka_t* producer);

}  // namespace fraud::service
