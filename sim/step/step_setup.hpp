// A job made ready to simulate: its cluster (built in the parts a run needs), calibration, model
// and GPU loaded once, and its sizes (GPUs, SP degree, ZeRO group) resolved and checked.
#pragma once

#include "calibration.hpp"
#include "gpu_kind.hpp"
#include "step_config.hpp"
#include "step_run.hpp"

#include <string>

namespace basp {

// The cluster (built and calibrated), model and GPU of a config, loaded once for many layouts
// (basp plan): simulate_step loads them per call. `report` has no results and unresolved sizes.
struct StepSetup {
  StepReport report;
  const GpuKind* gpu = nullptr;
};
// `calibration` null: the calibration the config names (or the topology's). `check_job`: the job
// and its strategies' layouts are checked before the cluster is built, so that bad input on a
// huge cluster fails at once (a node count and GPUs per node are all they need).
StepSetup prepare_step(const StepConfig& config, const Calibration* calibration = nullptr, bool check_job = false);

// The job's sizes resolved (GPUs, SP degree, ZeRO group; 0: their defaults) and checked against
// the topology: what every strategy of `config` shares. Throws InputError (exit 2).
void resolve_job(StepConfig& config, const StepReport& cluster);
void resolve_job(StepConfig& config, int available_gpus, const std::string& topology,
                 const std::string& outages = "");  // outages: said after the GPU count in refusals

}  // namespace basp
