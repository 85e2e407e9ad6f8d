// Writes a fitted calibration file (calibrations/README.md's format): the fitted parameters, their
// uncertainty, the measurement files they came from (path, hash, command, hardware) and the fit quality.
#pragma once

#include <string>

#include "compute_fit.hpp"
#include "link_fit.hpp"
#include "measurements.hpp"

namespace basp::fitting {

struct CalibrationDocument {
  std::string name;
  std::string topology;
  const Measurements* measurements = nullptr;
  const LinkFit* links = nullptr;       // null: no all-to-all runs were fitted
  const ComputeFit* compute = nullptr;  // null: no compute runs were fitted
};

// The YAML text; load_calibration reads it back.
std::string calibration_yaml(const CalibrationDocument& doc);

}  // namespace basp::fitting
