#include "loadgen/svg_plot.h"

#include <array>
#include <cmath>
#include <cstdio>

namespace fraud::loadgen::svg {

std::string num(double v) {
  std::array<char, 32> buffer{};
  std::snprintf(buffer.data(), buffer.size(), "%.1f", v);
  return buffer.data();
}

std::string compact(double v) {
  const double a = std::fabs(v);
  std::array<char, 32> buffer{};
  const auto trim = [](std::string s) {
    if (s.find('.') != std::string::npos) {
      while (!s.empty() && s.back() == '0') s.pop_back();
      if (!s.empty() && s.back() == '.') s.pop_back();
    }
    return s;
  };
  if (a >= 1e9) {
    std::snprintf(buffer.data(), buffer.size(), "%.2f", v / 1e9);
    return trim(buffer.data()) + "G";
  }
  if (a >= 1e6) {
    std::snprintf(buffer.data(), buffer.size(), "%.2f", v / 1e6);
    return trim(buffer.data()) + "M";
  }
  if (a >= 1e4) {
    std::snprintf(buffer.data(), buffer.size(), "%.1f", v / 1e3);
    return trim(buffer.data()) + "k";
  }
  std::snprintf(buffer.data(), buffer.size(), "%.3f", v);
  return trim(buffer.data());
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

void openSvg(std::string& out, const std::string& id, const std::string& title, size_t points) {
  out += R"(<svg class="chart" id=")" + escape(id) + "\" viewBox=\"0 0 " + num(kWidth) + " " +
         num(kHeight) + R"(" role="img" aria-label=")" + escape(title) + "\" data-points=\"" +
         std::to_string(points) + R"(" preserveAspectRatio="xMidYMid meet">)";
  out += "<title>" + escape(title) + "</title>";
}

void axisLabels(std::string& out, const std::string& x_label, const std::string& y_label) {
  out += R"(<text class="axis-label" x=")" + num(kLeft + kPlotWidth / 2) + "\" y=\"" +
         num(kHeight - 6) + R"(" text-anchor="middle">)" + escape(x_label) + "</text>";
  out += R"(<text class="axis-label" transform="translate(16 )" + num(kTop + kPlotHeight / 2) +
         ") rotate(-90)\" text-anchor=\"middle\">" + escape(y_label) + "</text>";
}

void yGrid(std::string& out, const std::vector<double>& ticks,
           const std::function<double(double)>& y_of, Unit unit) {
  for (const double t : ticks) {
    const double y = y_of(t);
    out += R"(<line class="grid" x1=")" + num(kLeft) + "\" x2=\"" + num(kLeft + kPlotWidth) +
           "\" y1=\"" + num(y) + "\" y2=\"" + num(y) + "\"/>";
    out += R"(<text class="tick" x=")" + num(kLeft - 8) + "\" y=\"" + num(y + 4) +
           R"(" text-anchor="end">)" + escape(tickLabel(t, unit)) + "</text>";
  }
}

void emptyPlot(std::string& out, const std::string& message) {
  out += R"(<text class="empty-note" x=")" + num(kLeft + kPlotWidth / 2) + "\" y=\"" +
         num(kTop + kPlotHeight / 2) + R"(" text-anchor="middle">)" + escape(message) + "</text>";
}

}  // namespace fraud::loadgen::svg
