// A layout's lower bound: one rank class's chain through the step graph with each call at its
// least time (collective_bounds.hpp), the longest over the classes that differ.
#include "step_bounds.hpp"

#include "splitmix64.hpp"
#include "step_graph.hpp"
#include "strategy_run.hpp"

#include <algorithm>
#include <optional>
#include <utility>

namespace basp {

double step_lower_bound_s(const StepSetup& setup, const StepConfig& config, Strategy strategy, RunCache& cache) {
  return with_run(setup, config, cache, [&](const JobRun& run) {
    const StrategyGraph g = strategy_graph(run, strategy);
    Router& router = run.cache.router(g.net.topo);
    CallBounds& bounds = g.net.bounds;
    bounds.start_layout();
    // Each call's lines are worked out for its own period's ranks only, and copied to the rest.
    const EngineMode mode = run.speed ? EngineMode::full : run.config.engine;
    if (run.cache.call_periods)
      for (const TrafficGroups& t : step_traffic(g.layout, g.groups))
        bounds.set_period(*t.groups, t.traffic, run.cache.call_period(mode, run.cluster, run.config.gpus, t, run.parts));
    // Each rank finishes no earlier than its own chain; the first build finds the calls. The
    // simulation merges events within 1e-9 relative of each other, which may end it that much
    // earlier per event on its critical path: the margin covers ten thousand of them.
    // With accumulation, the micro-steps before the last end when the gradients are reduced,
    // which no rank's chain reaches before its optimizer becomes ready; under ZeRO-0/1 they
    // reduce nothing (their own graph, as run_strategy simulates them), and its calls are among
    // the step's, so the classes that differ on the step's calls cover those that differ on theirs.
    const std::optional<ZeroPlan> local = accumulating_zero(run.zero, run.config.accumulation);
    // One class's chain: its length, and when its optimizer becomes ready.
    auto chain = [&](int rank_class, const ZeroPlan& zero) {
      bounds.select(rank_class);
      Engine engine({});
      const StepTasks tasks = build_step(engine, router, g.net.topo, g.net.choice.fold, g.layout, g.costs, run.model,
                                         run.config.checkpointing, zero, g.groups, run.model.layers, &bounds);
      const double path = engine.longest_path_s();
      return std::pair{path, engine.ready_time(tasks.optimizer[0])};
    };
    double gradients = 0.0, end = 0.0;
    auto add_class = [&](int rank_class) {
      const auto [path, ready] = chain(rank_class, run.zero);
      end = std::max(end, path);
      gradients = std::max(gradients, local ? chain(rank_class, *local).second : ready);
    };
    add_class(0);
    for (int k : bounds.distinct_classes())
      if (k != 0) add_class(k);
    return ((run.config.accumulation - 1) * gradients + end) * (1.0 - 1e-5);
  });
}

std::uint64_t traffic_pattern_hash(const StepSetup& setup, const StepConfig& config, Strategy strategy) {
  StepConfig c = config;
  resolve_job(c, setup.report);
  const Layout layout = make_layout(c, setup.report.model, strategy, c.gpus, setup.report.cluster->sample().gpus_per_node);
  const ZeroGroups groups = zero_groups(c.gpus, zero_plan(c));
  std::uint64_t h = splitmix64(static_cast<std::uint64_t>(c.gpus));
  for (const TrafficGroups& t : step_traffic(layout, groups))
    h = splitmix64_groups(splitmix64(h ^ static_cast<std::uint64_t>(t.traffic)), *t.groups);
  return h;
}

}  // namespace basp
