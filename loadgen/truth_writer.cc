#include "loadgen/truth_writer.h"

#include <algorithm>
#include <vector>

#include "loadgen/truth_file.h"

namespace fraud::loadgen {
namespace {

std::vector<std::string> sortedCountries(const FraudScenario& scenario) {
  std::vector<detectors::Country> distinct = scenario.sent_countries;
  std::sort(distinct.begin(), distinct.end());
  distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
  std::vector<std::string> names;
  names.reserve(distinct.size());
  for (const auto& c : distinct) names.emplace_back(c.view());
  return names;
}

}  // namespace

base::Status TruthWriter::open() {
  if (path_.empty()) return {};
  return file_.open(path_);
}

base::Status TruthWriter::add(const FraudScenario& scenario) {
  ++injected_;
  if (!scenario.mustAlert(rule_)) return {};
  ++guaranteed_;
  if (path_.empty()) return {};
  TruthScenario truth;
  truth.scenario = scenario.id;
  truth.card_ref = hasher_->hash(scenario.card).hex();
  truth.partition = detectors::partitionFor(partitioner_, scenario.card, partitions_);
  truth.countries = sortedCountries(scenario);
  truth.event_times = scenario.event_times;
  truth.tx_ids = scenario.tx_ids;
  return file_.appendLine(truthLine(truth));
}

}  // namespace fraud::loadgen
