#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <functional>

#include "loadgen/svg_chart.h"
#include "loadgen/svg_plot.h"

namespace fraud::loadgen::svg {
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
