#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "loadgen/production.h"
#include "loadgen/report_data.h"
#include "loadgen/run_series.h"

namespace fraud::loadgen {

// The load-test report: one self-contained HTML page (`fraud-loadgen --report FILE.html`), with
// its data (report_data.h) embedded as JSON so `fraud-loadgen report FILE.html --verify
// VERIFY.json` can add verify's verdict later and draw the page again. The page is drawn by
// `renderReport` (report_page.h). Here: the data in the page and the page in its file.

// A report file larger than this is refused when read back (the page of a day-long run at one
// point a second stays far below it).
inline constexpr size_t kMaxReportBytes = 64 * 1024 * 1024;

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

}  // namespace fraud::loadgen
