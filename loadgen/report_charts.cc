#include "loadgen/report_charts.h"

#include <cmath>
#include <tuple>
#include <utility>
#include <vector>

#include "loadgen/report_html.h"
#include "loadgen/svg_chart.h"

namespace fraud::loadgen::html {
namespace {

using svg::escape;
using svg::formatCount;

std::string latencyNote(const ordered_json* summary) {
  const auto* latency = field(summary, "latency");
  if (latency != nullptr && latency->is_string()) {
    return "End-to-end latency " + latency->get<std::string>() + ".";
  }
  return "No alert was timed.";
}

// One series over the time since the start of the run, drawn as an area.
svg::LineChart timeChart(const char* id, const char* title, const char* y_label, const char* name,
                         const char* color, std::vector<svg::Point> points) {
  svg::LineChart chart;
  chart.id = id;
  chart.title = title;
  chart.x_label = "time since the start";
  chart.y_label = y_label;
  chart.series.push_back({name, color, std::move(points), true, false});
  return chart;
}

}  // namespace

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
  auto chart =
      timeChart("chart-rate", "Achieved rate over time", "records/s", "achieved", kBlue, points);
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
  auto chart =
      timeChart("chart-lag", "Consumer lag over time", "records behind", "lag", kOrange, points);
  chart.marker_x = number(run, "production_s");
  chart.marker_label = "production ended";
  return out + svg::renderLineChart(chart) + "</section>";
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

}  // namespace fraud::loadgen::html
