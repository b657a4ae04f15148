#include "service/restore_job.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstring>
#include <exception>
#include <string_view>

#include "service/changelog_format.h"
#include "service/kafka/client.h"
#include "state/card_state_codec.h"

namespace fraud::service {
namespace {

// A restore still held by an open transaction this long says so in the log.
constexpr auto kOpenTransactionNotice = std::chrono::seconds(2);

}  // namespace

RestoreJob::RestoreJob(state::StateDb& db, int32_t partition, uint64_t ticket,
                       bool log_open_transaction_waits)
    : db_(db),
      partition_(partition),
      ticket_(ticket),
      log_open_transaction_waits_(log_open_transaction_waits) {}

std::optional<RestoreResult> RestoreJob::begin(PartitionLeases::Lease lease, int64_t low,
                                               int64_t high) {
  lease_ = std::move(lease);
  end_ = high;
  try {
    local_ = db_.checkpoint(partition_);
    start_ = local_ ? local_->changelog_next_offset : low;
  } catch (const state::RejectedCheckpoint& e) {
    ++malformed_;
    spdlog::warn("partition {}: {}; rebuilding it from the changelog", partition_, e.what());
    if (auto error = rebuildFrom(low); !error.ok()) return finish(error);
  } catch (const std::exception& e) {
    spdlog::warn("partition {}: {}; rebuilding it from the changelog", partition_, e.what());
    if (auto error = rebuildFrom(low); !error.ok()) return finish(error);
  }
  if (local_ && (start_ > end_ || start_ < low)) {
    // The changelog no longer matches this disk (topic recreated, or our offset compacted
    // away). (A checkpoint past the last stable offset but within the high watermark is no
    // mismatch: the restore waits for the open transaction instead.)
    spdlog::warn(
        "partition {}: local checkpoint at changelog offset {} is outside [{}, {}]; "
        "rebuilding from the changelog",
        partition_, start_, low, end_);
    if (auto error = rebuildFrom(low); !error.ok()) return finish(error);
  }
  next_ = start_;
  writer_ = db_.beginRestore(partition_, !local_);
  if (start_ >= end_) return finish({});
  return std::nullopt;
}

base::Status RestoreJob::rebuildFrom(int64_t low) {
  local_.reset();
  start_ = low;
  return db_.clearPartition(partition_);
}

std::optional<RestoreResult> RestoreJob::apply(const rd_kafka_message_t& message) {
  if (message.err == RD_KAFKA_RESP_ERR__PARTITION_EOF) return applyEndOfData(message);
  if (message.err != RD_KAFKA_RESP_ERR_NO_ERROR) {
    return finish(base::Status::failed(rd_kafka_message_errstr(&message)));
  }
  next_ = message.offset + 1;
  ++records_;
  if (kafka::keyOf(&message) != kChangelogCheckpointKey) return applyCard(message);
  applyCheckpoint(message);
  return std::nullopt;
}

void RestoreJob::applyCheckpoint(const rd_kafka_message_t& message) {
  const std::string_view value = kafka::payloadOf(&message);
  if (auto checkpoint = state::PartitionCheckpoint::decode(value)) {
    latest_ = checkpoint;
    checkpoint_rejected_ = false;
    return;
  }
  // The cards from here on belong to the commit this record stood for, which no checkpoint
  // read so far describes: none stands until a later record gives one.
  ++malformed_;
  latest_.reset();
  checkpoint_rejected_ = true;
  spdlog::warn(
      "partition {}: checkpoint record at changelog offset {} rejected ({}); the partition has "
      "no checkpoint unless a later record gives one",
      partition_, message.offset, state::PartitionCheckpoint::rejection(value).message());
}

std::optional<RestoreResult> RestoreJob::applyEndOfData(const rd_kafka_message_t& message) {
  // The end of the committed data. A transaction left open by a departed owner holds the
  // stable offset back until it is fenced or times out: wait for the end seen at the start.
  next_ = std::max(next_, message.offset);
  if (message.offset >= end_) return finish({});
  if (log_open_transaction_waits_ && !waiting_noticed_ &&
      std::chrono::steady_clock::now() - started_ > kOpenTransactionNotice) {
    waiting_noticed_ = true;
    spdlog::warn(
        "partition {}: the changelog is stable up to offset {} of {}; waiting for an open "
        "transaction (a departed owner's) to be aborted",
        partition_, message.offset, end_);
  }
  return std::nullopt;
}

std::optional<RestoreResult> RestoreJob::applyCard(const rd_kafka_message_t& message) {
  const std::string_view key = kafka::keyOf(&message);
  if (key.size() != detectors::CardRef{}.bytes.size()) {
    ++malformed_;
    spdlog::warn("partition {}: changelog record at offset {} has an unknown key; skipped",
                 partition_, message.offset);
    return std::nullopt;
  }
  detectors::CardRef card_ref;
  std::memcpy(card_ref.bytes.data(), key.data(), key.size());
  base::Status error;
  if (message.payload == nullptr) {
    error = writer_->erase(card_ref);
  } else if (const std::string_view value = kafka::payloadOf(&message); state::isCardState(value)) {
    error = writer_->put(card_ref, value);
  } else {
    // Restored as it is, it would end the ingest thread when read: drop the card.
    ++malformed_;
    spdlog::warn("partition {}: changelog record at offset {} is no card state; card dropped",
                 partition_, message.offset);
    error = writer_->erase(card_ref);
  }
  if (error.ok()) return std::nullopt;
  return finish(error);
}

RestoreResult RestoreJob::fail(const base::Status& error) { return finish(error); }

void RestoreJob::abandon() {
  done_ = true;
  writer_.reset();
  lease_.release();
}

std::optional<double> RestoreJob::progress() const {
  if (done_ || end_ <= start_) return std::nullopt;
  return std::min(1.0, static_cast<double>(next_ - start_) / static_cast<double>(end_ - start_));
}

RestoreResult RestoreJob::finish(base::Status error) {
  done_ = true;
  RestoreResult result;
  result.partition = partition_;
  result.ticket = ticket_;
  result.records = records_;
  result.malformed = malformed_;
  result.changelog_start = start_;
  result.changelog_end = end_;
  result.changelog_next = next_;
  if (error.ok()) {
    result.checkpoint = latest_ ? latest_ : checkpoint_rejected_ ? std::nullopt : local_;
    if (result.checkpoint) result.checkpoint->changelog_next_offset = next_;
    error = writer_->finish(result.checkpoint);  // without an error, begin() made the writer
  }
  if (!error.ok()) {
    result.error = error.withPrefix("restore of partition " + std::to_string(partition_) + ": ");
    result.checkpoint.reset();
  }
  writer_.reset();
  lease_.release();
  result.duration = std::chrono::steady_clock::now() - started_;
  return result;
}

}  // namespace fraud::service
