// Weighted linear least squares per class with Eigen; the parameters' standard errors come from
// s²(XᵀX)⁻¹ and are carried to e and F½ by the delta method.
#include "compute_fit.hpp"

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <set>

#include "cost_model.hpp"
#include "input_error.hpp"
#include "input_ranges.hpp"
#include "least_squares.hpp"

namespace basp::fitting {

std::string compute_class_of(const std::string& op) {
  if (op.rfind("gemm", 0) == 0) return "gemm";
  if (op == "attn_fwd") return "attention_forward";
  if (op == "attn_bwd") return "attention_backward";
  if (op == "rotary") return "rotary";
  if (op == "pack_qkv" || op == "unpack_qkv") return "memory";
  if (op == "unpack_o") return "unpack_heads";
  throw InputError("", 0, "--measurements",
                   "unknown compute operation '" + op +
                       "' (gemm_*, attn_fwd, attn_bwd, rotary, pack_qkv, unpack_qkv, unpack_o)");
}

namespace {
struct ClassFit {
  double a = 0, b = 0;  // time = a·F + b
  double var_a = 0, var_b = 0, cov_ab = 0;
  bool size_dependent = false;
};

// `size` of a sample: its FLOPs (math classes) or bytes (memory-bound); `intercept` false: a
// constant efficiency (the cost model gives memory-bound kernels no fixed cost).
ClassFit fit_line(const std::vector<const ComputeSample*>& s, double ComputeSample::*size, bool intercept) {
  std::set<double> sizes;
  for (auto* x : s) sizes.insert(x->*size);
  const long m = long(s.size());
  for (bool with_b : {intercept && sizes.size() >= 2, false}) {
    const long p = with_b ? 2 : 1;
    Eigen::MatrixXd X(m, p);
    Eigen::VectorXd y = Eigen::VectorXd::Ones(m);
    for (long i = 0; i < m; ++i) {
      X(i, 0) = s[std::size_t(i)]->*size / s[std::size_t(i)]->time_s;
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
  // Rotary has a class of its own: on GPUs it runs at the memory-bound rate, but on CPUs its sines
  // and cosines make it several times slower than the pack kernels (docs/calibration.md). So does
  // the unpack of heads, whose kernel zero-fills its output and sums into it.
  for (const std::string cls : {"gemm", "attention_forward", "attention_backward", "memory", "rotary", "unpack_heads"}) {
    std::vector<const ComputeSample*> mine;
    for (const ComputeSample& s : samples)
      if (compute_class_of(s.op) == cls) mine.push_back(&s);
    if (mine.empty()) continue;
    const bool memory = cls == "memory" || cls == "rotary" || cls == "unpack_heads";
    const ClassFit f = fit_line(mine, memory ? &ComputeSample::bytes : &ComputeSample::flops, !memory);
    // Memory-bound kernels are measured against the GPU kind's memory bandwidth.
    const double peak = memory ? gpu.hbm_Bps : gpu.peak_bf16_flops;
    const double e = 1.0 / (peak * f.a), half = f.b / f.a;
    if (!(e > 0) || e > 1)
      throw InputError("", 0, "--measurements",
                       cls + " runs at " + std::to_string(e) + " of the '" + std::string(gpu.name) +
                           (memory ? "' memory bandwidth: above 1, so that bandwidth is too low"
                                   : "' peak: above 1, so that peak is too low") +
                           " for this hardware");
    // The file written must load: a calibration's efficiencies lie in their physical range.
    if (!ranges::efficiency.contains(e)) {
      char shown[32];
      std::snprintf(shown, sizeof shown, "%.3g", e);
      throw InputError("", 0, "--measurements",
                       cls + " runs at " + shown + " of the '" + std::string(gpu.name) + "' " +
                           (memory ? "memory bandwidth" : "peak") + ", which is no measurement of it: " +
                           ranges::efficiency.allowed());
    }
    const double sigma_e = std::sqrt(f.var_a) / (peak * f.a * f.a);
    const double var_half = f.var_b / (f.a * f.a) + f.b * f.b * f.var_a / std::pow(f.a, 4) -
                            2 * f.b * f.cov_ab / std::pow(f.a, 3);
    out.parameters.push_back({"compute." + cls, e, sigma_e, true});
    if (cls == "rotary") {
      out.efficiency.rotary = e;
    } else if (cls == "unpack_heads") {
      out.efficiency.unpack_heads = e;
    } else if (memory) {
      out.efficiency.memory = e;
      out.memory_fitted = true;
    } else
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
      const double predicted = ((memory ? s->bytes : s->flops) + half) / (peak * e);
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
