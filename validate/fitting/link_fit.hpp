// Fits a topology's link parameters (per link class: latency and effective bandwidth) and the
// collective software overheads (launch, per peer) to measured collectives (basp-validate's
// all-to-alls, nccl-tests tables), by simulating every measured run on the topology, contention included.
#pragma once

#include <string>
#include <vector>

#include "calibration.hpp"
#include "measurements.hpp"
#include "topology.hpp"

namespace basp::fitting {

struct FitQuality {
  std::vector<double> measured, predicted;  // per sample, seconds
  double r2 = 0;
  double max_relative_residual = 0;  // max |p − m| / m
  double median_relative_residual = 0;
};

struct LinkFit {
  Calibration calibration;          // `start` with the fitted values set
  std::vector<CommSample> samples;  // the runs fitted, in the order of quality.measured
  std::vector<FittedParameter> parameters;
  FitQuality quality;
  int iterations = 0;
  bool converged = false;  // false: stopped at the iteration limit
};

// Starts from `start` (a link class it leaves unset starts at efficiency 0.9 and the topology's
// latency). Runs over groups of one rank are left out: they move nothing over any link (the
// simulator has no time for them; a real one copies locally). Throws InputError when the samples cannot
// determine a bandwidth (too few sizes, no run large enough to be bandwidth-bound, ranks beyond the
// topology's GPUs).
// `fit_only`: parameter names or prefixes (links.nic, software) to fit; the others keep `start`'s
// or the topology's values (empty: all). An unknown name is an InputError listing the names.
LinkFit fit_links(const Topology& topo, const Calibration& start, const std::vector<CommSample>& samples,
                  const std::vector<std::string>& fit_only = {});

// The simulated time of one measured collective under a calibration.
double predict_collective(const Topology& topo, const Calibration& cal, const CommSample& s);

}  // namespace basp::fitting
