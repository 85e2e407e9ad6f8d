// Runs each strategy's step graph on its own engine (same calibrated topology) and reduces the
// per-rank timelines to the report's figures.
#include "step_run.hpp"

#include "splitmix64.hpp"

#include "collective_bounds.hpp"

#include "cost_model.hpp"
#include "gpu_kind.hpp"
#include "input_error.hpp"
#include "routing.hpp"
#include "step_figures.hpp"
#include "step_graph.hpp"
#include "trace.hpp"
#include "units.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <optional>
#include <span>
#include <string>
#include <tuple>
#include <unistd.h>

namespace basp {
namespace {

struct Run {
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
bool use_parts(const StepReport& rep, const StepConfig& c) { return rep.gpus() >= c.parts_from_gpus; }

// Transformer layers to build: all of them, the configured window, or the smallest window that
// keeps the graph under the flow budget (at least 5, so that a middle layer has neighbours).
int layers_to_simulate(const Run& run, const Layout& layout, const RankFold& fold) {
  const int layers = run.model.layers;
  if (run.config.layers_simulated > 0) return std::min(layers, std::max(run.config.layers_simulated, 5));
  const double per_layer = flows_per_layer(layout, run.config.checkpointing, run.cluster.sample()) / fold.members();
  if (per_layer * layers > run.config.flow_budget)
    return std::min(layers, std::max(5, static_cast<int>(run.config.flow_budget / per_layer)));
  return layers;
}

// What one strategy's step graph is built from; `choice` is valid until the cache folds again.
struct StrategyGraph {
  Layout layout;
  StepCosts costs;
  ZeroGroups groups;
  RunCache::Network net;
};

// `zero_calls` false: for a graph that issues no ZeRO call (accumulating_zero's), whose fold then
// need not keep the ZeRO groups (their NCCL rings across nodes forbid most moves): each rank is a
// shard of its own.
StrategyGraph strategy_graph(const Run& run, Strategy strategy, bool zero_calls = true) {
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
  return {std::move(layout), costs, std::move(groups), net};
}

// What g's engine will hold, from the layout and the fold alone (nothing built yet).
struct EngineEstimate {
  double flows = 0;  // flow tasks of the quotient
  double tasks = 0;  // all its tasks (flows, calls, compute): a generous guess, for reserving
  double bytes = 0;  // host memory
};
// `layers_built`: the layers the graph builds where the caller knows them (the accumulating
// micro-steps build the step's, chosen on its fold); 0: as layers_to_simulate chooses on g's.
EngineEstimate engine_estimate(const Run& run, const StrategyGraph& g, int layers_built = 0) {
  const RankFold& fold = g.net.choice.fold;
  const Layout& l = g.layout;
  const double layers = layers_built > 0 ? layers_built : layers_to_simulate(run, l, fold);
  const double others = 3;  // embedding, head, optimizer
  // Flows per layer of the quotient: the exchanges', and the ZeRO calls' NCCL ring edges (a rank's
  // successor in the channel that enters its node plus one edge out of the node per channel: at
  // most 2 per rank per call); the other modules make ZeRO calls only.
  const auto [a2a, ring] = exchange_flows_per_layer(l, run.config.checkpointing);
  const int gathers = run.zero.stage == 3 ? zero3_gathers_per_layer(run.config.checkpointing) : 0;
  const int calls = gathers + 1 + (run.zero.stage > 0 && !g.groups.replica.empty() ? 1 : 0);
  const double zero = 2.0 * calls * l.ranks;
  // 200 B per all-to-all or ZeRO flow built (its task, dependencies and successors, as reserved),
  // 400 per ring send (each behind a chain of compute blocks), compute tasks per class and module
  // on top: fitted to Engine::memory_bytes, the engine's peak, over the test suite's simulations
  // and the 549 of the 2048-node question's top 500, which it exceeds by 1.19-1.64x (bench/README.md).
  const double m = fold.members();
  const double flows = (layers * (a2a + zero + ring) + others * zero) / m;
  const double bytes = (layers * (200 * (a2a + zero) + 400 * ring) + others * 200 * zero) / m +
                       (layers + others) * 3072.0 * fold.classes();
  const int links = fold.folded() ? fold.link_classes() : g.net.topo.link_count();
  // Measured over a 2048-GPU plan's layouts: 1.12 tasks per all-to-all or ZeRO flow (the calls'
  // entry and exit tasks), up to 4.5 per ring send (its blocks' compute); compute per class.
  const double tasks = (layers * (1.25 * (a2a + zero) + 5 * ring) + others * 1.25 * zero) / m +
                       (layers + others) * 32.0 * fold.classes();
  return {flows, tasks, bytes + 64.0 * links};
}

// Refuses, before any is built, a run whose engine would hold more than the budget.
void check_host_memory(const Run& run, Strategy strategy, double budget_bytes) {
  const StrategyGraph g = strategy_graph(run, strategy);
  const EngineEstimate e = engine_estimate(run, g);
  if (e.bytes <= budget_bytes) return;
  const RankFold& fold = g.net.choice.fold;
  char flows[32];
  std::snprintf(flows, sizeof flows, "%.3g", e.flows);
  const std::string engine = fold.folded() ? "the class engine (" + std::to_string(fold.classes()) + " classes of " +
                                                 std::to_string(run.config.gpus) + " ranks)"
                                           : "the full engine (all " + std::to_string(run.config.gpus) + " ranks)";
  throw InputError("", 0, "--sim-memory",
                   "simulating " + std::string(to_string(strategy)) + " with " + engine + " would build about " + flows +
                       " flows and hold about " + format_bytes(e.bytes) + " of host memory, more than the " +
                       format_bytes(budget_bytes) +
                       " allowed; use fewer --nodes or --gpus, --engine auto (alike ranks fold into classes; "
                       "stragglers and jitter forbid it), a smaller --layers-simulated, or raise --sim-memory");
}

// The ZeRO plan of the micro-steps before the accumulation boundary where they are a graph of
// their own: under ZeRO-0/1 they reduce nothing (ZeroPlan::reduce_gradients); none otherwise.
std::optional<ZeroPlan> accumulating_zero(const Run& run) {
  if (run.zero.stage > 1 || run.config.accumulation <= 1) return std::nullopt;
  ZeroPlan local = run.zero;
  local.reduce_gradients = false;
  return local;
}

// An engine on g's fold, its links slowed as asked, with room for g's step graph of `layers` layers.
Engine sized_engine(const Run& run, const StrategyGraph& g, int layers) {
  std::vector<double> capacities = link_capacities(g.net.topo);
  for (int l : run.slow_links) capacities[l] /= run.config.stragglers.slow_link_factor;
  Engine engine(g.net.choice.fold.quotient_capacities(capacities));
  // Room for the estimated graph up front: grown by doubling, the arrays were copied into fresh
  // pages whose zeroing by the kernel took a third of a 16,384-GPU step's wall (bench/README.md).
  // Dependencies: 4 per flow (both sides' calls), 2 per other task. Not the hops: a call's
  // repeats share its first two calls' stored paths, so they grow with the distinct calls, not
  // the flows (each all-to-all's first call reserves its own, add_collectives).
  const EngineEstimate expected = engine_estimate(run, g, layers);
  engine.reserve(std::size_t(expected.tasks), std::size_t(expected.flows), 0,
                 std::size_t(4 * expected.flows + 2 * expected.tasks));
  // No room for the flows transferring at once: a step's calls take turns, so they are a few
  // percent of its flows (at most 254 K of 10.5 M on 2048 nodes of strided BASP, an eighth of a
  // layer's), and those arrays grow by doubling.
  engine.expect_concurrent_flows(0);
  return engine;
}

// Builds one strategy's step graph on its own engine, runs it and reduces it to the report's figures.
StrategyResult run_strategy(const Run& run, Strategy strategy, TraceWriter* trace, int run_index) {
  const auto t0 = std::chrono::steady_clock::now();
  const int ranks = run.config.gpus;
  // The step's layers, chosen on its own fold; the accumulating micro-steps build as many.
  auto step_layers = [&](const StrategyGraph& g) { return layers_to_simulate(run, g.layout, g.net.choice.fold); };
  int layers = 0;
  // Under ZeRO-0/1 the micro-steps before the accumulation boundary reduce nothing (ZeroPlan::
  // reduce_gradients): they are a graph of their own, without ZeRO calls, folded on its own
  // traffic, run first and gone before the step's is built.
  std::optional<double> accumulating_s;
  std::optional<EngineUse> accumulating_engine;
  double accumulating_bytes = 0;
  if (const std::optional<ZeroPlan> local = accumulating_zero(run)) {
    layers = step_layers(strategy_graph(run, strategy));
    const StrategyGraph a = strategy_graph(run, strategy, false);
    Router& router = run.cache.router(a.net.topo);
    Engine engine = sized_engine(run, a, layers);
    const StepTasks tasks = build_step(engine, router, a.net.topo, a.net.choice.fold, a.layout, a.costs, run.model,
                                       run.config.checkpointing, *local, a.groups, layers, nullptr, run.speed);
    engine.run();
    accumulating_s = step_times(engine, tasks, run.model.layers, layers).gradients_s;
    accumulating_bytes = double(engine.memory_bytes());
    accumulating_engine = a.net.choice.use;
  }
  const StrategyGraph g = strategy_graph(run, strategy);
  StrategyResult res;
  res.strategy = strategy;
  res.layout = g.layout;
  const Topology& net = g.net.topo;
  const RankFold& fold = g.net.choice.fold;
  res.engine = g.net.choice.use;
  res.accumulating_engine = accumulating_engine;
  if (run.speed && run.config.engine != EngineMode::full) {
    res.engine.why = "stragglers or jitter make the ranks differ: every rank is simulated";
    if (res.accumulating_engine) res.accumulating_engine->why = res.engine.why;
  }
  res.layers_simulated = layers > 0 ? layers : step_layers(g);
  res.engine_bytes = accumulating_bytes;
  Router& router = run.cache.router(g.net.topo);
  Engine engine = sized_engine(run, g, res.layers_simulated);
  engine.publish_progress(run.options.engine_progress);
  const StepTasks tasks = build_step(engine, router, net, fold, res.layout, g.costs, run.model,
                                     run.config.checkpointing, run.zero, g.groups, res.layers_simulated, nullptr,
                                     run.speed);
  if (trace) {  // the representative of each of the busiest links' classes
    std::vector<int> ids;
    for (const LinkUse& u : busiest_links(net, fold.expand_links(engine.link_bytes()),
                                          std::max(run.options.busiest_links, 16), 0.0))
      ids.push_back(fold.engine_link(u.link));
    std::sort(ids.begin(), ids.end());
    ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
    engine.watch_links(ids);
  }
  res.stats = fold.expand_stats(engine.run());
  res.engine_bytes = std::max(res.engine_bytes, double(engine.memory_bytes()));

  const StepTimes times = step_times(engine, tasks, run.model.layers, res.layers_simulated);
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
  if (trace) {
    const int traced = run.options.trace_ranks > 0 ? std::min(run.options.trace_ranks, ranks) : ranks;
    trace->add_run(to_string(strategy), run_index, net, engine, tasks, traced, fold);
  }
  res.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return res;
}



// `given` null: the calibration the config names (or the topology's). `check_job`: the job and
// its strategies' layouts are checked before the cluster is built, so that bad input on a huge
// cluster fails at once (a node count and GPUs per node are all they need).
StepSetup prepare(const StepConfig& in, const Calibration* given, bool check_job = false) {
  StepSetup setup;
  StepReport& rep = setup.report;
  rep.config = in;
  StepConfig& c = rep.config;
  TopologyFile file = read_topology_file(in.topology, in.overrides, gpu_kind_names());
  const std::string own = file.templ ? file.templ->calibration : file.explicit_topology.calibration;
  if (given) {
    rep.calibration = *given;
    c.calibration = given->name;
  } else {
    if (c.calibration.empty()) c.calibration = own.empty() ? "none" : own;
    rep.calibration = load_calibration(c.calibration);
  }
  rep.model = load_model(in.model);
  if (check_job) {
    const Topology& e = file.explicit_topology;
    const int per_node = file.templ ? file.templ->node.gpus : e.gpus_per_node;
    StepConfig job = c;
    resolve_job(job, file.templ ? file.templ->nodes * per_node : static_cast<int>(e.gpus.size()),
                file.templ ? file.templ->name : e.name);
    for (Strategy s : job.strategies) make_layout(job, rep.model, s, job.gpus, per_node);
  }
  rep.cluster = std::make_shared<const ClusterBuilds>(
      std::move(file), [cal = rep.calibration](Topology& t) { apply_calibration(t, cal); });
  rep.gpu_kind = rep.topology().gpu_kind;
  setup.gpu = lookup_gpu_kind(rep.gpu_kind);
  return setup;
}

StepReport simulate_under(const StepConfig& in, const Calibration* given, const StepOptions& options) {
  StepSetup setup = prepare(in, given, true);
  StepReport& rep = setup.report;
  StepConfig& c = rep.config;
  resolve_job(c, rep);
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
  // The layouts were checked before the cluster was built (prepare), so bad input failed fast.
  const Run run{*rep.cluster, rep.model, *setup.gpu, cost, c, zero, options, cache, parts,
                speed ? &*speed : nullptr, slow};
  std::optional<TraceWriter> trace;
  if (options.trace) trace.emplace(*options.trace);
  std::optional<double> ulysses_step;
  // The Ulysses baseline, when the job does not list Ulysses and Ulysses is possible for it at all.
  bool baseline = std::find(c.strategies.begin(), c.strategies.end(), Strategy::ulysses) == c.strategies.end();
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

std::optional<double> cgroup_memory_limit_bytes(const std::string& v2_max, const std::string& v1_limit) {
  for (const std::string& path : {v2_max, v1_limit}) {
    std::ifstream in(path);
    std::string text;
    if (!(in >> text)) continue;
    if (text == "max") return std::nullopt;  // v2: no limit
    char* end = nullptr;
    const double bytes = std::strtod(text.c_str(), &end);
    // v1 writes "no limit" as the largest page-aligned 64-bit value (about 9.2e18).
    if (end != text.c_str() && *end == '\0' && bytes > 0 && bytes < 1e18) return bytes;
    return std::nullopt;
  }
  return std::nullopt;
}

ZeroPlan zero_plan(const StepConfig& c) {
  const bool overlap = c.zero_overlap_comm == OverlapComm::deepspeed_default ? c.zero == 3
                                                                            : c.zero_overlap_comm == OverlapComm::on;
  return {c.zero, c.zero_group, c.zero_reduce_bucket, c.zero_persistence, c.zero_prefetch, c.zero_max_live,
          c.zero_reuse_distance, overlap};
}

double host_memory_budget_bytes() {
  const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGE_SIZE);
  double bytes = pages > 0 && page > 0 ? double(pages) * double(page) : 8.0 * (1L << 30) / 0.75;  // not reported: 8 GiB
  // In a container the cgroup's limit, not the machine's memory, is what the process may use.
  if (const auto limit = cgroup_memory_limit_bytes("/sys/fs/cgroup/memory.max",
                                                   "/sys/fs/cgroup/memory/memory.limit_in_bytes"))
    bytes = std::min(bytes, *limit);
  return 0.75 * bytes;
}

StepReport simulate_step(const StepConfig& in, const StepOptions& options) {
  return simulate_under(in, nullptr, options);
}

StepReport simulate_step(const StepConfig& in, const Calibration& calibration, const StepOptions& options) {
  return simulate_under(in, &calibration, options);
}

StepSetup prepare_step(const StepConfig& config) { return prepare(config, nullptr); }

void resolve_job(StepConfig& c, const StepReport& cluster) {
  resolve_job(c, cluster.gpus(), cluster.topology().name);
}

void resolve_job(StepConfig& c, int available, const std::string& topology) {
  if (c.gpus == 0) c.gpus = available;
  if (c.gpus < 1 || c.gpus > available)
    throw InputError("", 0, "--gpus", std::to_string(c.gpus) + " GPUs asked for; " + topology + " has " +
                                          std::to_string(available) + " (use --nodes to grow a template topology)");
  if (c.sp == 0) c.sp = c.gpus;
  if (c.seq < 1) throw InputError("", 0, "--seq", "must be at least 1 token");
  if (c.zero < 0 || c.zero > 3) throw InputError("", 0, "--zero", "ZeRO stages are 0, 1, 2 and 3");
  if (c.zero_group == 0) c.zero_group = c.gpus;
  if (c.zero_group < 1 || c.gpus % c.zero_group != 0)
    throw InputError("", 0, "--zero-group", std::to_string(c.zero_group) + " does not divide the job's " +
                                                std::to_string(c.gpus) + " GPUs");
  if (c.zero == 0 && c.zero_group != c.gpus)
    throw InputError("", 0, "--zero-group", "ZeRO stage 0 shards nothing; hierarchical sharding needs --zero 1, 2 or 3");
  if (c.zero == 0 && c.zero_overlap_comm != OverlapComm::deepspeed_default)
    throw InputError("", 0, "--zero-overlap-comm",
                     "ZeRO stage 0 has no overlap_comm (DeepSpeed all-reduces its gradients after backward, on the "
                     "compute stream); it needs --zero 1, 2 or 3");
  for (const ZeroSetting& z : zero_settings) {
    const double v = c.*z.field, fallback = StepConfig{}.*z.field;
    if (!(v >= 0) || !std::isfinite(v)) {
      const int exponent = static_cast<int>(std::floor(std::log10(fallback)));
      char shown[32];  // as DeepSpeed's documentation writes it: 5e8
      std::snprintf(shown, sizeof shown, "%ge%d", fallback / std::pow(10.0, exponent), exponent);
      throw InputError("", 0, std::string(z.flag),
                       std::string("must be a number of elements, 0 or more (DeepSpeed's default ") + shown + ")");
    }
  }
  if (c.strategies.empty()) throw InputError("", 0, "--strategy", "name at least one strategy");
  if (c.accumulation < 1) throw InputError("", 0, "--accumulation", "must be at least 1 micro-step");
  const Stragglers& s = c.stragglers;
  if (!(s.compute_jitter >= 0.0 && s.compute_jitter < 1.0))
    throw InputError("", 0, "--compute-jitter", "must be at least 0 and below 1 (factors drawn from [1 - j, 1 + j])");
  for (auto [flag, fraction, factor] : {std::tuple{"--slow-gpus", s.slow_gpu_fraction, s.slow_gpu_factor},
                                        std::tuple{"--slow-links", s.slow_link_fraction, s.slow_link_factor}}) {
    if (!(fraction >= 0.0 && fraction <= 1.0))
      throw InputError("", 0, flag, "the fraction must be between 0 and 1");
    if (!(factor >= 1.0 && factor <= 1e6))
      throw InputError("", 0, flag, "the factor must be between 1 (not slowed) and 1e6");
  }
  if (s.any() && c.engine == EngineMode::classes)
    throw InputError("", 0, "--engine",
                     "classes: stragglers and jitter make the ranks differ; use --engine full or auto");
}


namespace {

// `job` on a Run for one layout of a prepared setup (what basp plan evaluates).
template <class Job>
auto on_setup(const StepSetup& setup, const StepConfig& config, RunCache& cache, Job job) {
  StepConfig c = config;
  resolve_job(c, setup.report);
  const StepReport& rep = setup.report;
  const ZeroPlan zero = zero_plan(c);
  const CostModel cost{rep.model, *setup.gpu, rep.calibration.compute};
  const StepOptions options;
  return job(Run{*rep.cluster, rep.model, *setup.gpu, cost, c, zero, options, cache, use_parts(rep, c)});
}

}  // namespace

StrategyResult simulate_strategy(const StepSetup& setup, const StepConfig& config, Strategy strategy,
                                 RunCache& cache) {
  return on_setup(setup, config, cache, [&](const Run& run) { return run_strategy(run, strategy, nullptr, 0); });
}

double step_lower_bound_s(const StepSetup& setup, const StepConfig& config, Strategy strategy, RunCache& cache) {
  return on_setup(setup, config, cache, [&](const Run& run) {
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
    const std::optional<ZeroPlan> local = accumulating_zero(run);
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

double simulation_memory_bytes(const StepSetup& setup, const StepConfig& config, Strategy strategy,
                               RunCache& cache) {
  return on_setup(setup, config, cache,
                  [&](const Run& run) { return engine_estimate(run, strategy_graph(run, strategy)).bytes; });
}

Router& RunCache::router(const Topology& topo) {
  for (Part& p : parts_)
    if (p.topo.get() == &topo) {
      if (!p.router) p.router = std::make_unique<Router>(topo, true);
      return *p.router;
    }
  if (routed_ != &topo || !router_) {
    router_ = std::make_unique<Router>(topo, true);
    routed_ = &topo;
    routed_part_.reset();
    for (const Pattern& p : patterns_)
      if (p.part.get() == &topo) routed_part_ = p.part;
  }
  return *router_;
}

std::shared_ptr<const Topology> RunCache::part_holding(const ClusterBuilds& cluster, const std::vector<int>& nodes) {
  constexpr std::size_t kept = 2;
  for (const Part& p : parts_)
    if (std::includes(p.nodes.begin(), p.nodes.end(), nodes.begin(), nodes.end())) return p.topo;
  // Grow the latest part while it stays within an eighth of the cluster (or twice what this
  // pattern needs), so that layouts touching nearly the same nodes share one part and its routes.
  std::vector<int> with = nodes;
  if (!parts_.empty()) {
    std::vector<int> both;
    std::set_union(parts_.front().nodes.begin(), parts_.front().nodes.end(), nodes.begin(), nodes.end(),
                   std::back_inserter(both));
    const std::size_t most = std::max<std::size_t>(2 * nodes.size() + 16, cluster.nodes() / 8);
    if (both.size() <= most && static_cast<int>(both.size()) < cluster.nodes()) with = std::move(both);
  }
  auto topo = std::make_shared<const Topology>(build_part(*cluster.file().templ, with, cluster.adjust()));
  parts_.push_front({topo, std::move(with), nullptr});
  if (parts_.size() > kept) parts_.pop_back();
  return topo;
}

RunCache::Network RunCache::network(EngineMode mode, const ClusterBuilds& cluster, int ranks,
                                    std::span<const TrafficGroups> traffic, bool parts) {
  // Folds hold a class per link: patterns are kept while they hold at most this much (at least 4
  // of them). The planner meets a few hundred patterns, in the order of their layouts' bounds.
  constexpr std::size_t kept = 4, kept_bytes = std::size_t(256) << 20;
  if (cluster_ != &cluster) {
    patterns_.clear();
    parts_.clear();
    whole_lines_ = std::make_shared<TransferLineStore>();
    cluster_ = &cluster;
  }
  auto found = [&](Pattern& p) { return Network{p.part ? *p.part : cluster.whole(), p.choice, *p.bounds}; };
  auto same = [&](const Pattern& p) {
    if (p.mode != mode || p.ranks != ranks || p.parts != parts || p.traffic.size() != traffic.size()) return false;
    for (std::size_t t = 0; t < traffic.size(); ++t)
      if (p.traffic[t].first != traffic[t].traffic || p.traffic[t].second != *traffic[t].groups) return false;
    return true;
  };
  for (auto it = patterns_.begin(); it != patterns_.end(); ++it)
    if (same(*it)) {
      if (it != patterns_.begin()) std::rotate(patterns_.begin(), it, std::next(it));
      return found(patterns_.front());
    }
  // A topology's call lines are kept for all its patterns while they hold at most kept_bytes;
  // past that, new patterns start a fresh store (the older patterns keep theirs while they last).
  auto store = [&](std::shared_ptr<TransferLineStore>& lines) {
    if (lines->bytes() > kept_bytes) lines = std::make_shared<TransferLineStore>();
    return std::make_unique<CallBounds>(lines);
  };
  Pattern p{mode, ranks, parts, {}, nullptr, {}, nullptr};
  std::optional<PartPlan> plan;
  if (parts && mode != EngineMode::full && cluster.skeleton() && ranks == cluster.gpus())
    plan = plan_part(mode, *cluster.file().templ, *cluster.skeleton(), ranks, traffic, &skeleton_moves);
  if (plan) {
    p.part = part_holding(cluster, plan->nodes);
    p.choice = fold_on_part(std::move(plan->on_skeleton), *cluster.skeleton(), *p.part);
    for (Part& part : parts_)
      if (part.topo == p.part) p.bounds = store(part.lines);
  } else {
    p.choice = choose_fold(mode, cluster.whole(), ranks, traffic, &moves);
    p.bounds = store(whole_lines_);
  }
  for (const TrafficGroups& t : traffic) p.traffic.push_back({t.traffic, *t.groups});
  patterns_.push_front(std::move(p));
  std::size_t held = 0, count = 0;
  for (auto it = patterns_.begin(); it != patterns_.end(); ++it, ++count) {
    held += it->bytes();
    if (count >= kept && held > kept_bytes) {
      patterns_.erase(it, patterns_.end());
      break;
    }
  }
  return found(patterns_.front());
}

int RunCache::call_period(EngineMode mode, const ClusterBuilds& cluster, int ranks, const TrafficGroups& traffic,
                          bool parts) {
  if (mode == EngineMode::full) return ranks;
  if (periods_cluster_ != &cluster) {
    call_periods_.clear();
    periods_cluster_ = &cluster;
  }
  for (auto it = call_periods_.begin(); it != call_periods_.end(); ++it)
    if (it->mode == mode && it->ranks == ranks && it->parts == parts && it->traffic == traffic.traffic &&
        it->groups == *traffic.groups) {
      if (it != call_periods_.begin()) std::rotate(call_periods_.begin(), it, std::next(it));
      return call_periods_.front().period;
    }
  // Classes where the call has a symmetry; the full engine (its period the job's ranks) is no
  // error here, as a faster way to the same bound is only missed.
  const std::vector<TrafficGroups> one{traffic};
  const FoldChoice found =
      parts && cluster.skeleton() && ranks == cluster.gpus()
          ? choose_fold_on_skeleton(EngineMode::automatic, *cluster.skeleton(), rank_places(*cluster.file().templ),
                                    ranks, one, &skeleton_moves)
          : choose_fold(EngineMode::automatic, cluster.whole(), ranks, one, &moves);
  const int period = found.use.engine == "classes" ? found.fold.period : ranks;
  // Each keeps a copy of its groups (a few MB at 131,072 ranks); a layout asks for at most 4,
  // but the planner's calls recur over many layouts: with 16 kept, the 131,072-GPU question
  // took 15 % more CPU (bench/README.md).
  constexpr std::size_t kept = 64;
  call_periods_.push_front({mode, ranks, parts, traffic.traffic, *traffic.groups, period});
  if (call_periods_.size() > kept) call_periods_.pop_back();
  return period;
}

std::size_t RunCache::Pattern::bytes() const {
  std::size_t b = sizeof(Pattern) + bounds->bytes();
  for (const auto& [kind, groups] : traffic)
    for (const auto& g : groups) b += sizeof(g) + g.size() * sizeof(int);
  const RankFold& f = choice.fold;
  return b + f.link_class.size() * sizeof(int) + f.class_link.size() * sizeof(int) +
         f.link_load.size() * sizeof(std::uint32_t);
}

}  // namespace basp
