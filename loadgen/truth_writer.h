#pragma once

#include <cstdint>
#include <string>
#include <utility>

#include "detectors/card_ref.h"
#include "detectors/options.h"
#include "detectors/partitioner.h"
#include "loadgen/record_files.h"
#include "loadgen/traffic_model.h"

namespace fraud::loadgen {

// Counts the injected scenarios and writes those the rule (docs/rule.md) guarantees an alert to
// the truth file (truth_file.h), card by card_ref. Producing thread only.
class TruthWriter {
 public:
  // `path` empty: count only. `hasher` may be null only then.
  TruthWriter(std::string path, const detectors::DetectorOptions& rule,
              detectors::Partitioner partitioner, int32_t partitions,
              const detectors::CardHasher* hasher)
      : path_(std::move(path)),
        rule_(rule),
        partitioner_(partitioner),
        partitions_(partitions),
        hasher_(hasher) {}

  [[nodiscard]] base::Status open();
  [[nodiscard]] base::Status add(const FraudScenario& scenario);
  [[nodiscard]] base::Status close() { return file_.close(); }
  [[nodiscard]] uint64_t injected() const { return injected_; }
  [[nodiscard]] uint64_t guaranteed() const { return guaranteed_; }

 private:
  std::string path_;
  detectors::DetectorOptions rule_;
  detectors::Partitioner partitioner_;
  int32_t partitions_;
  const detectors::CardHasher* hasher_;
  BufferedFile file_;
  uint64_t injected_ = 0;
  uint64_t guaranteed_ = 0;
};

}  // namespace fraud::loadgen
