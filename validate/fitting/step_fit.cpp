// Step-level figures predicted by whole simulated training steps, and the fit of calibration
// parameters to them (relative residuals; efficiencies through a logistic, times through a log).
#include "step_fit.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "gpu_kind.hpp"
#include "input_error.hpp"
#include "least_squares.hpp"
#include "parameter_names.hpp"
#include "step_run.hpp"
#include "topology_file.hpp"
#include "transforms.hpp"

namespace basp::fitting {

namespace {

enum class ParamKind { link_efficiency, launch, per_peer, compute };
struct Param {
  ParamKind kind;
  LinkClass cls = LinkClass::fabric;
  double ComputeEfficiency::*field = nullptr;
  std::string name;
};

std::vector<Param> all_params(const Topology& topo) {
  std::vector<Param> ps;
  PerLinkClass<bool> present;
  for (const Link& l : topo.links) present[l.cls] = true;
  for (LinkClass c : link_classes)
    if (present[c])
      ps.push_back({ParamKind::link_efficiency, c, nullptr, "links." + std::string(to_string(c)) + ".efficiency"});
  ps.push_back({ParamKind::launch, LinkClass::fabric, nullptr, "software.launch_overhead"});
  ps.push_back({ParamKind::per_peer, LinkClass::fabric, nullptr, "software.per_peer_overhead"});
  ps.push_back({ParamKind::compute, LinkClass::fabric, &ComputeEfficiency::gemm, "compute.gemm"});
  ps.push_back({ParamKind::compute, LinkClass::fabric, &ComputeEfficiency::attention_forward,
                "compute.attention_forward"});
  ps.push_back({ParamKind::compute, LinkClass::fabric, &ComputeEfficiency::attention_backward,
                "compute.attention_backward"});
  ps.push_back({ParamKind::compute, LinkClass::fabric, &ComputeEfficiency::memory, "compute.memory"});
  return ps;
}

double start_value(const Param& p, const Calibration& start, const Topology& topo) {
  switch (p.kind) {
    case ParamKind::link_efficiency:
      return start.links[p.cls].efficiency.value_or(1.0);  // unset: the nominal rate
    case ParamKind::launch:
      return start.launch_s.value_or(topo.software.launch_s);
    case ParamKind::per_peer:
      return start.per_peer_s.value_or(topo.software.per_peer_s);
    case ParamKind::compute:
      return start.compute.*p.field;
  }
  return 0;
}

bool is_efficiency(const Param& p) {
  return p.kind == ParamKind::link_efficiency || p.kind == ParamKind::compute;
}

// Starts inside the transforms' ranges (an efficiency of exactly 1, an overhead of 0), where the
// solver still has a slope; held parameters are reported and written at their exact start values.
double to_solver(const Param& p, double v) {
  return is_efficiency(p) ? logit(std::clamp(v, 1e-3, 0.99)) : std::log(std::max(v, 1e-9));
}
double from_solver(const Param& p, double u) {
  return is_efficiency(p) ? logistic(u) : std::exp(u);
}

void set_parameter(Calibration& c, const Param& p, double v) {
  switch (p.kind) {
    case ParamKind::link_efficiency:
      c.links[p.cls].efficiency = v;
      break;
    case ParamKind::launch:
      c.launch_s = v;
      break;
    case ParamKind::per_peer:
      c.per_peer_s = v;
      break;
    case ParamKind::compute:
      c.compute.*p.field = v;
      break;
  }
}

struct StrategyFigures {
  double step_s = 0, a2a_s = 0, a2a_share = 0;
};
struct ModelRun {
  StrategyFigures ulysses, basp;
};

// `where`: the figure's file and row, for the one figure the simulation cannot give.
double figure(const StepObservation& o, const ModelRun& r, const std::string& path,
              const std::string& model) {
  const StrategyFigures& s = o.strategy == "basp" ? r.basp : r.ulysses;
  if (o.quantity == "step_s") return s.step_s;
  if (o.quantity == "a2a_s") return s.a2a_s;
  if (o.quantity == "a2a_share") return s.a2a_share;
  if (o.quantity == "speedup") return r.ulysses.step_s / r.basp.step_s;
  if (!(r.basp.a2a_s > 0))  // groups of one rank (batch = sp) exchange nothing
    throw InputError(path, 0, "results[" + std::to_string(o.row) + "].quantity",
                     "a2a_reduction of " + model + ": BASP has no all-to-all when each group is one rank");
  return r.ulysses.a2a_s / r.basp.a2a_s;  // a2a_reduction
}

StepConfig config_of(const std::string& topology, const TopologyOverrides& overrides, const StepSetting& s,
                     const std::string& model) {
  StepConfig c;
  c.topology = topology;
  c.overrides = overrides;
  c.model = model;
  c.seq = s.seq;
  c.batch = s.batch;
  c.sp = s.sp;
  c.gpus = s.sp;
  c.zero = s.zero;
  c.checkpointing = s.checkpointing;
  c.strategies = {Strategy::ulysses, Strategy::basp};
  return c;
}

}  // namespace

std::string step_figure_label(const StepObservation& o) {
  std::string l = o.quantity;
  if (!o.strategy.empty()) l += " " + o.strategy;
  if (o.statistic == "value") return l + " " + o.models[0];
  return l + " " + o.statistic + " over " + std::to_string(o.models.size()) + " models";
}

std::vector<std::string> step_parameter_names(const Topology& topo) {
  std::vector<std::string> names;
  for (const Param& p : all_params(topo)) names.push_back(p.name);
  return names;
}

std::vector<double> predict_step_figures(const std::string& topology, const TopologyOverrides& overrides,
                                         const Calibration& cal, const Measurements& m) {
  const Topology topo = load_topology(topology, overrides, gpu_kind_names());
  for (const StepSetting& s : m.step_settings) {
    const std::string& path = m.sources[s.source].path;
    if (s.topology != topo.name)
      throw InputError(path, 0, "config.topology",
                       "these figures are of '" + s.topology + "', --topology is '" + topo.name + "'");
    if (std::size_t(s.sp) > topo.gpus.size())
      throw InputError(path, 0, "config.sp",
                       std::to_string(s.sp) + " ranks, but " + topo.name + " has " +
                           std::to_string(topo.gpus.size()) + " GPUs");
  }
  // One simulation per (setting, model), shared by every figure that needs it.
  std::map<std::pair<std::size_t, std::string>, ModelRun> runs;
  for (const StepObservation& o : m.steps)
    for (const std::string& model : o.models) runs[{o.setting, model}];
  for (auto& [key, run] : runs) {
    const StepSetting& s = m.step_settings[key.first];
    StepReport rep;
    try {
      rep = simulate_step(config_of(topology, overrides, s, key.second), cal);
    } catch (const InputError& e) {
      throw InputError(m.sources[s.source].path, 0, "results", "model '" + key.second + "': " + e.what());
    }
    for (const StrategyResult& r : rep.results) {
      StrategyFigures& f = r.strategy == Strategy::basp ? run.basp : run.ulysses;
      f = {r.step_s, r.a2a_s, r.a2a_share};
    }
  }
  std::vector<double> out;
  for (const StepObservation& o : m.steps) {
    double v = o.statistic == "max" ? -std::numeric_limits<double>::infinity()
                                    : std::numeric_limits<double>::infinity();
    const std::string& path = m.sources[m.step_settings[o.setting].source].path;
    for (const std::string& model : o.models) {
      const double f = figure(o, runs.at({o.setting, model}), path, model);
      v = o.statistic == "max" ? std::max(v, f) : std::min(v, f);  // "value": its one model
    }
    out.push_back(v);
  }
  return out;
}

StepFit fit_step(const std::string& topology, const TopologyOverrides& overrides, const Calibration& start,
                 const Measurements& m, const std::vector<std::string>& fit) {
  const Topology topo = load_topology(topology, overrides, gpu_kind_names());
  const std::vector<Param> every = all_params(topo);
  std::vector<std::string> names;
  for (const Param& p : every) names.push_back(p.name);
  check_parameter_names(fit, names);
  std::vector<Param> ps;
  std::vector<double> x0;
  std::vector<double> out_predicted_at_start;
  for (const Param& p : every)
    if (selected_parameter(p.name, fit)) ps.push_back(p), x0.push_back(to_solver(p, start_value(p, start, topo)));
  if (m.steps.size() < ps.size())
    throw InputError("", 0, "--fit",
                     std::to_string(m.steps.size()) + " step figures cannot determine " +
                         std::to_string(ps.size()) + " parameters: name at most " +
                         std::to_string(m.steps.size()) + " with --fit (the others keep --start's values)");
  const auto calibration_at = [&](const Eigen::VectorXd& x) {
    Calibration c = start;
    for (std::size_t i = 0; i < ps.size(); ++i) set_parameter(c, ps[i], from_solver(ps[i], x[long(i)]));
    return c;
  };
  // Bad figures (another topology, an impossible ratio) are refused here, before the solver runs.
  out_predicted_at_start = predict_step_figures(topology, overrides, start, m);
  const auto residuals = [&](const Eigen::VectorXd& x) {
    const std::vector<double> p = predict_step_figures(topology, overrides, calibration_at(x), m);
    Eigen::VectorXd r(long(p.size()));
    for (std::size_t i = 0; i < p.size(); ++i) r[long(i)] = (p[i] - m.steps[i].value) / m.steps[i].value;
    return r;
  };
  // Ratios of step figures cannot tell a faster network from a slower GPU; when they cannot separate
  // parameters, the compute efficiencies (best known from kernel benchmarks) keep --start's values first.
  std::vector<int> hold_first;
  for (const Param& p : ps)
    hold_first.push_back(p.kind == ParamKind::compute ? 2 : p.kind == ParamKind::link_efficiency ? 0 : 1);
  // Derivatives by differences of 1e-2 in solver units (about 0.002 of an efficiency near 0.3):
  // step figures are piecewise smooth (minima and maxima over models), and with 1e-3 the paper
  // figures' fit stalled on a kink at 4.6 times the minimum's sum (docs/calibration.md).
  const LeastSquaresFit lsq = levenberg_marquardt(
      residuals, Eigen::Map<const Eigen::VectorXd>(x0.data(), long(x0.size())), hold_first, 40, 1e-2);
  StepFit out;
  out.iterations = lsq.iterations;
  out.converged = lsq.converged;
  out.predicted_at_start = out_predicted_at_start;
  // Held parameters keep --start's values exactly, as written and simulated (not the solver's
  // start, which is moved inside the transforms' ranges).
  out.calibration = start;
  for (std::size_t i = 0; i < ps.size(); ++i) {
    const double u = lsq.x[long(i)], su = lsq.sigma[long(i)];
    FittedParameter p{ps[i].name, start_value(ps[i], start, topo), su, bool(lsq.free[i])};
    if (p.free) {
      p.value = from_solver(ps[i], u);
      set_parameter(out.calibration, ps[i], p.value);
      p.sigma = is_efficiency(ps[i]) ? su * logistic_slope(u) : su * p.value;
    }
    out.parameters.push_back(p);
  }
  const std::vector<double> predicted = predict_step_figures(topology, overrides, out.calibration, m);
  std::vector<double> rel;
  for (std::size_t i = 0; i < m.steps.size(); ++i) {
    out.labels.push_back(step_figure_label(m.steps[i]));
    out.quality.measured.push_back(m.steps[i].value);
    out.quality.predicted.push_back(predicted[i]);
    rel.push_back(std::abs(predicted[i] - m.steps[i].value) / m.steps[i].value);
  }
  out.quality.r2 = r_squared(out.quality.measured, out.quality.predicted);
  out.quality.max_relative_residual = *std::max_element(rel.begin(), rel.end());
  out.quality.median_relative_residual = median(rel);
  return out;
}

}  // namespace basp::fitting
