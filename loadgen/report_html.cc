#include "loadgen/report_html.h"

#include <algorithm>
#include <cmath>

namespace fraud::loadgen::html {

using svg::escape;
using svg::formatCount;
using svg::formatFixed;

// Defensive reads of the data: nothing when absent or of another type.
const ordered_json* field(const ordered_json* j, std::string_view key) {
  if (j == nullptr || !j->is_object()) return nullptr;
  const auto found = j->find(key);
  return found == j->end() ? nullptr : &*found;
}
const ordered_json* field(const ordered_json& j, std::string_view key) { return field(&j, key); }

std::optional<double> number(const ordered_json* j) {
  if (j == nullptr || !j->is_number()) return std::nullopt;
  const double v = j->get<double>();
  if (!std::isfinite(v)) return std::nullopt;
  return v;
}
std::optional<double> number(const ordered_json* j, std::string_view key) {
  return number(field(j, key));
}

std::string text(const ordered_json* j) {
  if (j == nullptr || j->is_null()) return "";
  if (j->is_string()) return j->get<std::string>();
  if (j->is_boolean()) return j->get<bool>() ? "yes" : "no";
  if (j->is_number_integer() || j->is_number_unsigned()) return formatCount(j->get<double>());
  if (j->is_number()) return formatFixed(j->get<double>(), 2);
  return j->dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

// "+1.5 s", "-0.2 s".
std::string signedSeconds(double s) {
  const std::string text = formatFixed(s, 1);
  return (text[0] == '-' ? "" : "+") + text + " s";
}

std::string countText(const std::optional<double>& v) { return v ? formatCount(*v) : "n/a"; }
std::string msText(const std::optional<double>& v) {
  if (!v) return "n/a";
  return formatFixed(*v, *v < 10 ? 1 : 0) + " ms";
}

std::vector<svg::Point> pointsOf(const ordered_json* j, size_t x_index, size_t y_index) {
  std::vector<svg::Point> out;
  if (j == nullptr || !j->is_array()) return out;
  for (const auto& p : *j) {
    if (!p.is_array() || p.size() <= std::max(x_index, y_index)) continue;
    const auto x = number(&p[x_index]);
    const auto y = number(&p[y_index]);
    if (x && y) out.push_back({*x, *y});
  }
  return out;
}

std::string key(const char* color, const std::string& name) {
  return "<span class=\"key\" style=\"background:" + std::string(color) + "\"></span>" +
         escape(name);
}

std::string emptyChart(const std::string& message) {
  return "<div class=\"empty\">" + escape(message) + "</div>";
}

std::string row(const std::vector<std::string>& cells, const std::vector<std::string>& classes) {
  std::string out = "<tr>";
  for (size_t i = 0; i < cells.size(); ++i) {
    const std::string cls = i < classes.size() ? classes[i] : "";
    out += "<td" + (cls.empty() ? "" : " class=\"" + cls + "\"") + ">" + escape(cells[i]) + "</td>";
  }
  return out + "</tr>";
}

// --- sections ----------------------------------------------------------------------------------

std::string countRow(const std::string& name, const ordered_json* j, bool zero_is_good) {
  const auto v = number(j);
  std::string cls = "num";
  if (zero_is_good && v) cls += *v == 0 ? " ok" : " bad";
  return row({name, countText(v)}, {"", cls});
}

}  // namespace fraud::loadgen::html
