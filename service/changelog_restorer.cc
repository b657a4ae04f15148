#include "service/changelog_restorer.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstring>

namespace fraud::service {
namespace {

constexpr int kPollMs = 200;
constexpr int kWatermarkTimeoutMs = 10'000;
constexpr size_t kRestoreBatch = 10'000;

}  // namespace

ChangelogRestorer::ChangelogRestorer(const KafkaProperties& kafka, std::string changelog_topic,
                                     state::StateDb& db)
    : kafka_(kafka), topic_(std::move(changelog_topic)), db_(db) {
  kafka_["isolation.level"] = "read_committed";
  kafka_["enable.partition.eof"] = "true";
  kafka_["enable.auto.commit"] = "false";
  kafka_.erase("group.instance.id");
  kafka_["group.id"] = "fraud-detector-restore";  // assign() only: never joins or commits
}

ChangelogRestorer::~ChangelogRestorer() { stop(); }

std::optional<std::string> ChangelogRestorer::start() {
  std::string error;
  auto conf = makeKafkaConf(kafka_, error);
  if (!conf) return "restore consumer configuration: " + error;
  consumer_ = makeKafkaClient(RD_KAFKA_CONSUMER, std::move(conf), error);
  if (!consumer_) return "restore consumer: " + error;
  thread_ = std::thread([this] { loop(); });
  return std::nullopt;
}

void ChangelogRestorer::stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
  if (consumer_) rd_kafka_consumer_close(consumer_.get());
  consumer_.reset();
}

void ChangelogRestorer::enqueue(int32_t partition) {
  {
    std::lock_guard lock(mu_);
    cancelled_.erase(partition);
    queue_.push_back(partition);
    progress_[partition] = 0;
  }
  wake_.notify_all();
}

void ChangelogRestorer::cancel(int32_t partition) {
  std::lock_guard lock(mu_);
  queue_.erase(std::remove(queue_.begin(), queue_.end(), partition), queue_.end());
  cancelled_[partition] = true;
  progress_.erase(partition);
}

bool ChangelogRestorer::cancelled(int32_t partition) const {
  std::lock_guard lock(mu_);
  const auto it = cancelled_.find(partition);
  return it != cancelled_.end() && it->second;
}

std::vector<RestoreResult> ChangelogRestorer::takeCompleted() {
  std::lock_guard lock(mu_);
  return std::exchange(completed_, {});
}

std::optional<double> ChangelogRestorer::progress(int32_t partition) const {
  std::lock_guard lock(mu_);
  const auto it = progress_.find(partition);
  if (it == progress_.end()) return std::nullopt;
  return it->second;
}

void ChangelogRestorer::loop() {
  while (true) {
    int32_t partition;
    {
      std::unique_lock lock(mu_);
      wake_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (stopping_) return;
      partition = queue_.front();
      queue_.pop_front();
    }
    auto result = restore(partition);
    std::lock_guard lock(mu_);
    if (cancelled_[partition]) continue;  // revoked meanwhile: nobody wants the result
    progress_.erase(partition);
    completed_.push_back(std::move(result));
  }
}

RestoreResult ChangelogRestorer::restore(int32_t partition) {
  const auto started = std::chrono::steady_clock::now();
  RestoreResult result;
  result.partition = partition;
  auto fail = [&](std::string message) {
    result.error = "restore of partition " + std::to_string(partition) + ": " + message;
    result.duration = std::chrono::steady_clock::now() - started;
    return result;
  };

  auto local = db_.checkpoint(partition);
  int64_t low = 0;
  int64_t high = 0;
  const auto err = rd_kafka_query_watermark_offsets(consumer_.get(), topic_.c_str(), partition,
                                                    &low, &high, kWatermarkTimeoutMs);
  if (err != RD_KAFKA_RESP_ERR_NO_ERROR) {
    return fail(std::string("changelog watermarks: ") + rd_kafka_err2str(err));
  }
  int64_t start = local ? local->changelog_next_offset : low;
  if (local && (start > high || start < low)) {
    // The changelog no longer matches this disk (topic recreated, or our offset compacted
    // away): forget the local state and take everything from the changelog.
    spdlog::warn("partition {}: local checkpoint at changelog offset {} is outside [{}, {}]; "
                 "rebuilding from the changelog",
                 partition, start, low, high);
    if (auto error = db_.clearPartition(partition)) return fail(*error);
    local.reset();
    start = low;
  }
  result.checkpoint = local;
  if (start >= high) {
    result.duration = std::chrono::steady_clock::now() - started;
    return result;
  }

  auto assignment = makePartitionList(1);
  rd_kafka_topic_partition_list_add(assignment.get(), topic_.c_str(), partition)->offset = start;
  if (auto e = rd_kafka_assign(consumer_.get(), assignment.get())) {
    return fail(std::string("assign: ") + rd_kafka_err2str(e));
  }

  std::vector<state::CardChange> batch;
  std::optional<state::PartitionCheckpoint> latest;
  int64_t next = start;
  bool reached_end = false;
  while (!reached_end) {
    {
      std::lock_guard lock(mu_);
      if (stopping_ || cancelled_[partition]) break;
    }
    KafkaMessage message(rd_kafka_consumer_poll(consumer_.get(), kPollMs));
    if (!message) continue;
    if (message->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
      // The end of the committed data. A transaction left open by a dead owner holds the
      // stable offset back until the broker aborts it: wait for the end seen at the start.
      reached_end = message->offset >= high;
      next = std::max(next, message->offset);
      continue;
    }
    if (message->err != RD_KAFKA_RESP_ERR_NO_ERROR) {
      rd_kafka_assign(consumer_.get(), nullptr);
      return fail(rd_kafka_message_errstr(message.get()));
    }
    next = message->offset + 1;
    ++result.records;
    const auto key = keyOf(message.get());
    if (key == kChangelogCheckpointKey) {
      auto checkpoint = state::PartitionCheckpoint::decode(payloadOf(message.get()));
      if (!checkpoint) {
        rd_kafka_assign(consumer_.get(), nullptr);
        return fail("unreadable checkpoint record at offset " + std::to_string(message->offset));
      }
      latest = checkpoint;
    } else if (key.size() == detectors::CardRef{}.bytes.size()) {
      state::CardChange change;
      std::memcpy(change.card_ref.bytes.data(), key.data(), key.size());
      if (message->payload != nullptr) change.encoded = std::string(payloadOf(message.get()));
      batch.push_back(std::move(change));
    } else {
      spdlog::warn("partition {}: changelog record at offset {} has an unknown key; skipped",
                   partition, message->offset);
    }
    if (batch.size() >= kRestoreBatch) {
      if (auto error = db_.writeRestored(partition, batch, std::nullopt)) return fail(*error);
      batch.clear();
    }
    std::lock_guard lock(mu_);
    if (high > start) {
      progress_[partition] =
          std::min(1.0, static_cast<double>(next - start) / static_cast<double>(high - start));
    }
  }
  rd_kafka_assign(consumer_.get(), nullptr);
  if (!reached_end) return fail("stopped before the end of the changelog");

  if (latest) {
    latest->changelog_next_offset = next;
    result.checkpoint = latest;
  } else if (result.checkpoint) {
    result.checkpoint->changelog_next_offset = next;
  }
  if (auto error = db_.writeRestored(partition, batch, result.checkpoint)) return fail(*error);
  result.duration = std::chrono::steady_clock::now() - started;
  return result;
}

}  // namespace fraud::service
