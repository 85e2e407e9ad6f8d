// Tolerances: fp32 with fp32 accumulation over at most a few thousand terms stays near 1e-6
// relative; bf16 inputs round to 2^-8, so the GPU path is held to a few 1e-2.
#include "check.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace basp::validate {

double relative_l2(const std::vector<double>& got, const std::vector<double>& ref) {
  if (got.size() != ref.size()) return std::numeric_limits<double>::infinity();
  double num = 0, den = 0;
  for (std::size_t i = 0; i < ref.size(); ++i) {
    num += (got[i] - ref[i]) * (got[i] - ref[i]);
    den += ref[i] * ref[i];
  }
  return den > 0 ? std::sqrt(num / den) : std::sqrt(num);
}

namespace {
double max_abs(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() != b.size()) return std::numeric_limits<double>::infinity();
  double m = 0;
  for (std::size_t i = 0; i < a.size(); ++i) m = std::max(m, std::abs(a[i] - b[i]));
  return m;
}

int rank_with_largest_difference(const std::vector<double>& got, const std::vector<double>& ref,
                                 const std::vector<int>& row_rank) {
  if (row_rank.empty() || got.size() != ref.size() || got.size() % row_rank.size() != 0) return -1;
  const std::size_t width = got.size() / row_rank.size();
  int worst = -1;
  double largest = -1;
  for (std::size_t row = 0; row < row_rank.size(); ++row)
    for (std::size_t c = 0; c < width; ++c) {
      const double d = std::abs(got[row * width + c] - ref[row * width + c]);
      // NaN counts as the largest difference, as it fails the check.
      if (d > largest || (std::isnan(d) && !std::isnan(largest))) {
        largest = d;
        worst = row_rank[row];
      }
    }
  return worst;
}
}  // namespace

std::vector<TensorCheck> check_against(const LayerResult& got, const LayerResult& ref, bool bf16) {
  const double out_tol = bf16 ? 2e-2 : 1e-5, grad_tol = bf16 ? 3e-2 : 2e-5;
  const std::pair<const char*, std::pair<const std::vector<double>*, const std::vector<double>*>> tensors[] =
      {{"y", {&got.y, &ref.y}},       {"dx", {&got.dx, &ref.dx}},    {"dwq", {&got.dwq, &ref.dwq}},
       {"dwk", {&got.dwk, &ref.dwk}}, {"dwv", {&got.dwv, &ref.dwv}}, {"dwo", {&got.dwo, &ref.dwo}}};
  std::vector<TensorCheck> out;
  for (const auto& [name, pair] : tensors) {
    TensorCheck c;
    c.name = name;
    c.rel_l2 = relative_l2(*pair.first, *pair.second);
    c.max_abs = max_abs(*pair.first, *pair.second);
    c.tolerance = std::string(name) == "y" ? out_tol : grad_tol;
    if (pair.first == &got.y || pair.first == &got.dx)
      c.worst_rank = rank_with_largest_difference(*pair.first, *pair.second, got.row_rank);
    out.push_back(c);
  }
  return out;
}

double max_abs_difference(const LayerResult& a, const LayerResult& b) {
  return std::max({max_abs(a.y, b.y), max_abs(a.dx, b.dx), max_abs(a.dwq, b.dwq), max_abs(a.dwk, b.dwk),
                   max_abs(a.dwv, b.dwv), max_abs(a.dwo, b.dwo)});
}

}  // namespace basp::validate
