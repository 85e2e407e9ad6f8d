// Runs each strategy's step graph on its own engine (same calibrated topology) and reduces the
// per-rank timelines to the report's figures, with the speedup over a Ulysses baseline.
#include "step_run.hpp"

#include "engine_sizing.hpp"
#include "input_error.hpp"
#include "step_setup.hpp"
#include "strategy_run.hpp"
#include "trace.hpp"

#include <algorithm>
#include <optional>
#include <vector>

namespace basp {
namespace {

StepReport simulate_under(const StepConfig& in, const Calibration* given, const StepOptions& options) {
  StepSetup setup = prepare_step(in, given, true);
  StepReport& rep = setup.report;
  StepConfig& c = rep.config;
  resolve_job(c, rep);
  for (Strategy s : in.strategies)
    if (s != Strategy::dp && !sequence_parallel(s, c.sp) && std::find(rep.as_dp.begin(), rep.as_dp.end(), s) == rep.as_dp.end())
      rep.as_dp.push_back(s);
  const ZeroPlan zero = zero_plan(c);
  const CostModel cost{rep.model, *setup.gpu, rep.calibration.compute};
  RunCache cache;
  const bool parts = use_parts(rep, c);
  std::optional<ComputeSpeed> speed;
  std::vector<int> slow;  // link ids of the whole topology, which stragglers always run on
  if (c.stragglers.any()) {
    speed.emplace(c.stragglers, c.gpus);
    rep.slow_gpus = speed->slow_gpus();
    const Topology& net = rep.cluster->whole();
    slow = slow_links(net, c.stragglers);
    for (int l : slow)
      rep.slow_links.push_back(net.vertex(net.link(l).from).name + " -> " + net.vertex(net.link(l).to).name);
  }
  // The layouts were checked before the cluster was built (prepare_step), so bad input failed fast.
  const JobRun run{*rep.cluster, rep.model, *setup.gpu, cost, c, zero, options, cache, parts,
                speed ? &*speed : nullptr, slow};
  std::optional<TraceWriter> trace;
  if (options.trace) trace.emplace(*options.trace);
  std::optional<double> ulysses_step;
  // The Ulysses baseline, when the job does not list Ulysses and Ulysses is possible for it at all
  // (with sequence parallelism: at N = 1 there is none to compare).
  bool baseline = c.sp > 1 && std::find(c.strategies.begin(), c.strategies.end(), Strategy::ulysses) == c.strategies.end();
  if (baseline) try {
      make_layout(c, rep.model, Strategy::ulysses, c.gpus, rep.cluster->sample().gpus_per_node);
    } catch (const InputError&) {
      baseline = false;
    }
  const int runs = static_cast<int>(c.strategies.size()) + (baseline ? 1 : 0);
  if (options.memory_budget_bytes > 0) {
    for (Strategy s : c.strategies) check_host_memory(run, s, options.memory_budget_bytes);
    if (baseline) try {  // the unrequested baseline is left out, as an impossible one is, not refused
        check_host_memory(run, Strategy::ulysses, options.memory_budget_bytes);
      } catch (const InputError&) {
        baseline = false;
      }
  }
  for (std::size_t i = 0; i < c.strategies.size(); ++i) {
    if (options.progress) options.progress(to_string(c.strategies[i]), int(i), runs);
    rep.results.push_back(run_strategy(run, c.strategies[i], trace ? &*trace : nullptr, int(i)));
    if (c.strategies[i] == Strategy::ulysses) ulysses_step = rep.results.back().global_batch_s;
  }
  if (baseline) try {  // e.g. --engine classes where Ulysses' traffic has no exact symmetry
      if (options.progress) options.progress("ulysses (baseline)", runs - 1, runs);
      const StrategyResult b = run_strategy(run, Strategy::ulysses, nullptr, 0);
      ulysses_step = b.global_batch_s;
      rep.baseline_engine = b.engine;
      rep.baseline_accumulating_engine = b.accumulating_engine;
    } catch (const InputError&) {
    }
  if (ulysses_step)
    for (StrategyResult& r : rep.results) r.speedup_vs_ulysses = *ulysses_step / r.global_batch_s;
  if (trace) trace->finish();
  return std::move(rep);
}

}  // namespace

StepReport simulate_step(const StepConfig& in, const StepOptions& options) {
  return simulate_under(in, nullptr, options);
}

StepReport simulate_step(const StepConfig& in, const Calibration& calibration, const StepOptions& options) {
  return simulate_under(in, &calibration, options);
}

}  // namespace basp
