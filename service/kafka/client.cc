#include "service/kafka/client.h"

#include <cstdio>

#include "detectors/base/mutex.h"

namespace fraud::kafka {
namespace {

// The process-wide sink, set by setLogSink() and called on librdkafka's threads.
struct Sink {
  base::Mutex mu;
  LogSink current FRAUD_GUARDED_BY(mu);
};

Sink& sink() {
  static Sink sink;
  return sink;
}

void writeToStderr(LogLevel level, std::string_view client, std::string_view facility,
                   std::string_view message) {
  if (level < LogLevel::kWarning) return;
  static constexpr const char* kNames[] = {"debug", "info", "warning", "error", "critical"};
  std::fprintf(stderr, "kafka %s %.*s %.*s: %.*s\n", kNames[static_cast<int>(level)],
               static_cast<int>(client.size()), client.data(), static_cast<int>(facility.size()),
               facility.data(), static_cast<int>(message.size()), message.data());
}

void forwardLog(const rd_kafka_t* client, int level, const char* facility, const char* message) {
  const LogLevel folded = logLevelOfSyslog(level);
  const std::string_view name = client == nullptr ? "" : rd_kafka_name(client);
  Sink& to = sink();
  base::MutexLock lock(to.mu);
  if (to.current) {
    to.current(folded, name, facility, message);
  } else {
    writeToStderr(folded, name, facility, message);
  }
}

}  // namespace

LogLevel logLevelOfSyslog(int syslog_level) {
  if (syslog_level <= 2) return LogLevel::kCritical;  // emergency, alert, critical
  if (syslog_level == 3) return LogLevel::kError;
  if (syslog_level == 4) return LogLevel::kWarning;
  if (syslog_level <= 6) return LogLevel::kInfo;  // notice, info
  return LogLevel::kDebug;
}

void setLogSink(LogSink new_sink) {
  Sink& to = sink();
  base::MutexLock lock(to.mu);
  to.current = std::move(new_sink);
}

base::Result<KafkaConf> makeKafkaConf(const KafkaProperties& properties) {
  KafkaConf conf(rd_kafka_conf_new());
  rd_kafka_conf_set_log_cb(conf.get(), &forwardLog);
  std::string problems;
  for (const auto& [key, value] : properties) {
    char message[512];
    if (rd_kafka_conf_set(conf.get(), key.c_str(), value.c_str(), message, sizeof(message)) !=
        RD_KAFKA_CONF_OK) {
      if (!problems.empty()) problems += "; ";
      problems += message;
    }
  }
  if (!problems.empty()) return base::Status::invalidArgument(problems);
  return conf;
}

base::Result<KafkaHandle> makeKafkaClient(rd_kafka_type_t type, KafkaConf conf) {
  char message[512];
  rd_kafka_t* client = rd_kafka_new(type, conf.get(), message, sizeof(message));
  if (client == nullptr) return base::Status::invalidArgument(message);
  (void)conf.release();  // owned by the client now
  return KafkaHandle(client);
}

base::Result<KafkaHandle> makeKafkaClient(rd_kafka_type_t type, const KafkaProperties& properties) {
  auto conf = makeKafkaConf(properties);
  if (!conf) return conf.status();
  return makeKafkaClient(type, std::move(*conf));
}

base::Result<KafkaHandle> makeReader(const KafkaProperties& properties, bool read_committed) {
  // librdkafka wants a group.id even for assign(); this one never joins nor commits.
  KafkaProperties all = {{"group.id", "fraud-reader"}, {"auto.offset.reset", "earliest"}};
  for (const auto& [key, value] : properties) all[key] = value;
  all["enable.auto.commit"] = "false";
  all["enable.auto.offset.store"] = "false";
  all["enable.partition.eof"] = "true";
  all["isolation.level"] = read_committed ? "read_committed" : "read_uncommitted";
  auto conf = makeKafkaConf(all);
  if (!conf) return conf.status();
  auto client = makeKafkaClient(RD_KAFKA_CONSUMER, std::move(*conf));
  if (!client) return client;
  if (const auto err = rd_kafka_poll_set_consumer(client->get());
      err != RD_KAFKA_RESP_ERR_NO_ERROR) {
    return base::Status::failed(std::string("cannot redirect the reader's queue: ") +
                                rd_kafka_err2str(err));
  }
  return client;
}

PartitionList makePartitionList(int size) {
  return PartitionList(rd_kafka_topic_partition_list_new(size));
}

PartitionList makePartitionList(const std::string& topic, int32_t partitions) {
  auto list = makePartitionList(partitions);
  for (int32_t p = 0; p < partitions; ++p) {
    rd_kafka_topic_partition_list_add(list.get(), topic.c_str(), p);
  }
  return list;
}

std::optional<int64_t> timestampOf(const rd_kafka_message_t* m) {
  rd_kafka_timestamp_type_t type = RD_KAFKA_TIMESTAMP_NOT_AVAILABLE;
  const int64_t timestamp = rd_kafka_message_timestamp(m, &type);
  if (type == RD_KAFKA_TIMESTAMP_NOT_AVAILABLE) return std::nullopt;
  return timestamp;
}

std::optional<std::string> headerValue(const rd_kafka_message_t* m, std::string_view name) {
  rd_kafka_headers_t* headers = nullptr;
  if (rd_kafka_message_headers(m, &headers) != RD_KAFKA_RESP_ERR_NO_ERROR) return std::nullopt;
  const void* value = nullptr;
  size_t size = 0;
  if (rd_kafka_header_get_last(headers, std::string(name).c_str(), &value, &size) !=
      RD_KAFKA_RESP_ERR_NO_ERROR) {
    return std::nullopt;
  }
  return value == nullptr ? std::string() : std::string(static_cast<const char*>(value), size);
}

std::map<std::string, std::string> headersOf(const rd_kafka_message_t* m) {
  std::map<std::string, std::string> out;
  rd_kafka_headers_t* headers = nullptr;
  if (rd_kafka_message_headers(m, &headers) != RD_KAFKA_RESP_ERR_NO_ERROR) return out;
  const char* name = nullptr;
  const void* value = nullptr;
  size_t size = 0;
  for (size_t i = 0;
       rd_kafka_header_get_all(headers, i, &name, &value, &size) == RD_KAFKA_RESP_ERR_NO_ERROR;
       ++i) {
    out[name] =
        value == nullptr ? std::string() : std::string(static_cast<const char*>(value), size);
  }
  return out;
}

}  // namespace fraud::kafka
