#include "loadgen/report.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "loadgen/report_page.h"
#include "loadgen/svg_chart.h"
#include "loadgen/traffic_model.h"

namespace fraud::loadgen {
namespace {

using nlohmann::ordered_json;

constexpr int64_t kSecond = 1'000'000'000;
constexpr int64_t kStart = 5'000 * kSecond;  // an arbitrary steady-clock origin
const std::string kHostile = "<script>alert('x')</script>\"&";

constexpr int64_t kGraceMs = 120'000;

// A real model run: 20 000 records of the mixture model, 2 % of them stamped beyond the grace,
// stragglers up to 3 min (so some ordinary ones are beyond it too), and what the model recorded
// of the lateness it stamped (what a production run gives the report).
struct ModelRun {
  std::vector<GeneratedRecord> records;
  LatenessTruth lateness;
};

const ModelRun& modelRun() {
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
RunSeries sampleRun() {
  RunSeries s;
  s.start_ns = kStart;
  s.production_s = 20.4;
  for (int i = 0; i < 21; ++i) s.sent_per_second.push_back(i == 20 ? 400 : 1000 + (i % 3));
  for (int i = 0; i < 25; ++i) s.lag.push_back({kStart + i * kSecond, i < 20 ? 100 * i : 0});
  for (int i = 0; i < 200; ++i) {
    s.latencies.push_back({kStart + (i / 10) * kSecond, (50 + (i * 37) % 450) * 1'000'000});
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

std::vector<TruthScenario> sampleTruth() {
  return {{7,
           "ab12" + std::string(60, 'c'),
           3,
           {"BR", "DE", "JP"},
           {1700000001000, 1700000002500},
           {"tx-1", "tx-2"}},
          {9, kHostile, 1, {"FR", "<b>", "US"}, {1700000004000}, {"tx-3"}}};
}

ordered_json sampleVerify(const std::string& verdict, const std::vector<uint64_t>& missed) {
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

std::vector<ReportParameter> sampleParameters() {
  return {{"brokers", "127.0.0.1:9092"}, {"topic", kHostile}};
}

// Checks the page is well-formed: every tag closed in order (void and self-closed elements
// aside), no stray "<" in text, attribute values quoted without a raw ">" in them. Returns the
// first problem, or "" when well-formed.
std::string wellFormedProblem(const std::string& html) {
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
int dataPoints(const std::string& html, const std::string& id) {
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

std::vector<Bar> barsOf(const std::string& html, const std::string& id) {
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
std::optional<std::pair<double, std::string>> shareCell(const std::string& html,
                                                        const std::string& id) {
  const std::regex pattern("id=\"" + id + "\" data-share=\"([^\"]+)\">([^<]+)<");
  std::smatch match;
  if (!std::regex_search(html, match, pattern)) return std::nullopt;
  return std::pair{std::stod(match[1]), match[2].str()};
}

// The valid records of the model run and those stamped later than the grace, counted from the
// records themselves.
std::pair<uint64_t, uint64_t> countedLateness() {
  uint64_t valid = 0;
  uint64_t beyond = 0;
  for (const auto& r : modelRun().records) {
    if (r.kind == RecordKind::kMalformed) continue;
    ++valid;
    if (r.sent_at - r.event_time > kGraceMs) ++beyond;
  }
  return {valid, beyond};
}

std::string fullPage() {
  auto data = reportData(sampleRun(), sampleParameters(), sampleTruth(), 1'764'576'000'000);
  std::string error;
  EXPECT_TRUE(addVerifyResult(data, sampleVerify("pass", {}), 1'764'576'060'000, error)) << error;
  return renderReport(data);
}

TEST(ReportPage, IsWellFormedAndSelfContained) {
  const std::string html = fullPage();
  ASSERT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_EQ(wellFormedProblem(html), "");
  EXPECT_NE(html.find("Content-Security-Policy\" content=\"default-src 'none'"), std::string::npos);
  // Nothing to fetch: no URL, no external reference, and the only script element is data.
  EXPECT_EQ(html.find("://"), std::string::npos);
  EXPECT_EQ(html.find(" src="), std::string::npos);
  EXPECT_EQ(html.find("<link"), std::string::npos);
  EXPECT_EQ(html.find("@import"), std::string::npos);
  EXPECT_EQ(html.find("url("), std::string::npos);
  size_t scripts = 0;
  for (size_t at = html.find("<script"); at != std::string::npos;
       at = html.find("<script", at + 1)) {
    ++scripts;
    const std::string data_script = "<script type=\"application/json\"";
    EXPECT_EQ(html.compare(at, data_script.size(), data_script), 0);
  }
  EXPECT_EQ(scripts, 1u);
}

TEST(ReportPage, DrawsEveryChartWithItsData) {
  const std::string html = fullPage();
  EXPECT_EQ(dataPoints(html, "chart-rate"), 20);  // the partial 21st second is left out
  EXPECT_EQ(dataPoints(html, "chart-lag"), 25);
  EXPECT_GT(dataPoints(html, "chart-latency-histogram"), 5);
  EXPECT_GT(dataPoints(html, "chart-latency-percentiles"), 3 * 5);
  EXPECT_GT(dataPoints(html, "chart-lateness"), 10);
  EXPECT_NE(html.find("<polyline class=\"line\" data-series=\"achieved\""), std::string::npos);
  EXPECT_NE(html.find("<rect class=\"bar\""), std::string::npos);
  EXPECT_NE(html.find("target 1,000/s"), std::string::npos);
  EXPECT_NE(html.find("production ended"), std::string::npos);
  // Nearest-rank percentiles of the samples: 50 + (37 i mod 450) ms for i < 200.
  for (const auto* p : {"p50 267 ms<", "p95 477 ms<", "p99 494 ms<"}) {
    EXPECT_NE(html.find(p), std::string::npos) << p;
  }
}

TEST(ReportPage, DrawsTheLatenessAgainstTheGraceWithBothDroppedShares) {
  const auto [valid, beyond] = countedLateness();
  ASSERT_GT(beyond, 300u);  // 2 % stamped beyond the grace, and stragglers past it
  const std::string html = fullPage();
  const auto bars = barsOf(html, "chart-lateness");
  ASSERT_GT(bars.size(), 10u);
  uint64_t drawn = 0;
  uint64_t drawn_beyond = 0;
  for (const auto& bar : bars) {
    drawn += bar.count;
    if (bar.beyond) {
      drawn_beyond += bar.count;
      EXPECT_GE(bar.low, kGraceMs + 1) << "a bar beyond the grace starts after it";
    } else {
      EXPECT_LE(bar.high, kGraceMs + 1) << "a bar within the grace ends at it";
    }
  }
  EXPECT_EQ(drawn, valid);
  EXPECT_EQ(drawn_beyond, beyond);
  EXPECT_NE(html.find(">grace 2 min<"), std::string::npos);

  const double share = static_cast<double>(beyond) / static_cast<double>(valid);
  const auto generated = shareCell(html, "dropped-share-generated");
  ASSERT_TRUE(generated);
  EXPECT_DOUBLE_EQ(generated->first, share);
  EXPECT_EQ(generated->second, svg::formatFixed(share * 100, 3) + " %");
  const auto service = shareCell(html, "dropped-share-service");
  ASSERT_TRUE(service);
  EXPECT_DOUBLE_EQ(service->first, 0.01999);
  EXPECT_EQ(service->second, "1.999 %");
  EXPECT_NE(html.find(">19,960<"), std::string::npos);  // the records the service counted
  EXPECT_NE(html.find(">399<"), std::string::npos);     // and dropped
}

TEST(ReportPage, SaysWhyTheServicesShareIsMissing) {
  RunSeries run = sampleRun();
  run.summary["lateness"].erase("service");
  std::string html = renderReport(reportData(run, {}, {}, 0));
  EXPECT_TRUE(shareCell(html, "dropped-share-generated"));
  EXPECT_FALSE(shareCell(html, "dropped-share-service"));
  EXPECT_NE(html.find("run fraud-loadgen with <code>--service-metrics"), std::string::npos);

  run.summary["lateness"]["service"] = "not read: " + kHostile;
  html = renderReport(reportData(run, {}, {}, 0));
  EXPECT_FALSE(shareCell(html, "dropped-share-service"));
  EXPECT_NE(html.find("not read: &lt;script&gt;"), std::string::npos);
  EXPECT_EQ(wellFormedProblem(html), "");

  run.summary["lateness"]["service"] = {{"instances", 1},
                                        {"records", 10},
                                        {"late_dropped", 1},
                                        {"late_dropped_share", 0.1},
                                        {"counted_all", false}};
  html = renderReport(reportData(run, {}, {}, 0));
  EXPECT_TRUE(shareCell(html, "dropped-share-service"));
  EXPECT_NE(html.find("had not counted every record"), std::string::npos);
}

TEST(ReportPage, ShowsTheVerdictRecallAndParameters) {
  const std::string html = fullPage();
  EXPECT_NE(html.find("id=\"verdict\">verify: PASS<"), std::string::npos);
  EXPECT_NE(html.find(">2 / 2<"), std::string::npos);  // fraud recalled tile
  EXPECT_NE(html.find("ab12cccccccccccc…"), std::string::npos);
  EXPECT_NE(html.find(">BR DE JP<"), std::string::npos);
  EXPECT_NE(html.find(">127.0.0.1:9092<"), std::string::npos);
  EXPECT_NE(html.find("+1.0 s"), std::string::npos);   // scenario 7's first record
  EXPECT_NE(html.find(">1.5 s<"), std::string::npos);  // and its spread
}

TEST(ReportPage, MarksMissedScenarios) {
  auto data = reportData(sampleRun(), sampleParameters(), sampleTruth(), 0);
  std::string error;
  ASSERT_TRUE(addVerifyResult(data, sampleVerify("fail", {9}), 0, error)) << error;
  const std::string html = renderReport(data);
  EXPECT_NE(html.find("id=\"verdict\">verify: FAIL<"), std::string::npos);
  EXPECT_NE(html.find("<td class=\"bad\">missed</td>"), std::string::npos);
  EXPECT_NE(html.find("<td class=\"ok\">yes</td>"), std::string::npos);
  EXPECT_NE(html.find(">1 / 2<"), std::string::npos);
}

TEST(ReportPage, EscapesEveryTextFromTheRun) {
  const std::string html = fullPage();
  // The hostile text shows up only escaped, in the page and in its embedded data.
  EXPECT_EQ(html.find(kHostile), std::string::npos);
  EXPECT_EQ(html.find("<script>"), std::string::npos);
  EXPECT_EQ(html.find("<b>"), std::string::npos);
  EXPECT_NE(html.find("&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;&quot;&amp;"),
            std::string::npos);
  EXPECT_EQ(wellFormedProblem(html), "");
}

TEST(ReportPage, EmbedsItsDataForUpdates) {
  const auto data = reportData(sampleRun(), sampleParameters(), sampleTruth(), 0);
  const std::string html = renderReport(data);
  std::string error;
  const auto back = reportDataOf(html, error);
  ASSERT_TRUE(back) << error;
  EXPECT_EQ(*back, data);
  EXPECT_EQ((*back)["parameters"][1][1], kHostile);
}

TEST(ReportPage, RefusesWhatItDidNotDraw) {
  std::string error;
  EXPECT_FALSE(reportDataOf("<html><body>hello</body></html>", error));
  EXPECT_NE(error.find("no fraud-loadgen report data"), std::string::npos);
  error.clear();
  EXPECT_FALSE(reportDataOf(R"(<script type="application/json" id="report-data">{"a":1})", error));
  EXPECT_NE(error.find("not closed"), std::string::npos);
  error.clear();
  EXPECT_FALSE(
      reportDataOf(R"(<script type="application/json" id="report-data">{]</script>)", error));
  EXPECT_NE(error.find("not a JSON object"), std::string::npos);
  error.clear();
  EXPECT_FALSE(reportDataOf(
      R"(<script type="application/json" id="report-data">{"format":"other/1"}</script>)", error));
  EXPECT_NE(error.find("format"), std::string::npos);
}

TEST(ReportPage, RefusesAVerifyResultWithoutVerdict) {
  auto data = emptyReportData(0);
  std::string error;
  EXPECT_FALSE(addVerifyResult(data, ordered_json::parse(R"({"records": 5})"), 0, error));
  EXPECT_FALSE(addVerifyResult(data, ordered_json::parse(R"({"verdict": "maybe"})"), 0, error));
  EXPECT_FALSE(addVerifyResult(data, ordered_json::parse("[1]"), 0, error));
  EXPECT_FALSE(data.contains("verify"));
}

TEST(ReportPage, DrawsDataOfTheWrongShapeWithoutFailing) {
  // A page read back from disk is input: every field may be of another type.
  const auto data = ordered_json::parse(R"({
    "format": "fraud-loadgen-report/1", "generated_at": 5, "parameters": [1, ["a"], {"b": 2}],
    "run": {"production_s": "x", "summary": [], "rate": {"points": [[1], "z", [null, 2], [1, 2]]},
            "lag": {"points": {"a": 1}},
            "latency": {"histogram": {"edges_ms": [-1, "a", 1e308, 0], "counts": [1, -5, "q"]},
                        "over_time": {"points": [[1, 2, 3]]}},
            "lateness": {"grace_ms": "x", "count": [],
                         "histogram": {"edges_ms": [1, "a", 5], "counts": [2, -1], "beyond_from": -3}}},
    "scenarios": {"items": [1, {"scenario": "7", "countries": "BR"}]},
    "verify": {"verdict": "pass", "truth": {"missed": ["x", -1]}, "notes": "n"}
  })");
  std::string html;
  ASSERT_NO_THROW(html = renderReport(data));
  EXPECT_EQ(wellFormedProblem(html), "");
  EXPECT_EQ(dataPoints(html, "chart-rate"), 1);
  EXPECT_EQ(dataPoints(html, "chart-lag"), -1);  // no svg: a note instead
  EXPECT_NE(html.find("Lag not sampled"), std::string::npos);
}

TEST(ReportPage, ReportWithoutARunSaysSo) {
  auto data = emptyReportData(0);
  std::string error;
  ASSERT_TRUE(addVerifyResult(data, sampleVerify("pass", {}), 0, error));
  const std::string html = renderReport(data);
  EXPECT_EQ(wellFormedProblem(html), "");
  EXPECT_NE(html.find("No load-test run is recorded"), std::string::npos);
  EXPECT_NE(html.find("verify: PASS"), std::string::npos);
}

TEST(ReportData, AggregatesTheSeries) {
  const auto data = reportData(sampleRun(), {}, sampleTruth(), 0);
  const auto& run = data["run"];
  ASSERT_EQ(run["rate"]["points"].size(), 20u);
  EXPECT_EQ(run["rate"]["points"][0][0], 0.5);
  EXPECT_EQ(run["rate"]["points"][0][1], 1000.0);
  ASSERT_EQ(run["lag"]["points"].size(), 25u);
  EXPECT_EQ(run["lag"]["points"][19][0], 19.0);
  EXPECT_EQ(run["lag"]["points"][19][1], 1900);
  const auto& latency = run["latency"];
  EXPECT_EQ(latency["count"], 200u);
  uint64_t in_bins = 0;
  for (const auto& c : latency["histogram"]["counts"]) in_bins += c.get<uint64_t>();
  EXPECT_EQ(in_bins, 200u);
  EXPECT_EQ(latency["histogram"]["edges_ms"].size(), latency["histogram"]["counts"].size() + 1);
  EXPECT_LE(latency["histogram"]["edges_ms"].front().get<double>(), 50.0);
  EXPECT_GT(latency["histogram"]["edges_ms"].back().get<double>(), 497.0);
  uint64_t in_buckets = 0;
  for (const auto& p : latency["over_time"]["points"]) {
    in_buckets += p[1].get<uint64_t>();
    EXPECT_LE(p[2].get<double>(), p[3].get<double>());  // p50 <= p95
    EXPECT_LE(p[3].get<double>(), p[4].get<double>());  // p95 <= p99
  }
  EXPECT_EQ(in_buckets, 200u);
  EXPECT_EQ(data["scenarios"]["total"], 2u);
  EXPECT_EQ(data["scenarios"]["items"][0]["span_ms"], 1500);
}

TEST(ReportData, LatenessOfAModelRunSplitsAtTheGrace) {
  const auto [valid, beyond] = countedLateness();
  const auto data = reportData(sampleRun(), {}, {}, 0);
  const auto& lateness = data["run"]["lateness"];
  EXPECT_EQ(lateness["count"], valid);
  EXPECT_EQ(lateness["grace_ms"], kGraceMs);
  EXPECT_EQ(lateness["beyond_grace"], beyond);
  EXPECT_DOUBLE_EQ(lateness["beyond_grace_share"].get<double>(),
                   static_cast<double>(beyond) / static_cast<double>(valid));
  const auto& h = lateness["histogram"];
  ASSERT_EQ(h["edges_ms"].size(), h["counts"].size() + 1);
  const auto from = h["beyond_from"].get<size_t>();
  EXPECT_EQ(h["edges_ms"][from], kGraceMs + 1);
  uint64_t within = 0;
  uint64_t after = 0;
  for (size_t i = 0; i < h["counts"].size(); ++i) {
    (i < from ? within : after) += h["counts"][i].get<uint64_t>();
  }
  EXPECT_EQ(within, valid - beyond);
  EXPECT_EQ(after, beyond);
}

TEST(ReportData, SplitsTheBucketHoldingTheGraceExactly) {
  // Above 10 s the truth keeps 100-ms buckets: 120000..120099 holds a grace of 120050.
  LatenessTruth truth(120'050);
  for (const int64_t ms : {0, 5, 120'000, 120'050, 120'051, 120'099, 200'000}) truth.add(ms);
  ASSERT_EQ(truth.beyondGrace(), 3u);
  RunSeries run = sampleRun();
  run.lateness = truth;
  const auto data = reportData(run, {}, {}, 0);
  const auto& h = data["run"]["lateness"]["histogram"];
  const auto from = h["beyond_from"].get<size_t>();
  EXPECT_EQ(h["edges_ms"][from], 120'051);
  uint64_t within = 0;
  uint64_t after = 0;
  for (size_t i = 0; i < h["counts"].size(); ++i) {
    (i < from ? within : after) += h["counts"][i].get<uint64_t>();
  }
  EXPECT_EQ(within, 4u);
  EXPECT_EQ(after, 3u);
}

TEST(ReportData, ThinningKeepsTheLagPeak) {
  RunSeries s = sampleRun();
  s.lag.clear();
  for (int i = 0; i < 5000; ++i) s.lag.push_back({kStart + i * kSecond, i == 3333 ? 999'999 : 10});
  const auto data = reportData(s, {}, {}, 0);
  const auto& points = data["run"]["lag"]["points"];
  EXPECT_LE(points.size(), kMaxSeriesPoints);
  int64_t peak = 0;
  for (const auto& p : points) peak = std::max(peak, p[1].get<int64_t>());
  EXPECT_EQ(peak, 999'999);
}

TEST(ReportParameters, NameKafkaPropertiesButHideTheirValues) {
  ProductionOptions o;
  o.brokers = "kafka:9092";
  o.kafka_properties = {{"sasl.password", "hunter2"}, {"security.protocol", "SASL_SSL"}};
  std::string all;
  for (const auto& p : reportParameters(o)) all += p.name + "=" + p.value + "\n";
  EXPECT_NE(all.find("sasl.password, security.protocol"), std::string::npos);
  EXPECT_EQ(all.find("hunter2"), std::string::npos);
  EXPECT_NE(all.find("brokers=kafka:9092"), std::string::npos);
}

TEST(ReportParameters, NameTheLatenessModelAndTheServiceMetrics) {
  ProductionOptions o;
  o.traffic.mixture = LatenessMixture{};
  o.service_metrics = {"http://a:8081/metrics", "http://b:8081/metrics"};
  std::string all;
  for (const auto& p : reportParameters(o)) all += p.name + "=" + p.value + "\n";
  EXPECT_NE(all.find("lateness model=mixture: body 0.200 (median 2000 ms"), std::string::npos)
      << all;
  EXPECT_NE(all.find("service metrics=http://a:8081/metrics, http://b:8081/metrics"),
            std::string::npos);
}

class ReportFile : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (std::filesystem::temp_directory_path() / "report-test.XXXXXX").string();
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  static void write(const std::filesystem::path& path, const std::string& text) {
    std::ofstream(path) << text;
  }
  static std::string read(const std::filesystem::path& path) {
    std::ifstream in(path);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }
  std::filesystem::path dir_;
};

TEST_F(ReportFile, AddsTheVerdictToARunReport) {
  const auto page = dir_ / "report.html";
  const auto verify = dir_ / "verify.json";
  std::string error;
  ASSERT_TRUE(writeReportFile(page.string(),
                              renderReport(reportData(sampleRun(), {}, sampleTruth(), 0)), error))
      << error;
  EXPECT_NE(read(page).find("not verified"), std::string::npos);
  write(verify, sampleVerify("pass", {}).dump(2));
  ASSERT_TRUE(addVerifyToReportFile(page.string(), verify.string(), error)) << error;
  const std::string html = read(page);
  EXPECT_NE(html.find("verify: PASS"), std::string::npos);
  EXPECT_GT(dataPoints(html, "chart-rate"), 0);  // the run is still there
  EXPECT_FALSE(std::filesystem::exists(page.string() + ".tmp"));
}

TEST_F(ReportFile, StartsAReportWhenThereIsNone) {
  const auto page = dir_ / "new.html";
  const auto verify = dir_ / "verify.json";
  write(verify, sampleVerify("fail", {7}).dump());
  std::string error;
  ASSERT_TRUE(addVerifyToReportFile(page.string(), verify.string(), error)) << error;
  EXPECT_NE(read(page).find("verify: FAIL"), std::string::npos);
}

TEST_F(ReportFile, NeverOverwritesAnotherFile) {
  const auto page = dir_ / "notes.html";
  const auto verify = dir_ / "verify.json";
  write(page, "<p>my notes</p>");
  write(verify, sampleVerify("pass", {}).dump());
  std::string error;
  EXPECT_FALSE(addVerifyToReportFile(page.string(), verify.string(), error));
  EXPECT_NE(error.find("is not a fraud-loadgen report"), std::string::npos);
  EXPECT_EQ(read(page), "<p>my notes</p>");
}

TEST_F(ReportFile, RefusesAVerifyFileThatIsNotJson) {
  const auto page = dir_ / "report.html";
  const auto verify = dir_ / "verify.json";
  write(verify, "fraud-loadgen verify: cannot connect");
  std::string error;
  EXPECT_FALSE(addVerifyToReportFile(page.string(), verify.string(), error));
  EXPECT_NE(error.find("is not JSON"), std::string::npos);
  EXPECT_FALSE(std::filesystem::exists(page));
  error.clear();
  EXPECT_FALSE(addVerifyToReportFile(page.string(), (dir_ / "absent.json").string(), error));
  EXPECT_NE(error.find("no such file"), std::string::npos);
}

TEST(SvgChart, FormatsNumbers) {
  EXPECT_EQ(svg::formatCount(1234567), "1,234,567");
  EXPECT_EQ(svg::formatCount(-1234), "-1,234");
  EXPECT_EQ(svg::formatCount(-0.2), "0");
  EXPECT_EQ(svg::formatFixed(1234.56, 1), "1,234.6");
  EXPECT_EQ(svg::formatFixed(NAN, 1), "n/a");
  EXPECT_EQ(svg::escape("<a href=\"x\">'&'</a>"),
            "&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;");
}

TEST(SvgChart, TicksAreRoundAndCoverTheRange) {
  EXPECT_EQ(svg::niceTicks(0, 21000, 5),
            (std::vector<double>{0, 5000, 10000, 15000, 20000, 25000}));
  const auto fractions = svg::niceTicks(0, 1, 5);
  ASSERT_EQ(fractions.size(), 6u);
  for (size_t i = 0; i < fractions.size(); ++i) EXPECT_NEAR(fractions[i], 0.2 * i, 1e-12);
  const auto ticks = svg::niceTicks(0, 0, 5);  // an empty range still gets an axis
  EXPECT_GE(ticks.size(), 2u);
}

TEST(SvgChart, ThinsLongSeriesAndDropsNonFinitePoints) {
  svg::LineChart chart;
  chart.id = "c";
  svg::Series s{"s", "#000", {}, false, false};
  for (int i = 0; i < 10'000; ++i) s.points.push_back({static_cast<double>(i), 1});
  s.points[0].y = NAN;
  chart.series.push_back(s);
  const std::string out = svg::renderLineChart(chart);
  EXPECT_EQ(dataPoints(out, "c"), static_cast<int>(svg::kMaxPoints) - 1);
  EXPECT_EQ(out.find("nan"), std::string::npos);
  EXPECT_EQ(out.find("inf"), std::string::npos);
}

}  // namespace
}  // namespace fraud::loadgen
