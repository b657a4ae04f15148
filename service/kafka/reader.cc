#include "service/kafka/reader.h"

#include <chrono>

#include "service/kafka/client.h"

namespace fraud::kafka {

base::Status readToEnd(rd_kafka_t* consumer, const std::string& topic,
                       const std::vector<int64_t>& end_offsets,
                       const std::function<void(const rd_kafka_message_t&)>& visit,
                       int stall_timeout_ms) {
  const auto partitions = static_cast<int32_t>(end_offsets.size());
  std::vector<bool> done(end_offsets.size());
  size_t remaining = 0;
  auto list = makePartitionList();
  for (int32_t p = 0; p < partitions; ++p) {
    if (end_offsets[static_cast<size_t>(p)] <= 0) {
      done[static_cast<size_t>(p)] = true;
      continue;
    }
    ++remaining;
    rd_kafka_topic_partition_list_add(list.get(), topic.c_str(), p)->offset =
        RD_KAFKA_OFFSET_BEGINNING;
  }
  if (remaining == 0) return {};
  if (const auto err = rd_kafka_assign(consumer, list.get()); err != RD_KAFKA_RESP_ERR_NO_ERROR) {
    return base::Status::failed("cannot assign " + topic + ": " + rd_kafka_err2str(err));
  }
  auto last_progress = std::chrono::steady_clock::now();
  base::Status status;
  while (remaining > 0) {
    KafkaMessage message(rd_kafka_consumer_poll(consumer, 200));
    if (!message) {
      if (std::chrono::steady_clock::now() - last_progress >
          std::chrono::milliseconds(stall_timeout_ms)) {
        status = base::Status::failed(
            "reading " + topic + " stalled for " + std::to_string(stall_timeout_ms) + " ms with " +
            std::to_string(remaining) + " partition(s) short of their end offset");
        break;
      }
      continue;
    }
    last_progress = std::chrono::steady_clock::now();
    const int32_t p = message->partition;
    const bool ours = message->rkt != nullptr && topic == rd_kafka_topic_name(message->rkt) &&
                      p >= 0 && p < partitions && !done[static_cast<size_t>(p)];
    if (message->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
      // The EOF offset is the next one to fetch: at or past the end, everything is read.
      if (ours && message->offset >= end_offsets[static_cast<size_t>(p)]) {
        done[static_cast<size_t>(p)] = true;
        --remaining;
      }
    } else if (message->err != RD_KAFKA_RESP_ERR_NO_ERROR) {
      status =
          base::Status::failed("reading " + topic + ": " + rd_kafka_message_errstr(message.get()));
      break;
    } else if (ours && message->offset < end_offsets[static_cast<size_t>(p)]) {
      visit(*message);
      if (message->offset + 1 >= end_offsets[static_cast<size_t>(p)]) {
        done[static_cast<size_t>(p)] = true;
        --remaining;
      }
    }
  }
  if (const auto err = rd_kafka_assign(consumer, nullptr);
      err != RD_KAFKA_RESP_ERR_NO_ERROR && status.ok()) {
    status = base::Status::failed("cannot unassign " + topic + ": " + rd_kafka_err2str(err));
  }
  return status;
}

}  // namespace fraud::kafka
