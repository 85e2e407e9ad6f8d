// Minimum, median and maximum of a set of timing samples (over iterations, ranks or both).
// The median of an even count is the mean of the two middle samples.
#pragma once

#include <algorithm>
#include <vector>

namespace basp::validate {

struct Stats {
  double min = 0, median = 0, max = 0;
};

inline Stats stats_of(std::vector<double> v) {
  if (v.empty()) return {};
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return {v.front(), n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]), v.back()};
}

}  // namespace basp::validate
