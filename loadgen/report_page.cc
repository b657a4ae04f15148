#include "loadgen/report_page.h"

#include <string_view>
#include <vector>

#include "loadgen/report.h"
#include "loadgen/report_charts.h"
#include "loadgen/report_html.h"
#include "loadgen/report_lateness.h"
#include "loadgen/report_tables.h"
#include "loadgen/svg_chart.h"

namespace fraud::loadgen {
namespace {

using html::countText;
using html::field;
using html::msText;
using html::number;
using html::text;
using nlohmann::ordered_json;
using svg::escape;
using svg::formatCount;
using svg::formatFixed;

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
svg.chart .bar.beyond { fill: #dc2626; }
svg.chart .bar.beyond:hover { fill: #b91c1c; }
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

struct Tile {
  std::string label;
  std::string value;
  std::string detail;
  std::string tone;  // "", "good", "bad"
};

std::string renderTiles(const std::vector<Tile>& tiles) {
  std::string out = "<section class=\"tiles\">";
  for (const auto& t : tiles) {
    out += "<div class=\"tile" + (t.tone.empty() ? "" : " " + t.tone) + R"("><div class="label">)" +
           escape(t.label) + "</div><div class=\"value\">" + escape(t.value) +
           "</div><div class=\"detail\">" + escape(t.detail) + "</div></div>";
  }
  return out + "</section>";
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
  out += "<div class=\"verdict " + verdict_class + R"(" id="verdict">)" + escape(verdict_text) +
         "</div></header>";

  if (run == nullptr) {
    out +=
        "<section class=\"card\"><p class=\"hint\">No load-test run is recorded in this "
        "report: it was started by <code>fraud-loadgen report</code>, not "
        "<code>fraud-loadgen --report</code>.</p></section>";
  } else {
    out += renderTiles(headlineTiles(data, summary));
    out += html::rateSection(run, summary);
    out += html::lagSection(run, summary);
    out += html::histogramSection(run, summary);
    out += html::percentilesSection(run, summary);
    out += html::latenessSection(run, summary);
  }
  out += html::verifySection(data);
  if (run != nullptr) {
    out += html::scenariosSection(data, summary);
    out += html::kindsAndRunSection(summary);
  }
  out += html::parametersSection(data);
  out +=
      "<footer>Self-contained page: no script, font or stylesheet is fetched. Its data is "
      "embedded below as JSON.</footer></main>";
  out += embeddedData(data);
  out += "</body></html>\n";
  return out;
}

}  // namespace fraud::loadgen
