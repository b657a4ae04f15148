#include "loadgen/lag_sampler.h"

#include <algorithm>
#include <chrono>

#include "loadgen/latency_tracker.h"
#include "loadgen/run_series.h"
#include "service/kafka/admin.h"

namespace fraud::loadgen {
namespace {

constexpr int kTimeoutMs = 5'000;

}  // namespace

LagSampler::~LagSampler() { stop(); }

base::Status LagSampler::start(const kafka::KafkaProperties& properties, const std::string& group,
                               const std::string& topic, int32_t partitions) {
  kafka::KafkaProperties with_group = properties;
  with_group["group.id"] = group;
  auto client = kafka::makeReader(with_group, /*read_committed=*/true);
  if (!client) return client.status();
  client_ = std::move(*client);
  topic_ = topic;
  partitions_ = partitions;
  thread_ = std::thread([this] { run(); });
  return {};
}

void LagSampler::stop() {
  {
    base::MutexLock lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
  client_.reset();
}

void LagSampler::run() {
  while (true) {
    // A failed query is a missing sample, no more.
    const auto committed = kafka::committedOffsets(client_.get(), topic_, partitions_, kTimeoutMs);
    const auto ends = kafka::highWatermarks(client_.get(), topic_, partitions_, kTimeoutMs);
    base::MutexLock lock(mutex_);
    if (committed && ends) {
      int64_t lag = 0;
      for (size_t p = 0; p < ends->size(); ++p) {
        lag += std::max<int64_t>(0, (*ends)[p] - std::max<int64_t>(0, (*committed)[p]));
      }
      samples_.push_back(lag);
      sample_ns_.push_back(steadyClockNs());
    }
    // As condition_variable::wait_for with a predicate: one deadline, taken with the lock held.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(1);
    while (!stopping_) {
      if (!lock.waitUntil(wake_, deadline)) break;  // stopping_ decides, as wait_for's result
    }
    if (stopping_) return;
  }
}

std::optional<int64_t> LagSampler::latest() const {
  base::MutexLock lock(mutex_);
  if (samples_.empty()) return std::nullopt;
  return samples_.back();
}

std::vector<TimedValue> LagSampler::timedSamples() const {
  base::MutexLock lock(mutex_);
  std::vector<TimedValue> out;
  out.reserve(samples_.size());
  for (size_t i = 0; i < samples_.size(); ++i) out.push_back({sample_ns_[i], samples_[i]});
  return out;
}

LagSampler::Summary LagSampler::summary() const {
  base::MutexLock lock(mutex_);
  Summary s;
  s.samples = samples_.size();
  if (samples_.empty()) return s;
  std::vector<int64_t> sorted = samples_;
  std::sort(sorted.begin(), sorted.end());
  s.max = sorted.back();
  s.p50 = *nearestRank(sorted, 50);
  s.p99 = *nearestRank(sorted, 99);
  s.last = samples_.back();
  return s;
}

}  // namespace fraud::loadgen
