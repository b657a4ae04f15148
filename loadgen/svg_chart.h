#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace fraud::loadgen::svg {

// Inline SVG charts for the HTML report: drawn here, so the page needs no script, font or
// network to show them. Every text placed in the SVG is escaped. Pure functions.

// `text` with & < > " ' replaced by entities: safe as HTML/SVG text and inside quoted
// attributes.
[[nodiscard]] std::string escape(std::string_view text);

struct Point {
  double x = 0;
  double y = 0;
};

struct Series {
  std::string name;
  std::string color;  // a CSS colour of our own (never from input)
  std::vector<Point> points;
  bool area = false;    // fill the area under the line
  bool dashed = false;  // a dashed line (one drawn over another it may equal)
};

enum class Unit { kCount, kSeconds, kMilliseconds };

struct LineChart {
  std::string id;     // the svg element's id
  std::string title;  // its accessible name
  std::string x_label;
  std::string y_label;
  Unit x_unit = Unit::kSeconds;
  Unit y_unit = Unit::kCount;
  std::vector<Series> series;
  std::optional<double> target_y;  // a dashed horizontal line (the target rate)
  std::string target_label;
  std::optional<double> marker_x;  // a dashed vertical line (production ended)
  std::string marker_label;
  bool dots = false;  // a dot at every point (few points)
};

struct Histogram {
  std::string id;
  std::string title;
  std::string x_label;
  std::string y_label;
  std::string noun = "alerts";   // what is counted, in the bars' tooltips
  std::vector<double> edges;     // bin i is [edges[i], edges[i+1]); milliseconds, > 0
  std::vector<uint64_t> counts;  // edges.size() - 1 of them
  bool log_y = false;            // counts on a logarithmic axis (a long tail stays visible)
  // Bins from this one on are drawn as beyond a limit (class "bar beyond"; the grace).
  std::optional<size_t> beyond_from;
  struct Mark {
    std::string label;
    double x = 0;
    std::string color;
  };
  std::vector<Mark> marks;  // vertical lines (percentiles, a limit), labelled at the top
};

// An <svg> element. Points with a non-finite coordinate are dropped; a series of more than
// `kMaxPoints` points is thinned to that many. Its attribute data-points is the number of
// points drawn (all series).
[[nodiscard]] std::string renderLineChart(const LineChart& chart);
// An <svg> element on a logarithmic x axis; attribute data-points is the number of bars, and each
// bar (rect class "bar") carries its bin in data-low, data-high and its count in data-count.
[[nodiscard]] std::string renderHistogram(const Histogram& histogram);

inline constexpr size_t kMaxPoints = 2000;

// "12,345" and "12,345.7".
[[nodiscard]] std::string formatCount(double value);
[[nodiscard]] std::string formatFixed(double value, int decimals);
// Axis ticks: about `wanted` round values covering [low, high].
[[nodiscard]] std::vector<double> niceTicks(double low, double high, int wanted);

}  // namespace fraud::loadgen::svg
