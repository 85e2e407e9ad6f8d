// What a strategy's engine will hold, estimated from its layout and fold before anything is built:
// room reserved up front, refusals over a host memory budget, and the planner's scheduling.
#pragma once

#include "engine.hpp"
#include "strategy_run.hpp"

#include <optional>
#include <string>

namespace basp {

// What g's engine will hold, from the layout and the fold alone (nothing built yet).
struct EngineEstimate {
  double flows = 0;  // flow tasks of the quotient
  double tasks = 0;  // all its tasks (flows, calls, compute): a generous guess, for reserving
  double bytes = 0;  // host memory
};
// `layers_built`: the layers the graph builds where the caller knows them (the accumulating
// micro-steps build the step's, chosen on its fold); 0: as layers_to_simulate chooses on g's.
EngineEstimate engine_estimate(const JobRun& run, const StrategyGraph& g, int layers_built = 0);

// An engine on g's fold, its links slowed as asked, with room for g's step graph of `layers` layers.
Engine sized_engine(const JobRun& run, const StrategyGraph& g, int layers);

// Refuses (InputError on --sim-memory), before any is built, a run whose engine would hold more
// than the budget, saying what would help.
void check_host_memory(const JobRun& run, Strategy strategy, double budget_bytes);

// An estimate of the host memory simulate_strategy's engine will hold for that layout (a test
// holds it above Engine::memory_bytes after the run; transient copies while arrays grow are not
// seen there): what basp plan schedules and refuses simulations by.
double simulation_memory_bytes(const StepSetup& setup, const StepConfig& config, Strategy strategy,
                               RunCache& cache);

// 3/4 of this machine's physical memory, or of the memory cgroup's limit where that is lower
// (containers): room for the process, the topology and the page cache besides the engines
// (8 GiB where the system does not say).
double host_memory_budget_bytes();
// A memory cgroup's limit from its v2 `memory.max` file, else its v1 `memory.limit_in_bytes`
// file (the first that can be read); none when unlimited or unreadable.
std::optional<double> cgroup_memory_limit_bytes(const std::string& v2_max, const std::string& v1_limit);

}  // namespace basp
