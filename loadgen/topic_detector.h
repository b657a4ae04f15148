#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "detectors/alert.h"
#include "detectors/card_ref.h"
#include "detectors/options.h"
#include "detectors/outcome_counts.h"
#include "detectors/record_codec.h"
#include "detectors/record_pipeline.h"

namespace fraud::loadgen {

// The detection engine over a whole topic, offline: one PartitionDetector per partition over an
// in-memory store, each partition's records fed in order through the record pipeline the live
// service runs (detectors/record_pipeline.h), future_event_time check against the record
// timestamp included (docs/rule.md §1). What the live service must produce from the same partition
// sequences, from an empty state.
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
    std::optional<detectors::AlertKey> alert_key;  // with an alert
    std::string alert_json;                        // the alert record, detected_at 0
  };
  // The next record of `partition` (0 <= partition < partitions); `record_timestamp_ms` nothing
  // when the record has no timestamp (then it is not checked for future_event_time).
  [[nodiscard]] Outcome process(int32_t partition, std::string_view value,
                                std::optional<int64_t> record_timestamp_ms);

  // Every record processed so far, each counted once (docs/rule.md §6).
  [[nodiscard]] const detectors::OutcomeCounts& counts() const { return counts_; }
  [[nodiscard]] const detectors::DetectorOptions& options() const { return options_; }

 private:
  struct Partition;
  detectors::DetectorOptions options_;
  detectors::RecordPipeline pipeline_;
  detectors::OutcomeCounts counts_;
  std::vector<std::unique_ptr<Partition>> partitions_;
};

}  // namespace fraud::loadgen
