// Fits link efficiencies, software overheads and compute efficiencies to step-level figures (step
// times, all-to-all shares, BASP's speedup and all-to-all reduction) by simulating the whole step.
#pragma once

#include <string>
#include <vector>

#include "calibration.hpp"
#include "link_fit.hpp"
#include "measurements.hpp"
#include "topology_file.hpp"

namespace basp::fitting {

struct StepFit {
  Calibration calibration;  // `start` with the fitted values set
  std::vector<FittedParameter> parameters;
  std::vector<std::string> labels;         // per figure, e.g. "speedup min over 7 models"
  FitQuality quality;                      // measured and predicted per figure, in the figure's own unit
  std::vector<double> predicted_at_start;  // per figure, under `start`: what the fit changed
  int iterations = 0;
  bool converged = false;
};

// The parameters a step fit can move, by name: links.CLASS.efficiency for the classes the
// topology has, software.launch_overhead, software.per_peer_overhead, compute.gemm,
// compute.attention_forward, compute.attention_backward, compute.memory.
std::vector<std::string> step_parameter_names(const Topology& topo);

// Fits the parameters named in `fit` (each a name above or a prefix of names, e.g. "links"; empty:
// all), holding the others at `start`. Parameters the figures cannot separate are held too
// (compute first, then the overheads). Throws InputError for a figure of another topology, an
// unknown model or parameter, or fewer figures than fitted parameters.
StepFit fit_step(const std::string& topology, const TopologyOverrides& overrides, const Calibration& start,
                 const Measurements& m, const std::vector<std::string>& fit);

// "speedup min over 7 models", "a2a_share basp qwen1.5-1.8b": one figure in words.
std::string step_figure_label(const StepObservation& o);

// The simulated value of every figure of `m` under `cal`, in order.
std::vector<double> predict_step_figures(const std::string& topology, const TopologyOverrides& overrides,
                                         const Calibration& cal, const Measurements& m);

}  // namespace basp::fitting
