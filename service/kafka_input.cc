#include "service/kafka_input.h"

#include <spdlog/spdlog.h>

#include <array>
#include <string_view>

namespace fraud::service {
namespace {

constexpr int kBlockingCallMs = 10'000;

}  // namespace

KafkaInput::KafkaInput(rd_kafka_t* consumer, std::string topic, std::string auto_offset_reset)
    : consumer_(consumer),
      topic_(std::move(topic)),
      auto_offset_reset_(std::move(auto_offset_reset)) {}

void KafkaInput::pause(const std::vector<int32_t>& partitions) {
  auto list = kafka::makePartitionList(static_cast<int>(partitions.size()));
  for (const int32_t p : partitions)
    rd_kafka_topic_partition_list_add(list.get(), topic_.c_str(), p);
  if (const auto err = rd_kafka_pause_partitions(consumer_, list.get())) {
    spdlog::error("pause input partitions: {}", rd_kafka_err2str(err));
  }
}

void KafkaInput::resume(int32_t partition) {
  auto list = kafka::makePartitionList(1);
  rd_kafka_topic_partition_list_add(list.get(), topic_.c_str(), partition);
  if (const auto err = rd_kafka_resume_partitions(consumer_, list.get())) {
    spdlog::error("partition {}: resume: {}", partition, rd_kafka_err2str(err));
  }
}

base::Status KafkaInput::seek(int32_t partition, int64_t offset) {
  auto list = kafka::makePartitionList(1);
  rd_kafka_topic_partition_list_add(list.get(), topic_.c_str(), partition)->offset = offset;
  if (kafka::KafkaError e(rd_kafka_seek_partitions(consumer_, list.get(), kBlockingCallMs)); e) {
    return base::Status::failed(rd_kafka_error_string(e.get()));
  }
  if (list->elems[0].err != RD_KAFKA_RESP_ERR_NO_ERROR) {
    return base::Status::failed(rd_kafka_err2str(list->elems[0].err));
  }
  return {};
}

std::map<int32_t, int64_t> KafkaInput::startOffsets(const std::vector<int32_t>& partitions) {
  std::map<int32_t, int64_t> result;
  auto list = kafka::makePartitionList(static_cast<int>(partitions.size()));
  for (const int32_t p : partitions)
    rd_kafka_topic_partition_list_add(list.get(), topic_.c_str(), p);
  if (const auto err = rd_kafka_committed(consumer_, list.get(), kBlockingCallMs)) {
    spdlog::warn("committed offsets of {}: {}; asking again", topic_, rd_kafka_err2str(err));
    return result;
  }
  for (int i = 0; i < list->cnt; ++i) {
    const auto& elem = list->elems[i];
    if (elem.err != RD_KAFKA_RESP_ERR_NO_ERROR) continue;
    if (elem.offset >= 0) {
      spdlog::warn(
          "partition {}: no state checkpoint but a committed offset {}; state before it "
          "is lost (changelog topic recreated?)",
          elem.partition, elem.offset);
      result[elem.partition] = elem.offset;
      continue;
    }
    const auto marks = kafka::queryWatermarks(consumer_, topic_, elem.partition, kBlockingCallMs);
    if (!marks) {
      // Starting at 0 here would replay the whole history, or skip it: neither is ours to guess.
      spdlog::warn("partition {}: watermark query: {}; asking again", elem.partition,
                   marks.message());
      continue;
    }
    result[elem.partition] = auto_offset_reset_ == "latest" ? marks->high : marks->low;
  }
  return result;
}

kafka::PartitionList KafkaInput::listOf(const std::vector<int32_t>& partitions) const {
  auto list = kafka::makePartitionList(static_cast<int>(partitions.size()));
  for (const int32_t p : partitions) {
    rd_kafka_topic_partition_list_add(list.get(), topic_.c_str(), p);
  }
  return list;
}

bool KafkaInput::cooperative() const {
  return std::string_view(rd_kafka_rebalance_protocol(consumer_)) == "COOPERATIVE";
}

bool KafkaInput::assignmentLost() const { return rd_kafka_assignment_lost(consumer_) != 0; }

void KafkaInput::incrementalAssign(const std::vector<int32_t>& partitions) {
  if (kafka::KafkaError e(rd_kafka_incremental_assign(consumer_, listOf(partitions).get())); e) {
    spdlog::error("incremental assign: {}", rd_kafka_error_string(e.get()));
  }
}

void KafkaInput::incrementalUnassign(const std::vector<int32_t>& partitions) {
  if (kafka::KafkaError e(rd_kafka_incremental_unassign(consumer_, listOf(partitions).get())); e) {
    spdlog::error("incremental unassign: {}", rd_kafka_error_string(e.get()));
  }
}

void KafkaInput::assign(const std::vector<int32_t>& partitions) {
  const auto err =
      rd_kafka_assign(consumer_, partitions.empty() ? nullptr : listOf(partitions).get());
  if (err != RD_KAFKA_RESP_ERR_NO_ERROR) spdlog::error("assign: {}", rd_kafka_err2str(err));
}

base::Status KafkaInput::subscribe() {
  auto subscription = kafka::makePartitionList(1);
  rd_kafka_topic_partition_list_add(subscription.get(), topic_.c_str(), RD_KAFKA_PARTITION_UA);
  if (const auto err = rd_kafka_subscribe(consumer_, subscription.get())) {
    return base::Status::failed(rd_kafka_err2str(err));
  }
  return {};
}

base::Status KafkaInput::rejoin() {
  // The revocation this brings is served by the next consumer poll (the rebalance callback);
  // librdkafka holds the new subscription back until it is through.
  if (const auto err = rd_kafka_unsubscribe(consumer_)) {
    spdlog::error("rejoin: unsubscribe: {}", rd_kafka_err2str(err));
  }
  return subscribe();
}

bool KafkaInput::poll(int timeout_ms, PolledInput& polled) {
  rd_kafka_message_t* message = rd_kafka_consumer_poll(consumer_, timeout_ms);
  if (message == nullptr) return false;
  polled.handle = message;
  polled.partition = message->partition;
  polled.record = InputRecord{};
  polled.create_time = false;
  polled.error = {};
  switch (message->err) {
    case RD_KAFKA_RESP_ERR_NO_ERROR:
      break;
    case RD_KAFKA_RESP_ERR__PARTITION_EOF:
      polled.kind = PolledInput::Kind::kPartitionEnd;
      return true;
    case RD_KAFKA_RESP_ERR__FATAL:
      polled.kind = PolledInput::Kind::kFatal;
      return true;
    default:
      polled.kind = PolledInput::Kind::kError;
      polled.error = rd_kafka_message_errstr(message);
      return true;
  }
  polled.kind = PolledInput::Kind::kRecord;
  polled.record.offset = message->offset;
  polled.record.key = kafka::keyOf(message);
  if (message->payload != nullptr) polled.record.value = kafka::payloadOf(message);
  rd_kafka_timestamp_type_t type;
  const int64_t timestamp = rd_kafka_message_timestamp(message, &type);
  if (type != RD_KAFKA_TIMESTAMP_NOT_AVAILABLE) polled.record.timestamp_ms = timestamp;
  polled.create_time = type == RD_KAFKA_TIMESTAMP_CREATE_TIME;
  return true;
}

void KafkaInput::release(std::span<PolledInput> polled) {
  for (PolledInput& p : polled) {
    rd_kafka_message_destroy(static_cast<rd_kafka_message_t*>(p.handle));
    p.handle = nullptr;
  }
}

base::Status KafkaInput::fatalError() const {
  std::array<char, 512> reason{};
  const rd_kafka_resp_err_t code = rd_kafka_fatal_error(consumer_, reason.data(), reason.size());
  if (code == RD_KAFKA_RESP_ERR_NO_ERROR) return {};
  return base::Status::failed(std::string(rd_kafka_err2name(code)) + ": " + reason.data());
}

base::Status KafkaInput::unsubscribe() {
  if (const auto err = rd_kafka_unsubscribe(consumer_)) {
    return base::Status::failed(rd_kafka_err2str(err));
  }
  return {};
}

void KafkaInput::close() {
  if (const auto err = rd_kafka_consumer_close(consumer_)) {
    spdlog::warn("consumer close: {}", rd_kafka_err2str(err));
  }
}

std::optional<int64_t> KafkaInput::cachedHighWatermark(int32_t partition) const {
  int64_t low = 0;
  int64_t high = 0;
  if (rd_kafka_get_watermark_offsets(consumer_, topic_.c_str(), partition, &low, &high) !=
          RD_KAFKA_RESP_ERR_NO_ERROR ||
      high < 0) {
    return std::nullopt;
  }
  return high;
}

}  // namespace fraud::service
