// Runs one strategy's step graph on its own engine (the job's calibrated topology, or a part of
// it, folded where exact) and reduces the per-rank timelines to the report's figures.
#include "strategy_run.hpp"

#include "cell_fold.hpp"
#include "engine_sizing.hpp"
#include "input_error.hpp"
#include "memory_model.hpp"
#include "step_figures.hpp"
#include "step_graph.hpp"
#include "trace.hpp"

#include <algorithm>
#include <chrono>
#include <optional>
#include <vector>

namespace basp {
namespace {

// The micro-steps before the accumulation boundary, where they are a graph of their own.
struct AccumulatingRun {
  double gradients_s = 0;  // when one ends (its gradients ready; nothing is reduced)
  EngineUse engine;
  double engine_bytes = 0;
};

// After a run on cells in which a trunk left out would have bound: the cells with the trunks in,
// refused where they merge no rank and classes are demanded.
void cells_with_trunks_in(const JobRun& run, StrategyGraph& g) {
  use_cells(run, g, false);
  if (run.config.engine == EngineMode::classes && !g.cells)
    throw InputError("", 0, "--engine", "classes: this scenario has no exact symmetry and no cells that merge ranks (" +
                                            g.net.choice.use.why + "); use --engine full or auto");
}

// What ran g, and why: where cells were tried and merged no rank, that is said too.
EngineUse engine_used(const JobRun& run, const StrategyGraph& g) {
  EngineUse use = g.choice().use;
  if (!g.cells && may_use_cells(run, g))
    use.why += g.net.cells.tried[1]
                   ? "; equitable cells merge no rank with the fabric trunks in them (left out, one would have bound)"
                   : "; equitable cells merge no rank";
  return use;
}

// Under ZeRO-0/1 the micro-steps before the accumulation boundary reduce nothing (ZeroPlan::
// reduce_gradients): they are a graph of their own, without ZeRO calls, folded on its own
// traffic, run first and gone before the step's is built. `layers`: the step's.
AccumulatingRun run_accumulating(const JobRun& run, Strategy strategy, const ZeroPlan& local, int layers) {
  StrategyGraph a = strategy_graph(run, strategy, false);
  Router& router = run.cache.router(a.net.topo);
  if (may_use_cells(run, a)) use_cells(run, a, true);  // as the step's graph: cells, trunks in where one binds
  for (;;) {
    Engine engine = sized_engine(run, a, layers);
    const StepTasks tasks = build_step(engine, router, a.net.topo, a.choice().fold, a.layout, a.costs, run.model,
                                       run.config.checkpointing, local, a.groups, layers, nullptr, run.speed);
    engine.run();
    if (engine.unbinding_held())
      return {step_times(engine, tasks, run.model.layers, layers).gradients_s, engine_used(run, a),
              double(engine.memory_bytes())};
    cells_with_trunks_in(run, a);
  }
}

// Traces show the load of the busiest links over time: the engine records the representative of
// each of their classes (a link's bytes are known once the graph is built, before it runs).
void watch_busiest_links(Engine& engine, const JobRun& run, const Topology& net, const RankFold& fold) {
  std::vector<int> ids;
  for (const LinkUse& u :
       busiest_links(net, fold.expand_links(engine.link_bytes()), std::max(run.options.busiest_links, 16), 0.0))
    ids.push_back(fold.engine_link(u.link));
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  engine.watch_links(ids);
}

// The report's figures of a run step graph: times per micro-step and per global batch, throughput,
// MFU, memory and link figures.
void set_figures(StrategyResult& res, const JobRun& run, const StrategyGraph& g, const Engine& engine,
                 const StepTasks& tasks, std::optional<double> accumulating_s) {
  const Topology& net = g.net.topo;
  const RankFold& fold = g.choice().fold;
  const StepTimes times = step_times(engine, tasks, run.model.layers, res.layers_simulated,
                                      fold.cells ? std::span<const std::uint32_t>(fold.rank_cells->members)
                                                 : std::span<const std::uint32_t>());
  res.step_s = times.step_s;
  res.accumulation_step_s = accumulating_s.value_or(times.gradients_s);
  const double micro_steps = run.config.accumulation;
  res.global_batch_s = (micro_steps - 1) * res.accumulation_step_s + times.step_s;
  res.compute_s = times.compute_s;
  res.a2a_s = times.a2a_s;
  res.a2a_exposed_s = times.a2a_exposed_s;
  res.zero_comm_s = times.zero_comm_s;
  res.zero_exposed_s = times.zero_exposed_s;
  res.a2a_share = res.step_s > 0 ? res.a2a_s / res.step_s : 0;
  // Over the built layers; a window's stand for the model's layers as the other figures' do.
  res.a2a_wait_s = a2a_wait_s(engine, tasks, res.layout, fold) * run.model.layers / res.layers_simulated;
  res.tokens_per_s = micro_steps * res.layout.sequences * double(run.config.seq) / res.global_batch_s;
  res.model_flops = g.costs.model_flops;
  res.mfu = micro_steps * g.costs.model_flops / (res.global_batch_s * run.gpu.peak_bf16_flops);
  res.memory = memory_per_gpu(run.model, res.layout, run.zero, run.config.checkpointing);
  res.fits = res.memory.total() <= run.gpu.hbm_bytes;
  res.class_bytes = fold.bytes_by_class(net, engine.link_bytes());
  if (!net.cluster_ranks.empty())  // a part: its link ids are not the cluster's, so by class
    res.busiest_links = busiest_link_classes(net, fold, engine.link_bytes(), run.options.busiest_links, res.stats.end_s);
  else
    res.busiest_links =
        busiest_links(net, fold.expand_links(engine.link_bytes()), run.options.busiest_links, res.stats.end_s);
}

}  // namespace

bool use_parts(const StepReport& rep, const StepConfig& c) { return rep.gpus() >= c.parts_from_gpus; }

bool may_use_cells(const JobRun& run, const StrategyGraph& g) {
  return !g.net.choice.fold.folded() && run.config.engine != EngineMode::full && !run.speed &&
         g.net.topo.cluster_ranks.empty() && run.config.gpus > 1;
}

void use_cells(const JobRun& run, StrategyGraph& g, bool relax) {
  RunCache::PatternCells& kept = g.net.cells;
  const int i = relax ? 0 : 1;
  if (!kept.tried[i]) {
    kept.found[i] = cell_choice(g.net.topo, run.cache.router(g.net.topo), run.config.gpus,
                                step_traffic(g.layout, g.groups), relax, g.net.choice.use.why);
    kept.tried[i] = true;
  }
  g.cells = kept.found[i] ? &*kept.found[i] : nullptr;
}

int layers_to_simulate(const JobRun& run, const Layout& layout, const RankFold& fold) {
  const int layers = run.model.layers;
  if (run.config.layers_simulated > 0) return std::min(layers, std::max(run.config.layers_simulated, 5));
  const double per_layer = flows_per_layer(layout, run.config.checkpointing, run.cluster.sample()) / fold.members();
  if (per_layer * layers > run.config.flow_budget)
    return std::min(layers, std::max(5, static_cast<int>(run.config.flow_budget / per_layer)));
  return layers;
}

StrategyGraph strategy_graph(const JobRun& run, Strategy strategy, bool zero_calls) {
  const int ranks = run.config.gpus;
  Layout layout = make_layout(run.config, run.model, strategy, ranks, run.cluster.sample().gpus_per_node);
  StepCosts costs = step_costs(run.cost, layout, run.zero);
  ZeroGroups groups;
  if (zero_calls) {
    groups = zero_groups(ranks, run.zero);
  } else {
    groups.shard.resize(ranks);
    for (int r = 0; r < ranks; ++r) groups.shard[r] = {r};
  }
  const EngineMode mode = run.speed ? EngineMode::full : run.config.engine;  // ranks differ
  const RunCache::Network net = run.cache.network(mode, run.cluster, ranks, step_traffic(layout, groups), run.parts);
  return {std::move(layout), costs, std::move(groups), net, nullptr};
}

StrategyResult run_strategy(const JobRun& run, Strategy strategy, TraceWriter* trace, int run_index) {
  const auto t0 = std::chrono::steady_clock::now();
  const int ranks = run.config.gpus;
  // The step's layers, chosen on its own fold; the accumulating micro-steps build as many.
  auto step_layers = [&](const StrategyGraph& g) { return layers_to_simulate(run, g.layout, g.choice().fold); };
  int layers = 0;
  std::optional<AccumulatingRun> accumulating;
  if (const std::optional<ZeroPlan> local = accumulating_zero(run.zero, run.config.accumulation)) {
    layers = step_layers(strategy_graph(run, strategy));
    accumulating = run_accumulating(run, strategy, *local, layers);
  }
  StrategyGraph g = strategy_graph(run, strategy);
  StrategyResult res;
  res.strategy = strategy;
  res.layout = g.layout;
  const Topology& net = g.net.topo;
  if (accumulating) res.accumulating_engine = accumulating->engine;
  Router& router = run.cache.router(g.net.topo);
  // Where no translation exists, equitable cells: first with the fabric trunks left out (checked
  // at every solve never to bind), and where one did bind, again with them in.
  if (may_use_cells(run, g)) use_cells(run, g, true);
  if (run.config.engine == EngineMode::classes && !g.choice().fold.folded())
    throw InputError("", 0, "--engine", "classes: this scenario has no exact symmetry and no cells that merge ranks (" +
                                            g.net.choice.use.why + "); use --engine full or auto");
  // The layers the quotient can hold (on cells usually all: the full engine's window would be smaller).
  res.layers_simulated = layers > 0 ? layers : step_layers(g);
  std::optional<Engine> built;
  StepTasks tasks;
  RunStats stats;
  for (;;) {
    built.emplace(sized_engine(run, g, res.layers_simulated));
    Engine& engine = *built;
    engine.publish_progress(run.options.engine_progress);
    tasks = build_step(engine, router, net, g.choice().fold, res.layout, g.costs, run.model, run.config.checkpointing,
                       run.zero, g.groups, res.layers_simulated, nullptr, run.speed);
    if (trace) watch_busiest_links(engine, run, net, g.choice().fold);
    stats = engine.run();
    if (engine.unbinding_held()) break;
    cells_with_trunks_in(run, g);
    if (layers == 0) res.layers_simulated = step_layers(g);  // finer cells, or the full engine, hold fewer
  }
  Engine& engine = *built;
  const RankFold& fold = g.choice().fold;
  res.engine = engine_used(run, g);
  if (run.speed && run.config.engine != EngineMode::full) {
    res.engine.why = "stragglers or jitter make the ranks differ: every rank is simulated";
    if (res.accumulating_engine) res.accumulating_engine->why = res.engine.why;
  }
  res.stats = fold.expand_stats(stats);
  res.engine_bytes = std::max(accumulating ? accumulating->engine_bytes : 0.0, double(engine.memory_bytes()));
  set_figures(res, run, g, engine, tasks,
              accumulating ? std::optional<double>(accumulating->gradients_s) : std::nullopt);
  if (trace) {
    const int traced = run.options.trace_ranks > 0 ? std::min(run.options.trace_ranks, ranks) : ranks;
    trace->add_run(to_string(strategy), run_index, net, engine, tasks, traced, fold);
  }
  res.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return res;
}

StrategyResult simulate_strategy(const StepSetup& setup, const StepConfig& config, Strategy strategy,
                                 RunCache& cache) {
  return with_run(setup, config, cache, [&](const JobRun& run) { return run_strategy(run, strategy, nullptr, 0); });
}

}  // namespace basp
