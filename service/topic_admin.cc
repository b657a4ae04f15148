#include "service/topic_admin.h"

#include <pthread.h>
#include <spdlog/spdlog.h>

#include <charconv>

namespace fraud::service {
namespace {

constexpr int kBlockingCallMs = 10'000;
constexpr int kDescribeGroupMs = 2'000;

}  // namespace

TopicAdmin::TopicAdmin(rd_kafka_t* client, const ServiceConfig& config)
    : client_(client), config_(config) {}

TopicAdmin::~TopicAdmin() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (refresher_.joinable()) refresher_.join();
}

std::optional<std::string> TopicAdmin::checkTopics() {
  std::string error;
  for (const auto* topic : {&config_.input_topic, &config_.alerts_topic, &config_.dlq_topic}) {
    const auto count = kafka::topicPartitionCount(client_, *topic, kBlockingCallMs, error);
    if (!count) return error;
    if (topic == &config_.input_topic) input_partitions_ = *count;
  }
  return ensureChangelogTopic();
}

std::optional<std::string> TopicAdmin::ensureChangelogTopic() {
  const auto info = kafka::describeTopic(client_, config_.changelog_topic, kBlockingCallMs);
  if (info.status == kafka::TopicStatus::kFound) {
    if (info.partitions == input_partitions_) return std::nullopt;
    return "changelog topic " + config_.changelog_topic + " has " +
           std::to_string(info.partitions) + " partitions; it needs as many as " +
           config_.input_topic + " (" + std::to_string(input_partitions_) + ")";
  }
  if (info.status != kafka::TopicStatus::kUnknownTopic) return info.error;
  // Like Kafka Streams' internal topics: created on first start, compacted, one partition per
  // input partition.
  kafka::NewTopic topic;
  topic.name = config_.changelog_topic;
  topic.partitions = input_partitions_;
  topic.replication_factor = config_.changelog_replication_factor;
  topic.config = {{"cleanup.policy", "compact"}};
  std::string error;
  if (!kafka::createTopic(client_, topic, kBlockingCallMs, error)) {
    // Another instance may have created it meanwhile.
    const auto again = kafka::describeTopic(client_, config_.changelog_topic, kBlockingCallMs);
    if (again.status == kafka::TopicStatus::kFound && again.partitions == input_partitions_) {
      return std::nullopt;
    }
    return "cannot create changelog topic " + config_.changelog_topic + ": " + error;
  }
  spdlog::info("created changelog topic {} ({} partitions, compacted)", config_.changelog_topic,
               input_partitions_);
  return std::nullopt;
}

std::optional<size_t> TopicAdmin::maxMessageBytes(const std::string& topic) {
  rd_kafka_ConfigResource_t* resource =
      rd_kafka_ConfigResource_new(RD_KAFKA_RESOURCE_TOPIC, topic.c_str());
  kafka::KafkaQueue queue(rd_kafka_queue_new(client_));
  rd_kafka_DescribeConfigs(client_, &resource, 1, nullptr, queue.get());
  rd_kafka_ConfigResource_destroy(resource);
  rd_kafka_event_t* event = rd_kafka_queue_poll(queue.get(), kBlockingCallMs);
  if (event == nullptr) return std::nullopt;
  std::optional<size_t> limit;
  if (rd_kafka_event_error(event) == RD_KAFKA_RESP_ERR_NO_ERROR) {
    size_t count = 0;
    const auto* resources = rd_kafka_DescribeConfigs_result_resources(
        rd_kafka_event_DescribeConfigs_result(event), &count);
    for (size_t r = 0; r < count && !limit; ++r) {
      if (rd_kafka_ConfigResource_error(resources[r]) != RD_KAFKA_RESP_ERR_NO_ERROR) continue;
      size_t entries = 0;
      const auto* configs = rd_kafka_ConfigResource_configs(resources[r], &entries);
      for (size_t e = 0; e < entries; ++e) {
        if (std::string_view(rd_kafka_ConfigEntry_name(configs[e])) != "max.message.bytes") {
          continue;
        }
        const char* value = rd_kafka_ConfigEntry_value(configs[e]);
        size_t parsed = 0;
        const std::string_view text = value == nullptr ? "" : value;
        if (std::from_chars(text.data(), text.data() + text.size(), parsed).ec == std::errc()) {
          limit = parsed;
        }
      }
    }
  }
  rd_kafka_event_destroy(event);
  return limit;
}

void TopicAdmin::startOwnerRefresh(std::chrono::milliseconds every) {
  refresher_ = std::thread([this, every] {
    pthread_setname_np(pthread_self(), "fd-owners");
    std::unique_lock lock(mu_);
    while (!stopping_) {
      lock.unlock();
      auto owners = describeOwners();
      lock.lock();
      if (owners) owners_ = std::move(*owners);
      wake_.wait_for(lock, every, [this] { return stopping_; });
    }
  });
}

std::optional<std::string> TopicAdmin::ownerOf(int32_t partition) const {
  std::lock_guard lock(mu_);
  const auto it = owners_.find(partition);
  if (it == owners_.end()) return std::nullopt;
  return it->second;
}

std::map<int32_t, std::string> TopicAdmin::owners() const {
  std::lock_guard lock(mu_);
  return owners_;
}

std::optional<std::map<int32_t, std::string>> TopicAdmin::describeOwners() {
  std::string error;
  return kafka::groupPartitionOwners(client_, config_.group_id, config_.input_topic,
                                     kDescribeGroupMs, error);
}

}  // namespace fraud::service
