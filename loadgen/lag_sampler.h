#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "loadgen/run_series.h"
#include "service/kafka/client.h"

namespace fraud::loadgen {

// Samples a consumer group's lag on a topic once a second on a thread of its own: the sum over
// partitions of (end offset - committed offset). It reads the group's commits without joining
// the group, so the service's assignment is untouched.
class LagSampler {
 public:
  LagSampler() = default;
  ~LagSampler();
  LagSampler(const LagSampler&) = delete;
  LagSampler& operator=(const LagSampler&) = delete;

  [[nodiscard]] bool start(const kafka::KafkaProperties& properties, const std::string& group,
                           const std::string& topic, int32_t partitions, std::string& error);
  void stop();

  // The latest sample; nothing before the first.
  [[nodiscard]] std::optional<int64_t> latest() const;

  struct Summary {
    uint64_t samples = 0;
    int64_t max = 0;
    int64_t p50 = 0;
    int64_t p99 = 0;
    int64_t last = 0;
  };
  [[nodiscard]] Summary summary() const;
  // Every sample with the steady-clock time it was taken.
  [[nodiscard]] std::vector<TimedValue> timedSamples() const;

 private:
  void run();

  kafka::KafkaHandle client_;
  std::string topic_;
  int32_t partitions_ = 0;
  std::thread thread_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::vector<int64_t> samples_;
  std::vector<int64_t> sample_ns_;  // when samples_[i] was taken (steady clock)
};

}  // namespace fraud::loadgen
