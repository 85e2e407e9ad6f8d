// Runs each strategy's step graph on its own engine (same calibrated topology) and reduces the
// per-rank timelines to the report's figures.
#include "step_run.hpp"

#include "cost_model.hpp"
#include "gpu_kind.hpp"
#include "input_error.hpp"
#include "routing.hpp"
#include "trace.hpp"
#include "workload.hpp"

#include <algorithm>
#include <chrono>
#include <numeric>

namespace basp {
namespace {

using Interval = std::pair<double, double>;

// Sorted, disjoint union of intervals.
std::vector<Interval> merged(std::vector<Interval> v) {
  std::sort(v.begin(), v.end());
  std::vector<Interval> out;
  for (const Interval& i : v) {
    if (!out.empty() && i.first <= out.back().second)
      out.back().second = std::max(out.back().second, i.second);
    else
      out.push_back(i);
  }
  return out;
}

double length(const std::vector<Interval>& v) {
  double sum = 0;
  for (auto [a, b] : v) sum += b - a;
  return sum;
}

// Length of the intersection of two sorted, disjoint unions.
double overlap(const std::vector<Interval>& a, const std::vector<Interval>& b) {
  double sum = 0;
  for (std::size_t i = 0, j = 0; i < a.size() && j < b.size();) {
    sum += std::max(0.0, std::min(a[i].second, b[j].second) - std::max(a[i].first, b[j].first));
    if (a[i].second < b[j].second) ++i; else ++j;
  }
  return sum;
}

std::vector<LinkUse> busiest(const Topology& topo, const std::vector<double>& bytes, int count, double step_s) {
  std::vector<int> ids(bytes.size());
  std::iota(ids.begin(), ids.end(), 0);
  const std::size_t n = std::min<std::size_t>(std::max(count, 0), ids.size());
  std::partial_sort(ids.begin(), ids.begin() + n, ids.end(), [&](int a, int b) {
    return bytes[a] != bytes[b] ? bytes[a] > bytes[b] : a < b;
  });
  std::vector<LinkUse> out;
  for (std::size_t i = 0; i < n && bytes[ids[i]] > 0; ++i)
    out.push_back({ids[i], bytes[ids[i]], step_s > 0 ? bytes[ids[i]] / (topo.link(ids[i]).capacity_Bps * step_s) : 0});
  return out;
}

struct Run {
  const Topology& topo;
  const ModelSpec& model;
  const GpuKind& gpu;
  const CostModel& cost;
  const StepConfig& config;
  const ZeroPlan& zero;
  const StepOptions& options;
};

StrategyResult run_strategy(const Run& run, Strategy strategy, TraceWriter* trace, int run_index) {
  const auto t0 = std::chrono::steady_clock::now();
  const int ranks = run.config.gpus;
  StrategyResult res;
  res.strategy = strategy;
  res.layout = make_layout(run.config, run.model, strategy, ranks, run.topo.gpus_per_node);
  const StepCosts costs = step_costs(run.cost, res.layout, run.zero);
  const int layers = run.model.layers;
  int window = layers;
  if (run.config.layers_simulated > 0) {
    window = std::min(layers, std::max(run.config.layers_simulated, 5));
  } else {
    const double per_layer = flows_per_layer(res.layout, run.config.checkpointing, run.topo);
    if (per_layer * layers > run.config.flow_budget)
      window = std::min(layers, std::max(5, static_cast<int>(run.config.flow_budget / per_layer)));
  }
  res.layers_simulated = window;
  Engine engine(link_capacities(run.topo));
  Router router(run.topo);
  const StepTasks tasks = build_step(engine, router, run.topo, res.layout, costs, run.model,
                                     run.config.checkpointing, run.zero, window);
  const int watched = trace ? std::max(run.options.busiest_links, 16) : 0;
  if (trace) {
    std::vector<int> ids;
    for (const LinkUse& u : busiest(run.topo, engine.link_bytes(), watched, 0.0)) ids.push_back(u.link);
    engine.watch_links(ids);
  }
  res.stats = engine.run();

  // Per rank: totals over the graph, and what the middle layer of a window adds (its spans, and
  // the time from its start to the next layer's in forward and in backward).
  const int mid = window / 2;
  const bool extrapolate = window < layers;
  struct Figures {
    double compute = 0, a2a = 0, a2a_exposed = 0, zero = 0, zero_exposed = 0, period = 0;
  } total, middle;
  for (TaskId t : tasks.end) res.step_s = std::max(res.step_s, engine.finish_time(t));
  std::vector<Interval> compute, exchange, zero;
  // ZeRO time is summed over calls (gathers and reductions run on two streams and may overlap),
  // so that it adds up over layers; its exposed part is that of their union.
  auto add = [](Figures& f, const std::vector<Interval>& c, const std::vector<Interval>& cx,
                const std::vector<Interval>& x, const std::vector<Interval>& z, double compute_s, double zero_s) {
    f.compute += compute_s;
    f.a2a += length(x);
    f.a2a_exposed += length(x) - overlap(x, c);
    f.zero += zero_s;
    f.zero_exposed += length(z) - overlap(z, cx);
  };
  for (int r = 0; r < ranks; ++r) {
    compute.clear();
    exchange.clear();
    zero.clear();
    std::vector<Interval> mid_exchange, mid_zero;
    double mid_compute = 0, zero_calls = 0, mid_zero_calls = 0;
    double first[2][3] = {{-1, -1, -1}, {-1, -1, -1}};  // [forward, later][layer mid-1, mid, mid+1]
    for (const Span& s : tasks.spans[r]) {
      const Interval i{engine.ready_time(s.first), engine.finish_time(s.last)};
      const SpanKind kind = span_kind(s.label);
      switch (kind) {
        case SpanKind::compute: compute.push_back(i); break;
        case SpanKind::sp_comm: exchange.push_back(i); break;
        default:
          zero.push_back(i);
          zero_calls += i.second - i.first;
          break;
      }
      if (!extrapolate || s.layer < mid - 1 || s.layer > mid + 1) continue;
      double& start = first[s.pass == 0 ? 0 : 1][s.layer - mid + 1];
      if (start < 0 && kind != SpanKind::zero_gather) start = i.first;
      if (s.layer != mid) continue;
      if (kind == SpanKind::compute) mid_compute += i.second - i.first;
      else if (kind == SpanKind::sp_comm) mid_exchange.push_back(i);
      else {
        mid_zero.push_back(i);
        mid_zero_calls += i.second - i.first;
      }
    }
    const auto c = merged(compute), x = merged(exchange), z = merged(zero);
    std::vector<Interval> busy = compute;
    busy.insert(busy.end(), exchange.begin(), exchange.end());
    const auto cx = merged(std::move(busy));
    add(total, c, cx, x, z, length(c), zero_calls);
    if (extrapolate) {
      add(middle, c, cx, merged(std::move(mid_exchange)), merged(std::move(mid_zero)), mid_compute, mid_zero_calls);
      middle.period += (first[0][2] - first[0][1]) + (first[1][0] - first[1][1]);
    }
  }
  const double missing = layers - window;
  res.step_s += missing * middle.period / ranks;
  res.compute_s = (total.compute + missing * middle.compute) / ranks;
  res.a2a_s = (total.a2a + missing * middle.a2a) / ranks;
  res.a2a_exposed_s = (total.a2a_exposed + missing * middle.a2a_exposed) / ranks;
  res.zero_comm_s = (total.zero + missing * middle.zero) / ranks;
  res.zero_exposed_s = (total.zero_exposed + missing * middle.zero_exposed) / ranks;
  res.a2a_share = res.step_s > 0 ? res.a2a_s / res.step_s : 0;
  res.tokens_per_s = res.layout.sequences * double(run.config.seq) / res.step_s;
  res.model_flops = costs.model_flops;
  res.mfu = costs.model_flops / (res.step_s * run.gpu.peak_bf16_flops);
  res.memory = memory_per_gpu(run.model, res.layout, run.zero, run.config.checkpointing);
  res.fits = res.memory.total() <= run.gpu.hbm_bytes;
  res.busiest_links = busiest(run.topo, engine.link_bytes(), run.options.busiest_links, res.stats.end_s);
  for (int id = 0; id < run.topo.link_count(); ++id)
    res.class_bytes[static_cast<int>(run.topo.link(id).cls)] += engine.link_bytes()[id];
  if (trace) {
    const int traced = run.options.trace_ranks > 0 ? std::min(run.options.trace_ranks, ranks) : ranks;
    trace->add_run(to_string(strategy), run_index, run.topo, engine, tasks, traced);
  }
  res.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return res;
}

}  // namespace

namespace {
// `given` null: the calibration the config names (or the topology's).
StepReport simulate_under(const StepConfig& in, const Calibration* given, const StepOptions& options) {
  StepReport rep;
  rep.config = in;
  StepConfig& c = rep.config;
  rep.topology = load_topology(in.topology, in.overrides);
  if (given) {
    rep.calibration = *given;
    c.calibration = given->name;
  } else {
    if (c.calibration.empty())
      c.calibration = rep.topology.calibration.empty() ? "none" : rep.topology.calibration;
    rep.calibration = load_calibration(c.calibration);
  }
  apply_calibration(rep.topology, rep.calibration);
  rep.model = load_model(in.model);
  rep.gpu_kind = rep.topology.gpu_kind;
  const GpuKind& gpu = *lookup_gpu_kind(rep.gpu_kind);

  const int available = static_cast<int>(rep.topology.gpus.size());
  if (c.gpus == 0) c.gpus = available;
  if (c.gpus < 1 || c.gpus > available)
    throw InputError("", 0, "--gpus", std::to_string(c.gpus) + " GPUs asked for; " + rep.topology.name + " has " +
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
  if (c.strategies.empty()) throw InputError("", 0, "--strategy", "name at least one strategy");
  const ZeroPlan zero{c.zero, c.zero_group};
  const CostModel cost{rep.model, gpu, rep.calibration.compute};
  const Run run{rep.topology, rep.model, gpu, cost, c, zero, options};

  // Every layout is checked before anything is simulated, so bad input fails fast.
  for (Strategy s : c.strategies) make_layout(c, rep.model, s, c.gpus, rep.topology.gpus_per_node);
  std::optional<TraceWriter> trace;
  if (options.trace) trace.emplace(*options.trace);
  std::optional<double> ulysses_step;
  for (std::size_t i = 0; i < c.strategies.size(); ++i) {
    rep.results.push_back(run_strategy(run, c.strategies[i], trace ? &*trace : nullptr, int(i)));
    if (c.strategies[i] == Strategy::ulysses) ulysses_step = rep.results.back().step_s;
  }
  if (!ulysses_step) {
    try {  // the baseline, when Ulysses is possible at all for this job
      ulysses_step = run_strategy(run, Strategy::ulysses, nullptr, 0).step_s;
    } catch (const InputError&) {
    }
  }
  if (ulysses_step)
    for (StrategyResult& r : rep.results) r.speedup_vs_ulysses = *ulysses_step / r.step_s;
  if (trace) trace->finish();
  return rep;
}
}  // namespace

StepReport simulate_step(const StepConfig& in, const StepOptions& options) {
  return simulate_under(in, nullptr, options);
}

StepReport simulate_step(const StepConfig& in, const Calibration& calibration, const StepOptions& options) {
  return simulate_under(in, &calibration, options);
}

std::string_view to_string(Strategy s) {
  switch (s) {
    case Strategy::ulysses: return "ulysses";
    case Strategy::basp: return "basp";
    case Strategy::sp_dp: return "sp-dp";
    case Strategy::ring: return "ring";
    case Strategy::usp: return "usp";
  }
  return "?";
}

std::optional<Strategy> parse_strategy(std::string_view name) {
  for (Strategy s : {Strategy::ulysses, Strategy::basp, Strategy::sp_dp, Strategy::ring, Strategy::usp})
    if (to_string(s) == name) return s;
  return std::nullopt;
}

}  // namespace basp
