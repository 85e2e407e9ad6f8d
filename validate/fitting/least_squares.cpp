// Levenberg–Marquardt with Marquardt's diagonal scaling. Identifiability is decided once, from the
// SVD of the Jacobian at the start: a direction with no singular value is a set of parameters the
// measurements cannot separate (e.g. a link latency and the launch overhead on a one-class path),
// and the parameter weighing most in it is held. Standard errors come from s²·(JᵀJ)⁻¹ at the end.
#include "least_squares.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

namespace basp::fitting {

namespace {
Eigen::MatrixXd jacobian(const ResidualFunction& r, const Eigen::VectorXd& x, const std::vector<bool>& free,
                         double step, long m) {
  Eigen::MatrixXd J = Eigen::MatrixXd::Zero(m, x.size());
  for (long j = 0; j < x.size(); ++j) {
    if (!free[std::size_t(j)]) continue;
    Eigen::VectorXd up = x, down = x;
    up[j] += step;
    down[j] -= step;
    J.col(j) = (r(up) - r(down)) / (2 * step);
  }
  return J;
}

// Holds parameters until the free columns of J have full numerical rank.
void hold_unidentifiable(const Eigen::MatrixXd& J, const std::vector<int>& hold_first,
                         std::vector<bool>& free) {
  for (;;) {
    std::vector<long> cols;
    for (long j = 0; j < J.cols(); ++j)
      if (free[std::size_t(j)]) cols.push_back(j);
    if (cols.empty()) return;
    Eigen::MatrixXd F(J.rows(), long(cols.size()));
    for (std::size_t c = 0; c < cols.size(); ++c) F.col(long(c)) = J.col(cols[c]);
    // Columns are scaled to unit norm first, so the rank test does not depend on units.
    Eigen::VectorXd norms = F.colwise().norm();
    double largest = norms.maxCoeff();
    long weakest = 0;
    norms.minCoeff(&weakest);
    if (norms[weakest] <= 1e-9 * std::max(largest, 1e-300)) {
      free[std::size_t(cols[std::size_t(weakest)])] = false;
      continue;
    }
    for (long c = 0; c < F.cols(); ++c) F.col(c) /= norms[c];
    Eigen::JacobiSVD<Eigen::MatrixXd> svd(F, Eigen::ComputeFullV);
    const Eigen::VectorXd s = svd.singularValues();
    if (s.size() < F.cols() || s[s.size() - 1] < 1e-6 * s[0]) {
      const Eigen::VectorXd v = svd.matrixV().col(F.cols() - 1).cwiseAbs();
      long worst = -1;
      for (long c = 0; c < v.size(); ++c) {
        if (v[c] < 0.1 * v.maxCoeff()) continue;  // not really part of the combination
        const int pc = hold_first[std::size_t(cols[std::size_t(c)])];
        if (worst < 0 || pc > hold_first[std::size_t(cols[std::size_t(worst)])] ||
            (pc == hold_first[std::size_t(cols[std::size_t(worst)])] && v[c] > v[worst]))
          worst = c;
      }
      free[std::size_t(cols[std::size_t(worst)])] = false;
      continue;
    }
    return;
  }
}
}  // namespace

LeastSquaresFit levenberg_marquardt(const ResidualFunction& r, const Eigen::VectorXd& x0,
                                    const std::vector<int>& hold_first, int max_iterations, double step) {
  LeastSquaresFit fit;
  fit.x = x0;
  fit.free.assign(std::size_t(x0.size()), true);
  Eigen::VectorXd res = r(fit.x);
  const long m = res.size(), n = x0.size();
  hold_unidentifiable(jacobian(r, fit.x, fit.free, step, m), hold_first, fit.free);
  double rss = res.squaredNorm(), lambda = 1e-3;
  if (!std::isfinite(rss))
    throw std::runtime_error("least squares: the model gives no finite prediction at the start");
  for (fit.iterations = 0; fit.iterations < max_iterations; ++fit.iterations) {
    const Eigen::MatrixXd J = jacobian(r, fit.x, fit.free, step, m);
    const Eigen::MatrixXd A = J.transpose() * J;
    const Eigen::VectorXd g = J.transpose() * res;
    bool improved = false;
    const double floor = 1e-12 * std::max(A.diagonal().maxCoeff(), 1e-300);
    while (lambda < 1e12) {
      Eigen::MatrixXd D = A;
      for (long j = 0; j < n; ++j)
        D(j, j) = fit.free[std::size_t(j)] ? A(j, j) + lambda * std::max(A(j, j), floor) : 1.0;
      const Eigen::VectorXd delta = D.ldlt().solve(-g);
      const Eigen::VectorXd trial = fit.x + delta;
      const Eigen::VectorXd trial_res = r(trial);
      const double trial_rss = trial_res.squaredNorm();
      if (std::isfinite(trial_rss) && trial_rss < rss) {
        const double gain = (rss - trial_rss) / std::max(rss, 1e-300);
        fit.x = trial;
        res = trial_res;
        rss = trial_rss;
        lambda = std::max(lambda / 10, 1e-12);
        improved = true;
        if (gain < 1e-12 || delta.cwiseAbs().maxCoeff() < 1e-10) fit.converged = true;
        break;
      }
      lambda *= 10;
    }
    if (!improved) {  // no step lowers the sum: at a minimum (to the finite-difference precision)
      fit.converged = std::isfinite(rss);
      break;
    }
    if (fit.converged) break;
  }
  fit.residuals = res;
  fit.rss = rss;
  fit.sigma = Eigen::VectorXd::Constant(n, std::numeric_limits<double>::quiet_NaN());
  const Eigen::MatrixXd J = jacobian(r, fit.x, fit.free, step, m);
  std::vector<long> cols;
  for (long j = 0; j < n; ++j)
    if (fit.free[std::size_t(j)]) cols.push_back(j);
  const long dof = m - long(cols.size());
  if (!cols.empty() && dof > 0) {
    Eigen::MatrixXd F(m, long(cols.size()));
    for (std::size_t c = 0; c < cols.size(); ++c) F.col(long(c)) = J.col(cols[c]);
    const Eigen::MatrixXd cov = (F.transpose() * F).inverse() * (rss / double(dof));
    for (std::size_t c = 0; c < cols.size(); ++c)
      fit.sigma[cols[c]] = std::sqrt(std::max(cov(long(c), long(c)), 0.0));
  }
  return fit;
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

double r_squared(const std::vector<double>& measured, const std::vector<double>& predicted) {
  double mean = 0;
  for (double v : measured) mean += v;
  mean /= double(measured.size());
  double ss_res = 0, ss_tot = 0;
  for (std::size_t i = 0; i < measured.size(); ++i) {
    ss_res += (measured[i] - predicted[i]) * (measured[i] - predicted[i]);
    ss_tot += (measured[i] - mean) * (measured[i] - mean);
  }
  return ss_tot > 0 ? 1 - ss_res / ss_tot : (ss_res == 0 ? 1.0 : 0.0);
}

}  // namespace basp::fitting
