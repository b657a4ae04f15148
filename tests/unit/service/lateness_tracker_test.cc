#include "service/lateness_tracker.h"

#include <gtest/gtest.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <cmath>
#include <random>
#include <sstream>

#include "service/lateness_board.h"
#include "service/lateness_histogram.h"

namespace fraud::service {
namespace {

constexpr int64_t kMinute = 60'000;
constexpr int64_t kNow = 1'700'000'000'000;  // a wall clock, whole minute

TEST(LatenessHistogram, EveryValueLiesInItsBucketWithinOneSixteenth) {
  for (int64_t v : {int64_t{0}, int64_t{1}, int64_t{15}, int64_t{16}, int64_t{17}, int64_t{999},
                    int64_t{1000}, int64_t{120'000}, int64_t{3'600'000}, int64_t{1} << 31}) {
    const size_t b = LatenessHistogram::bucketOf(v);
    const int64_t upper = LatenessHistogram::upperBound(b);
    EXPECT_GE(upper, v) << v;
    EXPECT_LE(static_cast<double>(upper), static_cast<double>(v) * (1 + 1.0 / 16) + 1) << v;
    if (b > 0) {
      EXPECT_LT(LatenessHistogram::upperBound(b - 1), v) << v;
    }
  }
  EXPECT_EQ(LatenessHistogram::bucketOf(-5), 0u);
  EXPECT_EQ(LatenessHistogram::bucketOf(int64_t{1} << 40), LatenessHistogram::kBuckets - 1);
}

TEST(LatenessTracker, QuantilesOfKnownLatenessWithinBucketError) {
  LatenessTracker tracker(3'600'000);
  // 1000 records: lateness i ms for i in 0..999, against a stream time of 1'000'000.
  for (int64_t i = 0; i < 1000; ++i) {
    tracker.observe(1'000'000, 1'000'000 - i, 1'000'000 - i + 50, false, kNow);
  }
  LatenessWindow window;
  tracker.window(kNow, window);
  const auto report = reportOf(window, LatenessOptions{});
  ASSERT_TRUE(report.vs_stream_time);
  EXPECT_EQ(report.records, 1000u);
  EXPECT_NEAR(report.vs_stream_time->p50_ms, 500, 500 / 16 + 1);
  EXPECT_NEAR(report.vs_stream_time->p99_ms, 990, 990 / 16 + 1);
  EXPECT_GE(report.vs_stream_time->p999_ms, 998);
  EXPECT_EQ(report.vs_stream_time->max_ms, 999);
  ASSERT_TRUE(report.vs_record_timestamp);
  EXPECT_EQ(report.timestamped_records, 1000u);
  EXPECT_EQ(report.vs_record_timestamp->max_ms, 50);
}

TEST(LatenessTracker, FirstRecordAndRecordsAheadOfStreamTimeCountAsOnTime) {
  LatenessTracker tracker(kMinute);
  tracker.observe(std::nullopt, 5'000, std::nullopt, false, kNow);
  tracker.observe(5'000, 9'000, std::nullopt, false, kNow);
  LatenessWindow window;
  tracker.window(kNow, window);
  const auto report = reportOf(window, LatenessOptions{});
  EXPECT_EQ(report.vs_stream_time->max_ms, 0);
  EXPECT_FALSE(report.vs_record_timestamp);
}

TEST(LatenessTracker, MinutesOlderThanTheIntervalExpire) {
  LatenessTracker tracker(5 * kMinute);
  tracker.observe(100'000, 0, std::nullopt, true, kNow);  // 100 s late, at minute 0
  for (int i = 1; i <= 4; ++i) {
    tracker.observe(100'000, 100'000, std::nullopt, false, kNow + i * kMinute);
  }
  LatenessWindow within;
  tracker.window(kNow + 4 * kMinute, within);
  EXPECT_EQ(within.records, 5u);
  EXPECT_EQ(within.late_dropped, 1u);
  EXPECT_EQ(within.max_vs_stream_time, 100'000);

  LatenessWindow after;
  tracker.window(kNow + 5 * kMinute, after);  // minute 0 has left the interval
  EXPECT_EQ(after.records, 4u);
  EXPECT_EQ(after.late_dropped, 0u);
  EXPECT_EQ(after.max_vs_stream_time, 0);

  // A new minute reusing minute 0's slot starts from nothing.
  tracker.observe(100'000, 99'000, std::nullopt, false, kNow + 5 * kMinute);
  LatenessWindow reused;
  tracker.window(kNow + 5 * kMinute, reused);
  EXPECT_EQ(reused.records, 5u);
  EXPECT_EQ(reused.max_vs_stream_time, 1'000);
}

TEST(LatenessTracker, AdviceKeepsTheStatedShareAndCandidatesSayWhatEachGraceDrops) {
  LatenessTracker tracker(3'600'000);
  // 10 000 records: 98 % on time, 1.5 % 30 s late, 0.4 % 90 s late, 0.1 % 10 min late.
  const int64_t st = 10'000'000;
  auto add = [&](int n, int64_t late_ms, bool dropped) {
    for (int i = 0; i < n; ++i) tracker.observe(st, st - late_ms, std::nullopt, dropped, kNow);
  };
  add(9800, 0, false);
  add(150, 30'000, false);
  add(40, 90'000, false);
  add(10, 600'000, true);  // beyond the 2 min grace
  LatenessWindow window;
  tracker.window(kNow, window);
  LatenessOptions options;
  options.grace_ms = 120'000;
  const auto report = reportOf(window, options);
  EXPECT_EQ(report.late_dropped, 10u);
  EXPECT_DOUBLE_EQ(report.late_dropped_share, 0.001);
  // 99 % kept needs the 30 s records (98 % + 1.5 % > 99 %), not the 90 s ones.
  ASSERT_TRUE(report.advised_grace_p99_ms);
  EXPECT_GE(*report.advised_grace_p99_ms, 30'000);
  EXPECT_LE(*report.advised_grace_p99_ms, 30'000 * 17 / 16);
  // 99.9 % kept needs the 90 s records.
  EXPECT_GE(*report.advised_grace_p999_ms, 90'000);
  EXPECT_LE(*report.advised_grace_p999_ms, 90'000 * 17 / 16);
  auto candidate = [&](int64_t grace) {
    for (const auto& c : report.candidates) {
      if (c.grace_ms == grace) return c;
    }
    ADD_FAILURE() << "no candidate " << grace;
    return api::GraceCandidate{};
  };
  EXPECT_EQ(candidate(0).dropped, 200u);
  EXPECT_EQ(candidate(60'000).dropped, 50u);
  EXPECT_EQ(candidate(120'000).dropped, 10u);  // the current grace: counted exactly
  EXPECT_EQ(candidate(1'800'000).dropped, 0u);
  EXPECT_TRUE(std::is_sorted(report.candidates.begin(), report.candidates.end(),
                             [](const auto& a, const auto& b) { return a.grace_ms < b.grace_ms; }));
}

TEST(LatenessTracker, AdviceFromLogNormalLatenessLandsNearTheTrueQuantile) {
  std::mt19937_64 random(7);
  std::lognormal_distribution<double> lateness(std::log(2'000.0), 1.0);
  std::vector<int64_t> values;
  LatenessTracker tracker(3'600'000);
  for (int i = 0; i < 100'000; ++i) {
    const auto late = static_cast<int64_t>(lateness(random));
    values.push_back(late);
    tracker.observe(50'000'000, 50'000'000 - late, std::nullopt, false, kNow + i);
  }
  std::sort(values.begin(), values.end());
  const double truth = static_cast<double>(values[static_cast<size_t>(0.99 * values.size()) - 1]);
  LatenessWindow window;
  tracker.window(kNow + 100'000, window);
  const auto report = reportOf(window, LatenessOptions{});
  EXPECT_NEAR(static_cast<double>(*report.advised_grace_p99_ms), truth, truth * 0.07);
}

TEST(LatenessBoard, MergesPartitionsAndReportsEachApart) {
  LatenessOptions options;
  options.interval_ms = 10 * kMinute;
  LatenessBoard board(options);
  board.observe(0, 10'000, 9'000, std::nullopt, false, kNow);
  board.observe(3, 10'000, 4'000, std::nullopt, false, kNow);
  board.observe(-1, 10'000, 0, std::nullopt, false, kNow);  // ignored
  EXPECT_FALSE(board.report(1, kNow));
  ASSERT_TRUE(board.report(3, kNow));
  EXPECT_EQ(board.report(3, kNow)->vs_stream_time->max_ms, 6'000);
  const auto merged = board.merged(kNow);
  EXPECT_EQ(merged.records, 2u);
  EXPECT_EQ(merged.vs_stream_time->max_ms, 6'000);
}

// Records `late_ms` behind stream time, every second from `from_ms` to `to_ms` of wall clock.
void feed(LatenessBoard& board, int64_t from_ms, int64_t to_ms, int64_t late_ms) {
  for (int64_t now = from_ms; now < to_ms; now += 1'000) {
    board.observe(0, 1'000'000, 1'000'000 - late_ms, std::nullopt, late_ms > 120'000, now);
  }
}

TEST(LatenessBoard, WarnsOnceWhenP999StaysAboveTheGraceThenKeepsQuiet) {
  std::ostringstream text;
  auto logger = std::make_shared<spdlog::logger>(
      "lateness-test", std::make_shared<spdlog::sinks::ostream_sink_mt>(text));
  const auto previous = spdlog::default_logger();
  spdlog::set_default_logger(logger);
  LatenessOptions options;
  options.interval_ms = 5 * kMinute;
  options.grace_ms = 120'000;
  LatenessBoard board(options);
  const auto warnings = [&] {
    const std::string s = text.str();
    size_t n = 0;
    for (size_t at = s.find("exceeded the grace"); at != std::string::npos;
         at = s.find("exceeded the grace", at + 1)) {
      ++n;
    }
    return n;
  };
  feed(board, kNow, kNow + 4 * kMinute, 200'000);  // above the grace, but not for 5 min yet
  EXPECT_EQ(warnings(), 0u);
  feed(board, kNow + 4 * kMinute, kNow + 6 * kMinute, 200'000);
  EXPECT_EQ(warnings(), 1u) << text.str();
  EXPECT_NE(text.str().find("partition 0"), std::string::npos);
  feed(board, kNow + 6 * kMinute, kNow + 20 * kMinute, 200'000);  // within 15 min of it
  EXPECT_EQ(warnings(), 1u);
  feed(board, kNow + 20 * kMinute, kNow + 22 * kMinute, 200'000);
  EXPECT_EQ(warnings(), 2u);
  spdlog::set_default_logger(previous);
}

TEST(LatenessBoard, PublishesBoundedGaugesPerPartition) {
  prometheus::Registry registry;
  LatenessBoard board(LatenessOptions{});
  board.publishTo(registry);
  board.observe(2, 10'000, 7'000, 9'000, false, kNow);
  std::ostringstream out;
  prometheus::TextSerializer().Serialize(out, registry.Collect());
  const std::string text = out.str();
  EXPECT_NE(
      text.find(
          R"(fraud_partition_lateness_seconds{against="stream_time",partition="2",quantile="1"} 3)"),
      std::string::npos)
      << text;
  EXPECT_NE(
      text.find(
          R"(fraud_partition_lateness_seconds{against="record_timestamp",partition="2",quantile="1"} 2)"),
      std::string::npos)
      << text;
  EXPECT_NE(text.find(R"(fraud_partition_advised_grace_seconds{kept="0.99",partition="2"} 3)"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find(R"(fraud_partition_late_dropped_ratio{partition="2"} 0)"), std::string::npos)
      << text;
}

}  // namespace
}  // namespace fraud::service
