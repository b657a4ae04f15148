#pragma once

// What the report's SVG charts share (svg_chart.cc: line charts, histograms): the geometry of a
// chart, the texts of numbers and ticks, and the frame every chart draws. Internal to loadgen/.

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "loadgen/svg_chart.h"

namespace fraud::loadgen::svg {

inline constexpr double kWidth = 960;
inline constexpr double kHeight = 280;
inline constexpr double kLeft = 72;
inline constexpr double kRight = 24;
inline constexpr double kTop = 28;
inline constexpr double kBottom = 46;
inline constexpr double kPlotWidth = kWidth - kLeft - kRight;
inline constexpr double kPlotHeight = kHeight - kTop - kBottom;

// A coordinate with one decimal.
[[nodiscard]] std::string num(double v);
// 20k, 1.5M, 950, 0.5: short tick labels.
[[nodiscard]] std::string compact(double v);
[[nodiscard]] std::string tickLabel(double v, Unit unit);
// A value in a tooltip.
[[nodiscard]] std::string valueLabel(double v, Unit unit);

// The <svg> element's start (id, accessible name, data-points) and its <title>.
void openSvg(std::string& out, const std::string& id, const std::string& title, size_t points);
void axisLabels(std::string& out, const std::string& x_label, const std::string& y_label);
// Horizontal grid lines at `ticks`, labelled; `y_of` places a value on the plot.
void yGrid(std::string& out, const std::vector<double>& ticks,
           const std::function<double(double)>& y_of, Unit unit);
// A note in the middle of an empty plot.
void emptyPlot(std::string& out, const std::string& message);

}  // namespace fraud::loadgen::svg
