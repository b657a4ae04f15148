#include "loadgen/svg_chart.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "tests/unit/loadgen/report_samples.h"

namespace fraud::loadgen {
namespace {

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
