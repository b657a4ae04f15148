// The process_* families and fraud_detector_build_info: parsing procfs and reading this process
// (a scrape over HTTP: tests/component/service/metrics_scrape_test.cc).
#include "service/process_metrics.h"

#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <ctime>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace fraud::service {
namespace {

const auto kTestStarted = std::chrono::system_clock::now();

// proc(5) fields 1..24 and a few more: utime 150, stime 50 ticks, starttime 1000 ticks,
// vsize 4096000 bytes, rss 100 pages.
constexpr std::string_view kStat =
    "1234 (fraud (det) x) S 1 1234 1234 0 -1 4194560 900 0 0 0 150 50 0 0 20 0 7 0 1000 "
    "4096000 100 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0\n";
constexpr std::string_view kSystemStat =
    "cpu  1 2 3 4 5 6 7 0 0 0\nintr 12345\nctxt 99\nbtime 1700000000\nprocesses 10\n";

TEST(ProcessMetrics, ParsesProcStatPastACommandWithSpacesAndParentheses) {
  const auto stats = parseProcStat(kStat, kSystemStat, 100, 4096);
  ASSERT_TRUE(stats.has_value());
  EXPECT_DOUBLE_EQ(stats->cpu_seconds, 2.0);
  EXPECT_DOUBLE_EQ(stats->start_time_seconds, 1'700'000'010.0);
  EXPECT_DOUBLE_EQ(stats->virtual_bytes, 4'096'000.0);
  EXPECT_DOUBLE_EQ(stats->resident_bytes, 409'600.0);
}

TEST(ProcessMetrics, RefusesMalformedProcText) {
  EXPECT_FALSE(parseProcStat("1234 fraud S 1 2 3", kSystemStat, 100, 4096));        // no ')'
  EXPECT_FALSE(parseProcStat("1234 (fraud) S 1 2 3 4 5", kSystemStat, 100, 4096));  // short
  std::string bad(kStat);
  bad.replace(bad.find(" 150 "), 5, " 1x0 ");
  EXPECT_FALSE(parseProcStat(bad, kSystemStat, 100, 4096));
  EXPECT_FALSE(parseProcStat(kStat, "cpu 1 2 3\n", 100, 4096));  // no btime
  EXPECT_FALSE(parseProcStat(kStat, "btime x\n", 100, 4096));
  EXPECT_FALSE(parseProcStat(kStat, kSystemStat, 0, 4096));
  EXPECT_FALSE(parseProcStat("", "", 100, 4096));
}

double processCpuSeconds() {
  timespec t{};
  ::clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) / 1e9;
}

TEST(ProcessMetrics, ReadsThisProcess) {
  const auto before = readProcessStats();
  ASSERT_TRUE(before.has_value());

  // Two more descriptors, 64 MiB more resident, and some CPU time.
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  constexpr size_t kBytes = 64u << 20;
  auto block = std::make_unique<char[]>(kBytes);
  for (size_t i = 0; i < kBytes; i += 4096) block[i] = static_cast<char>(i);
  volatile double sink = 0;
  while (processCpuSeconds() < before->cpu_seconds + 0.3) sink = sink + block[4096];
  const double cpu_now = processCpuSeconds();

  const auto after = readProcessStats();
  ASSERT_TRUE(after.has_value());
  EXPECT_EQ(after->open_fds, before->open_fds + 2);
  rlimit limit{};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &limit), 0);
  EXPECT_EQ(after->max_fds, static_cast<double>(limit.rlim_cur));
  EXPECT_GE(after->resident_bytes, before->resident_bytes + 48.0 * (1 << 20));
  EXPECT_GE(after->virtual_bytes, after->resident_bytes);
  // procfs counts CPU in clock ticks (usually 10 ms): allow a few either way.
  EXPECT_GE(after->cpu_seconds, before->cpu_seconds + 0.2);
  EXPECT_LE(after->cpu_seconds, cpu_now + 0.05);
  // Boot time has 1 s resolution and the wall clock may have been stepped since boot.
  const double started = std::chrono::duration<double>(kTestStarted.time_since_epoch()).count();
  EXPECT_NEAR(after->start_time_seconds, started, 60.0);
  EXPECT_LE(after->start_time_seconds, started + 2.0);
  ::close(fds[0]);
  ::close(fds[1]);
}

TEST(ProcessMetrics, FamiliesAreNamedAndTypedAsPrometheusClientsDo) {
  const auto families = processFamilies(ProcessStats{.cpu_seconds = 1.5,
                                                     .resident_bytes = 2,
                                                     .virtual_bytes = 3,
                                                     .start_time_seconds = 4,
                                                     .open_fds = 5,
                                                     .max_fds = 6});
  std::map<std::string, std::pair<prometheus::MetricType, double>> seen;
  for (const auto& f : families) {
    ASSERT_EQ(f.metric.size(), 1u) << f.name;
    EXPECT_TRUE(f.metric[0].label.empty()) << f.name;
    const double value = f.type == prometheus::MetricType::Counter ? f.metric[0].counter.value
                                                                   : f.metric[0].gauge.value;
    seen[f.name] = {f.type, value};
  }
  using prometheus::MetricType;
  const std::map<std::string, std::pair<MetricType, double>> expected = {
      {"process_cpu_seconds_total", {MetricType::Counter, 1.5}},
      {"process_resident_memory_bytes", {MetricType::Gauge, 2}},
      {"process_virtual_memory_bytes", {MetricType::Gauge, 3}},
      {"process_start_time_seconds", {MetricType::Gauge, 4}},
      {"process_open_fds", {MetricType::Gauge, 5}},
      {"process_max_fds", {MetricType::Gauge, 6}},
  };
  EXPECT_EQ(seen, expected);
}

}  // namespace
}  // namespace fraud::service
