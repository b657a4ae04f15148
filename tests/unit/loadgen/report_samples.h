#pragma once

// The sample run, verify result and parameters the report's tests render, and the readers of
// the page they check it with.

#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "loadgen/report.h"
#include "loadgen/report_page.h"
#include "loadgen/traffic_model.h"

namespace fraud::loadgen {

using nlohmann::ordered_json;

inline constexpr int64_t kSecond = 1'000'000'000;
inline constexpr int64_t kStart = 5'000 * kSecond;  // an arbitrary steady-clock origin
inline const std::string kHostile = "<script>alert('x')</script>\"&";

inline constexpr int64_t kGraceMs = 120'000;

// A real model run: 20 000 records of the mixture model, 2 % of them stamped beyond the grace,
// stragglers up to 3 min (so some ordinary ones are beyond it too), and what the model recorded
// of the lateness it stamped (what a production run gives the report).
struct ModelRun {
  std::vector<GeneratedRecord> records;
  LatenessTruth lateness;
};

inline const ModelRun& modelRun() {
  static const ModelRun run = [] {
    TrafficOptions options;
    options.seed = 11;
    options.start_time = 1'700'000'000'000;
    options.cards = 20'000;
    options.detector.grace_ms = kGraceMs;
    options.beyond_grace_fraction = 0.02;
    options.max_lateness_ms = 180'000;
    options.mixture = LatenessMixture{};
    options.mixture->straggler_fraction = 0.05;
    options.mixture->max_ms = options.max_lateness_ms;
    TrafficModel model(options);
    ModelRun out;
    out.records.resize(20'000);
    for (auto& r : out.records) model.next(r);
    out.lateness = model.latenessTruth();
    return out;
  }();
  return run;
}

// A run of 20 s at about 1000/s, lag rising then draining, 200 alerts of 50..500 ms, and the
// lateness of a real model run.
inline RunSeries sampleRun() {
  RunSeries s;
  s.start_ns = kStart;
  s.production_s = 20.4;
  for (int i = 0; i < 21; ++i) s.sent_per_second.push_back(i == 20 ? 400 : 1000 + (i % 3));
  for (int i = 0; i < 25; ++i) s.lag.push_back({kStart + i * kSecond, i < 20 ? 100 * i : 0});
  for (int i = 0; i < 200; ++i) {
    s.latencies.push_back(
        {kStart + (i / 10) * kSecond, (50 + (i * 37) % 450) * int64_t{1'000'000}});
  }
  s.summary = ordered_json::parse(R"({
    "records": 20400, "kinds": {"organic": 20000, "fraud": 400},
    "scenarios": {"injected": 3, "must_alert": 2}, "partitions": 12, "partitioner": "crc32",
    "model_clock": {"start": 1700000000000}, "elapsed_s": 20.4, "cpu_s": 1.5,
    "topic": "transactions", "target_rate": 1000, "achieved_rate": 1000.2,
    "rate_max_deviation_10s": 0.001, "acked": 20400, "errors": 0, "error_reasons": {},
    "latency": {"expected_alerts": 200, "matched": 200, "p50_ms": 267, "p95_ms": 477,
                "p99_ms": 494, "max_ms": 496},
    "consumer_lag": {"group": "fraud-detector", "max": 1900, "last": 0, "at_production_end": 1900},
    "lateness": {"model": "mixture", "service": {"instances": 2, "records": 19960,
                 "late_dropped": 399, "late_dropped_share": 0.01999, "counted_all": true}}
  })");
  s.lateness = modelRun().lateness;
  return s;
}

inline std::vector<TruthScenario> sampleTruth() {
  return {{7,
           "ab12" + std::string(60, 'c'),
           3,
           {"BR", "DE", "JP"},
           {1700000001000, 1700000002500},
           {"tx-1", "tx-2"}},
          {9, kHostile, 1, {"FR", "<b>", "US"}, {1700000004000}, {"tx-3"}}};
}

inline ordered_json sampleVerify(const std::string& verdict, const std::vector<uint64_t>& missed) {
  ordered_json v;
  v["verdict"] = verdict;
  v["group"] = {{"id", "fraud-detector"}, {"caught_up", true}, {"waited_s", 1.5}};
  v["alerts"] = {{"expected", 200},
                 {"records", 200},
                 {"missing", {{"count", 0}}},
                 {"unexpected", {{"count", 0}}},
                 {"differing", {{"count", 0}}},
                 {"duplicates", {{"count", 0}}},
                 {"malformed", {{"count", 0}}}};
  v["dlq"] = {{"expected", 20}, {"records", 20}, {"missing", {{"count", 0}}}};
  v["truth"] = {{"scenarios", 2}, {"recalled", 2 - missed.size()}, {"missed", missed}};
  v["notes"] = {kHostile};
  return v;
}

inline std::vector<ReportParameter> sampleParameters() {
  return {{"brokers", "127.0.0.1:9092"}, {"topic", kHostile}};
}

// Checks the page is well-formed: every tag closed in order (void and self-closed elements
// aside), no stray "<" in text, attribute values quoted without a raw ">" in them. Returns the
// first problem, or "" when well-formed.
inline std::string wellFormedProblem(const std::string& html) {
  static const std::set<std::string> kVoid = {"meta", "br", "link", "img", "hr", "input"};
  std::vector<std::string> open;
  size_t i = 0;
  while (i < html.size()) {
    const size_t lt = html.find('<', i);
    if (lt == std::string::npos) break;
    if (html.compare(lt, 9, "<!DOCTYPE") == 0) {
      i = html.find('>', lt) + 1;
      continue;
    }
    const size_t gt = html.find('>', lt);
    if (gt == std::string::npos) return "unclosed tag at " + std::to_string(lt);
    const std::string tag = html.substr(lt + 1, gt - lt - 1);
    if (tag.empty() || !(std::isalpha(static_cast<unsigned char>(tag[0])) || tag[0] == '/')) {
      return "stray '<' at " + std::to_string(lt);
    }
    if (std::count(tag.begin(), tag.end(), '"') % 2 != 0) {
      return "unbalanced quotes in <" + tag + ">";
    }
    if (tag[0] == '/') {
      const std::string name = tag.substr(1);
      if (open.empty() || open.back() != name) {
        return "</" + name + "> closes <" + (open.empty() ? "" : open.back()) + ">";
      }
      open.pop_back();
      i = gt + 1;
      continue;
    }
    const std::string name = tag.substr(0, tag.find_first_of(" /"));
    i = gt + 1;
    if (tag.back() == '/' || kVoid.count(name) > 0) continue;
    open.push_back(name);
    if (name == "style" || name == "script") {  // raw text up to its end tag
      const size_t end = html.find("</" + name + ">", i);
      if (end == std::string::npos) return "<" + name + "> not closed";
      i = end;
    }
  }
  if (!open.empty()) return "<" + open.back() + "> never closed";
  return "";
}

// The number in the data-points attribute of the svg element with this id; -1 when absent.
inline int dataPoints(const std::string& html, const std::string& id) {
  const std::regex pattern("<svg[^>]*id=\"" + id + "\"[^>]*data-points=\"([0-9]+)\"");
  std::smatch match;
  if (!std::regex_search(html, match, pattern)) return -1;
  return std::stoi(match[1]);
}

// A bar of a histogram as drawn: its bin, its count, whether it is drawn beyond the limit.
struct Bar {
  double low = 0;
  double high = 0;
  uint64_t count = 0;
  bool beyond = false;
};

inline std::vector<Bar> barsOf(const std::string& html, const std::string& id) {
  const size_t start = html.find(R"(<svg class="chart" id=")" + id + "\"");
  if (start == std::string::npos) return {};
  const std::string svg = html.substr(start, html.find("</svg>", start) - start);
  const std::regex pattern(
      R"re(<rect class="bar( beyond)?"[^>]*data-low="([^"]+)" data-high="([^"]+)" data-count="([0-9]+)")re");
  std::vector<Bar> bars;
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), pattern);
       it != std::sregex_iterator(); ++it) {
    bars.push_back(
        {std::stod((*it)[2]), std::stod((*it)[3]), std::stoull((*it)[4]), (*it)[1].matched});
  }
  return bars;
}

// The cell with this id: its data-share and its text; nothing when absent.
inline std::optional<std::pair<double, std::string>> shareCell(const std::string& html,
                                                               const std::string& id) {
  const std::regex pattern("id=\"" + id + "\" data-share=\"([^\"]+)\">([^<]+)<");
  std::smatch match;
  if (!std::regex_search(html, match, pattern)) return std::nullopt;
  return std::pair{std::stod(match[1]), match[2].str()};
}

// The valid records of the model run and those stamped later than the grace, counted from the
// records themselves.
inline std::pair<uint64_t, uint64_t> countedLateness() {
  uint64_t valid = 0;
  uint64_t beyond = 0;
  for (const auto& r : modelRun().records) {
    if (r.kind == RecordKind::kMalformed) continue;
    ++valid;
    if (r.sent_at - r.event_time > kGraceMs) ++beyond;
  }
  return {valid, beyond};
}

inline std::string fullPage() {
  auto data = reportData(sampleRun(), sampleParameters(), sampleTruth(), 1'764'576'000'000);
  const auto added = addVerifyResult(data, sampleVerify("pass", {}), 1'764'576'060'000);
  EXPECT_TRUE(added.ok()) << added.message();
  return renderReport(data);
}

}  // namespace fraud::loadgen
