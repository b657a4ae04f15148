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

// The data embedded in a page that `renderReport` drew; an error saying why not otherwise.
[[nodiscard]] base::Result<nlohmann::ordered_json> reportDataOf(std::string_view html);

// The <script type="application/json"> element holding `data`; its text never holds "<", so no
// string in the data can close the element.
[[nodiscard]] std::string embeddedData(const nlohmann::ordered_json& data);

// Reads a report file: its text, or nothing when the file does not exist; an error when it
// cannot be read or is larger than kMaxReportBytes.
[[nodiscard]] base::Result<std::optional<std::string>> readReportFile(const std::string& path);
// Writes `html` to `path` through a temporary file renamed over it.
[[nodiscard]] base::Status writeReportFile(const std::string& path, const std::string& html);

// `fraud-loadgen --report PATH`: the page of a finished run (its truth file, when it wrote one,
// gives the scenarios). An error when it cannot be written.
[[nodiscard]] base::Status writeRunReport(const std::string& path, const ProductionOptions& options,
                                          const RunSeries& series);

// `fraud-loadgen report PATH --verify VERIFY`: adds verify's JSON report (a file, "-" for
// stdin) to the page at `path`, or starts a page holding only the verdict when there is none.
// Refuses to overwrite a file that is not such a page. An error on any problem.
[[nodiscard]] base::Status addVerifyToReportFile(const std::string& path,
                                                 const std::string& verify_path);

}  // namespace fraud::loadgen
