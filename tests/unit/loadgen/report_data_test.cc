#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "loadgen/report.h"
#include "tests/unit/loadgen/report_samples.h"

namespace fraud::loadgen {
namespace {

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

}  // namespace
}  // namespace fraud::loadgen
