#include "service/topic_admin.h"

#include <pthread.h>
#include <spdlog/spdlog.h>

#include <charconv>
#include <chrono>
#include <thread>

namespace fraud::service {
namespace {

constexpr int kBlockingCallMs = 10'000;
constexpr int kDescribeGroupMs = 2'000;
// Past these, an existing changelog draws a warning: its active segment, which the cleaner never
// compacts, may hold a whole day of updates.
constexpr int64_t kAdvisedMaxSegmentBytes = 64LL << 20;
constexpr int64_t kAdvisedMaxSegmentMs = 60LL * 60 * 1000;
constexpr double kAdvisedMaxDirtyRatio = 0.5;

// The entry as a number, the broker's default when absent or unreadable.
template <typename Number>
Number entryOr(const std::map<std::string, std::string>& config, const std::string& key,
               Number fallback) {
  const auto it = config.find(key);
  if (it == config.end()) return fallback;
  Number value{};
  const auto& text = it->second;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  return ec == std::errc() && end == text.data() + text.size() ? value : fallback;
}

}  // namespace

const std::map<std::string, std::string>& changelogTopicConfig() {
  static const std::map<std::string, std::string> config = {
      {"cleanup.policy", "compact"},
      {"segment.bytes", std::to_string(8 << 20)},
      {"segment.ms", std::to_string(10 * 60 * 1000)},
      {"min.cleanable.dirty.ratio", "0.1"},
  };
  return config;
}

std::optional<std::string> changelogCompactionAdvice(
    const std::string& topic, const std::map<std::string, std::string>& config) {
  std::vector<std::string> reasons;
  const auto policy = config.find("cleanup.policy");
  if (policy != config.end() && policy->second.find("compact") == std::string::npos) {
    reasons.push_back("cleanup.policy is " + policy->second + ", not compact");
  }
  // Kafka's defaults: 1 GiB segments, rolled at least every 7 days, cleaned at half dirty.
  const auto segment_bytes = entryOr<int64_t>(config, "segment.bytes", 1LL << 30);
  const auto segment_ms = entryOr<int64_t>(config, "segment.ms", 7LL * 24 * 3600 * 1000);
  if (segment_bytes > kAdvisedMaxSegmentBytes && segment_ms > kAdvisedMaxSegmentMs) {
    reasons.push_back("its segments roll only at " + std::to_string(segment_bytes) + " bytes or " +
                      std::to_string(segment_ms) +
                      " ms, and the active segment is never compacted");
  }
  if (const auto ratio = entryOr<double>(config, "min.cleanable.dirty.ratio", 0.5);
      ratio > kAdvisedMaxDirtyRatio) {
    reasons.push_back("min.cleanable.dirty.ratio is " + config.at("min.cleanable.dirty.ratio"));
  }
  if (reasons.empty()) return std::nullopt;
  std::string advice = "changelog topic " + topic +
                       " may keep many records a card, and every restore reads them all (";
  for (size_t i = 0; i < reasons.size(); ++i) advice += (i > 0 ? "; " : "") + reasons[i];
  return advice +
         "); the service creates it with segment.bytes=8388608, segment.ms=600000 and "
         "min.cleanable.dirty.ratio=0.1";
}

TopicAdmin::TopicAdmin(rd_kafka_t* client, const ServiceConfig& config)
    : client_(client), config_(config) {}

TopicAdmin::~TopicAdmin() {
  {
    base::MutexLock lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (refresher_.joinable()) refresher_.join();
}

base::Status TopicAdmin::checkTopics() {
  for (const auto* topic : {&config_.input_topic, &config_.alerts_topic, &config_.dlq_topic}) {
    const auto count = kafka::topicPartitionCount(client_, *topic, kBlockingCallMs);
    if (!count) return count.status();
    if (topic == &config_.input_topic) input_partitions_ = *count;
  }
  return ensureChangelogTopic();
}

base::Status TopicAdmin::ensureChangelogTopic() {
  const auto partitions = kafka::describeTopic(client_, config_.changelog_topic, kBlockingCallMs);
  if (partitions) {
    if (*partitions == input_partitions_) {
      adviseOnChangelogCompaction();
      return {};
    }
    return base::Status::failed("changelog topic " + config_.changelog_topic + " has " +
                                std::to_string(*partitions) + " partitions; it needs as many as " +
                                config_.input_topic + " (" + std::to_string(input_partitions_) +
                                ")");
  }
  if (partitions.code() != base::StatusCode::kNotFound) return partitions.status();
  // Like Kafka Streams' internal topics: created on first start, compacted, one partition per
  // input partition.
  kafka::NewTopic topic;
  topic.name = config_.changelog_topic;
  topic.partitions = input_partitions_;
  topic.replication_factor = config_.changelog_replication_factor;
  topic.config = changelogTopicConfig();
  if (const auto created = kafka::createTopic(client_, topic, kBlockingCallMs); !created.ok()) {
    // Another instance may have created it meanwhile (two starting together both find it
    // absent): the broker then refuses ours as existing before its metadata names the topic,
    // so look again until it does, within the same bound.
    const auto deadline =
        std::chrono::steady_clock::now() + std::chrono::milliseconds(kBlockingCallMs);
    while (true) {
      const auto again = kafka::describeTopic(client_, config_.changelog_topic, kBlockingCallMs);
      // Found: checked as any existing changelog topic is (this creates nothing again).
      if (again.ok()) return ensureChangelogTopic();
      if (std::chrono::steady_clock::now() >= deadline) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return created.withPrefix("cannot create changelog topic " + config_.changelog_topic + ": ");
  }
  spdlog::info("created changelog topic {} ({} partitions, compacted, segments of 8 MiB or 10 min)",
               config_.changelog_topic, input_partitions_);
  return {};
}

void TopicAdmin::adviseOnChangelogCompaction() {
  // The mock cluster does not answer DescribeConfigs.
  if (config_.embedded_kafka) return;
  const auto config = kafka::describeTopicConfig(client_, config_.changelog_topic, kBlockingCallMs);
  if (!config) {
    spdlog::debug("changelog topic {}: {}", config_.changelog_topic, config.message());
    return;
  }
  if (auto advice = changelogCompactionAdvice(config_.changelog_topic, *config)) {
    spdlog::warn("{}", *advice);
  }
}

std::optional<size_t> TopicAdmin::maxMessageBytes(const std::string& topic) {
  const auto config = kafka::describeTopicConfig(client_, topic, kBlockingCallMs);
  if (!config) return std::nullopt;  // unknown: the caller keeps the producer's own limit
  const auto limit = entryOr<int64_t>(*config, "max.message.bytes", -1);
  if (limit < 0) return std::nullopt;
  return static_cast<size_t>(limit);
}

void TopicAdmin::startOwnerRefresh(std::chrono::milliseconds every) {
  refresher_ = std::thread([this, every] {
    pthread_setname_np(pthread_self(), "fd-owners");
    base::MutexLock lock(mu_);
    while (!stopping_) {
      lock.unlock();
      auto owners = describeOwners();
      lock.lock();
      if (owners) owners_ = std::move(*owners);
      // The next refresh after `every`, or stop sooner.
      const auto next = std::chrono::steady_clock::now() + every;
      bool before_next = true;
      while (!stopping_ && before_next) before_next = lock.waitUntil(wake_, next);
    }
  });
}

std::optional<std::string> TopicAdmin::ownerOf(int32_t partition) const {
  base::MutexLock lock(mu_);
  const auto it = owners_.find(partition);
  if (it == owners_.end()) return std::nullopt;
  return it->second;
}

std::map<int32_t, std::string> TopicAdmin::owners() const {
  base::MutexLock lock(mu_);
  return owners_;
}

std::optional<std::map<int32_t, std::string>> TopicAdmin::describeOwners() {
  auto owners =
      kafka::groupPartitionOwners(client_, config_.group_id, config_.input_topic, kDescribeGroupMs);
  if (!owners) {
    // Kept as they were until the next refresh answers.
    spdlog::debug("owners of {}: {}", config_.input_topic, owners.message());
    return std::nullopt;
  }
  return std::move(*owners);
}

}  // namespace fraud::service
