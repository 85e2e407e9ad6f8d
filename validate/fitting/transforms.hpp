// The solver's coordinates for bounded parameters: an efficiency lives in (kMinEfficiency, 1) as
// the logistic of an unbounded number, so no solver step can make a capacity or a speed 0.
#pragma once

#include <cmath>

namespace basp::fitting {

constexpr double kMinEfficiency = 1e-4;

inline double sigmoid(double u) {
  return 1 / (1 + std::exp(-u));
}
inline double logistic(double u) {
  return kMinEfficiency + (1 - kMinEfficiency) * sigmoid(u);
}
// Inverse of logistic; p must lie strictly inside (kMinEfficiency, 1).
inline double logit(double p) {
  const double q = (p - kMinEfficiency) / (1 - kMinEfficiency);
  return std::log(q / (1 - q));
}
// d logistic / du at u: carries a standard error from the solver's coordinate to the efficiency.
inline double logistic_slope(double u) {
  return (1 - kMinEfficiency) * sigmoid(u) * (1 - sigmoid(u));
}

}  // namespace basp::fitting
