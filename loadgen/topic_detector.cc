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
    : options_(options), hasher_(hasher), max_future_skew_ms_(max_future_skew_ms) {
  partitions_.reserve(static_cast<size_t>(partitions));
  for (int32_t p = 0; p < partitions; ++p) {
    partitions_.push_back(std::make_unique<Partition>(options_));
  }
}

TopicDetector::~TopicDetector() = default;

TopicDetector::Outcome TopicDetector::process(int32_t partition, std::string_view value,
                                              int64_t record_timestamp_ms) {
  Outcome outcome;
  const auto decoded = decoder_.decode(value);
  if (!decoded.ok()) {
    outcome.rejected = decoded.rejected;
  } else if (detectors::isFutureEventTime(decoded.tx.event_time, record_timestamp_ms,
                                          max_future_skew_ms_)) {
    outcome.rejected = detectors::RejectReason::kFutureEventTime;
  }
  if (outcome.rejected) {
    counts_.countRejected(*outcome.rejected);
    return outcome;
  }
  auto result = partitions_[static_cast<size_t>(partition)]->detector.process(
      hasher_.hash(decoded.tx.card), decoded.tx);
  counts_.count(result);
  outcome.alert = std::move(result.alert);
  return outcome;
}

}  // namespace fraud::loadgen
