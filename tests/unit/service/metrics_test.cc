// ServiceMetrics against the metrics table of docs/operations.md (every family it registers is
// there, with its type and labels) and its flush() of one commit interval's counts.
#include "service/metrics.h"

#include <gtest/gtest.h>
#include <prometheus/registry.h>

#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <string_view>

namespace fraud::service {
namespace {

// One row of the table: the type and the label names.
struct DocumentedFamily {
  std::string type;
  std::set<std::string> labels;
};

// The rows "| `name` | type | labels | what |" of docs/operations.md's metrics table; a row may
// name several families ("`a`, `b`"). Label names are the backticked words of the labels column.
std::map<std::string, DocumentedFamily> documentedFamilies() {
  std::ifstream file(std::string(FRAUD_SOURCE_DIR) + "/docs/operations.md");
  EXPECT_TRUE(file) << "cannot read docs/operations.md";
  std::map<std::string, DocumentedFamily> families;
  const auto backticked = [](const std::string& cell) {
    std::set<std::string> words;
    for (size_t at = cell.find('`'); at != std::string::npos; at = cell.find('`', at)) {
      const size_t end = cell.find('`', at + 1);
      if (end == std::string::npos) break;
      words.insert(cell.substr(at + 1, end - at - 1));
      at = end + 1;
    }
    return words;
  };
  std::string line;
  while (std::getline(file, line)) {
    if (!line.starts_with("| `")) continue;
    std::vector<std::string> cells;
    std::stringstream row(line.substr(1));
    for (std::string cell; std::getline(row, cell, '|');) cells.push_back(cell);
    if (cells.size() < 3) continue;
    std::string type = cells[1];
    std::erase(type, ' ');
    for (const auto& name : backticked(cells[0])) {
      families[name] = DocumentedFamily{type, backticked(cells[2])};
    }
  }
  return families;
}

std::string typeName(prometheus::MetricType type) {
  switch (type) {
    case prometheus::MetricType::Counter:
      return "counter";
    case prometheus::MetricType::Gauge:
      return "gauge";
    case prometheus::MetricType::Histogram:
      return "histogram";
    default:
      return "other";
  }
}

TEST(ServiceMetrics, EveryFamilyIsDocumentedWithItsTypeAndLabels) {
  prometheus::Registry registry;
  ServiceMetrics metrics(registry);
  // A family shows once it has a series: those made at run time, with their labels.
  for (auto* family :
       {&metrics.stream_time, &metrics.event_time_lag, &metrics.offset_lag, &metrics.state_cards,
        &metrics.restore_progress, &metrics.standby_lag, &metrics.standby_age}) {
    family->Add({{"partition", "0"}});
  }
  metrics.fenced_owners.Add({{"result", "ok"}});
  metrics.exposeMisrouted("transactions", 1);
  const auto documented = documentedFamilies();
  const auto families = registry.Collect();
  EXPECT_EQ(families.size(), 33u);
  for (const auto& family : families) {
    const auto row = documented.find(family.name);
    if (row == documented.end()) {
      ADD_FAILURE() << family.name << " is not in docs/operations.md's metrics table";
      continue;
    }
    EXPECT_EQ(typeName(family.type), row->second.type) << family.name;
    EXPECT_FALSE(family.help.empty()) << family.name;
    for (const auto& metric : family.metric) {
      for (const auto& label : metric.label) {
        EXPECT_TRUE(row->second.labels.contains(label.name))
            << family.name << "'s label " << label.name << " is not documented";
      }
    }
  }
}

TEST(ServiceMetrics, FlushAddsTheIntervalsCountsAndClearsThem) {
  prometheus::Registry registry;
  ServiceMetrics metrics(registry);
  IntervalMetrics interval;
  interval.tally.outcomes.accepted = 5;
  interval.tally.outcomes.duplicate = 2;
  interval.tally.outcomes.incidents = 1;
  interval.tally.outcomes.alerts = 3;
  interval.tally.outcomes.rejected[0] = 4;
  interval.tally.key_mismatch = 1;
  interval.tally.countMisrouted("transactions", 3);
  interval.tally.countMisrouted("transactions", 3);
  interval.tally.countMisrouted("transactions", 0);
  interval.tally.countMisrouted("controls", 3);
  interval.processing.observe(1e-5, 5);
  interval.fetch.observe(0.002);

  metrics.flush(interval);
  metrics.flush(interval);  // cleared by the first: adds nothing

  EXPECT_EQ(metrics.records.Add({{"outcome", "accepted"}}).Value(), 5);
  EXPECT_EQ(metrics.records.Add({{"outcome", "duplicate"}}).Value(), 2);
  EXPECT_EQ(metrics.records.Add({{"outcome", "rejected"}}).Value(), 4);
  const std::string reason(detectors::rejectReasonName(static_cast<detectors::RejectReason>(0)));
  EXPECT_EQ(metrics.rejected.Add({{"reason", reason}}).Value(), 4);
  EXPECT_EQ(metrics.alerts.Add({{"kind", "new"}}).Value(), 1);
  EXPECT_EQ(metrics.alerts.Add({{"kind", "escalation"}}).Value(), 2);
  EXPECT_EQ(metrics.key_mismatch.Value(), 1);
  EXPECT_EQ(metrics.misrouted.Add({{"topic", "transactions"}, {"partition", "3"}}).Value(), 2);
  EXPECT_EQ(metrics.misrouted.Add({{"topic", "transactions"}, {"partition", "0"}}).Value(), 1);
  EXPECT_EQ(metrics.misrouted.Add({{"topic", "controls"}, {"partition", "3"}}).Value(), 1);
  EXPECT_TRUE(interval.tally.misrouted.empty());
  EXPECT_EQ(metrics.processing.Collect().histogram.sample_count, 5u);
  EXPECT_EQ(metrics.stage_process.Collect().histogram.sample_count, 5u) << "process stage too";
  EXPECT_EQ(metrics.stage_fetch.Collect().histogram.sample_count, 1u);
  EXPECT_EQ(metrics.stage_queue.Collect().histogram.sample_count, 0u);
  EXPECT_EQ(interval.tally.outcomes.accepted, 0u);
}

TEST(ServiceMetrics, EveryInputPartitionsMisroutedSeriesIsExposedAtZero) {
  prometheus::Registry registry;
  ServiceMetrics metrics(registry);
  metrics.exposeMisrouted("transactions", 3);
  size_t series = 0;
  for (const auto& family : registry.Collect()) {
    if (family.name != "fraud_misrouted_records_total") continue;
    for (const auto& metric : family.metric) {
      ++series;
      EXPECT_EQ(metric.counter.value, 0);
    }
  }
  EXPECT_EQ(series, 3u);
  metrics.exposeMisrouted("transactions", 3);  // again: the same series, still 0
  EXPECT_EQ(metrics.misrouted.Add({{"topic", "transactions"}, {"partition", "2"}}).Value(), 0);
}

TEST(ServiceMetrics, BrokenInvariantsStartAtZeroAndGetWhatBaseCountedSinceTheLastRefresh) {
  prometheus::Registry registry;
  ServiceMetrics metrics(registry);
  const auto value = [&](std::string_view name) {
    return metrics.broken_invariants.Add({{"invariant", std::string(name)}}).Value();
  };
  size_t series = 0;
  for (const auto& family : registry.Collect()) {
    if (family.name != "fraud_broken_invariants_total") continue;
    series = family.metric.size();
  }
  EXPECT_EQ(series, base::kInvariantCount);
  EXPECT_EQ(value("output_lifecycle"), 0);

  // Counts are process-wide (other tests may have met one): the metric starts from what base
  // holds now, and then follows.
  metrics.refreshBrokenInvariants();
  const double phase = value("task_commit_phase");
  const double output = value("output_lifecycle");
  base::countBrokenInvariant(base::Invariant::kOutputLifecycle);
  base::countBrokenInvariant(base::Invariant::kOutputLifecycle);
  metrics.refreshBrokenInvariants();
  EXPECT_EQ(value("output_lifecycle"), output + 2);
  EXPECT_EQ(value("task_commit_phase"), phase);
  metrics.refreshBrokenInvariants();  // nothing new: unchanged
  EXPECT_EQ(value("output_lifecycle"), output + 2);
}

}  // namespace
}  // namespace fraud::service
