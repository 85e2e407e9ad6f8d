// Line and scatter charts as self-contained SVG (no script, no font files), for `plan --svg` and
// `sweep --svg`: axes with ticks and units, one colour per series, a legend; readable at 800 px.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace basp::cli {

struct ChartSeries {
  std::string name;
  std::vector<std::pair<double, double>> points;  // (x, y), drawn in this order
  bool line = true;                               // joined by a line; else dots only
  int colour = -1;                                // palette index; -1: the series' position
};

struct Chart {
  std::string title;
  std::string x_label, y_label;  // with their units, e.g. "memory per GPU (GiB)"
  bool log2_x = false;           // x on a log2 axis (SP degrees: 1, 2, 4, ...)
  std::vector<std::string> x_categories;  // non-empty: x is the index into these names
  std::vector<ChartSeries> series;
};

// The charts stacked vertically in one SVG document `width` pixels wide.
std::string svg_charts(const std::vector<Chart>& charts, int width = 800);

}  // namespace basp::cli
