#pragma once

#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "loadgen/production.h"
#include "loadgen/run_series.h"
#include "loadgen/truth_file.h"

namespace fraud::loadgen {

// The data of the load-test report (report.h): what the page shows, aggregated from a run's
// series for its charts, and verify's verdict added later. Pure functions.

inline constexpr std::string_view kReportFormat = "fraud-loadgen-report/1";
// At most this many points per time series and scenarios listed in the page.
inline constexpr size_t kMaxSeriesPoints = 1200;
inline constexpr size_t kMaxListedScenarios = 500;

struct ReportParameter {
  std::string name;
  std::string value;
};

// The run's parameters as the report lists them. librdkafka properties are listed by name only:
// their values may be secrets.
[[nodiscard]] std::vector<ReportParameter> reportParameters(const ProductionOptions& options);

// The page's data for a production run: the summary, the series aggregated for the charts
// (achieved rate per second, lag samples, the latency histogram and percentiles per time
// bucket) and the injected scenarios that must alert. `generated_at_ms`: epoch milliseconds.
[[nodiscard]] nlohmann::ordered_json reportData(const RunSeries& series,
                                                const std::vector<ReportParameter>& parameters,
                                                const std::vector<TruthScenario>& scenarios,
                                                int64_t generated_at_ms);

// The data of a report with no run (verify's verdict only).
[[nodiscard]] nlohmann::ordered_json emptyReportData(int64_t generated_at_ms);

// Adds or replaces the verify section with `verify`, the JSON report of `fraud-loadgen verify`.
// An error when it is not one.
[[nodiscard]] base::Status addVerifyResult(nlohmann::ordered_json& data,
                                           const nlohmann::ordered_json& verify,
                                           int64_t verified_at_ms);

// "2026-12-01T08:00:00Z".
[[nodiscard]] std::string utcTime(int64_t epoch_ms);

}  // namespace fraud::loadgen
