// Predicts a measured `basp-validate layer` run phase by phase: compute phases through the cost
// model, each all-to-all through the flow-level simulator on the (calibrated) topology.
#pragma once

#include <string>
#include <vector>

#include "calibration.hpp"
#include "gpu_kind.hpp"
#include "measurements.hpp"
#include "topology.hpp"

namespace basp::fitting {

struct PhaseComparison {
  std::string name;
  double measured_s = 0, predicted_s = 0;  // measured: the median
  double measured_min_s = 0, measured_max_s = 0;
  double measured_isolated_s = 0;  // all-to-alls timed alone (0: not measured)
  double relative_error() const { return (predicted_s - measured_s) / measured_s; }
};

struct StrategyComparison {
  std::string strategy;
  int group_size = 0;
  std::vector<PhaseComparison> phases;  // in the run's order
  double measured_total_s = 0, predicted_total_s = 0;
  double measured_a2a_s = 0, predicted_a2a_s = 0;
};

// The layer's phases run one after another on every rank, all ranks alike, so each phase is
// predicted on its own: the sum of the per-rank costs of its operations (one op per phase, as the
// compute benchmark times them), or one all-to-all of its send size over the strategy's groups.
// `topo` must already carry the calibration (apply_calibration). Throws InputError when the run has
// more ranks than the topology has GPUs or names a phase this version does not know.
std::vector<StrategyComparison> predict_layer(const Topology& topo, const GpuKind& gpu,
                                              const ComputeEfficiency& eff, const LayerRun& run);

}  // namespace basp::fitting
