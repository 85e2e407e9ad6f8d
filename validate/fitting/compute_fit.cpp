// Weighted linear least squares per class with Eigen; the parameters' standard errors come from
// s²(XᵀX)⁻¹ and are carried to e and F½ by the delta method.
#include "compute_fit.hpp"

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

#include "cost_model.hpp"
#include "input_error.hpp"
#include "least_squares.hpp"

namespace basp::fitting {

std::string compute_class_of(const std::string& op) {
  if (op.rfind("gemm", 0) == 0) return "gemm";
  if (op == "attn_fwd") return "attention_forward";
  if (op == "attn_bwd") return "attention_backward";
  throw InputError("", 0, "--measurements",
                   "unknown compute operation '" + op + "' (gemm_*, attn_fwd, attn_bwd)");
}

namespace {
struct ClassFit {
  double a = 0, b = 0;  // time = a·F + b
  double var_a = 0, var_b = 0, cov_ab = 0;
  bool size_dependent = false;
};

ClassFit fit_line(const std::vector<const ComputeSample*>& s) {
  std::set<double> sizes;
  for (auto* x : s) sizes.insert(x->flops);
  const long m = long(s.size());
  for (bool with_b : {sizes.size() >= 2, false}) {
    const long p = with_b ? 2 : 1;
    Eigen::MatrixXd X(m, p);
    Eigen::VectorXd y = Eigen::VectorXd::Ones(m);
    for (long i = 0; i < m; ++i) {
      X(i, 0) = s[std::size_t(i)]->flops / s[std::size_t(i)]->time_s;
      if (with_b) X(i, 1) = 1.0 / s[std::size_t(i)]->time_s;
    }
    const Eigen::VectorXd c = X.colPivHouseholderQr().solve(y);
    if (with_b && (c[1] < 0 || c[0] <= 0)) continue;  // a negative cost or rate is noise: a constant
    ClassFit f;
    f.a = c[0];
    f.b = with_b ? c[1] : 0.0;
    f.size_dependent = with_b;
    const double rss = (X * c - y).squaredNorm();
    const double s2 = m > p ? rss / double(m - p) : std::numeric_limits<double>::quiet_NaN();
    const Eigen::MatrixXd cov = (X.transpose() * X).inverse() * s2;
    f.var_a = cov(0, 0);
    if (with_b) f.var_b = cov(1, 1), f.cov_ab = cov(0, 1);
    return f;
  }
  return {};
}
}  // namespace

ComputeFit fit_compute(const GpuKind& gpu, const ComputeEfficiency& start,
                       const std::vector<ComputeSample>& samples) {
  ComputeFit out;
  out.efficiency = start;
  std::vector<double> rel;
  for (const std::string cls : {"gemm", "attention_forward", "attention_backward"}) {
    std::vector<const ComputeSample*> mine;
    for (const ComputeSample& s : samples)
      if (compute_class_of(s.op) == cls) mine.push_back(&s);
    if (mine.empty()) continue;
    const ClassFit f = fit_line(mine);
    const double peak = gpu.peak_bf16_flops;
    const double e = 1.0 / (peak * f.a), half = f.b / f.a;
    if (!(e > 0) || e > 1)
      throw InputError("", 0, "--measurements",
                       cls + " runs at " + std::to_string(e) + " of the '" + std::string(gpu.name) +
                           "' peak: above 1, so that peak is too low for this hardware");
    const double sigma_e = std::sqrt(f.var_a) / (peak * f.a * f.a);
    const double var_half = f.var_b / (f.a * f.a) + f.b * f.b * f.var_a / std::pow(f.a, 4) -
                            2 * f.b * f.cov_ab / std::pow(f.a, 3);
    out.parameters.push_back({"compute." + cls, e, sigma_e, true});
    out.parameters.push_back(
        {"compute." + cls + "_half_flops", half,
         f.size_dependent ? std::sqrt(std::max(var_half, 0.0)) : std::numeric_limits<double>::quiet_NaN(),
         f.size_dependent});
    if (cls == "gemm") out.efficiency.gemm = e, out.efficiency.gemm_half_flops = half;
    if (cls == "attention_forward")
      out.efficiency.attention_forward = e, out.efficiency.attention_forward_half_flops = half;
    if (cls == "attention_backward")
      out.efficiency.attention_backward = e, out.efficiency.attention_backward_half_flops = half;
    for (auto* s : mine) {
      const double predicted = (s->flops + half) / (peak * e);
      out.quality.measured.push_back(s->time_s);
      out.quality.predicted.push_back(predicted);
      rel.push_back(std::abs(predicted - s->time_s) / s->time_s);
    }
  }
  if (rel.empty()) return out;
  out.quality.r2 = r_squared(out.quality.measured, out.quality.predicted);
  out.quality.max_relative_residual = *std::max_element(rel.begin(), rel.end());
  out.quality.median_relative_residual = median(rel);
  return out;
}

}  // namespace basp::fitting
