#include "loadgen/report_page.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <set>
#include <string_view>
#include <tuple>
#include <vector>

#include "loadgen/report.h"
#include "loadgen/svg_chart.h"

namespace fraud::loadgen {
namespace {

using nlohmann::ordered_json;
using svg::escape;
using svg::formatCount;
using svg::formatFixed;

constexpr const char* kBlue = "#2563eb";
constexpr const char* kOrange = "#ea580c";
constexpr const char* kAmber = "#d97706";
constexpr const char* kRed = "#dc2626";

constexpr std::string_view kStyle = R"css(
:root { color-scheme: light; }
* { box-sizing: border-box; }
body { margin: 0; background: #f4f5f7; color: #1f2937;
  font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", sans-serif; }
main { max-width: 1040px; margin: 0 auto; padding: 24px 20px 48px; }
header { display: flex; align-items: center; justify-content: space-between; gap: 16px;
  margin-bottom: 18px; }
h1 { font-size: 24px; margin: 0 0 2px; }
h2 { font-size: 16px; margin: 0 0 4px; }
.sub, .legend, .hint { color: #6b7280; margin: 0; }
.hint code, .sub code { background: #eef0f3; padding: 1px 4px; border-radius: 4px; }
.verdict { font-weight: 700; font-size: 18px; padding: 10px 18px; border-radius: 10px;
  white-space: nowrap; }
.verdict.pass { background: #dcfce7; color: #166534; }
.verdict.fail { background: #fee2e2; color: #991b1b; }
.verdict.none { background: #e5e7eb; color: #374151; }
.tiles { display: grid; grid-template-columns: repeat(auto-fit, minmax(150px, 1fr)); gap: 12px;
  margin-bottom: 16px; }
.tile { background: #fff; border-radius: 10px; padding: 12px 14px;
  box-shadow: 0 1px 2px rgba(0,0,0,.06); }
.tile .label { color: #6b7280; font-size: 12px; text-transform: uppercase; letter-spacing: .04em; }
.tile .value { font-size: 21px; font-weight: 650; margin: 2px 0; white-space: nowrap; }
.tile .detail { color: #6b7280; font-size: 12px; }
.tile.good .value { color: #166534; }
.tile.bad .value { color: #b91c1c; }
section.card { background: #fff; border-radius: 10px; padding: 16px 18px; margin-bottom: 16px;
  box-shadow: 0 1px 2px rgba(0,0,0,.06); }
.key { display: inline-block; width: 14px; height: 3px; vertical-align: middle; margin: 0 4px 0 10px; }
.key.dash { background: repeating-linear-gradient(90deg, #6b7280 0 4px, transparent 4px 7px); }
svg.chart { width: 100%; height: auto; display: block; margin-top: 6px; }
svg.chart text { font: 12px system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", sans-serif; }
svg.chart .tick { fill: #6b7280; }
svg.chart .axis-label { fill: #374151; }
svg.chart .note { fill: #4b5563; font-size: 11px; }
svg.chart .grid { stroke: #e5e7eb; stroke-width: 1; }
svg.chart .axis { stroke: #9ca3af; stroke-width: 1; }
svg.chart .line { fill: none; stroke-width: 2; stroke-linejoin: round; stroke-linecap: round; }
svg.chart .line.dashed { stroke-dasharray: 7 5; }
svg.chart .area { opacity: .14; }
svg.chart .target, svg.chart .marker { stroke: #6b7280; stroke-width: 1.2; stroke-dasharray: 5 4; }
svg.chart .bar { fill: #0d9488; }
svg.chart .bar:hover { fill: #0f766e; }
svg.chart .mark { stroke-width: 1.5; stroke-dasharray: 4 3; }
svg.chart .mark-label { font-size: 11px; font-weight: 600; }
svg.chart .hover { fill: transparent; }
svg.chart .hover:hover { fill: rgba(37,99,235,.07); }
svg.chart .empty-note { fill: #9ca3af; font-size: 14px; }
.empty { color: #6b7280; background: #f9fafb; border: 1px dashed #d1d5db; border-radius: 8px;
  padding: 28px; text-align: center; margin-top: 8px; }
table { border-collapse: collapse; width: 100%; margin-top: 8px; }
th, td { text-align: left; padding: 5px 8px; border-bottom: 1px solid #eef0f3; vertical-align: top; }
th { color: #6b7280; font-weight: 600; font-size: 12px; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
td.ok { color: #166534; font-weight: 600; }
td.bad { color: #b91c1c; font-weight: 600; }
code, .mono { font-family: ui-monospace, "DejaVu Sans Mono", monospace; font-size: 12px; }
.columns { display: grid; grid-template-columns: 1fr 1fr; gap: 16px; }
@media (max-width: 760px) { .columns { grid-template-columns: 1fr; } header { display: block; } }
details summary { cursor: pointer; color: #374151; margin-top: 8px; }
footer { color: #9ca3af; font-size: 12px; text-align: center; }
)css";

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

struct Tile {
  std::string label;
  std::string value;
  std::string detail;
  std::string tone;  // "", "good", "bad"
};

std::string renderTiles(const std::vector<Tile>& tiles) {
  std::string out = "<section class=\"tiles\">";
  for (const auto& t : tiles) {
    out += "<div class=\"tile" + (t.tone.empty() ? "" : " " + t.tone) + "\"><div class=\"label\">" +
           escape(t.label) + "</div><div class=\"value\">" + escape(t.value) +
           "</div><div class=\"detail\">" + escape(t.detail) + "</div></div>";
  }
  return out + "</section>";
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

std::string rateSection(const ordered_json* run, const ordered_json* summary) {
  std::string out = "<section class=\"card\"><h2>Achieved rate</h2>";
  const auto points = pointsOf(field(field(run, "rate"), "points"), 0, 1);
  const auto target = number(summary, "target_rate");
  const auto interval = number(field(run, "rate"), "interval_s").value_or(1);
  out += "<p class=\"legend\">Records sent per second" +
         std::string(interval > 1 ? " (mean over " + formatCount(interval) + " s)" : "") + ":" +
         key(kBlue, "achieved");
  if (target) out += "<span class=\"key dash\"></span>target " + formatCount(*target) + " tx/s";
  out += "</p>";
  if (points.empty()) return out + emptyChart("No rate recorded.") + "</section>";
  svg::LineChart chart;
  chart.id = "chart-rate";
  chart.title = "Achieved rate over time";
  chart.x_label = "time since the start";
  chart.y_label = "records/s";
  chart.series.push_back({"achieved", kBlue, points, true, false});
  chart.target_y = target;
  if (target) chart.target_label = "target " + formatCount(*target) + "/s";
  return out + svg::renderLineChart(chart) + "</section>";
}

std::string lagSection(const ordered_json* run, const ordered_json* summary) {
  std::string out = "<section class=\"card\"><h2>Consumer lag</h2>";
  const auto* lag = field(summary, "consumer_lag");
  const std::string group = text(field(lag, "group"));
  out += "<p class=\"legend\">Records the service";
  if (!group.empty()) out += " (consumer group <code>" + escape(group) + "</code>)";
  out += " has yet to commit, summed over partitions, sampled every second:" + key(kOrange, "lag") +
         "</p>";
  const auto points = pointsOf(field(field(run, "lag"), "points"), 0, 1);
  if (points.empty()) {
    return out + emptyChart("Lag not sampled: run fraud-loadgen with --lag-group GROUP.") +
           "</section>";
  }
  svg::LineChart chart;
  chart.id = "chart-lag";
  chart.title = "Consumer lag over time";
  chart.x_label = "time since the start";
  chart.y_label = "records behind";
  chart.series.push_back({"lag", kOrange, points, true, false});
  chart.marker_x = number(run, "production_s");
  chart.marker_label = "production ended";
  return out + svg::renderLineChart(chart) + "</section>";
}

std::string latencyNote(const ordered_json* summary) {
  const auto* latency = field(summary, "latency");
  if (latency != nullptr && latency->is_string()) {
    return "End-to-end latency " + latency->get<std::string>() + ".";
  }
  return "No alert was timed.";
}

std::string histogramSection(const ordered_json* run, const ordered_json* summary) {
  const auto* latency = field(run, "latency");
  std::string out =
      "<section class=\"card\"><h2>End-to-end alert latency: distribution</h2><p "
      "class=\"legend\">From the produce call of the record that triggers an alert to the "
      "alert's arrival on the alerts topic, " +
      countText(number(latency, "count")) + " alerts; logarithmic bins." +
      key(kBlue, "p50 " + msText(number(latency, "p50_ms"))) +
      key(kAmber, "p95 " + msText(number(latency, "p95_ms"))) +
      key(kRed, "p99 " + msText(number(latency, "p99_ms"))) + "</p>";
  const auto* histogram = field(latency, "histogram");
  const auto* edges = field(histogram, "edges_ms");
  const auto* counts = field(histogram, "counts");
  svg::Histogram h;
  if (edges != nullptr && edges->is_array() && counts != nullptr && counts->is_array()) {
    for (const auto& e : *edges) h.edges.push_back(number(&e).value_or(NAN));
    for (const auto& c : *counts) {
      const auto v = number(&c);
      h.counts.push_back(v && *v > 0 ? static_cast<uint64_t>(*v) : 0);
    }
  }
  if (h.edges.size() < 2 || h.counts.empty()) {
    return out + emptyChart(latencyNote(summary)) + "</section>";
  }
  h.id = "chart-latency-histogram";
  h.title = "End-to-end latency distribution";
  h.x_label = "latency";
  h.y_label = "alerts";
  for (const auto& [label, name, color] :
       {std::tuple{"p50", "p50_ms", kBlue}, std::tuple{"p95", "p95_ms", kAmber},
        std::tuple{"p99", "p99_ms", kRed}}) {
    if (const auto v = number(latency, name)) h.marks.push_back({label, *v, color});
  }
  return out + svg::renderHistogram(h) + "</section>";
}

std::string percentilesSection(const ordered_json* run, const ordered_json* summary) {
  std::string out = "<section class=\"card\"><h2>End-to-end alert latency over time</h2>";
  const auto* over_time = field(field(run, "latency"), "over_time");
  const auto width = number(over_time, "width_s").value_or(1);
  out +=
      "<p class=\"legend\">Percentiles (nearest rank) of the alerts whose trigger record was "
      "sent in each " +
      formatCount(width) + " s:" + key(kBlue, "p50") + key(kAmber, "p95") + key(kRed, "p99") +
      "</p>";
  const auto* points = field(over_time, "points");
  const auto p50 = pointsOf(points, 0, 2);
  if (p50.empty()) return out + emptyChart(latencyNote(summary)) + "</section>";
  svg::LineChart chart;
  chart.id = "chart-latency-percentiles";
  chart.title = "End-to-end latency percentiles over time";
  chart.x_label = "trigger sent, time since the start";
  chart.y_label = "latency";
  chart.y_unit = svg::Unit::kMilliseconds;
  chart.dots = true;
  // p95 dashed over p99: with few alerts a bucket's p95 is its p99.
  chart.series.push_back({"p50", kBlue, p50, false, false});
  chart.series.push_back({"p99", kRed, pointsOf(points, 0, 4), false, false});
  chart.series.push_back({"p95", kAmber, pointsOf(points, 0, 3), false, true});
  return out + svg::renderLineChart(chart) + "</section>";
}

std::string countRow(const std::string& name, const ordered_json* j, bool zero_is_good) {
  const auto v = number(j);
  std::string cls = "num";
  if (zero_is_good && v) cls += *v == 0 ? " ok" : " bad";
  return row({name, countText(v)}, {"", cls});
}

std::string verifySection(const ordered_json& data) {
  std::string out = "<section class=\"card\" id=\"verify\"><h2>Verify</h2>";
  const auto* verify = field(data, "verify");
  if (verify == nullptr) {
    return out +
           "<p class=\"hint\">Not verified yet. Audit the run and add the verdict here:<br><code>"
           "fraud-loadgen verify --brokers … --truth truth.jsonl &gt; verify.json</code> then "
           "<code>fraud-loadgen report THIS.html --verify verify.json</code></p></section>";
  }
  const std::string verdict = text(field(verify, "verdict"));
  out +=
      "<p class=\"legend\">The detection engine run offline over every input record, "
      "compared with the alerts and dead-letter topics by idempotency key";
  if (const auto* at = field(data, "verified_at"); at != nullptr) {
    out += " (verified " + escape(text(at)) + ")";
  }
  out +=
      ".</p><div class=\"columns\"><div><table><tr><th>alerts</th><th class=\"num\">count</th>"
      "</tr>";
  const auto* alerts = field(verify, "alerts");
  out += countRow("expected (offline engine)", field(alerts, "expected"), false);
  out += countRow("on the alerts topic", field(alerts, "records"), false);
  for (const auto* name : {"missing", "unexpected", "differing", "duplicates", "malformed"}) {
    out += countRow(name, field(field(alerts, name), "count"), true);
  }
  out += "</table></div><div><table><tr><th>dead letters</th><th class=\"num\">count</th></tr>";
  const auto* dlq = field(verify, "dlq");
  out += countRow("expected (offline engine)", field(dlq, "expected"), false);
  out += countRow("on the dead-letter topic", field(dlq, "records"), false);
  for (const auto* name : {"missing", "unexpected", "differing", "duplicates", "malformed"}) {
    out += countRow(name, field(field(dlq, name), "count"), true);
  }
  out += "</table></div></div><table>";
  const auto* group = field(verify, "group");
  if (group != nullptr) {
    out += row({"consumer group " + text(field(group, "id")) + " caught up",
                text(field(group, "caught_up")) +
                    (number(group, "waited_s")
                         ? " (waited " + formatFixed(*number(group, "waited_s"), 1) + " s)"
                         : "")},
               {"", ""});
  }
  const auto* truth = field(verify, "truth");
  if (truth != nullptr) {
    const auto scenarios = number(truth, "scenarios");
    const auto recalled = number(truth, "recalled");
    out += row({"injected fraud recalled", countText(recalled) + " of " + countText(scenarios)},
               {"", scenarios && recalled && *scenarios == *recalled ? "ok" : "bad"});
  }
  out += row({"verdict", verdict}, {"", verdict == "pass" ? "ok" : "bad"});
  out += "</table>";
  const auto* notes = field(verify, "notes");
  if (notes != nullptr && notes->is_array() && !notes->empty()) {
    out += "<p class=\"hint\">Notes:</p><ul>";
    for (const auto& n : *notes) out += "<li>" + escape(text(&n)) + "</li>";
    out += "</ul>";
  }
  out += "<details><summary>verify's full report (JSON)</summary><pre class=\"mono\">" +
         escape(verify->dump(2, ' ', false, nlohmann::json::error_handler_t::replace)) +
         "</pre></details>";
  return out + "</section>";
}

std::string scenariosSection(const ordered_json& data, const ordered_json* summary) {
  std::string out = "<section class=\"card\" id=\"scenarios\"><h2>Injected fraud</h2>";
  const auto* scenarios = field(data, "scenarios");
  const auto* items = field(scenarios, "items");
  const auto* injected = field(field(summary, "scenarios"), "injected");
  const auto* must = field(field(summary, "scenarios"), "must_alert");
  out += "<p class=\"legend\">" + escape(countText(number(injected))) + " scenarios injected; " +
         escape(countText(number(must))) +
         " must alert (SPEC: N distinct countries within W). A scenario is recalled when an "
         "alert names its card_ref and its window holds one of the scenario's records.</p>";
  if (items == nullptr || !items->is_array() || items->empty()) {
    return out + emptyChart("No truth file: run fraud-loadgen with --truth FILE to list them.") +
           "</section>";
  }
  // Recall marks from verify: the listed misses are misses; the rest are recalled when the list
  // is complete.
  std::set<uint64_t> missed;
  bool complete = false;
  const auto* truth = field(field(data, "verify"), "truth");
  if (truth != nullptr) {
    const auto* list = field(truth, "missed");
    if (list != nullptr && list->is_array()) {
      for (const auto& m : *list) {
        if (m.is_number_unsigned() || m.is_number_integer()) missed.insert(m.get<uint64_t>());
      }
    }
    const auto total = number(truth, "scenarios");
    const auto recalled = number(truth, "recalled");
    complete = total && recalled && *total - *recalled == static_cast<double>(missed.size());
  }
  const auto model_start = number(field(summary, "model_clock"), "start");
  out +=
      "<table><tr><th class=\"num\">#</th><th>card_ref</th><th class=\"num\">partition</th>"
      "<th>countries</th><th class=\"num\">records</th><th class=\"num\">spread</th>"
      "<th class=\"num\">first record</th><th>recalled</th></tr>";
  for (const auto& item : *items) {
    const auto id = number(&item, "scenario");
    std::string countries;
    if (const auto* c = field(&item, "countries"); c != nullptr && c->is_array()) {
      for (const auto& country : *c) countries += (countries.empty() ? "" : " ") + text(&country);
    }
    const std::string card_ref = text(field(&item, "card_ref"));
    const auto first = number(&item, "first_event_time");
    const auto span = number(&item, "span_ms");
    std::string recalled = "not verified";
    std::string cls;
    if (truth != nullptr && id) {
      const bool was_missed = missed.count(static_cast<uint64_t>(*id)) > 0;
      recalled = was_missed ? "missed" : complete ? "yes" : "?";
      cls = was_missed ? "bad" : complete ? "ok" : "";
    }
    out += "<tr><td class=\"num\">" + escape(countText(id)) + "</td><td class=\"mono\" title=\"" +
           escape(card_ref) + "\">" + escape(card_ref.substr(0, 16)) +
           (card_ref.size() > 16 ? "…" : "") + "</td><td class=\"num\">" +
           escape(countText(number(&item, "partition"))) + "</td><td>" + escape(countries) +
           "</td><td class=\"num\">" + escape(countText(number(&item, "records"))) +
           "</td><td class=\"num\">" + escape(span ? formatFixed(*span / 1000, 1) + " s" : "n/a") +
           "</td><td class=\"num\">" +
           escape(first && model_start ? signedSeconds((*first - *model_start) / 1000) : "n/a") +
           "</td><td" + (cls.empty() ? "" : " class=\"" + cls + "\"") + ">" + escape(recalled) +
           "</td></tr>";
  }
  out += "</table>";
  const auto total = number(scenarios, "total");
  if (total && *total > static_cast<double>(items->size())) {
    out += "<p class=\"hint\">The first " + formatCount(static_cast<double>(items->size())) +
           " of " + formatCount(*total) + " are listed; the truth file has them all.</p>";
  }
  return out + "</section>";
}

std::string kindsAndRunSection(const ordered_json* summary) {
  std::string out =
      "<section class=\"card\"><div class=\"columns\"><div><h2>Records by kind</h2><table>";
  const auto* kinds = field(summary, "kinds");
  if (kinds != nullptr && kinds->is_object()) {
    for (const auto& [name, value] : kinds->items()) {
      out += row({name, countText(number(&value))}, {"", "num"});
    }
  }
  out += row({"total", countText(number(summary, "records"))}, {"", "num"});
  out += "</table></div><div><h2>Production</h2><table>";
  const std::vector<std::pair<std::string, std::string>> facts = {
      {"partitions", countText(number(summary, "partitions"))},
      {"partitioner", text(field(summary, "partitioner"))},
      {"acknowledged", countText(number(summary, "acked"))},
      {"delivery errors", countText(number(summary, "errors"))},
      {"queue-full waits", countText(number(summary, "queue_full_waits"))},
      {"production time",
       number(summary, "elapsed_s") ? formatFixed(*number(summary, "elapsed_s"), 1) + " s" : "n/a"},
      {"loadgen CPU",
       number(summary, "cpu_s") ? formatFixed(*number(summary, "cpu_s"), 1) + " s" : "n/a"},
  };
  for (const auto& [name, value] : facts) out += row({name, value}, {"", "num"});
  const auto* reasons = field(summary, "error_reasons");
  if (reasons != nullptr && reasons->is_object()) {
    for (const auto& [name, value] : reasons->items()) {
      out += row({"error " + name, countText(number(&value))}, {"", "num bad"});
    }
  }
  return out + "</table></div></div></section>";
}

std::string parametersSection(const ordered_json& data) {
  std::string out = "<section class=\"card\" id=\"parameters\"><h2>Parameters</h2><table>";
  const auto* params = field(data, "parameters");
  if (params != nullptr && params->is_array()) {
    for (const auto& p : *params) {
      if (!p.is_array() || p.size() < 2) continue;
      out += row({text(&p[0]), text(&p[1])}, {"", "mono"});
    }
  }
  return out + "</table></section>";
}

std::vector<Tile> headlineTiles(const ordered_json& data, const ordered_json* summary) {
  std::vector<Tile> tiles;
  const auto achieved = number(summary, "achieved_rate");
  const auto generated = number(summary, "generation_rate");
  const auto target = number(summary, "target_rate");
  const auto deviation = number(summary, "rate_max_deviation_10s");
  std::string rate_detail = target ? "target " + formatCount(*target) + " tx/s" : "target: max";
  if (deviation)
    rate_detail += "; worst 10-s mean off by " + formatFixed(*deviation * 100, 2) + " %";
  if (achieved) {
    tiles.push_back({"achieved rate", formatCount(*achieved) + " tx/s", rate_detail, ""});
  } else if (generated) {
    tiles.push_back({"generation rate", formatCount(*generated) + " rec/s", "files only", ""});
  }
  const auto records = number(summary, "records");
  const auto errors = number(summary, "errors");
  tiles.push_back({"records", countText(records),
                   errors ? countText(errors) + " delivery errors" : "written to files",
                   errors ? (*errors == 0 ? "good" : "bad") : ""});

  const auto* latency = field(field(data, "run"), "latency");
  const auto* summary_latency = field(summary, "latency");
  if (const auto p99 = number(latency, "p99_ms")) {
    tiles.push_back({"latency p99", msText(p99),
                     "p50 " + msText(number(latency, "p50_ms")) + " · p95 " +
                         msText(number(latency, "p95_ms")) + " · max " +
                         msText(number(latency, "max_ms")),
                     ""});
    tiles.push_back(
        {"alerts timed", countText(number(summary_latency, "matched")),
         "of " + countText(number(summary_latency, "expected_alerts")) + " expected",
         number(summary_latency, "matched") == number(summary_latency, "expected_alerts") ? "good"
                                                                                          : "bad"});
  }
  if (const auto* lag = field(summary, "consumer_lag"); lag != nullptr) {
    tiles.push_back({"max lag", countText(number(lag, "max")),
                     "records; " + countText(number(lag, "at_production_end")) +
                         " when production ended, " + countText(number(lag, "last")) + " last",
                     ""});
  }
  const auto* truth = field(field(data, "verify"), "truth");
  if (truth != nullptr) {
    const auto scenarios = number(truth, "scenarios");
    const auto recalled = number(truth, "recalled");
    tiles.push_back({"fraud recalled", countText(recalled) + " / " + countText(scenarios),
                     "injected scenarios that must alert",
                     scenarios && recalled && *scenarios == *recalled ? "good" : "bad"});
  } else if (const auto must = number(field(summary, "scenarios"), "must_alert")) {
    tiles.push_back({"fraud injected", countText(must), "must alert; not verified yet", ""});
  }
  return tiles;
}

}  // namespace

std::string renderReport(const ordered_json& data) {
  const auto* run = field(data, "run");
  const auto* summary = field(run, "summary");
  const auto* verify = field(data, "verify");
  const std::string verdict = text(field(verify, "verdict"));
  const std::string verdict_class = verdict == "pass"   ? "pass"
                                    : verdict == "fail" ? "fail"
                                                        : "none";
  const std::string verdict_text = verdict == "pass"   ? "verify: PASS"
                                   : verdict == "fail" ? "verify: FAIL"
                                                       : "not verified";

  std::string title = "fraud-loadgen load test";
  if (const auto target = number(summary, "target_rate")) {
    title += " · " + formatCount(*target) + " tx/s";
  }
  title += " · " + verdict_text;

  std::string out;
  out.reserve(64 * 1024);
  out +=
      "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
      "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
      "style-src 'unsafe-inline'\">"
      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
      "<meta name=\"generator\" content=\"fraud-loadgen\"><title>" +
      escape(title) + "</title><style>";
  out += kStyle;
  out +=
      "</style></head><body><main><header><div><h1>Load test</h1><p class=\"sub\">"
      "fraud-loadgen";
  if (const auto* topic = field(summary, "topic")) {
    out += " → topic <code>" + escape(text(topic)) + "</code>";
  }
  if (const auto elapsed = number(summary, "elapsed_s")) {
    out += " for " + escape(formatFixed(*elapsed, 1)) + " s";
  }
  out += " · report generated " + escape(text(field(data, "generated_at"))) + "</p></div>";
  out += "<div class=\"verdict " + verdict_class + "\" id=\"verdict\">" + escape(verdict_text) +
         "</div></header>";

  if (run == nullptr) {
    out +=
        "<section class=\"card\"><p class=\"hint\">No load-test run is recorded in this "
        "report: it was started by <code>fraud-loadgen report</code>, not "
        "<code>fraud-loadgen --report</code>.</p></section>";
  } else {
    out += renderTiles(headlineTiles(data, summary));
    out += rateSection(run, summary);
    out += lagSection(run, summary);
    out += histogramSection(run, summary);
    out += percentilesSection(run, summary);
  }
  out += verifySection(data);
  if (run != nullptr) {
    out += scenariosSection(data, summary);
    out += kindsAndRunSection(summary);
  }
  out += parametersSection(data);
  out +=
      "<footer>Self-contained page: no script, font or stylesheet is fetched. Its data is "
      "embedded below as JSON.</footer></main>";
  out += embeddedData(data);
  out += "</body></html>\n";
  return out;
}

}  // namespace fraud::loadgen
