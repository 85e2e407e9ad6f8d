// The search behind `basp plan`: every layout of a job that the strategies allow and that reaches
// the global batch, pruned by the memory model before simulation, simulated as `simulate` does.
#pragma once

#include "step_config.hpp"
#include "step_run.hpp"
#include "step_setup.hpp"

#include <cstddef>
#include <functional>
#include <limits>
#include <map>
#include <string>
#include <vector>

namespace basp {

// Where a search stands, after each batch of simulations.
struct PlanProgress {
  std::size_t decided = 0, total = 0;  // layouts simulated or left out, of those that fit
  std::size_t simulated = 0;
  double best_s = 0;                   // best time per global batch so far
  double elapsed_s = 0;
  std::size_t bounded = 0;             // layouts whose critical-path bound was worked out
};

struct PlanQuestion {
  StepConfig job;          // topology, overrides, model, seq, gpus (0: all), calibration, engine
  long global_batch = 0;   // sequences per optimizer step
  std::vector<Strategy> strategies{all_strategies.begin(), all_strategies.end()};
  double memory_limit_bytes = 0;  // per GPU; 0: the GPU's HBM (the memory model counts the runtime reserve)
  int threads = 0;                // 0: every core
  // Host memory the simulations running at once may hold, by their estimates (0: 3/4 of this
  // machine's physical memory). A layout whose simulation alone would need more is not simulated.
  double simulation_memory_bytes = 0;
  bool exhaustive = false;        // simulate every layout that fits, even those that cannot win
  // The Pareto front covers the plans up to this many times the best plan's time per global batch:
  // a layout whose bound is beyond it is not simulated once a plan of its strategy is faster than
  // that bound (it can then be neither the best nor its strategy's best). 0: no limit.
  double front_within = 2.0;
  // The first `ranked` plans of the report are exactly the `ranked` fastest layouts: a lower bound
  // leaves a layout out only once this many simulated plans are faster than it (`--top`).
  int ranked = 1;
  std::function<void(const PlanProgress&)> progress;  // called from the calling thread
};

// One layout: `config` is what `basp simulate` gets for it: one strategy, and its micro-steps per
// optimizer step (`accumulation`).
struct PlanCandidate {
  Strategy strategy = Strategy::ulysses;
  StepConfig config;
  double memory_bytes = 0;  // the memory model's peak per GPU
  // Time per global batch can be no less: a bound on its micro-steps, the larger of
  // what its compute stream must do one thing after another (compute, and all-to-all calls at the
  // GPU's full injection bandwidth) and the step graph's critical path with every call at its
  // per-rank bound (step_lower_bound_s; docs/plan.md). enumerate_plans gives the first, plan both.
  double bound_s = 0;
  double simulation_bytes = 0;  // host memory its simulation may hold (simulation_memory_bytes), once bounded
};

struct Plan {
  PlanCandidate candidate;
  StrategyResult result;       // as `basp simulate` reports it
  double global_batch_s = 0;   // result.global_batch_s: accumulation micro-steps, the last with the optimizer
  double speedup_vs_best_ulysses = 0;  // tokens/s over the best Ulysses plan's (0: no Ulysses plan)
  bool shared_simulation = false;  // its figures are another layout's with the same step graph (docs/plan.md)
};

struct PlanReport {
  StepSetup setup;
  int gpus = 0;
  double memory_limit_bytes = 0;
  int enumerated = 0;                   // layouts considered
  std::map<std::string, int> pruned;    // reason -> layouts not simulated
  std::vector<Plan> plans;              // simulated, fastest per global batch first
  double simulation_memory_bytes = 0;   // the host memory budget the simulations ran under
  // Layouts that could not be left out but whose simulation alone would exceed that budget, by
  // bound: the ranking is exact only among the others (plan_report says when one could have won).
  std::vector<PlanCandidate> not_simulated;
  // Plans slower than this (front_within times the best) are left off the Pareto front; infinite
  // when the question sets no limit.
  double front_limit_s = std::numeric_limits<double>::infinity();
  double wall_s = 0;
};

// The layouts to simulate, in a fixed order; what is left out is counted in `pruned` by reason.
std::vector<PlanCandidate> enumerate_plans(const PlanQuestion& q, const StepSetup& setup, int gpus,
                                           double memory_limit_bytes, std::map<std::string, int>& pruned);
// The reason enumerate_plans counts layouts that keep every sequence on one rank under (N = 1, or
// BASP's groups of one rank): plain data parallelism, which the dp strategy lists once.
inline const std::string without_sequence_parallelism =
    "no sequence parallelism (plain data parallelism: listed once, as dp)";
// Two layouts with equal keys build the same step graph (e.g. SP×DP and Ulysses of the same
// degree, BASP with one group and Ulysses): only the first is simulated.
std::string layout_key(const Layout& layout, const StepConfig& config);

// Throws InputError (exit 2) unless `front_within` is 0 (no limit) or at least 1.
void check_front_within(double front_within);

// Throws InputError (exit 2) when no layout reaches the global batch or none fits in memory.
PlanReport plan(const PlanQuestion& q);

// Plans no other beats in both throughput and memory per GPU, by memory ascending, among those
// whose time per global batch is at most `slowest_s`.
std::vector<const Plan*> pareto_front(const std::vector<Plan>& plans,
                                      double slowest_s = std::numeric_limits<double>::infinity());

}  // namespace basp
