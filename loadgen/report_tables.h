#pragma once

// The report's table sections (report_page.h), each a <section> of the page: verify's verdict,
// the injected scenarios with their recall, the record kinds and production figures, the run's
// parameters. `data` is the whole page data, `summary` its run's summary (may be null).

#include <nlohmann/json.hpp>
#include <string>

namespace fraud::loadgen::html {

[[nodiscard]] std::string verifySection(const nlohmann::ordered_json& data);
[[nodiscard]] std::string scenariosSection(const nlohmann::ordered_json& data,
                                           const nlohmann::ordered_json* summary);
[[nodiscard]] std::string kindsAndRunSection(const nlohmann::ordered_json* summary);
[[nodiscard]] std::string parametersSection(const nlohmann::ordered_json& data);

}  // namespace fraud::loadgen::html
