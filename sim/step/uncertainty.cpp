// Ranges without a fit are relative (docs/cost-model.md, "Uncertainty"): ±20% for efficiencies
// (capped at 1), ×0.4 to ×2 for the collective overheads, from the hand calibration's cited ranges.
#include "uncertainty.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace basp {

namespace {
const FittedParameter* fitted(const Calibration& cal, const std::string& name) {
  for (const FittedParameter& p : cal.fitted)
    if (p.name == name && p.free && std::isfinite(p.sigma)) return &p;
  return nullptr;
}

ParameterRange efficiency(const Calibration& cal, const std::string& name, double expected, bool network) {
  ParameterRange r{name, 0, expected, 0, "", network, true};
  if (const FittedParameter* p = fitted(cal, name)) {
    r.low = std::max(1e-3, expected - 2 * p->sigma);
    r.high = std::min(1.0, expected + 2 * p->sigma);
    r.source = "fit ±2σ";
  } else {
    r.low = 0.8 * expected;
    r.high = std::min(1.0, 1.2 * expected);
    r.source = "±20% (not fitted)";
  }
  return r;
}

ParameterRange overhead(const Calibration& cal, const std::string& name, double expected) {
  ParameterRange r{name, 0, expected, 0, "", true, false};
  if (const FittedParameter* p = fitted(cal, name)) {
    // Within the physical range of an overhead: a poorly determined fit (a σ of seconds) does not
    // make the band simulate a launch no machine has.
    r.low = std::max(ranges::latency.min, expected - 2 * p->sigma);
    r.high = std::min(ranges::latency.max, expected + 2 * p->sigma);
    r.source = "fit ±2σ";
  } else {
    r.low = 0.4 * expected;
    r.high = 2.0 * expected;
    r.source = "×0.4 to ×2 (not fitted)";
  }
  return r;
}

double end_of(const ParameterRange& r, int end) {
  if (end == 0) return r.expected;
  return (end > 0) == r.faster_when_high ? r.high : r.low;
}
}  // namespace

std::vector<ParameterRange> calibration_ranges(const Calibration& cal, const Topology& calibrated) {
  std::vector<ParameterRange> out;
  PerLinkClass<bool> present;
  for (const Link& l : calibrated.links) present[l.cls] = true;
  for (LinkClass cls : link_classes)
    if (present[cls])
      out.push_back(efficiency(cal, "links." + std::string(to_string(cls)) + ".efficiency",
                               cal.links[cls].efficiency.value_or(1.0), true));
  out.push_back(overhead(cal, "software.launch_overhead", calibrated.software.launch_s));
  out.push_back(overhead(cal, "software.per_peer_overhead", calibrated.software.per_peer_s));
  const ComputeEfficiency& k = cal.compute;
  out.push_back(efficiency(cal, "compute.gemm", k.gemm, false));
  out.push_back(efficiency(cal, "compute.attention_forward", k.attention_forward, false));
  out.push_back(efficiency(cal, "compute.attention_backward", k.attention_backward, false));
  out.push_back(efficiency(cal, "compute.memory", k.memory, false));
  if (k.rotary) out.push_back(efficiency(cal, "compute.rotary", *k.rotary, false));
  return out;
}

Calibration calibration_at(const Calibration& cal, const std::vector<ParameterRange>& ranges, int network,
                           int compute) {
  Calibration c = cal;
  for (const ParameterRange& r : ranges) {
    const double v = end_of(r, r.network ? network : compute);
    const std::string& n = r.name;
    if (n == "software.launch_overhead") c.launch_s = v;
    else if (n == "software.per_peer_overhead") c.per_peer_s = v;
    else if (n == "compute.gemm") c.compute.gemm = v;
    else if (n == "compute.attention_forward") c.compute.attention_forward = v;
    else if (n == "compute.attention_backward") c.compute.attention_backward = v;
    else if (n == "compute.memory") c.compute.memory = v;
    else if (n == "compute.rotary") c.compute.rotary = v;
    else
      for (LinkClass cls : link_classes)
        if (n == "links." + std::string(to_string(cls)) + ".efficiency")
          c.links[cls].efficiency = v;
  }
  return c;
}

UncertaintyReport uncertainty_bands(const StepConfig& config, const StepReport& expected,
                                    const StepOptions& options) {
  UncertaintyReport u;
  u.ranges = calibration_ranges(expected.calibration, expected.topology());
  StepOptions quiet = options;
  quiet.trace = nullptr;
  quiet.progress = nullptr;
  const auto band = [](double v) { return Band{v, v, v}; };
  for (const StrategyResult& r : expected.results)
    u.strategies.push_back({r.strategy, band(r.step_s), band(r.global_batch_s), band(r.tokens_per_s), band(r.a2a_s),
                            band(r.speedup_vs_ulysses.value_or(0.0))});
  u.runs = 1;
  const auto widen = [](Band& b, double v) {
    b.low = std::min(b.low, v);
    b.high = std::max(b.high, v);
  };
  for (int network = -1; network <= 1; ++network)
    for (int compute = -1; compute <= 1; ++compute) {
      if (network == 0 && compute == 0) continue;  // the expected run, given
      if (options.progress) options.progress("uncertainty", u.runs, 9);
      const StepReport rep =
          simulate_step(config, calibration_at(expected.calibration, u.ranges, network, compute), quiet);
      ++u.runs;
      for (std::size_t i = 0; i < rep.results.size() && i < u.strategies.size(); ++i) {
        const StrategyResult& r = rep.results[i];
        StrategyBands& b = u.strategies[i];
        widen(b.step_s, r.step_s);
        widen(b.global_batch_s, r.global_batch_s);
        widen(b.tokens_per_s, r.tokens_per_s);
        widen(b.a2a_s, r.a2a_s);
        widen(b.speedup_vs_ulysses, r.speedup_vs_ulysses.value_or(0.0));
      }
    }
  return u;
}

}  // namespace basp
