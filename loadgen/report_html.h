#pragma once

// What the report's page sections share: defensive reads of the page's data (a page read back
// from a file is input: a field of the wrong type reads as missing) and small HTML pieces, every
// text escaped.

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "loadgen/svg_chart.h"

namespace fraud::loadgen::html {

using nlohmann::ordered_json;

inline constexpr const char* kBlue = "#2563eb";
inline constexpr const char* kOrange = "#ea580c";
inline constexpr const char* kAmber = "#d97706";
inline constexpr const char* kRed = "#dc2626";
inline constexpr const char* kTeal = "#0d9488";  // histogram bars

// The member `key` of an object; nothing when absent or not an object.
[[nodiscard]] const ordered_json* field(const ordered_json* j, std::string_view key);
[[nodiscard]] const ordered_json* field(const ordered_json& j, std::string_view key);
// A finite number; nothing otherwise.
[[nodiscard]] std::optional<double> number(const ordered_json* j);
[[nodiscard]] std::optional<double> number(const ordered_json* j, std::string_view key);
// Any value as display text ("" for none).
[[nodiscard]] std::string text(const ordered_json* j);

// "+1.5 s", "-0.2 s".
[[nodiscard]] std::string signedSeconds(double s);
[[nodiscard]] std::string countText(const std::optional<double>& v);
[[nodiscard]] std::string msText(const std::optional<double>& v);
// [x, y] pairs from the rows of a JSON array of arrays; malformed rows are skipped.
[[nodiscard]] std::vector<svg::Point> pointsOf(const ordered_json* j, size_t x_index,
                                               size_t y_index);

// A colour key before `name` in a legend.
[[nodiscard]] std::string key(const char* color, const std::string& name);
// What stands where a chart has no data.
[[nodiscard]] std::string emptyChart(const std::string& message);
// A table row; `classes[i]` (may be shorter) is cell i's class.
[[nodiscard]] std::string row(const std::vector<std::string>& cells,
                              const std::vector<std::string>& classes);
// A count row, marked good at zero and bad otherwise when `zero_is_good`.
[[nodiscard]] std::string countRow(const std::string& name, const ordered_json* j,
                                   bool zero_is_good);

}  // namespace fraud::loadgen::html
