// How far a prediction can be trusted: every calibration parameter the step depends on is given a
// range (its fit's ±2σ, or a documented range), and the step re-simulated over them.
#pragma once

#include <string>
#include <vector>

#include "calibration.hpp"
#include "step_run.hpp"

namespace basp {

struct ParameterRange {
  std::string name;          // as in calibration files: links.nic.efficiency, compute.gemm, ...
  double low = 0, expected = 0, high = 0;  // SI values or fractions
  std::string source;        // "fit ±2σ", or the documented range applied
  bool network = true;       // network (links, collective overheads) or compute
  bool faster_when_high = true;  // efficiencies: higher is faster; overheads: lower is
};

// The ranges of a calibration's parameters for the link classes the (calibrated) topology has.
std::vector<ParameterRange> calibration_ranges(const Calibration& cal, const Topology& calibrated);
// The calibration with the network and the compute parameters each at one end of their ranges
// (-1: the slow end, 0: as expected, +1: the fast end).
Calibration calibration_at(const Calibration& cal, const std::vector<ParameterRange>& ranges, int network,
                           int compute);

struct Band {
  double low = 0, expected = 0, high = 0;
};
struct StrategyBands {
  Strategy strategy;
  Band step_s, global_batch_s, tokens_per_s, a2a_s, speedup_vs_ulysses;  // speedup: 0s when none
};
struct UncertaintyReport {
  std::vector<ParameterRange> ranges;
  std::vector<StrategyBands> strategies;  // in the report's order
  int runs = 0;                           // simulations, the expected one included
};

// Re-simulates `expected`'s job with the network and compute parameter groups each at its slow end,
// as expected and at its fast end (3 × 3 runs); each figure's band is its least and greatest value
// over them. Exact per run; the band is exact where each figure is monotone in each group.
UncertaintyReport uncertainty_bands(const StepConfig& config, const StepReport& expected,
                                    const StepOptions& options = {});

}  // namespace basp
