#include "loadgen/topic_detector.h"

#include "detectors/partition_detector.h"
#include "state/memory_card_store.h"

namespace fraud::loadgen {

struct TopicDetector::Partition {
  explicit Partition(const detectors::DetectorOptions& options) : detector(options, store) {}
  state::MemoryCardStore store;
  detectors::PartitionDetector detector;
};

TopicDetector::TopicDetector(int32_t partitions, const detectors::DetectorOptions& options,
                             const detectors::CardHasher& hasher, int64_t max_future_skew_ms)
    // detected_at 0: the audit compares alerts without it, the latency tracker only keys them.
    : options_(options),
      pipeline_(detectors::PipelineOptions{max_future_skew_ms, nullptr}, hasher) {
  partitions_.reserve(static_cast<size_t>(partitions));
  for (int32_t p = 0; p < partitions; ++p) {
    partitions_.push_back(std::make_unique<Partition>(options_));
  }
}

TopicDetector::~TopicDetector() = default;

TopicDetector::Outcome TopicDetector::process(int32_t partition, std::string_view value,
                                              std::optional<int64_t> record_timestamp_ms) {
  Outcome outcome;
  auto result =
      pipeline_.process(value, record_timestamp_ms,
                        partitions_[static_cast<size_t>(partition)]->detector, outcome.alert_json);
  counts_.count(result);
  outcome.rejected = result.rejected;
  outcome.alert_key = std::move(result.alert_key);
  return outcome;
}

}  // namespace fraud::loadgen
