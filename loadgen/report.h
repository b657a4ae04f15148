#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "loadgen/production.h"
#include "loadgen/run_series.h"
#include "loadgen/truth_file.h"

namespace fraud::loadgen {

// The load-test report: one self-contained HTML page (`fraud-loadgen --report FILE.html`), with
// its data embedded as JSON so `fraud-loadgen report FILE.html --verify VERIFY.json` can add
// verify's verdict later and draw the page again. The page is drawn by `renderReport`
// (report_page.h). Pure functions, except the two file functions.

inline constexpr std::string_view kReportFormat = "fraud-loadgen-report/1";
// A report file larger than this is refused when read back (the page of a day-long run at one
// point a second stays far below it).
inline constexpr size_t kMaxReportBytes = 64 * 1024 * 1024;
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
// False (and `error`) when it is not one.
[[nodiscard]] bool addVerifyResult(nlohmann::ordered_json& data,
                                   const nlohmann::ordered_json& verify, int64_t verified_at_ms,
                                   std::string& error);

// The data embedded in a page that `renderReport` drew; nothing (and `error`) otherwise.
[[nodiscard]] std::optional<nlohmann::ordered_json> reportDataOf(std::string_view html,
                                                                 std::string& error);

// The <script type="application/json"> element holding `data`; its text never holds "<", so no
// string in the data can close the element.
[[nodiscard]] std::string embeddedData(const nlohmann::ordered_json& data);

// Reads a report file. Nothing with an empty `error` when the file does not exist; nothing with
// `error` when it cannot be read or is larger than kMaxReportBytes.
[[nodiscard]] std::optional<std::string> readReportFile(const std::string& path,
                                                        std::string& error);
// Writes `html` to `path` through a temporary file renamed over it.
[[nodiscard]] bool writeReportFile(const std::string& path, const std::string& html,
                                   std::string& error);

// `fraud-loadgen --report PATH`: the page of a finished run (its truth file, when it wrote one,
// gives the scenarios). False (and `error`) when it cannot be written.
[[nodiscard]] bool writeRunReport(const std::string& path, const ProductionOptions& options,
                                  const RunSeries& series, std::string& error);

// `fraud-loadgen report PATH --verify VERIFY`: adds verify's JSON report (a file, "-" for
// stdin) to the page at `path`, or starts a page holding only the verdict when there is none.
// Refuses to overwrite a file that is not such a page. False (and `error`) on any problem.
[[nodiscard]] bool addVerifyToReportFile(const std::string& path, const std::string& verify_path,
                                         std::string& error);

// "2026-12-01T08:00:00Z".
[[nodiscard]] std::string utcTime(int64_t epoch_ms);

}  // namespace fraud::loadgen
