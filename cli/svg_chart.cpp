// SVG charts by hand: a chart is a few dozen elements, and SVG is plain text that browsers and
// rsvg-convert render, so a plotting library would add a dependency and nothing else.
#include "svg_chart.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <sstream>

namespace basp::cli {
namespace {

// Okabe-Ito: distinguishable with the common colour-vision deficiencies.
constexpr const char* palette[] = {"#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000",
                                   "#F0E442"};
constexpr int chart_height = 440, left = 96, right = 200, top = 44, bottom = 64;

std::string escaped(const std::string& text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

// 1234567 -> "1.23M": tick labels stay short.
std::string short_number(double v) {
  char buf[32];
  const double a = std::abs(v);
  if (a >= 1e9) std::snprintf(buf, sizeof buf, "%.3gG", v / 1e9);
  else if (a >= 1e6) std::snprintf(buf, sizeof buf, "%.3gM", v / 1e6);
  else if (a >= 1e4) std::snprintf(buf, sizeof buf, "%.3gk", v / 1e3);
  else std::snprintf(buf, sizeof buf, "%.4g", v);
  return buf;
}

// A step of 1, 2 or 5 times a power of ten giving about `count` ticks over `range`.
double nice_step(double range, int count) {
  const double raw = range / count;
  const double power = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (raw <= m * power) return m * power;
  return 10 * power;
}

struct Axis {
  double lo = 0, hi = 1;
  double at(double v, double pixels_lo, double pixels_hi) const {
    return pixels_lo + (v - lo) / (hi - lo) * (pixels_hi - pixels_lo);
  }
};

void draw_chart(std::ostringstream& o, const Chart& c, int width, int y0) {
  const double x_px0 = left, x_px1 = width - right, y_px0 = y0 + chart_height - bottom, y_px1 = y0 + top;
  auto x_of = [&](double x) { return c.log2_x ? std::log2(x) : x; };
  double xmin = std::numeric_limits<double>::infinity(), xmax = -xmin, ymin = 0, ymax = -xmin;
  for (const ChartSeries& s : c.series)
    for (auto [x, y] : s.points) {
      xmin = std::min(xmin, x_of(x));
      xmax = std::max(xmax, x_of(x));
      ymin = std::min(ymin, y);
      ymax = std::max(ymax, y);
    }
  if (!c.x_categories.empty()) {
    xmin = -0.5;
    xmax = double(c.x_categories.size()) - 0.5;
  }
  if (!(xmax > xmin)) {  // no points, or one x: a unit around it
    xmin = std::isfinite(xmin) ? xmin - 1 : 0;
    xmax = xmin + 2;
  }
  if (!(ymax > ymin)) ymax = ymin + 1;
  const double ystep = nice_step(ymax - ymin, 5);
  Axis xa{xmin - (c.log2_x || c.x_categories.size() ? 0.0 : 0.03 * (xmax - xmin)),
          xmax + (c.log2_x || c.x_categories.size() ? 0.0 : 0.03 * (xmax - xmin))};
  if (c.log2_x) {
    xa.lo -= 0.3;
    xa.hi += 0.3;
  }
  Axis ya{std::floor(ymin / ystep) * ystep, std::ceil(ymax * 1.05 / ystep) * ystep};

  o << "<text x=\"" << width / 2 << "\" y=\"" << y0 + 26 << "\" text-anchor=\"middle\" font-size=\"17\" "
    << "font-weight=\"bold\">" << escaped(c.title) << "</text>\n";
  // Grid and y ticks.
  for (double v = ya.lo; v <= ya.hi + ystep * 1e-9; v += ystep) {
    const double y = ya.at(v, y_px0, y_px1);
    o << "<line x1=\"" << x_px0 << "\" y1=\"" << y << "\" x2=\"" << x_px1 << "\" y2=\"" << y
      << "\" stroke=\"#dddddd\"/>\n<text x=\"" << x_px0 - 8 << "\" y=\"" << y + 4
      << "\" text-anchor=\"end\">" << short_number(v) << "</text>\n";
  }
  // x ticks.
  auto x_tick = [&](double at, const std::string& label) {
    const double x = xa.at(at, x_px0, x_px1);
    o << "<line x1=\"" << x << "\" y1=\"" << y_px0 << "\" x2=\"" << x << "\" y2=\"" << y_px0 + 5
      << "\" stroke=\"#333333\"/>\n<text x=\"" << x << "\" y=\"" << y_px0 + 20 << "\" text-anchor=\"middle\">"
      << escaped(label) << "</text>\n";
  };
  if (!c.x_categories.empty()) {
    for (std::size_t i = 0; i < c.x_categories.size(); ++i) x_tick(double(i), c.x_categories[i]);
  } else if (c.log2_x) {
    for (double e = std::ceil(xa.lo); e <= xa.hi; ++e) x_tick(e, short_number(std::exp2(e)));
  } else {
    const double xstep = nice_step(xa.hi - xa.lo, 6);
    for (double v = std::ceil(xa.lo / xstep) * xstep; v <= xa.hi; v += xstep) x_tick(v, short_number(v));
  }
  // Axes and their labels.
  o << "<line x1=\"" << x_px0 << "\" y1=\"" << y_px0 << "\" x2=\"" << x_px1 << "\" y2=\"" << y_px0
    << "\" stroke=\"#333333\"/>\n<line x1=\"" << x_px0 << "\" y1=\"" << y_px0 << "\" x2=\"" << x_px0 << "\" y2=\""
    << y_px1 << "\" stroke=\"#333333\"/>\n";
  o << "<text x=\"" << (x_px0 + x_px1) / 2 << "\" y=\"" << y_px0 + 44 << "\" text-anchor=\"middle\">"
    << escaped(c.x_label) << "</text>\n";
  const double ymid = (y_px0 + y_px1) / 2;
  o << "<text x=\"" << 22 << "\" y=\"" << ymid << "\" text-anchor=\"middle\" transform=\"rotate(-90 22 " << ymid
    << ")\">" << escaped(c.y_label) << "</text>\n";
  // Series, then the legend.
  for (std::size_t i = 0; i < c.series.size(); ++i) {
    const ChartSeries& s = c.series[i];
    const char* colour = palette[(s.colour >= 0 ? s.colour : int(i)) % 8];
    std::ostringstream pts;
    for (auto [x, y] : s.points) pts << xa.at(x_of(x), x_px0, x_px1) << "," << ya.at(y, y_px0, y_px1) << " ";
    if (s.line && s.points.size() > 1)
      o << "<polyline fill=\"none\" stroke=\"" << colour << "\" stroke-width=\"2.2\" points=\"" << pts.str()
        << "\"/>\n";
    for (auto [x, y] : s.points)
      o << "<circle cx=\"" << xa.at(x_of(x), x_px0, x_px1) << "\" cy=\"" << ya.at(y, y_px0, y_px1) << "\" r=\""
        << (s.line ? 3.5 : 2.8) << "\" fill=\"" << colour << "\"" << (s.line ? "" : " fill-opacity=\"0.55\"")
        << "/>\n";
    const double ly = y_px1 + 8 + 22.0 * double(i);
    o << "<rect x=\"" << x_px1 + 18 << "\" y=\"" << ly - 9 << "\" width=\"14\" height=\"10\" fill=\"" << colour
      << "\"/>\n<text x=\"" << x_px1 + 38 << "\" y=\"" << ly << "\">" << escaped(s.name) << "</text>\n";
  }
}

}  // namespace

std::string svg_charts(const std::vector<Chart>& charts, int width) {
  std::ostringstream o;
  o.precision(6);
  const int height = chart_height * std::max<int>(1, int(charts.size()));
  o << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
    << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << width << "\" height=\"" << height
    << "\" viewBox=\"0 0 " << width << " " << height << "\" font-family=\"DejaVu Sans, Arial, sans-serif\" "
    << "font-size=\"13\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  for (std::size_t i = 0; i < charts.size(); ++i) draw_chart(o, charts[i], width, int(i) * chart_height);
  o << "</svg>\n";
  return o.str();
}

}  // namespace basp::cli
