#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string_view>
#include <vector>

#include "detectors/alert.h"
#include "detectors/card_ref.h"
#include "detectors/options.h"
#include "detectors/outcome_counts.h"
#include "detectors/record_codec.h"

namespace fraud::loadgen {

// The detection engine over a whole topic, offline: one PartitionDetector per partition over an
// in-memory store, fed each partition's records in order, with the live service's extra rule
// (future_event_time against the record timestamp, SPEC §1). What the live service must produce
// from the same partition sequences, from an empty state.
// Not thread-safe.
class TopicDetector {
 public:
  TopicDetector(int32_t partitions, const detectors::DetectorOptions& options,
                const detectors::CardHasher& hasher, int64_t max_future_skew_ms);
  ~TopicDetector();
  TopicDetector(const TopicDetector&) = delete;
  TopicDetector& operator=(const TopicDetector&) = delete;

  struct Outcome {
    std::optional<detectors::RejectReason> rejected;
    std::optional<detectors::Alert> alert;
  };
  // The next record of `partition` (0 <= partition < partitions).
  [[nodiscard]] Outcome process(int32_t partition, std::string_view value,
                                int64_t record_timestamp_ms);

  [[nodiscard]] const detectors::OutcomeCounts& counts() const { return counts_; }
  [[nodiscard]] const detectors::DetectorOptions& options() const { return options_; }

 private:
  struct Partition;
  detectors::DetectorOptions options_;
  const detectors::CardHasher& hasher_;
  int64_t max_future_skew_ms_;
  detectors::RecordDecoder decoder_;
  std::vector<std::unique_ptr<Partition>> partitions_;
  detectors::OutcomeCounts counts_;
};

}  // namespace fraud::loadgen
