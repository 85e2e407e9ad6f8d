// What no simulation of a layout's step can beat (the planner's pruning, docs/plan.md), and the
// key under which layouts share their calls' bounds.
#pragma once

#include "run_cache.hpp"
#include "step_setup.hpp"

#include <cstdint>

namespace basp {

// What no simulation of that strategy's whole step (global_batch_s: all its micro-steps) can
// beat: the step graph with every call replaced by its per-rank bound (collective_bounds.hpp), a
// critical path over all layers, to the optimizer for the micro-steps that accumulate. (A
// simulation that builds a window of layers extrapolates the rest: its step may differ from the
// whole step's by that extrapolation's error.)
double step_lower_bound_s(const StepSetup& setup, const StepConfig& config, Strategy strategy, RunCache& cache);
// Equal for layouts on the same traffic pattern (the groups of their calls), which share a
// RunCache's fold and call bounds: basp plan works out such layouts' bounds on one thread.
std::uint64_t traffic_pattern_hash(const StepSetup& setup, const StepConfig& config, Strategy strategy);

}  // namespace basp
