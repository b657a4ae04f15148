#include "loadgen/report.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "loadgen/report_page.h"
#include "loadgen/svg_chart.h"
#include "tests/unit/loadgen/report_samples.h"

namespace fraud::loadgen {
namespace {

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
  ASSERT_TRUE(addVerifyResult(data, sampleVerify("fail", {9}), 0).ok());
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
  const auto back = reportDataOf(html);
  ASSERT_TRUE(back) << back.message();
  EXPECT_EQ(*back, data);
  EXPECT_EQ((*back)["parameters"][1][1], kHostile);
}

TEST(ReportPage, RefusesWhatItDidNotDraw) {
  const auto none = reportDataOf("<html><body>hello</body></html>");
  EXPECT_FALSE(none);
  EXPECT_NE(none.message().find("no fraud-loadgen report data"), std::string::npos);
  const auto open = reportDataOf(R"(<script type="application/json" id="report-data">{"a":1})");
  EXPECT_FALSE(open);
  EXPECT_NE(open.message().find("not closed"), std::string::npos);
  const auto bad = reportDataOf(R"(<script type="application/json" id="report-data">{]</script>)");
  EXPECT_FALSE(bad);
  EXPECT_NE(bad.message().find("not a JSON object"), std::string::npos);
  const auto other = reportDataOf(
      R"(<script type="application/json" id="report-data">{"format":"other/1"}</script>)");
  EXPECT_FALSE(other);
  EXPECT_NE(other.message().find("format"), std::string::npos);
}

TEST(ReportPage, RefusesAVerifyResultWithoutVerdict) {
  auto data = emptyReportData(0);
  EXPECT_FALSE(addVerifyResult(data, ordered_json::parse(R"({"records": 5})"), 0).ok());
  EXPECT_FALSE(addVerifyResult(data, ordered_json::parse(R"({"verdict": "maybe"})"), 0).ok());
  EXPECT_FALSE(addVerifyResult(data, ordered_json::parse("[1]"), 0).ok());
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
  ASSERT_TRUE(addVerifyResult(data, sampleVerify("pass", {}), 0).ok());
  const std::string html = renderReport(data);
  EXPECT_EQ(wellFormedProblem(html), "");
  EXPECT_NE(html.find("No load-test run is recorded"), std::string::npos);
  EXPECT_NE(html.find("verify: PASS"), std::string::npos);
}

}  // namespace
}  // namespace fraud::loadgen
