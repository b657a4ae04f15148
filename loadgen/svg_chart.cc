#include "loadgen/svg_chart.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace fraud::loadgen::svg {
namespace {

constexpr double kWidth = 960;
constexpr double kHeight = 280;
constexpr double kLeft = 72;
constexpr double kRight = 24;
constexpr double kTop = 28;
constexpr double kBottom = 46;
constexpr double kPlotWidth = kWidth - kLeft - kRight;
constexpr double kPlotHeight = kHeight - kTop - kBottom;
constexpr size_t kMaxHoverColumns = 600;

std::string num(double v) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.1f", v);
  return buffer;
}

// 20k, 1.5M, 950, 0.5: short tick labels.
std::string compact(double v) {
  const double a = std::fabs(v);
  char buffer[32];
  const auto trim = [](std::string s) {
    if (s.find('.') != std::string::npos) {
      while (!s.empty() && s.back() == '0') s.pop_back();
      if (!s.empty() && s.back() == '.') s.pop_back();
    }
    return s;
  };
  if (a >= 1e9) {
    std::snprintf(buffer, sizeof buffer, "%.2f", v / 1e9);
    return trim(buffer) + "G";
  }
  if (a >= 1e6) {
    std::snprintf(buffer, sizeof buffer, "%.2f", v / 1e6);
    return trim(buffer) + "M";
  }
  if (a >= 1e4) {
    std::snprintf(buffer, sizeof buffer, "%.1f", v / 1e3);
    return trim(buffer) + "k";
  }
  std::snprintf(buffer, sizeof buffer, "%.3f", v);
  return trim(buffer);
}

std::string tickLabel(double v, Unit unit) {
  switch (unit) {
    case Unit::kSeconds:
      return compact(v) + " s";
    case Unit::kMilliseconds:
      return std::fabs(v) >= 1000 ? compact(v / 1000) + " s" : compact(v) + " ms";
    case Unit::kCount:
      break;
  }
  return compact(v);
}

std::string valueLabel(double v, Unit unit) {
  switch (unit) {
    case Unit::kSeconds:
      return formatFixed(v, v < 100 ? 1 : 0) + " s";
    case Unit::kMilliseconds:
      return formatFixed(v, v < 10 ? 1 : 0) + " ms";
    case Unit::kCount:
      break;
  }
  return formatCount(v);
}

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

void openSvg(std::string& out, const std::string& id, const std::string& title, size_t points) {
  out += "<svg class=\"chart\" id=\"" + escape(id) + "\" viewBox=\"0 0 " + num(kWidth) + " " +
         num(kHeight) + "\" role=\"img\" aria-label=\"" + escape(title) + "\" data-points=\"" +
         std::to_string(points) + "\" preserveAspectRatio=\"xMidYMid meet\">";
  out += "<title>" + escape(title) + "</title>";
}

void axisLabels(std::string& out, const std::string& x_label, const std::string& y_label) {
  out += "<text class=\"axis-label\" x=\"" + num(kLeft + kPlotWidth / 2) + "\" y=\"" +
         num(kHeight - 6) + "\" text-anchor=\"middle\">" + escape(x_label) + "</text>";
  out += "<text class=\"axis-label\" transform=\"translate(16 " + num(kTop + kPlotHeight / 2) +
         ") rotate(-90)\" text-anchor=\"middle\">" + escape(y_label) + "</text>";
}

void yGrid(std::string& out, const std::vector<double>& ticks, double top, Unit unit) {
  for (const double t : ticks) {
    const double y = kTop + kPlotHeight * (1 - t / top);
    out += "<line class=\"grid\" x1=\"" + num(kLeft) + "\" x2=\"" + num(kLeft + kPlotWidth) +
           "\" y1=\"" + num(y) + "\" y2=\"" + num(y) + "\"/>";
    out += "<text class=\"tick\" x=\"" + num(kLeft - 8) + "\" y=\"" + num(y + 4) +
           "\" text-anchor=\"end\">" + escape(tickLabel(t, unit)) + "</text>";
  }
}

void emptyPlot(std::string& out, const std::string& message) {
  out += "<text class=\"empty-note\" x=\"" + num(kLeft + kPlotWidth / 2) + "\" y=\"" +
         num(kTop + kPlotHeight / 2) + "\" text-anchor=\"middle\">" + escape(message) + "</text>";
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
      out += "<polygon class=\"area\" fill=\"" + escape(s.color) + "\" points=\"" +
             num(scale.x(points.front().x)) + "," + num(scale.y(0)) + " " + coordinates + " " +
             num(scale.x(points.back().x)) + "," + num(scale.y(0)) + "\"/>";
    }
    out += "<polyline class=\"line" + std::string(s.dashed ? " dashed" : "") + "\" data-series=\"" +
           escape(s.name) + "\" stroke=\"" + escape(s.color) + "\" points=\"" + coordinates +
           "\"/>";
    if (chart.dots || points.size() == 1) {
      for (const auto& p : points) {
        out += "<circle class=\"dot\" fill=\"" + escape(s.color) + "\" cx=\"" + num(scale.x(p.x)) +
               "\" cy=\"" + num(scale.y(p.y)) + "\" r=\"3\"/>";
      }
    }
  }
}

// The target line (horizontal) and the marker (vertical), each with its label.
void drawTargetAndMarker(std::string& out, const LineChart& chart, const PlotScale& scale) {
  if (chart.target_y && std::isfinite(*chart.target_y)) {
    const double y = scale.y(*chart.target_y);
    out += "<line class=\"target\" x1=\"" + num(kLeft) + "\" x2=\"" + num(kLeft + kPlotWidth) +
           "\" y1=\"" + num(y) + "\" y2=\"" + num(y) + "\"/>";
    out += "<text class=\"note\" x=\"" + num(kLeft + kPlotWidth - 4) + "\" y=\"" + num(y - 6) +
           "\" text-anchor=\"end\">" + escape(chart.target_label) + "</text>";
  }
  if (chart.marker_x && std::isfinite(*chart.marker_x)) {
    const double x = scale.x(*chart.marker_x);
    out += "<line class=\"marker\" x1=\"" + num(x) + "\" x2=\"" + num(x) + "\" y1=\"" + num(kTop) +
           "\" y2=\"" + num(kTop + kPlotHeight) + "\"/>";
    out += "<text class=\"note\" x=\"" + num(x - 4) + "\" y=\"" + num(kTop - 8) +
           "\" text-anchor=\"end\">" + escape(chart.marker_label) + "</text>";
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
    out += "<rect class=\"hover\" x=\"" + num(left) + "\" y=\"" + num(kTop) + "\" width=\"" +
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
  yGrid(out, y_ticks, scale.y_top, chart.y_unit);
  for (const double t : x_ticks) {
    out += "<text class=\"tick\" x=\"" + num(scale.x(t)) + "\" y=\"" +
           num(kTop + kPlotHeight + 18) + "\" text-anchor=\"middle\">" +
           escape(tickLabel(t, chart.x_unit)) + "</text>";
  }
  out += "<line class=\"axis\" x1=\"" + num(kLeft) + "\" x2=\"" + num(kLeft + kPlotWidth) +
         "\" y1=\"" + num(kTop + kPlotHeight) + "\" y2=\"" + num(kTop + kPlotHeight) + "\"/>";
  axisLabels(out, chart.x_label, chart.y_label);
  if (total == 0) emptyPlot(out, "no data");
  drawSeries(out, chart, drawn, scale);
  drawTargetAndMarker(out, chart, scale);
  drawHoverColumns(out, chart, drawn, scale);
  out += "</svg>";
  return out;
}

std::string renderHistogram(const Histogram& h) {
  struct Bin {
    double low, high;
    uint64_t count;
  };
  std::vector<Bin> bins;
  uint64_t top_count = 0;
  for (size_t i = 0; i + 1 < h.edges.size() && i < h.counts.size(); ++i) {
    const double low = h.edges[i];
    const double high = h.edges[i + 1];
    if (!(low > 0) || !(high > low) || !std::isfinite(high)) continue;
    if (h.counts[i] == 0) continue;
    bins.push_back({low, high, h.counts[i]});
    top_count = std::max(top_count, h.counts[i]);
  }
  double lo = bins.empty() ? 1 : bins.front().low;
  double hi = bins.empty() ? 1000 : bins.front().high;
  for (const auto& b : bins) {
    lo = std::min(lo, b.low);
    hi = std::max(hi, b.high);
  }
  for (const auto& m : h.marks) {
    if (m.x > 0 && std::isfinite(m.x)) {
      lo = std::min(lo, m.x);
      hi = std::max(hi, m.x);
    }
  }
  const double log_lo = std::floor(std::log10(lo));
  const double log_hi = std::max(log_lo + 1, std::ceil(std::log10(hi)));
  const auto sx = [&](double x) {
    return kLeft + kPlotWidth * (std::log10(x) - log_lo) / (log_hi - log_lo);
  };
  const auto y_ticks = niceTicks(0, std::max<double>(1, static_cast<double>(top_count)) * 1.1, 4);
  const double y_top = y_ticks.back();
  const auto sy = [&](double y) { return kTop + kPlotHeight * (1 - y / y_top); };

  std::string out;
  openSvg(out, h.id, h.title, bins.size());
  yGrid(out, y_ticks, y_top, Unit::kCount);
  for (double decade = log_lo; decade <= log_hi; ++decade) {
    for (const double m : {1.0, 2.0, 5.0}) {
      const double x = m * std::pow(10, decade);
      if (std::log10(x) > log_hi + 1e-9) break;
      out += "<text class=\"tick\" x=\"" + num(sx(x)) + "\" y=\"" + num(kTop + kPlotHeight + 18) +
             "\" text-anchor=\"middle\">" + escape(tickLabel(x, Unit::kMilliseconds)) + "</text>";
      out += "<line class=\"grid\" x1=\"" + num(sx(x)) + "\" x2=\"" + num(sx(x)) + "\" y1=\"" +
             num(kTop) + "\" y2=\"" + num(kTop + kPlotHeight) + "\"/>";
    }
  }
  out += "<line class=\"axis\" x1=\"" + num(kLeft) + "\" x2=\"" + num(kLeft + kPlotWidth) +
         "\" y1=\"" + num(kTop + kPlotHeight) + "\" y2=\"" + num(kTop + kPlotHeight) + "\"/>";
  axisLabels(out, h.x_label, h.y_label);
  if (bins.empty()) emptyPlot(out, "no data");
  for (const auto& b : bins) {
    const double x = sx(b.low) + 0.5;
    const double w = std::max(1.0, sx(b.high) - sx(b.low) - 1);
    const double y = sy(static_cast<double>(b.count));
    out += "<rect class=\"bar\" x=\"" + num(x) + "\" y=\"" + num(y) + "\" width=\"" + num(w) +
           "\" height=\"" + num(kTop + kPlotHeight - y) + "\"><title>" +
           escape(valueLabel(b.low, Unit::kMilliseconds) + " to " +
                  valueLabel(b.high, Unit::kMilliseconds) + ": " +
                  formatCount(static_cast<double>(b.count)) + " alerts") +
           "</title></rect>";
  }
  for (size_t i = 0; i < h.marks.size(); ++i) {
    const auto& m = h.marks[i];
    if (!(m.x > 0) || !std::isfinite(m.x)) continue;
    const double x = sx(m.x);
    const double label_y = kTop + 12 + 14 * static_cast<double>(i % 3);
    out += "<line class=\"mark\" stroke=\"" + escape(m.color) + "\" x1=\"" + num(x) + "\" x2=\"" +
           num(x) + "\" y1=\"" + num(kTop) + "\" y2=\"" + num(kTop + kPlotHeight) + "\"/>";
    out += "<text class=\"mark-label\" fill=\"" + escape(m.color) + "\" x=\"" + num(x + 4) +
           "\" y=\"" + num(label_y) + "\">" + escape(m.label) + "<title>" +
           escape(m.label + " " + valueLabel(m.x, Unit::kMilliseconds)) + "</title></text>";
  }
  out += "</svg>";
  return out;
}

}  // namespace fraud::loadgen::svg
