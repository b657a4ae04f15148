#pragma once

// The report's lateness section (report_page.h): the distribution of the lateness the loadgen
// stamped, with the grace drawn on it, and the share beyond the grace next to the share the
// service reported dropped. `run` and `summary` are the page data's "run" and its "summary"
// (either may be null).

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

namespace fraud::loadgen::html {

[[nodiscard]] std::string latenessSection(const nlohmann::ordered_json* run,
                                          const nlohmann::ordered_json* summary);

// "2 min", "90 s", "1,500 ms".
[[nodiscard]] std::string durationText(double ms);

}  // namespace fraud::loadgen::html
