// fraud-floor-client: the plain Kafka clients that scripts/bench/floor measures the service
// against (docs/performance.md, "The floor"). Nothing of the service is linked: librdkafka only.
//
//   fraud-floor-client consume --brokers B --topic T
//       Reads every partition of T from its start, read_committed, to its end (the last stable
//       offset) and does nothing with the records. Prints one JSON line: records, key and value
//       bytes, wall and CPU seconds (getrusage of the whole process: every librdkafka thread).
//   fraud-floor-client dump --brokers B --topic T
//       The same read, writing each record's value on a line of stdout (for comparing alerts).
//   fraud-floor-client latency --brokers B --topic T [--idle-s S] [--max-s S]
//       Reads T from its start, read_committed, and times each record against its timestamp
//       (the producer's CreateTime): a pass-through consumer's end-to-end latency. Stops once no
//       record came for S seconds (default 3) after the first, or after --max-s (default 3600).
//   fraud-floor-client produce --brokers B --topic T --count N --value-bytes V
//                              [--key-bytes K] [--txn-records R]
//       Writes N records (K-byte keys, V-byte values, round-robin over T's partitions) with a
//       transactional producer, R records a transaction, with the service's producer settings
//       (acks=all, idempotence, linger.ms=5, lz4). Prints one JSON line like consume's.
//
// Consumer settings are the service's input consumer's (service/stream_processor.cc).
#include <librdkafka/rdkafka.h>
#include <sys/resource.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

struct Args {
  std::string command, brokers, topic;
  long long count = 0;
  int key_bytes = 64, value_bytes = 0, txn_records = 1000;
  double idle_s = 3, max_s = 3600;
};

[[noreturn]] void die(const std::string& message) {
  std::fprintf(stderr, "fraud-floor-client: %s\n", message.c_str());
  std::exit(1);
}

double cpuSeconds() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  auto seconds = [](const timeval& t) {
    return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) / 1e6;
  };
  return seconds(usage.ru_utime) + seconds(usage.ru_stime);
}

double secondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

void set(rd_kafka_conf_t* conf, const char* name, const std::string& value) {
  std::array<char, 512> error{};
  if (rd_kafka_conf_set(conf, name, value.c_str(), error.data(), error.size()) !=
      RD_KAFKA_CONF_OK) {
    die(std::string(name) + ": " + error.data());
  }
}

rd_kafka_t* makeClient(rd_kafka_type_t type, rd_kafka_conf_t* conf) {
  std::array<char, 512> error{};
  rd_kafka_t* client = rd_kafka_new(type, conf, error.data(), error.size());
  if (client == nullptr) die(error.data());
  return client;
}

int partitionCount(rd_kafka_t* client, const std::string& topic) {
  rd_kafka_topic_t* handle = rd_kafka_topic_new(client, topic.c_str(), nullptr);
  const rd_kafka_metadata_t* metadata = nullptr;
  if (rd_kafka_metadata(client, 0, handle, &metadata, 10000) != RD_KAFKA_RESP_ERR_NO_ERROR ||
      metadata->topic_cnt != 1 || metadata->topics[0].err != RD_KAFKA_RESP_ERR_NO_ERROR) {
    die("no metadata for topic " + topic);
  }
  const int partitions = metadata->topics[0].partition_cnt;
  rd_kafka_metadata_destroy(metadata);
  rd_kafka_topic_destroy(handle);
  return partitions;
}

// A group-less consumer assigned every partition of the topic from its start.
rd_kafka_t* makeReader(const Args& args, int& partitions) {
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  set(conf, "bootstrap.servers", args.brokers);
  set(conf, "group.id", "fraud-floor-client");
  set(conf, "enable.auto.commit", "false");
  set(conf, "isolation.level", "read_committed");
  set(conf, "enable.partition.eof", "true");
  set(conf, "max.partition.fetch.bytes", "10485760");
  set(conf, "queued.min.messages", "1000000");
  rd_kafka_t* consumer = makeClient(RD_KAFKA_CONSUMER, conf);
  rd_kafka_poll_set_consumer(consumer);
  partitions = partitionCount(consumer, args.topic);
  rd_kafka_topic_partition_list_t* list = rd_kafka_topic_partition_list_new(partitions);
  for (int p = 0; p < partitions; ++p) {
    rd_kafka_topic_partition_list_add(list, args.topic.c_str(), p)->offset =
        RD_KAFKA_OFFSET_BEGINNING;
  }
  if (rd_kafka_assign(consumer, list) != RD_KAFKA_RESP_ERR_NO_ERROR) die("assign failed");
  rd_kafka_topic_partition_list_destroy(list);
  return consumer;
}

void closeReader(rd_kafka_t* consumer) {
  rd_kafka_consumer_close(consumer);
  rd_kafka_destroy(consumer);
}

int consume(const Args& args, bool dump) {
  const auto start = Clock::now();
  int partitions = 0;
  rd_kafka_t* consumer = makeReader(args, partitions);
  long long records = 0, key_bytes = 0, value_bytes = 0;
  std::vector<bool> at_end(partitions, false);
  int ended = 0;
  while (ended < partitions) {
    rd_kafka_message_t* message = rd_kafka_consumer_poll(consumer, 1000);
    if (message == nullptr) continue;
    if (message->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
      if (!at_end[message->partition]) {
        at_end[message->partition] = true;
        ++ended;
      }
    } else if (message->err != RD_KAFKA_RESP_ERR_NO_ERROR) {
      die(rd_kafka_message_errstr(message));
    } else {
      ++records;
      key_bytes += static_cast<long long>(message->key_len);
      value_bytes += static_cast<long long>(message->len);
      if (dump) {
        std::fwrite(message->payload, 1, message->len, stdout);
        std::fputc('\n', stdout);
      }
    }
    rd_kafka_message_destroy(message);
  }
  const double wall = secondsSince(start);
  closeReader(consumer);
  if (dump) return 0;
  std::printf(
      "{\"tool\":\"consume\",\"topic\":\"%s\",\"partitions\":%d,\"records\":%lld,"
      "\"key_bytes\":%lld,\"value_bytes\":%lld,\"wall_s\":%.3f,\"cpu_s\":%.3f}\n",
      args.topic.c_str(), partitions, records, key_bytes, value_bytes, wall, cpuSeconds());
  return 0;
}

double quantile(const std::vector<double>& sorted, double phi) {
  if (sorted.empty()) return 0;
  const auto rank = static_cast<size_t>(phi * static_cast<double>(sorted.size() - 1));
  return sorted[rank];
}

int latency(const Args& args) {
  const auto start = Clock::now();
  int partitions = 0;
  rd_kafka_t* consumer = makeReader(args, partitions);
  std::vector<double> latencies_ms;
  latencies_ms.reserve(1 << 22);
  auto last_record = Clock::now();
  while (secondsSince(start) < args.max_s &&
         (latencies_ms.empty() || secondsSince(last_record) < args.idle_s)) {
    rd_kafka_message_t* message = rd_kafka_consumer_poll(consumer, 100);
    if (message == nullptr) continue;
    if (message->err == RD_KAFKA_RESP_ERR_NO_ERROR) {
      const auto now_us = std::chrono::duration_cast<std::chrono::microseconds>(
                              std::chrono::system_clock::now().time_since_epoch())
                              .count();
      const int64_t produced_ms = rd_kafka_message_timestamp(message, nullptr);
      latencies_ms.push_back(static_cast<double>(now_us) / 1000.0 -
                             static_cast<double>(produced_ms));
      last_record = Clock::now();
    }
    rd_kafka_message_destroy(message);
  }
  closeReader(consumer);
  std::sort(latencies_ms.begin(), latencies_ms.end());
  std::printf(
      "{\"tool\":\"latency\",\"topic\":\"%s\",\"records\":%zu,\"p50_ms\":%.2f,\"p99_ms\":%.2f,"
      "\"p999_ms\":%.2f,\"max_ms\":%.2f}\n",
      args.topic.c_str(), latencies_ms.size(), quantile(latencies_ms, 0.5),
      quantile(latencies_ms, 0.99), quantile(latencies_ms, 0.999),
      latencies_ms.empty() ? 0.0 : latencies_ms.back());
  return latencies_ms.empty() ? 1 : 0;
}

void check(rd_kafka_error_t* error, const char* what) {
  if (error == nullptr) return;
  const std::string text = std::string(what) + ": " + rd_kafka_error_string(error);
  rd_kafka_error_destroy(error);
  die(text);
}

int produce(const Args& args) {
  const auto start = Clock::now();
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  set(conf, "bootstrap.servers", args.brokers);
  set(conf, "transactional.id", "fraud-floor-client-" + args.topic);
  set(conf, "enable.idempotence", "true");
  set(conf, "acks", "all");
  set(conf, "linger.ms", "5");
  set(conf, "compression.type", "lz4");
  rd_kafka_t* producer = makeClient(RD_KAFKA_PRODUCER, conf);
  const int partitions = partitionCount(producer, args.topic);
  check(rd_kafka_init_transactions(producer, 30000), "init_transactions");
  rd_kafka_topic_t* topic = rd_kafka_topic_new(producer, args.topic.c_str(), nullptr);
  // Hex digits, like the card_refs and tx_ids most of a changelog record holds.
  std::string key(static_cast<size_t>(args.key_bytes), '0');
  std::string value(static_cast<size_t>(args.value_bytes), '0');
  uint64_t state = 0x9e3779b97f4a7c15ULL;
  auto refill = [&state](std::string& bytes) {
    for (char& c : bytes) {
      state ^= state << 13;
      state ^= state >> 7;
      state ^= state << 17;
      c = "0123456789abcdef"[state & 15];
    }
  };
  long long transactions = 0;
  for (long long i = 0; i < args.count;) {
    check(rd_kafka_begin_transaction(producer), "begin_transaction");
    for (int n = 0; n < args.txn_records && i < args.count; ++n, ++i) {
      refill(key);
      refill(value);
      const auto partition = static_cast<int32_t>(i % partitions);
      rd_kafka_resp_err_t err = RD_KAFKA_RESP_ERR__QUEUE_FULL;
      while (err == RD_KAFKA_RESP_ERR__QUEUE_FULL) {
        err = rd_kafka_produce(topic, partition, RD_KAFKA_MSG_F_COPY, value.data(), value.size(),
                               key.data(), key.size(), nullptr) == 0
                  ? RD_KAFKA_RESP_ERR_NO_ERROR
                  : rd_kafka_last_error();
        if (err == RD_KAFKA_RESP_ERR__QUEUE_FULL) rd_kafka_poll(producer, 10);
      }
      if (err != RD_KAFKA_RESP_ERR_NO_ERROR) die(rd_kafka_err2str(err));
      rd_kafka_poll(producer, 0);
    }
    check(rd_kafka_commit_transaction(producer, 60000), "commit_transaction");
    ++transactions;
  }
  const double wall = secondsSince(start);
  rd_kafka_topic_destroy(topic);
  rd_kafka_destroy(producer);
  std::printf(
      "{\"tool\":\"produce\",\"topic\":\"%s\",\"partitions\":%d,\"records\":%lld,"
      "\"key_bytes\":%d,\"value_bytes\":%d,\"transactions\":%lld,\"wall_s\":%.3f,"
      "\"cpu_s\":%.3f}\n",
      args.topic.c_str(), partitions, args.count, args.key_bytes, args.value_bytes, transactions,
      wall, cpuSeconds());
  return 0;
}

Args parse(int argc, char** argv) {
  if (argc < 2)
    die("usage: fraud-floor-client consume|dump|latency|produce --brokers B --topic T ...");
  Args args;
  args.command = argv[1];
  for (int i = 2; i + 1 < argc; i += 2) {
    const std::string flag = argv[i], value = argv[i + 1];
    if (flag == "--brokers") {
      args.brokers = value;
    } else if (flag == "--topic") {
      args.topic = value;
    } else if (flag == "--count") {
      args.count = std::atoll(value.c_str());
    } else if (flag == "--key-bytes") {
      args.key_bytes = std::atoi(value.c_str());
    } else if (flag == "--value-bytes") {
      args.value_bytes = std::atoi(value.c_str());
    } else if (flag == "--txn-records") {
      args.txn_records = std::max(1, std::atoi(value.c_str()));
    } else if (flag == "--idle-s") {
      args.idle_s = std::atof(value.c_str());
    } else if (flag == "--max-s") {
      args.max_s = std::atof(value.c_str());
    } else {
      die("unknown flag " + flag);
    }
  }
  if (argc % 2 != 0) die("every flag takes a value");
  if (args.brokers.empty() || args.topic.empty()) die("--brokers and --topic are required");
  return args;
}

}  // namespace

int main(int argc, char** argv) {
  const Args args = parse(argc, argv);
  if (args.command == "consume") return consume(args, false);
  if (args.command == "dump") return consume(args, true);
  if (args.command == "latency") return latency(args);
  if (args.command == "produce") return produce(args);
  die("unknown command " + args.command + " (consume, dump, latency, produce)");
}
