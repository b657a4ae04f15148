#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <queue>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "detectors/options.h"
#include "detectors/record_codec.h"
#include "detectors/transaction.h"
#include "loadgen/card_population.h"
#include "loadgen/lateness_model.h"
#include "loadgen/random.h"
#include "loadgen/record_format.h"

namespace fraud::loadgen {

// The traffic model's parameters. Defaults are the loadgen's flag defaults.
struct TrafficOptions {
  // Set: ordinary lateness follows this mixture (--lateness-model mixture) instead of the
  // classic model (most under a second, a Pareto tail of `late_tail_fraction`).
  std::optional<LatenessMixture> mixture;
  uint64_t seed = 1;
  // The model clock of record 0; record i is sent at start_time + floor(i * 1000 / model_rate).
  detectors::EventTime start_time = 0;
  // Records per second of model time (the target rate; 20000 for `--rate max`). > 0.
  double model_rate = 20'000;
  // Card population. >= 1.
  uint32_t cards = 1'000'000;
  // Share of cards abroad at any moment (ordinary travel). 0..1.
  double travel_fraction = 0.03;
  // Injected fraud scenarios per second of model time. >= 0.
  double fraud_rate = 5;
  // Share of scenarios that go on to threshold + 1 or + 2 countries (escalations). 0..1.
  double escalation_fraction = 0.3;
  // Lateness (model clock minus event time) of ordinary records: most under a second, a long tail
  // (`late_tail_fraction`) up to this. >= 0.
  int64_t max_lateness_ms = 120'000;
  double late_tail_fraction = 0.05;  // 0..1
  // Records stamped more than grace behind the clock, so the detector drops them. 0..1.
  double beyond_grace_fraction = 0.001;
  // Exact byte copies of a recent valid record, re-sent. 0..1.
  double duplicate_fraction = 0.002;
  // Records that break docs/rule.md §1 (invalid JSON, a missing or an invalid field). 0..1.
  double malformed_fraction = 0.001;
  // Records whose event_time is an RFC 3339 string rather than epoch milliseconds. 0..1.
  double rfc3339_fraction = 0.05;
  // The rule the service runs: scenarios are shaped to meet it (N countries within W, within G).
  detectors::DetectorOptions detector;

  // Every violated bound, one message each; empty when usable.
  [[nodiscard]] std::vector<std::string> validate() const;
};

enum class RecordKind : uint8_t {
  kOrganic,      // ordinary traffic, lateness within max_lateness
  kBeyondGrace,  // ordinary traffic stamped further back than the grace
  kFraud,        // a record of an injected scenario
  kDuplicate,    // a byte copy of a recent valid record
  kMalformed,    // rejected by docs/rule.md §1
};
inline constexpr size_t kRecordKindCount = 5;
[[nodiscard]] std::string_view recordKindName(RecordKind kind);

// One record to send. Reused from call to call so the hot path does not allocate.
struct GeneratedRecord {
  RecordKind kind = RecordKind::kOrganic;
  std::string key;                      // the card: the Kafka record key
  std::string value;                    // the record: JSON, or malformed bytes
  detectors::EventTime sent_at = 0;     // the model clock when sent
  detectors::EventTime event_time = 0;  // as stamped (malformed: of the record it was made from)
  std::optional<detectors::RejectReason> rejection;  // kMalformed: what the decoder must say
  uint64_t scenario = 0;                             // kFraud: the scenario's id
};

// An injected fraud scenario: one quiet card used in `countries` within a few minutes. The model
// never reuses a scenario's card for another scenario, and ordinary traffic keeps any card to at
// most two countries per window, so every alert on that card belongs to this scenario.
struct FraudScenario {
  uint64_t id = 0;
  std::string card;
  std::vector<detectors::Country> countries;  // distinct, in order of first use
  size_t planned_records = 0;
  // What was sent, in order.
  std::vector<detectors::Country> sent_countries;
  std::vector<detectors::EventTime> event_times;
  std::vector<std::string> tx_ids;

  [[nodiscard]] bool complete() const { return tx_ids.size() == planned_records; }
  // the rule (docs/rule.md) guarantees an alert: the records sent hold at least N distinct
  // countries within W (they are stamped within the grace, unique and valid, so all are accepted).
  [[nodiscard]] bool mustAlert(const detectors::DetectorOptions& options) const;
};

// The traffic generator: a pure function of its options. No clock, no I/O.
// Not thread-safe.
class TrafficModel {
 public:
  explicit TrafficModel(const TrafficOptions& options);

  // Generates the next record into `out`.
  void next(GeneratedRecord& out);

  [[nodiscard]] uint64_t recordsGenerated() const { return index_; }
  [[nodiscard]] uint64_t scenariosSkipped() const { return scenarios_skipped_; }
  // How late the valid records sent so far were (model clock minus event time): the truth the
  // service's lateness figures are checked against.
  [[nodiscard]] const LatenessTruth& latenessTruth() const { return lateness_truth_; }
  // Scenarios whose every record has been sent since the last call, in order of completion.
  [[nodiscard]] std::vector<FraudScenario> takeCompletedScenarios();
  // Scenarios with records still unsent (at the end of a run), by id.
  [[nodiscard]] std::vector<FraudScenario> takeOpenScenarios();

  [[nodiscard]] const CardPopulation& population() const { return population_; }
  // The model clock of record `index`.
  [[nodiscard]] detectors::EventTime clockAt(uint64_t index) const;

 private:
  struct Step {
    detectors::EventTime due;
    uint64_t scenario;
    uint32_t order;
    detectors::Country country;
    friend bool operator>(const Step& a, const Step& b) {
      if (a.due != b.due) return a.due > b.due;
      if (a.scenario != b.scenario) return a.scenario > b.scenario;
      return a.order > b.order;
    }
  };
  struct RecentRecord {
    std::string key;
    std::string value;
    detectors::EventTime event_time = 0;
  };

  void startScenario(detectors::EventTime now);
  void emitFraud(detectors::EventTime now, GeneratedRecord& out);
  void emitOrganic(detectors::EventTime now, GeneratedRecord& out);
  void emitMalformed(detectors::EventTime now, GeneratedRecord& out);
  void emitDuplicate(detectors::EventTime now, GeneratedRecord& out);
  [[nodiscard]] int64_t ordinaryLateness();
  void writeTxId(uint64_t index);
  // The fields of a valid record of card `card_` with the current tx id; random extras drawn here.
  [[nodiscard]] TransactionFields drawFields(detectors::EventTime event_time, size_t country);
  void remember(const GeneratedRecord& record);

  TrafficOptions options_;
  LatenessTruth lateness_truth_;  // model clock minus event time of every valid record sent
  CardPopulation population_;
  Xoshiro256 random_;
  double ms_per_record_;
  uint64_t integral_rate_;  // the model rate when it is a whole number: exact integer clock
  double scenario_chance_;
  uint64_t tx_salt_;
  uint64_t index_ = 0;

  uint64_t next_scenario_id_ = 1;
  uint64_t scenarios_skipped_ = 0;
  std::unordered_set<uint32_t> scenario_cards_;
  std::map<uint64_t, FraudScenario> open_scenarios_;
  std::vector<FraudScenario> completed_scenarios_;
  std::priority_queue<Step, std::vector<Step>, std::greater<>> pending_steps_;

  std::vector<RecentRecord> recent_;  // ring of recent valid records, for duplicates
  size_t recent_next_ = 0;

  // The record under construction: its tx id and card.
  char tx_id_[19] = {};
  char card_[CardPopulation::kPanLength] = {};
};

}  // namespace fraud::loadgen
