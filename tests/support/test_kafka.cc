#include "tests/support/test_kafka.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <stdexcept>
#include <thread>

namespace fraud::testing {
namespace {

rd_kafka_conf_t* baseConf(const std::string& brokers) {
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  char err[512];
  rd_kafka_conf_set(conf, "bootstrap.servers", brokers.c_str(), err, sizeof(err));
  rd_kafka_conf_set(conf, "log_level", "3", err, sizeof(err));
  return conf;
}

void set(rd_kafka_conf_t* conf, const char* key, const char* value) {
  char err[512];
  if (rd_kafka_conf_set(conf, key, value, err, sizeof(err)) != RD_KAFKA_CONF_OK) {
    throw std::runtime_error(err);
  }
}

rd_kafka_t* client(rd_kafka_type_t type, rd_kafka_conf_t* conf) {
  char err[512];
  rd_kafka_t* rk = rd_kafka_new(type, conf, err, sizeof(err));
  if (rk == nullptr) throw std::runtime_error(err);
  return rk;
}

}  // namespace

std::optional<std::string> testBrokers() {
  const char* brokers = std::getenv("FRAUD_TEST_BROKERS");
  if (brokers == nullptr || *brokers == '\0') return std::nullopt;
  return std::string(brokers);
}

TestKafka::TestKafka(std::string brokers) : brokers_(std::move(brokers)) {
  rd_kafka_conf_t* conf = baseConf(brokers_);
  set(conf, "enable.idempotence", "true");
  set(conf, "linger.ms", "5");
  producer_ = client(RD_KAFKA_PRODUCER, conf);
}

TestKafka::~TestKafka() {
  rd_kafka_flush(producer_, 10'000);
  rd_kafka_destroy(producer_);
}

std::string TestKafka::uniqueName(std::string_view prefix) {
  static std::atomic<int> counter{0};
  std::random_device random;
  return std::string(prefix) + "-" + std::to_string(random() % 1'000'000) + "-" +
         std::to_string(counter++);
}

void TestKafka::createTopic(const std::string& name, int partitions, bool compact) {
  char err[512];
  rd_kafka_NewTopic_t* topic =
      rd_kafka_NewTopic_new(name.c_str(), partitions, -1, err, sizeof(err));
  ASSERT_NE(topic, nullptr) << err;
  if (compact) rd_kafka_NewTopic_set_config(topic, "cleanup.policy", "compact");
  rd_kafka_queue_t* queue = rd_kafka_queue_new(producer_);
  rd_kafka_CreateTopics(producer_, &topic, 1, nullptr, queue);
  rd_kafka_event_t* event = rd_kafka_queue_poll(queue, 30'000);
  ASSERT_NE(event, nullptr) << "CreateTopics timed out";
  size_t count = 0;
  const auto* results =
      rd_kafka_CreateTopics_result_topics(rd_kafka_event_CreateTopics_result(event), &count);
  ASSERT_EQ(count, 1u);
  EXPECT_EQ(rd_kafka_topic_result_error(results[0]), RD_KAFKA_RESP_ERR_NO_ERROR)
      << rd_kafka_topic_result_error_string(results[0]);
  rd_kafka_event_destroy(event);
  rd_kafka_queue_destroy(queue);
  rd_kafka_NewTopic_destroy(topic);
  // Wait until the metadata shows every partition with a leader.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (partitionCount(name) != partitions) {
    ASSERT_LT(std::chrono::steady_clock::now(), deadline) << "topic " << name << " never appeared";
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

void TestKafka::setTopicConfig(const std::string& topic, const std::string& key,
                               const std::string& value) {
  rd_kafka_ConfigResource_t* resource =
      rd_kafka_ConfigResource_new(RD_KAFKA_RESOURCE_TOPIC, topic.c_str());
  ASSERT_EQ(rd_kafka_ConfigResource_set_config(resource, key.c_str(), value.c_str()),
            RD_KAFKA_RESP_ERR_NO_ERROR);
  rd_kafka_queue_t* queue = rd_kafka_queue_new(producer_);
  rd_kafka_AlterConfigs(producer_, &resource, 1, nullptr, queue);
  rd_kafka_event_t* event = rd_kafka_queue_poll(queue, 30'000);
  ASSERT_NE(event, nullptr) << "AlterConfigs timed out";
  EXPECT_EQ(rd_kafka_event_error(event), RD_KAFKA_RESP_ERR_NO_ERROR)
      << rd_kafka_event_error_string(event);
  size_t count = 0;
  const auto* results =
      rd_kafka_AlterConfigs_result_resources(rd_kafka_event_AlterConfigs_result(event), &count);
  ASSERT_EQ(count, 1u);
  EXPECT_EQ(rd_kafka_ConfigResource_error(results[0]), RD_KAFKA_RESP_ERR_NO_ERROR)
      << rd_kafka_ConfigResource_error_string(results[0]);
  rd_kafka_event_destroy(event);
  rd_kafka_queue_destroy(queue);
  rd_kafka_ConfigResource_destroy(resource);
}

int TestKafka::leaderOf(const std::string& topic, int32_t partition) {
  rd_kafka_topic_t* handle = rd_kafka_topic_new(producer_, topic.c_str(), nullptr);
  const rd_kafka_metadata_t* metadata = nullptr;
  int leader = -1;
  if (rd_kafka_metadata(producer_, 0, handle, &metadata, 5000) == RD_KAFKA_RESP_ERR_NO_ERROR) {
    if (metadata->topic_cnt == 1 && partition < metadata->topics[0].partition_cnt) {
      leader = metadata->topics[0].partitions[partition].leader;
    }
    rd_kafka_metadata_destroy(metadata);
  }
  rd_kafka_topic_destroy(handle);
  return leader;
}

int TestKafka::partitionCount(const std::string& topic) {
  rd_kafka_topic_t* handle = rd_kafka_topic_new(producer_, topic.c_str(), nullptr);
  const rd_kafka_metadata_t* metadata = nullptr;
  int count = 0;
  if (rd_kafka_metadata(producer_, 0, handle, &metadata, 5000) == RD_KAFKA_RESP_ERR_NO_ERROR) {
    if (metadata->topic_cnt == 1 && metadata->topics[0].err == RD_KAFKA_RESP_ERR_NO_ERROR) {
      bool leaders = true;
      for (int i = 0; i < metadata->topics[0].partition_cnt; ++i) {
        leaders = leaders && metadata->topics[0].partitions[i].leader >= 0;
      }
      if (leaders) count = metadata->topics[0].partition_cnt;
    }
    rd_kafka_metadata_destroy(metadata);
  }
  rd_kafka_topic_destroy(handle);
  return count;
}

void TestKafka::produce(const std::string& topic, int32_t partition, std::string_view key,
                        std::string_view value) {
  rd_kafka_vu_t fields[5];
  fields[0].vtype = RD_KAFKA_VTYPE_TOPIC;
  fields[0].u.cstr = topic.c_str();
  fields[1].vtype = RD_KAFKA_VTYPE_PARTITION;
  fields[1].u.i32 = partition;
  fields[2].vtype = RD_KAFKA_VTYPE_MSGFLAGS;
  fields[2].u.i = RD_KAFKA_MSG_F_COPY;
  fields[3].vtype = RD_KAFKA_VTYPE_KEY;
  fields[3].u.mem = {const_cast<char*>(key.data()), key.size()};
  fields[4].vtype = RD_KAFKA_VTYPE_VALUE;
  fields[4].u.mem = {const_cast<char*>(value.data()), value.size()};
  while (true) {
    rd_kafka_error_t* error = rd_kafka_produceva(producer_, fields, 5);
    const auto err = error == nullptr ? RD_KAFKA_RESP_ERR_NO_ERROR : rd_kafka_error_code(error);
    if (error != nullptr) rd_kafka_error_destroy(error);
    if (err == RD_KAFKA_RESP_ERR_NO_ERROR) return;
    ASSERT_EQ(err, RD_KAFKA_RESP_ERR__QUEUE_FULL) << rd_kafka_err2str(err);
    rd_kafka_poll(producer_, 50);
  }
}

void TestKafka::flush() {
  ASSERT_EQ(rd_kafka_flush(producer_, 60'000), RD_KAFKA_RESP_ERR_NO_ERROR);
}

std::vector<int64_t> TestKafka::endOffsets(const std::string& topic) {
  std::vector<int64_t> ends;
  for (int p = 0, n = partitionCount(topic); p < n; ++p) {
    int64_t low = 0;
    int64_t high = 0;
    rd_kafka_query_watermark_offsets(producer_, topic.c_str(), p, &low, &high, 10'000);
    ends.push_back(high);
  }
  return ends;
}

std::vector<TopicRecord> TestKafka::readAll(const std::string& topic, bool read_committed) {
  const auto ends = endOffsets(topic);
  rd_kafka_conf_t* conf = baseConf(brokers_);
  set(conf, "group.id", uniqueName("reader").c_str());
  set(conf, "isolation.level", read_committed ? "read_committed" : "read_uncommitted");
  set(conf, "enable.partition.eof", "true");
  rd_kafka_t* consumer = client(RD_KAFKA_CONSUMER, conf);
  rd_kafka_topic_partition_list_t* assignment = rd_kafka_topic_partition_list_new(1);
  int remaining = 0;
  for (size_t p = 0; p < ends.size(); ++p) {
    if (ends[p] == 0) continue;
    rd_kafka_topic_partition_list_add(assignment, topic.c_str(), static_cast<int32_t>(p))->offset =
        RD_KAFKA_OFFSET_BEGINNING;
    ++remaining;
  }
  rd_kafka_assign(consumer, assignment);
  rd_kafka_topic_partition_list_destroy(assignment);

  std::vector<TopicRecord> records;
  std::vector<bool> done(ends.size(), false);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (remaining > 0 && std::chrono::steady_clock::now() < deadline) {
    rd_kafka_message_t* m = rd_kafka_consumer_poll(consumer, 200);
    if (m == nullptr) continue;
    const auto p = static_cast<size_t>(m->partition);
    if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
      if (!done[p] && m->offset >= ends[p]) {
        done[p] = true;
        --remaining;
      }
    } else if (m->err == RD_KAFKA_RESP_ERR_NO_ERROR && m->offset < ends[p]) {
      TopicRecord r;
      r.partition = m->partition;
      r.offset = m->offset;
      if (m->key != nullptr) r.key = std::string(static_cast<const char*>(m->key), m->key_len);
      if (m->payload != nullptr)
        r.value = std::string(static_cast<const char*>(m->payload), m->len);
      rd_kafka_headers_t* headers = nullptr;
      if (rd_kafka_message_headers(m, &headers) == RD_KAFKA_RESP_ERR_NO_ERROR) {
        const char* name = nullptr;
        const void* value = nullptr;
        size_t size = 0;
        for (size_t i = 0; rd_kafka_header_get_all(headers, i, &name, &value, &size) ==
                           RD_KAFKA_RESP_ERR_NO_ERROR;
             ++i) {
          r.headers[name] = std::string(static_cast<const char*>(value), size);
        }
      }
      records.push_back(std::move(r));
    }
    rd_kafka_message_destroy(m);
  }
  rd_kafka_consumer_close(consumer);
  rd_kafka_destroy(consumer);
  EXPECT_EQ(remaining, 0) << "reading " << topic << " timed out";
  return records;
}

std::vector<int64_t> TestKafka::committedOffsets(const std::string& group,
                                                 const std::string& topic) {
  const int partitions = partitionCount(topic);
  rd_kafka_conf_t* conf = baseConf(brokers_);
  set(conf, "group.id", group.c_str());
  set(conf, "isolation.level", "read_committed");
  rd_kafka_t* consumer = client(RD_KAFKA_CONSUMER, conf);
  rd_kafka_topic_partition_list_t* list = rd_kafka_topic_partition_list_new(partitions);
  for (int p = 0; p < partitions; ++p) rd_kafka_topic_partition_list_add(list, topic.c_str(), p);
  std::vector<int64_t> offsets(static_cast<size_t>(partitions), -1);
  if (const auto err = rd_kafka_committed(consumer, list, 10'000);
      err != RD_KAFKA_RESP_ERR_NO_ERROR) {
    std::fprintf(stderr, "committed offsets of %s: %s\n", group.c_str(), rd_kafka_err2str(err));
  } else {
    for (int i = 0; i < list->cnt; ++i) {
      offsets[static_cast<size_t>(list->elems[i].partition)] = list->elems[i].offset;
    }
  }
  rd_kafka_topic_partition_list_destroy(list);
  rd_kafka_destroy(consumer);
  return offsets;
}

bool TestKafka::waitForCaughtUp(const std::string& group, const std::string& topic,
                                std::chrono::seconds timeout) {
  const auto ends = endOffsets(topic);
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    const auto committed = committedOffsets(group, topic);
    bool caught_up = committed.size() == ends.size();
    for (size_t p = 0; caught_up && p < ends.size(); ++p) {
      caught_up = ends[p] == 0 || committed[p] >= ends[p];
    }
    if (caught_up) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  return false;
}

}  // namespace fraud::testing
