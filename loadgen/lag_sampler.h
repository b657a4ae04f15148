#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "detectors/base/mutex.h"
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

  // Starts the thread; an error when the reading client cannot be made.
  [[nodiscard]] base::Status start(const kafka::KafkaProperties& properties,
                                   const std::string& group, const std::string& topic,
                                   int32_t partitions);
  void stop() FRAUD_EXCLUDES(mutex_);

  // The latest sample; nothing before the first.
  [[nodiscard]] std::optional<int64_t> latest() const FRAUD_EXCLUDES(mutex_);

  struct Summary {
    uint64_t samples = 0;
    int64_t max = 0;
    int64_t p50 = 0;
    int64_t p99 = 0;
    int64_t last = 0;
  };
  [[nodiscard]] Summary summary() const FRAUD_EXCLUDES(mutex_);
  // Every sample with the steady-clock time it was taken.
  [[nodiscard]] std::vector<TimedValue> timedSamples() const FRAUD_EXCLUDES(mutex_);

 private:
  void run() FRAUD_EXCLUDES(mutex_);

  // Not guarded: start() sets them before it starts the thread, stop() resets client_ after
  // joining it.
  kafka::KafkaHandle client_;
  std::string topic_;
  int32_t partitions_ = 0;
  std::thread thread_;
  mutable base::Mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ FRAUD_GUARDED_BY(mutex_) = false;
  std::vector<int64_t> samples_ FRAUD_GUARDED_BY(mutex_);
  // When samples_[i] was taken (steady clock).
  std::vector<int64_t> sample_ns_ FRAUD_GUARDED_BY(mutex_);
};

}  // namespace fraud::loadgen
