// Nonlinear least squares (Levenberg–Marquardt on Eigen) with the residuals, the parameters'
// standard errors and the fit quality kept: what `basp calibrate` reports for every fit.
#pragma once

#include <Eigen/Dense>
#include <functional>
#include <string>
#include <vector>

namespace basp::fitting {

// Residuals r(x), one per measurement, already weighted (the calibration uses relative errors).
using ResidualFunction = std::function<Eigen::VectorXd(const Eigen::VectorXd&)>;

struct LeastSquaresFit {
  Eigen::VectorXd x;          // the fitted parameters
  Eigen::VectorXd sigma;      // standard error of each (NaN when not identifiable)
  std::vector<bool> free;     // false: held at its start value (no information in the data)
  Eigen::VectorXd residuals;  // at x
  double rss = 0;             // Σ r²
  int iterations = 0;
  bool converged = false;
};

// Minimizes Σ r(x)² from x0. Jacobians by central differences of step `step` (x is expected in
// log space, so a relative step). Parameters the data cannot move (a Jacobian column that is zero
// or a combination of others) are held at x0 and reported as not free; among those that take part
// in such a combination, the one with the highest `hold_first` is held (ties: the largest share).
LeastSquaresFit levenberg_marquardt(const ResidualFunction& r, const Eigen::VectorXd& x0,
                                    const std::vector<int>& hold_first, int max_iterations = 60,
                                    double step = 1e-4);

// The median (of an even count: the mean of the two middle values); 0 for none.
double median(std::vector<double> v);

// 1 − Σ(m − p)² / Σ(m − mean m)²: over the measured values themselves, not the weighted residuals.
double r_squared(const std::vector<double>& measured, const std::vector<double>& predicted);

}  // namespace basp::fitting
