// Parameters live in transformed space for the solver: efficiencies through a logistic (they stay
// in (0, 1)), times through a log (they stay positive). Residuals are relative, (p − m)/m, so an
// 8 KiB run counts as much as a 64 MiB one. Standard errors are mapped back by the delta method.
#include "link_fit.hpp"

#include <algorithm>
#include <cmath>
#include <set>

#include "collective_run.hpp"
#include "input_error.hpp"
#include "least_squares.hpp"
#include "parameter_names.hpp"
#include "transforms.hpp"

namespace basp::fitting {

double predict_collective(const Topology& topo, const Calibration& cal, const CommSample& s) {
  Topology t = topo;
  apply_calibration(t, cal);
  CollectiveSpec spec;
  spec.op = s.op;
  spec.size_bytes = s.size_bytes;
  spec.ranks = s.ranks;
  spec.groups = s.groups;
  return simulate_collective(t, spec).time_s;
}

namespace {
enum class Kind { efficiency, latency, launch, per_peer };
struct Param {
  Kind kind;
  LinkClass cls = LinkClass::fabric;
  std::string name;
};

Calibration with(const Calibration& base, const std::vector<Param>& ps, const Eigen::VectorXd& x) {
  Calibration c = base;
  for (std::size_t i = 0; i < ps.size(); ++i) {
    const double u = x[long(i)];
    switch (ps[i].kind) {
      case Kind::efficiency:
        c.links[ps[i].cls].efficiency = logistic(u);
        break;
      case Kind::latency:
        c.links[ps[i].cls].latency_s = std::exp(u);
        break;
      case Kind::launch:
        c.launch_s = std::exp(u);
        break;
      case Kind::per_peer:
        c.per_peer_s = std::exp(u);
        break;
    }
  }
  return c;
}
}  // namespace

LinkFit fit_links(const Topology& topo, const Calibration& start, const std::vector<CommSample>& all_samples,
                  const std::vector<std::string>& fit_only) {
  const int gpus = int(topo.gpus.size());
  std::vector<CommSample> samples;
  for (const CommSample& s : all_samples)
    if (s.ranks / s.groups > 1) samples.push_back(s);
  std::set<double> sizes;
  for (const CommSample& s : samples) {
    if (s.ranks > gpus)
      throw InputError("", 0, "--measurements",
                       "a run has " + std::to_string(s.ranks) + " ranks but topology '" + topo.name +
                           "' has " + std::to_string(gpus) + " GPUs (a template topology grows with --nodes)");
    sizes.insert(s.size_bytes);
  }
  if (sizes.size() < 3)
    throw InputError("", 0, "--measurements",
                     "the link fit needs collective runs at 3 or more sizes (basp-validate comm "
                     "-b 1K -e 64M -f 4); got " +
                         std::to_string(sizes.size()));
  // Classes that carry traffic in these runs; the others have nothing to fit.
  PerLinkClass<bool> used;
  for (const CommSample& s : samples) {
    CollectiveSpec spec;
    spec.op = s.op;
    spec.size_bytes = s.size_bytes;
    spec.ranks = s.ranks;
    spec.groups = s.groups;
    const CollectiveResult r = simulate_collective(topo, spec);
    for (std::size_t l = 0; l < r.link_bytes.size(); ++l)
      if (r.link_bytes[l] > 0) used[topo.links[l].cls] = true;
  }
  std::vector<Param> ps = {{Kind::launch, LinkClass::fabric, "software.launch_overhead"},
                           {Kind::per_peer, LinkClass::fabric, "software.per_peer_overhead"}};
  std::vector<double> x0 = {std::log(start.launch_s.value_or(topo.software.launch_s)),
                            std::log(start.per_peer_s.value_or(topo.software.per_peer_s))};
  for (LinkClass cls : link_classes) {
    if (!used[cls]) continue;
    const std::string name = "links." + std::string(to_string(cls));
    double latency = 0;
    int n = 0;
    for (const Link& l : topo.links)
      if (l.cls == cls) latency += l.latency_s, ++n;
    ps.push_back({Kind::efficiency, cls, name + ".efficiency"});
    // Unset: start near the nominal rate (where the logistic still has a slope), so that a held
    // efficiency is close to what the written file, which leaves it out, simulates.
    x0.push_back(logit(std::clamp(start.links[cls].efficiency.value_or(0.99), 1e-3, 0.999)));
    ps.push_back({Kind::latency, cls, name + ".latency"});
    x0.push_back(std::log(std::max(start.links[cls].latency_s.value_or(latency / std::max(n, 1)), 1e-9)));
  }
  // Parameters left out by `fit_only` keep the start's (or the topology's) value and are reported held.
  std::vector<std::string> names;
  for (const Param& p : ps) names.push_back(p.name);
  check_parameter_names(fit_only, names);
  std::vector<FittedParameter> not_asked;
  std::vector<Param> asked;
  std::vector<double> asked_x0;
  for (std::size_t i = 0; i < ps.size(); ++i) {
    if (selected_parameter(ps[i].name, fit_only)) {
      asked.push_back(ps[i]);
      asked_x0.push_back(x0[i]);
    } else {
      const double value = ps[i].kind == Kind::efficiency ? start.links[ps[i].cls].efficiency.value_or(1.0)
                                                          : std::exp(x0[i]);
      not_asked.push_back({ps[i].name, value, std::nan(""), false});
    }
  }
  ps = std::move(asked);
  x0 = std::move(asked_x0);
  const auto residuals = [&](const Eigen::VectorXd& x) {
    const Calibration c = with(start, ps, x);
    Eigen::VectorXd r(long(samples.size()));
    for (std::size_t i = 0; i < samples.size(); ++i)
      r[long(i)] = (predict_collective(topo, c, samples[i]) - samples[i].time_s) / samples[i].time_s;
    return r;
  };
  // A link latency is the first to give way to the software overheads when the runs cannot tell
  // them apart: the topology file states latencies, nothing states the overheads.
  std::vector<int> hold_first;
  for (const Param& p : ps)
    hold_first.push_back(p.kind == Kind::latency ? 2 : p.kind == Kind::efficiency ? 1 : 0);
  const LeastSquaresFit fit = levenberg_marquardt(
      residuals, Eigen::Map<const Eigen::VectorXd>(x0.data(), long(x0.size())), hold_first);
  LinkFit out;
  out.samples = samples;
  out.iterations = fit.iterations;
  out.converged = fit.converged;
  // Held parameters stay as `start` had them (often unset): only what the data determined is written.
  std::vector<Param> fitted;
  Eigen::VectorXd fitted_x(long(std::count(fit.free.begin(), fit.free.end(), true)));
  for (std::size_t i = 0, k = 0; i < ps.size(); ++i)
    if (fit.free[i]) fitted.push_back(ps[i]), fitted_x[long(k++)] = fit.x[long(i)];
  out.calibration = with(start, fitted, fitted_x);
  bool any_bandwidth = false;
  for (std::size_t i = 0; i < ps.size(); ++i) {
    const double u = fit.x[long(i)], su = fit.sigma[long(i)];
    FittedParameter p{ps[i].name, 0, su, fit.free[i]};
    if (ps[i].kind == Kind::efficiency) {
      p.value = logistic(u);
      p.sigma = su * logistic_slope(u);
      any_bandwidth = any_bandwidth || p.free;
    } else {
      p.value = std::exp(u);
      p.sigma = su * p.value;
    }
    out.parameters.push_back(p);
  }
  out.parameters.insert(out.parameters.end(), not_asked.begin(), not_asked.end());
  const bool bandwidth_asked =
      std::any_of(ps.begin(), ps.end(), [](const Param& p) { return p.kind == Kind::efficiency; });
  if (bandwidth_asked && !any_bandwidth)
    throw InputError("", 0, "--measurements",
                     "no run is large enough for its time to depend on bandwidth: measure up to "
                     "64 MiB or more per rank (basp-validate comm -e 64M)");
  std::vector<double> rel;
  for (std::size_t i = 0; i < samples.size(); ++i) {
    // Re-predicted with the calibration as written (held parameters left out), so the reported
    // quality is the file's, not the solver's.
    const double p = predict_collective(topo, out.calibration, samples[i]);
    out.quality.measured.push_back(samples[i].time_s);
    out.quality.predicted.push_back(p);
    rel.push_back(std::abs(p - samples[i].time_s) / samples[i].time_s);
  }
  out.quality.r2 = r_squared(out.quality.measured, out.quality.predicted);
  out.quality.max_relative_residual = *std::max_element(rel.begin(), rel.end());
  out.quality.median_relative_residual = median(rel);
  return out;
}

}  // namespace basp::fitting
