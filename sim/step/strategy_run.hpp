// One strategy's step on a prepared cluster: what a run reads (JobRun), the graph it is built from
// (layout, costs, ZeRO groups and the fold it runs on), and the run reduced to the report's figures.
#pragma once

#include "cost_model.hpp"
#include "gpu_kind.hpp"
#include "run_cache.hpp"
#include "step_costs.hpp"
#include "step_run.hpp"
#include "step_setup.hpp"
#include "stragglers.hpp"
#include "zero_plan.hpp"

#include <optional>
#include <span>

namespace basp {

class TraceWriter;

// What every strategy's run of one job reads.
struct JobRun {
  const ClusterBuilds& cluster;
  const ModelSpec& model;
  const GpuKind& gpu;
  const CostModel& cost;
  const StepConfig& config;
  const ZeroPlan& zero;
  const StepOptions& options;
  RunCache& cache;  // node moves, folds and routes, derived once for all strategies
  bool parts;       // a template may run on parts of it
  const ComputeSpeed* speed = nullptr;  // stragglers and jitter: every rank simulated
  std::span<const int> slow_links = {};   // with them: links at 1/slow_link_factor
};

// Whether the class engine may run on parts of the cluster (StepConfig::parts_from_gpus).
bool use_parts(const StepReport& rep, const StepConfig& config);

// Transformer layers to build: all of them, the configured window, or the smallest window that
// keeps the graph under the flow budget (at least 5, so that a middle layer has neighbours).
int layers_to_simulate(const JobRun& run, const Layout& layout, const RankFold& fold);

// What one strategy's step graph is built from; `net` is valid until the cache folds again.
struct StrategyGraph {
  Layout layout;
  StepCosts costs;
  ZeroGroups groups;
  RunCache::Network net;
  // Equitable cells where the network's fold found no translation (cell_fold.hpp; kept with the
  // pattern in the cache): what the step is simulated on then (the planner's bounds stay on net's fold).
  const FoldChoice* cells = nullptr;
  const FoldChoice& choice() const { return cells ? *cells : net.choice; }
};

// Whether g may run on equitable cells: no translation, classes allowed, ranks alike (no
// stragglers), the whole topology.
bool may_use_cells(const JobRun& run, const StrategyGraph& g);
// Sets g.cells to its pattern's cells (worked out once per pattern): with the fabric trunks left
// out of them when `relax`, else in; null where they merge nothing.
void use_cells(const JobRun& run, StrategyGraph& g, bool relax);
// `zero_calls` false: for a graph that issues no ZeRO call (accumulating_zero's), whose fold then
// need not keep the ZeRO groups (their NCCL rings across nodes forbid most moves): each rank is a
// shard of its own.
StrategyGraph strategy_graph(const JobRun& run, Strategy strategy, bool zero_calls = true);

// Builds one strategy's step graph on its own engine, runs it and reduces it to the report's
// figures; with `trace`, adds the run to it as run `run_index`.
StrategyResult run_strategy(const JobRun& run, Strategy strategy, TraceWriter* trace, int run_index);

// One strategy of `config` (whose topology, model and calibration must be the setup's) exactly
// as simulate_step runs it, without the Ulysses baseline. Thread-safe for distinct caches.
StrategyResult simulate_strategy(const StepSetup& setup, const StepConfig& config, Strategy strategy,
                                 RunCache& cache);

// `job(run)` for one layout of a prepared setup (what basp plan evaluates): the config resolved,
// no stragglers, default options.
template <class Job>
auto with_run(const StepSetup& setup, const StepConfig& config, RunCache& cache, Job job) {
  StepConfig c = config;
  resolve_job(c, setup.report);
  const StepReport& rep = setup.report;
  const ZeroPlan zero = zero_plan(c);
  const CostModel cost{rep.model, *setup.gpu, rep.calibration.compute};
  const StepOptions options;
  return job(JobRun{*rep.cluster, rep.model, *setup.gpu, cost, c, zero, options, cache, use_parts(rep, c)});
}

}  // namespace basp
