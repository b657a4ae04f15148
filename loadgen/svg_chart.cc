#include "loadgen/svg_chart.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>

#include "loadgen/svg_plot.h"

namespace fraud::loadgen::svg {
namespace {

constexpr size_t kMaxHoverColumns = 600;

std::vector<Point> usable(const std::vector<Point>& points) {
  std::vector<Point> out;
  out.reserve(std::min(points.size(), kMaxPoints));
  const size_t stride =
      points.size() > kMaxPoints ? (points.size() + kMaxPoints - 1) / kMaxPoints : 1;
  for (size_t i = 0; i < points.size(); i += stride) {
    if (std::isfinite(points[i].x) && std::isfinite(points[i].y)) out.push_back(points[i]);
  }
  return out;
}

}  // namespace

std::string escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string formatFixed(double value, int decimals) {
  if (!std::isfinite(value)) return "n/a";
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.*f", std::clamp(decimals, 0, 6), std::fabs(value));
  std::string digits = buffer;
  const auto dot = digits.find('.');
  std::string whole = digits.substr(0, dot);
  const std::string fraction = dot == std::string::npos ? "" : digits.substr(dot);
  std::string grouped;
  for (size_t i = 0; i < whole.size(); ++i) {
    if (i > 0 && (whole.size() - i) % 3 == 0) grouped += ',';
    grouped += whole[i];
  }
  const bool negative = value < 0 && std::strtod(buffer, nullptr) != 0;  // not "-0"
  return (negative ? "-" : "") + grouped + fraction;
}

std::string formatCount(double value) { return formatFixed(value, 0); }

std::vector<double> niceTicks(double low, double high, int wanted) {
  if (!std::isfinite(low) || !std::isfinite(high) || wanted < 1) return {0};
  if (high <= low) high = low + 1;
  const double raw = (high - low) / wanted;
  const double magnitude = std::pow(10, std::floor(std::log10(raw)));
  double step = magnitude;
  for (const double m : {1.0, 2.0, 2.5, 5.0, 10.0}) {
    step = m * magnitude;
    if (raw <= step) break;
  }
  std::vector<double> ticks;
  const double first = std::floor(low / step) * step;
  for (int i = 0; i <= wanted * 3 + 2; ++i) {
    const double t = first + i * step;
    ticks.push_back(std::fabs(t) < step * 1e-9 ? 0 : t);
    if (t >= high - step * 1e-9) break;
  }
  return ticks;
}

namespace {

// Data coordinates to the plot's pixels.
struct PlotScale {
  double x_lo;
  double x_hi;
  double y_top;
  [[nodiscard]] double x(double v) const { return kLeft + kPlotWidth * (v - x_lo) / (x_hi - x_lo); }
  [[nodiscard]] double y(double v) const { return kTop + kPlotHeight * (1 - v / y_top); }
};

// Each series as an optional area, a line and (when asked, or for a lone point) dots.
void drawSeries(std::string& out, const LineChart& chart,
                const std::vector<std::vector<Point>>& drawn, const PlotScale& scale) {
  for (size_t i = 0; i < drawn.size(); ++i) {
    const auto& points = drawn[i];
    const auto& s = chart.series[i];
    if (points.empty()) continue;
    std::string coordinates;
    for (const auto& p : points) coordinates += num(scale.x(p.x)) + "," + num(scale.y(p.y)) + " ";
    coordinates.pop_back();
    if (s.area) {
      out += R"(<polygon class="area" fill=")" + escape(s.color) + "\" points=\"" +
             num(scale.x(points.front().x)) + "," + num(scale.y(0)) + " " + coordinates + " " +
             num(scale.x(points.back().x)) + "," + num(scale.y(0)) + "\"/>";
    }
    out += "<polyline class=\"line" + std::string(s.dashed ? " dashed" : "") + "\" data-series=\"" +
           escape(s.name) + "\" stroke=\"" + escape(s.color) + "\" points=\"" + coordinates +
           "\"/>";
    if (chart.dots || points.size() == 1) {
      for (const auto& p : points) {
        out += R"(<circle class="dot" fill=")" + escape(s.color) + "\" cx=\"" + num(scale.x(p.x)) +
               "\" cy=\"" + num(scale.y(p.y)) + R"(" r="3"/>)";
      }
    }
  }
}

// The target line (horizontal) and the marker (vertical), each with its label.
void drawTargetAndMarker(std::string& out, const LineChart& chart, const PlotScale& scale) {
  if (chart.target_y && std::isfinite(*chart.target_y)) {
    const double y = scale.y(*chart.target_y);
    out += R"(<line class="target" x1=")" + num(kLeft) + "\" x2=\"" + num(kLeft + kPlotWidth) +
           "\" y1=\"" + num(y) + "\" y2=\"" + num(y) + "\"/>";
    out += R"(<text class="note" x=")" + num(kLeft + kPlotWidth - 4) + "\" y=\"" + num(y - 6) +
           R"(" text-anchor="end">)" + escape(chart.target_label) + "</text>";
  }
  if (chart.marker_x && std::isfinite(*chart.marker_x)) {
    const double x = scale.x(*chart.marker_x);
    out += R"(<line class="marker" x1=")" + num(x) + "\" x2=\"" + num(x) + "\" y1=\"" + num(kTop) +
           "\" y2=\"" + num(kTop + kPlotHeight) + "\"/>";
    out += R"(<text class="note" x=")" + num(x - 4) + "\" y=\"" + num(kTop - 8) +
           R"(" text-anchor="end">)" + escape(chart.marker_label) + "</text>";
  }
}

// Hover columns: a native tooltip with every series' value at that x (no script needed).
void drawHoverColumns(std::string& out, const LineChart& chart,
                      const std::vector<std::vector<Point>>& drawn, const PlotScale& scale) {
  if (drawn.empty() || drawn.front().empty() || drawn.front().size() > kMaxHoverColumns) return;
  const auto& first = drawn.front();
  for (size_t k = 0; k < first.size(); ++k) {
    const double left =
        k == 0 ? scale.x(first[k].x) : (scale.x(first[k - 1].x) + scale.x(first[k].x)) / 2;
    const double right = k + 1 == first.size()
                             ? scale.x(first[k].x)
                             : (scale.x(first[k].x) + scale.x(first[k + 1].x)) / 2;
    std::string tip = chart.x_label + " " + valueLabel(first[k].x, chart.x_unit);
    for (size_t i = 0; i < drawn.size(); ++i) {
      if (drawn[i].size() != first.size()) continue;
      tip += "\n" + chart.series[i].name + ": " + valueLabel(drawn[i][k].y, chart.y_unit);
    }
    out += R"(<rect class="hover" x=")" + num(left) + "\" y=\"" + num(kTop) + "\" width=\"" +
           num(std::max(1.0, right - left)) + "\" height=\"" + num(kPlotHeight) + "\"><title>" +
           escape(tip) + "</title></rect>";
  }
}

}  // namespace

std::string renderLineChart(const LineChart& chart) {
  std::vector<std::vector<Point>> drawn;
  size_t total = 0;
  double x_min = 0;
  double x_max = 0;
  double y_max = chart.target_y.value_or(0);
  bool any = false;
  for (const auto& s : chart.series) {
    drawn.push_back(usable(s.points));
    for (const auto& p : drawn.back()) {
      if (!any) {
        x_min = std::min(0.0, p.x);
        x_max = p.x;
        any = true;
      }
      x_min = std::min(x_min, p.x);
      x_max = std::max(x_max, p.x);
      y_max = std::max(y_max, p.y);
    }
    total += drawn.back().size();
  }
  if (chart.marker_x && std::isfinite(*chart.marker_x)) x_max = std::max(x_max, *chart.marker_x);
  if (x_max <= x_min) x_max = x_min + 1;
  if (!(y_max > 0)) y_max = 1;

  const auto y_ticks = niceTicks(0, y_max * 1.05, 5);
  const auto x_ticks = niceTicks(x_min, x_max, 8);
  const PlotScale scale{x_ticks.front(), std::max(x_ticks.back(), x_max), y_ticks.back()};

  std::string out;
  openSvg(out, chart.id, chart.title, total);
  yGrid(
      out, y_ticks, [&](double v) { return scale.y(v); }, chart.y_unit);
  for (const double t : x_ticks) {
    out += R"(<text class="tick" x=")" + num(scale.x(t)) + "\" y=\"" +
           num(kTop + kPlotHeight + 18) + R"(" text-anchor="middle">)" +
           escape(tickLabel(t, chart.x_unit)) + "</text>";
  }
  out += R"(<line class="axis" x1=")" + num(kLeft) + "\" x2=\"" + num(kLeft + kPlotWidth) +
         "\" y1=\"" + num(kTop + kPlotHeight) + "\" y2=\"" + num(kTop + kPlotHeight) + "\"/>";
  axisLabels(out, chart.x_label, chart.y_label);
  if (total == 0) emptyPlot(out, "no data");
  drawSeries(out, chart, drawn, scale);
  drawTargetAndMarker(out, chart, scale);
  drawHoverColumns(out, chart, drawn, scale);
  out += "</svg>";
  return out;
}

namespace {

// A count of 1 on a logarithmic count axis stands this high above its floor (10^kLogFloor).
constexpr double kLogFloor = -0.3;

// A number as data, without grouping: "120001", "1.258925412".
std::string plain(double v) {
  std::array<char, 32> buffer{};
  std::snprintf(buffer.data(), buffer.size(), "%.10g", v);
  return buffer.data();
}

struct Bin {
  double low = 0;
  double high = 0;
  uint64_t count = 0;
  bool beyond = false;
};

std::vector<Bin> binsOf(const Histogram& h) {
  std::vector<Bin> bins;
  for (size_t i = 0; i + 1 < h.edges.size() && i < h.counts.size(); ++i) {
    const double low = h.edges[i];
    const double high = h.edges[i + 1];
    if (!(low > 0) || !(high > low) || !std::isfinite(high)) continue;
    if (h.counts[i] == 0) continue;
    bins.push_back({low, high, h.counts[i], h.beyond_from && i >= *h.beyond_from});
  }
  return bins;
}

// The x axis: whole decades covering the bins and the marks.
struct LogAxis {
  double log_lo = 0;
  double log_hi = 1;
  [[nodiscard]] double x(double v) const {
    return kLeft + kPlotWidth * (std::log10(v) - log_lo) / (log_hi - log_lo);
  }
};

LogAxis xAxisOf(const std::vector<Bin>& bins, const std::vector<Histogram::Mark>& marks) {
  double lo = bins.empty() ? 1 : bins.front().low;
  double hi = bins.empty() ? 1000 : bins.front().high;
  for (const auto& b : bins) {
    lo = std::min(lo, b.low);
    hi = std::max(hi, b.high);
  }
  for (const auto& m : marks) {
    if (m.x > 0 && std::isfinite(m.x)) {
      lo = std::min(lo, m.x);
      hi = std::max(hi, m.x);
    }
  }
  const double log_lo = std::floor(std::log10(lo));
  return {log_lo, std::max(log_lo + 1, std::ceil(std::log10(hi)))};
}

// The count axis: its ticks and where a count stands.
struct CountAxis {
  std::vector<double> ticks;
  std::function<double(double)> y;
};

CountAxis yAxisOf(const std::vector<Bin>& bins, bool log_y) {
  uint64_t top = 1;
  for (const auto& b : bins) top = std::max(top, b.count);
  if (!log_y) {
    CountAxis axis{niceTicks(0, static_cast<double>(top) * 1.1, 4), {}};
    const double y_top = axis.ticks.back();
    axis.y = [y_top](double v) { return kTop + kPlotHeight * (1 - v / y_top); };
    return axis;
  }
  const double log_top = std::max(1.0, std::ceil(std::log10(static_cast<double>(top) * 1.5)));
  CountAxis axis;
  for (int k = 0; k <= static_cast<int>(log_top); ++k) axis.ticks.push_back(std::pow(10, k));
  axis.y = [log_top](double v) {
    const double at = (std::log10(std::max(v, 0.5)) - kLogFloor) / (log_top - kLogFloor);
    return kTop + kPlotHeight * (1 - at);
  };
  return axis;
}

void drawXTicks(std::string& out, const LogAxis& axis) {
  for (auto decade = static_cast<int>(axis.log_lo); decade <= static_cast<int>(axis.log_hi);
       ++decade) {
    for (const double m : {1.0, 2.0, 5.0}) {
      const double x = m * std::pow(10, decade);
      if (std::log10(x) > axis.log_hi + 1e-9) break;
      out += R"(<text class="tick" x=")" + num(axis.x(x)) + "\" y=\"" +
             num(kTop + kPlotHeight + 18) + R"(" text-anchor="middle">)" +
             escape(tickLabel(x, Unit::kMilliseconds)) + "</text>";
      out += R"(<line class="grid" x1=")" + num(axis.x(x)) + "\" x2=\"" + num(axis.x(x)) +
             "\" y1=\"" + num(kTop) + "\" y2=\"" + num(kTop + kPlotHeight) + "\"/>";
    }
  }
  out += R"(<line class="axis" x1=")" + num(kLeft) + "\" x2=\"" + num(kLeft + kPlotWidth) +
         "\" y1=\"" + num(kTop + kPlotHeight) + "\" y2=\"" + num(kTop + kPlotHeight) + "\"/>";
}

void drawBars(std::string& out, const std::vector<Bin>& bins, const std::string& noun,
              const LogAxis& x_axis, const CountAxis& y_axis) {
  for (const auto& b : bins) {
    const double x = x_axis.x(b.low) + 0.5;
    const double w = std::max(1.0, x_axis.x(b.high) - x_axis.x(b.low) - 1);
    const auto count = static_cast<double>(b.count);
    const double y = y_axis.y(count);
    out +=
        "<rect class=\"bar" + std::string(b.beyond ? " beyond" : "") + "\" x=\"" + num(x) +
        "\" y=\"" + num(y) + "\" width=\"" + num(w) + "\" height=\"" + num(kTop + kPlotHeight - y) +
        "\" data-low=\"" + plain(b.low) + "\" data-high=\"" + plain(b.high) + "\" data-count=\"" +
        std::to_string(b.count) + "\"><title>" +
        escape(valueLabel(b.low, Unit::kMilliseconds) + " to " +
               valueLabel(b.high, Unit::kMilliseconds) + ": " + formatCount(count) + " " + noun) +
        "</title></rect>";
  }
}

void drawMarks(std::string& out, const std::vector<Histogram::Mark>& marks, const LogAxis& axis) {
  for (size_t i = 0; i < marks.size(); ++i) {
    const auto& m = marks[i];
    if (!(m.x > 0) || !std::isfinite(m.x)) continue;
    const double x = axis.x(m.x);
    const double label_y = kTop + 12 + 14 * static_cast<double>(i % 3);
    out += R"(<line class="mark" stroke=")" + escape(m.color) + "\" x1=\"" + num(x) + "\" x2=\"" +
           num(x) + "\" y1=\"" + num(kTop) + "\" y2=\"" + num(kTop + kPlotHeight) + "\"/>";
    out += R"(<text class="mark-label" fill=")" + escape(m.color) + "\" x=\"" + num(x + 4) +
           "\" y=\"" + num(label_y) + "\">" + escape(m.label) + "<title>" +
           escape(m.label + " " + valueLabel(m.x, Unit::kMilliseconds)) + "</title></text>";
  }
}

}  // namespace

std::string renderHistogram(const Histogram& h) {
  const std::vector<Bin> bins = binsOf(h);
  const LogAxis x_axis = xAxisOf(bins, h.marks);
  const CountAxis y_axis = yAxisOf(bins, h.log_y);
  std::string out;
  openSvg(out, h.id, h.title, bins.size());
  yGrid(out, y_axis.ticks, y_axis.y, Unit::kCount);
  drawXTicks(out, x_axis);
  axisLabels(out, h.x_label, h.y_label);
  if (bins.empty()) emptyPlot(out, "no data");
  drawBars(out, bins, h.noun, x_axis, y_axis);
  drawMarks(out, h.marks, x_axis);
  out += "</svg>";
  return out;
}

}  // namespace fraud::loadgen::svg
