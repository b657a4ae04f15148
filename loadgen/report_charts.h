#pragma once

// The report's chart sections (report_page.h), each a <section> of the page: achieved rate,
// consumer lag, the latency distribution and the latency percentiles over time. `run` and
// `summary` are the page data's "run" and its "summary" (either may be null).

#include <nlohmann/json.hpp>
#include <string>

namespace fraud::loadgen::html {

[[nodiscard]] std::string rateSection(const nlohmann::ordered_json* run,
                                      const nlohmann::ordered_json* summary);
[[nodiscard]] std::string lagSection(const nlohmann::ordered_json* run,
                                     const nlohmann::ordered_json* summary);
[[nodiscard]] std::string histogramSection(const nlohmann::ordered_json* run,
                                           const nlohmann::ordered_json* summary);
[[nodiscard]] std::string percentilesSection(const nlohmann::ordered_json* run,
                                             const nlohmann::ordered_json* summary);

}  // namespace fraud::loadgen::html
