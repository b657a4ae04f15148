#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace fraud::loadgen {

// The HTML page of a load-test report (report.h): headline figures, four SVG charts (achieved
// rate, consumer lag, the latency distribution, latency percentiles over time), verify's
// verdict, the injected scenarios, the record kinds and the run's parameters, with `data`
// embedded for later updates. Self-contained: no script, no font, no stylesheet, no image
// from anywhere, and a Content-Security-Policy that forbids fetching any. `data` is read
// defensively (a page read back from a file is input): a field of the wrong type is shown as
// missing. Every text is escaped.
[[nodiscard]] std::string renderReport(const nlohmann::ordered_json& data);

}  // namespace fraud::loadgen
