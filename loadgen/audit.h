#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "detectors/alert.h"
#include "detectors/options.h"
#include "detectors/record_codec.h"
#include "loadgen/truth_file.h"

namespace fraud::loadgen {

// A record read from the alerts topic.
struct ObservedAlert {
  int32_t partition = 0;
  int64_t offset = 0;
  std::string record_key;
  std::optional<std::string> idempotency_header;  // header `idempotency-key`
  std::string value;
};

// A record read from the dead-letter topic, with its headers.
struct ObservedRejection {
  int32_t partition = 0;
  int64_t offset = 0;
  std::optional<std::string> reason;  // `reject-reason`
  std::optional<std::string> source_topic;
  std::optional<std::string> source_partition;
  std::optional<std::string> source_offset;
};

// The comparison `fraud-loadgen verify` makes: what the detection engine says the alerts and the
// dead-letter topics must hold, against what they hold; and the recall of the truth file.
// Alerts are compared as JSON values (key order free) without `detected_at`, by idempotency key.
// Not thread-safe.
class Audit {
 public:
  // An alert the engine produced: its key and its record as the pipeline rendered it.
  void expectAlert(const detectors::AlertKey& key, std::string_view alert_json);
  // The same for an alert not yet rendered (tests).
  void expectAlert(const detectors::Alert& alert, const detectors::DetectorOptions& options);
  void expectRejection(int32_t partition, int64_t offset, detectors::RejectReason reason);
  void observeAlert(const ObservedAlert& alert);
  // DLQ records of another source topic are counted and otherwise ignored.
  void observeRejection(const ObservedRejection& rejection, const std::string& input_topic);
  void setTruth(std::vector<TruthScenario> scenarios);
  // --alert-delivery immediate: an idempotency key may appear more than once (after a fault the
  // service sends an alert again), but only as an exact repeat of the expected alert; the
  // report counts the repeats. Dead letters stay exactly once.
  void allowExactAlertRepeats(bool allow) { allow_exact_repeats_ = allow; }

  // The report: every count, lists of at most `list_limit` entries, and "verdict".
  [[nodiscard]] nlohmann::ordered_json report(size_t list_limit) const;
  [[nodiscard]] bool passed() const;

 private:
  using SourceOffset = std::pair<int32_t, int64_t>;
  struct Differing {
    std::string key;
    std::string field;
    nlohmann::json expected;
    nlohmann::json actual;
  };
  struct AlertFindings {
    std::vector<std::string> missing, unexpected;
    std::vector<Differing> differing;
    std::vector<std::pair<std::string, size_t>> duplicates;
  };
  struct RejectionFindings {
    std::vector<SourceOffset> missing, unexpected;
    std::vector<std::pair<SourceOffset, std::string>> differing;  // the reason found
    std::vector<std::pair<SourceOffset, size_t>> duplicates;
  };
  [[nodiscard]] AlertFindings compareAlerts() const;
  [[nodiscard]] RejectionFindings compareRejections() const;
  [[nodiscard]] std::vector<uint64_t> unrecalled(bool offline) const;

  std::map<std::string, nlohmann::json> expected_alerts_;
  std::map<std::string, std::vector<nlohmann::json>> observed_alerts_;
  std::map<std::string, std::vector<AlertWindow>> observed_windows_;  // by card_ref
  std::map<std::string, std::vector<AlertWindow>> expected_windows_;  // by card_ref
  uint64_t alert_records_ = 0;
  std::vector<std::string> malformed_alerts_;  // "partition/offset: problem"

  std::map<SourceOffset, std::string> expected_rejections_;
  std::map<SourceOffset, std::vector<std::string>> observed_rejections_;
  uint64_t dlq_records_ = 0;
  uint64_t dlq_other_topics_ = 0;
  std::vector<std::string> malformed_rejections_;

  std::optional<std::vector<TruthScenario>> truth_;
  bool allow_exact_repeats_ = false;
};

}  // namespace fraud::loadgen
