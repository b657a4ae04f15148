#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "detectors/base/mutex.h"
#include "service/config.h"
#include "service/kafka/admin.h"
#include "service/kafka/client.h"

namespace fraud::service {

// The topic configuration the service creates its changelog with: compacted, and rolling its
// segments soon enough (8 MiB or 10 minutes) that the log cleaner, which never touches the
// active segment, keeps it near one record a card; cleaned once a tenth of it is dirty. A
// restore reads the whole changelog partition, so every stale update it holds costs the
// failover time.
[[nodiscard]] const std::map<std::string, std::string>& changelogTopicConfig();

// Advice when an existing changelog's configuration lets it keep many records a card (its
// segments roll rarely, or it is cleaned only when mostly dirty, or it is not compacted):
// nothing when it is fine. Entries missing from `config` count as the broker's defaults.
[[nodiscard]] std::optional<std::string> changelogCompactionAdvice(
    const std::string& topic, const std::map<std::string, std::string>& config);

// The service's view of the cluster's metadata: checks the topics at start-up (and creates the
// changelog topic, as Kafka Streams does its internal topics), reads topics' record limits, and
// keeps a map of which group member owns which input partition, refreshed in the background so
// that no API request ever waits for the cluster.
//
// Thread-safety: start-up checks from one thread before startOwnerRefresh(); ownerOf() and
// owners() from any thread; the destructor stops the refresh thread.
class TopicAdmin {
 public:
  // `client` (any librdkafka handle) must outlive this object.
  TopicAdmin(rd_kafka_t* client, const ServiceConfig& config);
  ~TopicAdmin();
  TopicAdmin(const TopicAdmin&) = delete;
  TopicAdmin& operator=(const TopicAdmin&) = delete;

  // Input, alerts and dead-letter topics exist; the changelog topic exists with as many
  // partitions as the input (created, compacted, when missing). An error message otherwise.
  [[nodiscard]] base::Status checkTopics();
  [[nodiscard]] int32_t inputPartitions() const { return input_partitions_; }
  // The topic's max.message.bytes, when the cluster tells.
  [[nodiscard]] std::optional<size_t> maxMessageBytes(const std::string& topic);

  void startOwnerRefresh(std::chrono::milliseconds every);
  // The client id of the member that owned `partition` at the last refresh.
  [[nodiscard]] std::optional<std::string> ownerOf(int32_t partition) const FRAUD_EXCLUDES(mu_);
  // Every partition's owner at the last refresh (partitions without one are missing).
  [[nodiscard]] std::map<int32_t, std::string> owners() const FRAUD_EXCLUDES(mu_);

 private:
  [[nodiscard]] base::Status ensureChangelogTopic();
  // Warns when the existing changelog's configuration lets it keep many records a card.
  void adviseOnChangelogCompaction();
  [[nodiscard]] std::optional<std::map<int32_t, std::string>> describeOwners();

  rd_kafka_t* client_;
  const ServiceConfig& config_;
  int32_t input_partitions_ = 0;  // written by checkTopics() only, before other threads read it

  mutable base::Mutex mu_;
  std::condition_variable wake_;
  bool stopping_ FRAUD_GUARDED_BY(mu_) = false;
  std::map<int32_t, std::string> owners_ FRAUD_GUARDED_BY(mu_);
  std::thread refresher_;
};

}  // namespace fraud::service
