// Writes a fitted calibration file (calibrations/README.md's format): the fitted parameters, their
// uncertainty, the measurement files they came from (path, hash, command, hardware) and the fit quality.
#pragma once

#include <string>

#include "compute_fit.hpp"
#include "link_fit.hpp"
#include "measurements.hpp"
#include "step_fit.hpp"

namespace basp::fitting {

struct CalibrationDocument {
  std::string name;
  std::string topology;
  const Measurements* measurements = nullptr;
  const LinkFit* links = nullptr;       // null: no all-to-all runs were fitted
  const ComputeFit* compute = nullptr;  // null: no compute runs were fitted
  const StepFit* step = nullptr;        // set: a step-level fit, which writes every value it simulated with
  std::string start;                    // the calibration the step fit started from (name and file)
};

// The YAML text; load_calibration reads it back.
std::string calibration_yaml(const CalibrationDocument& doc);

}  // namespace basp::fitting
