#include "loadgen/kafka_client.h"

#include <chrono>
#include <cstring>

namespace fraud::loadgen::kafka {
namespace {

using TopicPartitionList = std::unique_ptr<rd_kafka_topic_partition_list_t,
                                           decltype(&rd_kafka_topic_partition_list_destroy)>;

TopicPartitionList makeList(const std::string& topic, int32_t partitions) {
  TopicPartitionList list(rd_kafka_topic_partition_list_new(partitions),
                          &rd_kafka_topic_partition_list_destroy);
  for (int32_t p = 0; p < partitions; ++p) {
    rd_kafka_topic_partition_list_add(list.get(), topic.c_str(), p);
  }
  return list;
}

Client makeClient(rd_kafka_type_t type, rd_kafka_conf_t* conf, std::string& error) {
  char message[512];
  rd_kafka_t* client = rd_kafka_new(type, conf, message, sizeof(message));
  if (client == nullptr) {
    rd_kafka_conf_destroy(conf);
    error = std::string("cannot create Kafka client: ") + message;
  }
  return Client(client);
}

bool setAll(rd_kafka_conf_t* conf, const Properties& properties, std::string& error) {
  char message[512];
  for (const auto& [key, value] : properties) {
    if (rd_kafka_conf_set(conf, key.c_str(), value.c_str(), message, sizeof(message)) !=
        RD_KAFKA_CONF_OK) {
      error = "Kafka property " + key + ": " + message;
      return false;
    }
  }
  return true;
}

}  // namespace

void ClientDeleter::operator()(rd_kafka_t* client) const {
  if (rd_kafka_type(client) == RD_KAFKA_CONSUMER) rd_kafka_consumer_close(client);
  rd_kafka_destroy(client);
}

std::optional<std::pair<std::string, std::string>> parseProperty(std::string_view text) {
  const auto eq = text.find('=');
  if (eq == std::string_view::npos || eq == 0) return std::nullopt;
  return std::make_pair(std::string(text.substr(0, eq)), std::string(text.substr(eq + 1)));
}

Client makeProducer(const Properties& properties, DeliveryCallback* on_delivery, void* opaque,
                    std::string& error) {
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  if (!setAll(conf, properties, error)) {
    rd_kafka_conf_destroy(conf);
    return nullptr;
  }
  if (on_delivery != nullptr) rd_kafka_conf_set_dr_msg_cb(conf, on_delivery);
  rd_kafka_conf_set_opaque(conf, opaque);
  return makeClient(RD_KAFKA_PRODUCER, conf, error);
}

Client makeConsumer(const Properties& properties, std::string& error) {
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  // librdkafka wants a group.id even for assign(); this one never joins nor commits.
  Properties all = {{"group.id", "fraud-loadgen-reader"},  {"enable.auto.commit", "false"},
                    {"enable.auto.offset.store", "false"}, {"enable.partition.eof", "true"},
                    {"auto.offset.reset", "earliest"},     {"isolation.level", "read_committed"}};
  all.insert(all.end(), properties.begin(), properties.end());
  if (!setAll(conf, all, error)) {
    rd_kafka_conf_destroy(conf);
    return nullptr;
  }
  Client client = makeClient(RD_KAFKA_CONSUMER, conf, error);
  if (client) rd_kafka_poll_set_consumer(client.get());
  return client;
}

std::optional<int32_t> partitionCount(rd_kafka_t* client, const std::string& topic, int timeout_ms,
                                      std::string& error) {
  rd_kafka_topic_t* handle = rd_kafka_topic_new(client, topic.c_str(), nullptr);
  const rd_kafka_metadata_t* metadata = nullptr;
  const rd_kafka_resp_err_t err = rd_kafka_metadata(client, 0, handle, &metadata, timeout_ms);
  rd_kafka_topic_destroy(handle);
  if (err != RD_KAFKA_RESP_ERR_NO_ERROR) {
    error = "cannot read metadata of topic " + topic + ": " + rd_kafka_err2str(err);
    return std::nullopt;
  }
  std::optional<int32_t> count;
  if (metadata->topic_cnt == 1 && metadata->topics[0].err == RD_KAFKA_RESP_ERR_NO_ERROR &&
      metadata->topics[0].partition_cnt > 0) {
    count = metadata->topics[0].partition_cnt;
  } else {
    const auto topic_err = metadata->topic_cnt == 1 ? metadata->topics[0].err
                                                    : RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART;
    error = "topic " + topic + " is not available: " + rd_kafka_err2str(topic_err);
  }
  rd_kafka_metadata_destroy(metadata);
  return count;
}

std::optional<std::vector<int64_t>> highWatermarks(rd_kafka_t* client, const std::string& topic,
                                                   int32_t partitions, int timeout_ms,
                                                   std::string& error) {
  std::vector<int64_t> ends(static_cast<size_t>(partitions), 0);
  for (int32_t p = 0; p < partitions; ++p) {
    int64_t low = 0;
    int64_t high = 0;
    const auto err =
        rd_kafka_query_watermark_offsets(client, topic.c_str(), p, &low, &high, timeout_ms);
    if (err != RD_KAFKA_RESP_ERR_NO_ERROR) {
      error = "cannot read the end offset of " + topic + "/" + std::to_string(p) + ": " +
              rd_kafka_err2str(err);
      return std::nullopt;
    }
    ends[static_cast<size_t>(p)] = high;
  }
  return ends;
}

std::optional<std::vector<int64_t>> committedOffsets(rd_kafka_t* client, const std::string& topic,
                                                     int32_t partitions, int timeout_ms,
                                                     std::string& error) {
  auto list = makeList(topic, partitions);
  const auto err = rd_kafka_committed(client, list.get(), timeout_ms);
  if (err != RD_KAFKA_RESP_ERR_NO_ERROR) {
    error = "cannot read committed offsets on " + topic + ": " + rd_kafka_err2str(err);
    return std::nullopt;
  }
  std::vector<int64_t> offsets(static_cast<size_t>(partitions), -1);
  for (int i = 0; i < list->cnt; ++i) {
    const auto& entry = list->elems[i];
    if (entry.err == RD_KAFKA_RESP_ERR_NO_ERROR && entry.offset >= 0) {
      offsets[static_cast<size_t>(entry.partition)] = entry.offset;
    }
  }
  return offsets;
}

rd_kafka_resp_err_t produce(rd_kafka_t* producer, rd_kafka_topic_t* topic, int32_t partition,
                            std::string_view key, std::string_view value, int64_t timestamp_ms,
                            const Properties& headers) {
  // rd_kafka_produceva rather than the producev macros, which cast C-style.
  constexpr size_t kFixed = 6;
  rd_kafka_vu_t fixed[kFixed + 4];
  std::vector<rd_kafka_vu_t> grown;
  rd_kafka_vu_t* vus = fixed;
  if (headers.size() > 4) {
    grown.resize(kFixed + headers.size());
    vus = grown.data();
  }
  vus[0].vtype = RD_KAFKA_VTYPE_RKT;
  vus[0].u.rkt = topic;
  vus[1].vtype = RD_KAFKA_VTYPE_PARTITION;
  vus[1].u.i32 = partition;
  vus[2].vtype = RD_KAFKA_VTYPE_KEY;
  vus[2].u.mem.ptr = const_cast<char*>(key.data());
  vus[2].u.mem.size = key.size();
  vus[3].vtype = RD_KAFKA_VTYPE_VALUE;
  vus[3].u.mem.ptr = const_cast<char*>(value.data());
  vus[3].u.mem.size = value.size();
  vus[4].vtype = RD_KAFKA_VTYPE_MSGFLAGS;
  vus[4].u.i = RD_KAFKA_MSG_F_COPY;
  vus[5].vtype = RD_KAFKA_VTYPE_TIMESTAMP;
  vus[5].u.i64 = timestamp_ms;
  size_t count = kFixed;
  for (const auto& [name, header_value] : headers) {
    auto& vu = vus[count++];
    vu.vtype = RD_KAFKA_VTYPE_HEADER;
    vu.u.header.name = name.c_str();
    vu.u.header.val = header_value.data();
    vu.u.header.size = static_cast<ssize_t>(header_value.size());
  }
  rd_kafka_error_t* error = rd_kafka_produceva(producer, vus, count);
  if (error == nullptr) return RD_KAFKA_RESP_ERR_NO_ERROR;
  const rd_kafka_resp_err_t code = rd_kafka_error_code(error);
  rd_kafka_error_destroy(error);
  return code;
}

std::optional<std::string> headerValue(const rd_kafka_message_t* message, const char* name) {
  rd_kafka_headers_t* headers = nullptr;
  if (rd_kafka_message_headers(message, &headers) != RD_KAFKA_RESP_ERR_NO_ERROR) {
    return std::nullopt;
  }
  const void* value = nullptr;
  size_t size = 0;
  if (rd_kafka_header_get_last(headers, name, &value, &size) != RD_KAFKA_RESP_ERR_NO_ERROR) {
    return std::nullopt;
  }
  return std::string(static_cast<const char*>(value), size);
}

bool readTopic(rd_kafka_t* consumer, const std::string& topic,
               const std::vector<int64_t>& end_offsets,
               const std::function<void(const rd_kafka_message_t&)>& visit, int stall_timeout_ms,
               std::string& error) {
  const auto partitions = static_cast<int32_t>(end_offsets.size());
  std::vector<bool> done(end_offsets.size());
  size_t remaining = 0;
  auto list = makeList(topic, 0);
  for (int32_t p = 0; p < partitions; ++p) {
    if (end_offsets[static_cast<size_t>(p)] <= 0) {
      done[static_cast<size_t>(p)] = true;
      continue;
    }
    ++remaining;
    rd_kafka_topic_partition_list_add(list.get(), topic.c_str(), p)->offset =
        RD_KAFKA_OFFSET_BEGINNING;
  }
  if (remaining == 0) return true;
  if (const auto err = rd_kafka_assign(consumer, list.get()); err != RD_KAFKA_RESP_ERR_NO_ERROR) {
    error = "cannot assign " + topic + ": " + rd_kafka_err2str(err);
    return false;
  }
  auto last_progress = std::chrono::steady_clock::now();
  bool ok = true;
  while (remaining > 0) {
    rd_kafka_message_t* message = rd_kafka_consumer_poll(consumer, 200);
    if (message == nullptr) {
      if (std::chrono::steady_clock::now() - last_progress >
          std::chrono::milliseconds(stall_timeout_ms)) {
        error = "reading " + topic + " stalled for " + std::to_string(stall_timeout_ms / 1000) +
                " s with " + std::to_string(remaining) + " partition(s) short of their end offset";
        ok = false;
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
      error = "reading " + topic + ": " + rd_kafka_message_errstr(message);
      ok = false;
      rd_kafka_message_destroy(message);
      break;
    } else if (ours && message->offset < end_offsets[static_cast<size_t>(p)]) {
      visit(*message);
      if (message->offset + 1 >= end_offsets[static_cast<size_t>(p)]) {
        done[static_cast<size_t>(p)] = true;
        --remaining;
      }
    }
    rd_kafka_message_destroy(message);
  }
  rd_kafka_assign(consumer, nullptr);
  return ok;
}

bool createTopic(rd_kafka_t* client, const std::string& topic, int32_t partitions, int timeout_ms,
                 std::string& error) {
  char message[512];
  rd_kafka_NewTopic_t* new_topic =
      rd_kafka_NewTopic_new(topic.c_str(), partitions, -1, message, sizeof(message));
  if (new_topic == nullptr) {
    error = std::string("cannot create topic ") + topic + ": " + message;
    return false;
  }
  rd_kafka_queue_t* queue = rd_kafka_queue_new(client);
  rd_kafka_AdminOptions_t* options =
      rd_kafka_AdminOptions_new(client, RD_KAFKA_ADMIN_OP_CREATETOPICS);
  rd_kafka_AdminOptions_set_operation_timeout(options, timeout_ms, message, sizeof(message));
  rd_kafka_CreateTopics(client, &new_topic, 1, options, queue);
  rd_kafka_event_t* event = rd_kafka_queue_poll(queue, timeout_ms + 5000);
  bool ok = false;
  if (event == nullptr) {
    error = "creating topic " + topic + " timed out";
  } else if (rd_kafka_event_error(event) != RD_KAFKA_RESP_ERR_NO_ERROR) {
    error = "cannot create topic " + topic + ": " + rd_kafka_event_error_string(event);
  } else {
    const rd_kafka_CreateTopics_result_t* result = rd_kafka_event_CreateTopics_result(event);
    size_t count = 0;
    const rd_kafka_topic_result_t** topics = rd_kafka_CreateTopics_result_topics(result, &count);
    if (count == 1 && rd_kafka_topic_result_error(topics[0]) == RD_KAFKA_RESP_ERR_NO_ERROR) {
      ok = true;
    } else if (count == 1) {
      error = "cannot create topic " + topic + ": " + rd_kafka_topic_result_error_string(topics[0]);
    } else {
      error = "cannot create topic " + topic + ": no result";
    }
  }
  if (event != nullptr) rd_kafka_event_destroy(event);
  rd_kafka_AdminOptions_destroy(options);
  rd_kafka_queue_destroy(queue);
  rd_kafka_NewTopic_destroy(new_topic);
  return ok;
}

}  // namespace fraud::loadgen::kafka
