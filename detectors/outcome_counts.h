#pragma once

#include <array>
#include <cstdint>
#include <string>

#include "detectors/partition_detector.h"
#include "detectors/record_codec.h"
#include "detectors/record_pipeline.h"

namespace fraud::detectors {

// Tallies of what happened to records, as `replay` reports them (docs/rule.md §6).
// records == accepted + late_dropped + duplicate + sum(rejected). Each record is counted once,
// by whoever drives the RecordPipeline (it counts nothing itself).
struct OutcomeCounts {
  uint64_t records = 0;
  uint64_t accepted = 0;
  uint64_t late_dropped = 0;
  uint64_t duplicate = 0;
  uint64_t overflow_evicted = 0;
  uint64_t alerts = 0;
  uint64_t incidents = 0;  // alerts with revision 1
  std::array<uint64_t, kRejectReasonCount> rejected{};

  // One record as the pipeline returned it: rejected, or what the detector made of it.
  void count(const RecordOutcome& outcome);
  void count(const PartitionDetector::Result& result);
  void countRejected(RejectReason reason);
  void add(const OutcomeCounts& other);

  // The replay summary object: every count, and `rejected` with the reasons seen.
  [[nodiscard]] std::string summaryJson() const;
};

}  // namespace fraud::detectors
