// Enumerates a job's layouts (SP degree, micro-batch, grouping and placement, DP and gradient
// accumulation, ZeRO stage and shard group, checkpointing), prunes, simulates in parallel, ranks.
#include "plan.hpp"

#include "input_error.hpp"
#include "cost_model.hpp"
#include "memory_model.hpp"
#include "step_graph.hpp"
#include "units.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <limits>
#include <mutex>
#include <queue>
#include <set>
#include <sstream>
#include <thread>

namespace basp {
namespace {

std::vector<long> divisors(long n) {  // ascending; up to sqrt(n) steps, as n may be a huge batch
  std::vector<long> low, high;
  for (long d = 1; d * d <= n; ++d)
    if (n % d == 0) {
      low.push_back(d);
      if (d != n / d) high.push_back(n / d);
    }
  low.insert(low.end(), high.rbegin(), high.rend());
  return low;
}

// Two layouts with equal keys build the same step graph (e.g. SP×DP and Ulysses of the same
// degree, BASP with one group and Ulysses): only the first is simulated. The key is the layout's
// part (its groups hashed) and the config's (ZeRO, checkpointing): a strategy shape's layout,
// which ZeRO and checkpointing do not change, is keyed once for all of its configs.
std::string layout_shape_key(const Layout& l) {
  std::uint64_t h = 0xcbf29ce484222325ULL;
  auto mix = [&](long v) { h = (h ^ std::uint64_t(v)) * 0x100000001b3ULL; };
  for (const auto* groups : {&l.a2a_groups, &l.ring_groups}) {
    mix(-1);
    for (const auto& g : *groups) {
      mix(-2);
      for (int r : g) mix(r);
    }
  }
  std::ostringstream k;
  k.precision(17);
  k << l.sp << ' ' << l.a2a_size << ' ' << l.ring_size << ' ' << l.tokens_per_rank << ' ' << l.sequences << ' '
    << l.attention_heads << ' ' << l.attention_blocks << ' ' << l.block_queries << ' ' << l.block_keys << ' '
    << l.q_bytes << ' ' << l.kv_bytes << ' ' << l.ring_kv_bytes << ' ' << h;
  return k.str();
}

std::string layout_key(const std::string& shape_key, const StepConfig& c) {
  return shape_key + ' ' + std::to_string(c.zero) + ' ' + std::to_string(c.zero_group) + ' ' +
         std::to_string(int(c.checkpointing));
}

std::string layout_key(const Layout& l, const StepConfig& c) { return layout_key(layout_shape_key(l), c); }

// Micro-batches beyond what `basp simulate --batch` accepts are not proposed.
constexpr long max_batch = 1L << 20;

// The configs of one strategy before the job-wide choices (ZeRO, checkpointing).
std::vector<StepConfig> strategy_shapes(const PlanQuestion& q, Strategy s, int gpus) {
  std::vector<StepConfig> out;
  StepConfig c = q.job;
  c.gpus = gpus;
  c.strategies = {s};
  for (long n : divisors(gpus)) {
    const long dp = gpus / n;
    c.sp = static_cast<int>(n);
    if (s == Strategy::sp_dp) {
      // Ulysses of degree K = N with B = 1; replicas hold replica_batch sequences each.
      if (q.global_batch % dp != 0) continue;
      for (long rb : divisors(q.global_batch / dp)) {
        if (rb > max_batch) break;
        c.batch = 1;
        c.replica_batch = static_cast<int>(rb);
        out.push_back(c);
      }
      continue;
    }
    c.replica_batch = 1;
    if (q.global_batch % dp != 0) continue;
    for (long b : divisors(q.global_batch / dp)) {
      if (b > max_batch) break;
      c.batch = static_cast<int>(b);
      if (s == Strategy::basp) {
        if (n % b != 0) continue;
        c.placement = Placement::contiguous;
        out.push_back(c);
        if (b > 1 && n / b > 1) {
          c.placement = Placement::strided;
          out.push_back(c);
        }
      } else if (s == Strategy::usp) {
        for (long u : divisors(n)) {
          if (u == 1 || u == n) continue;  // plain ring and plain Ulysses
          c.ulysses_degree = static_cast<int>(u);
          out.push_back(c);
        }
        c.ulysses_degree = 0;
      } else {
        out.push_back(c);
      }
    }
  }
  return out;
}

// What a micro-step cannot beat: the compute stream runs its compute tasks and its all-to-all
// calls one after another (build_step). A call takes at least its launch and per-peer overheads,
// then its flows start, and all that a rank sends, (K-1)/K of its buffer, leaves its GPU through
// links of `gpu_out_Bps` in all, while it copies its own 1/K. Ring sends overlap attention, but
// they run one after another, each at least its launch and per-peer overheads, and the last
// block's attention waits for the last send. ZeRO is counted as free (its calls, on their own
// streams or, without overlap_comm, on the compute stream, only add to the step). With
// gradient accumulation, the micro-steps before the last end before their optimizer, the last
// compute task.
double global_batch_bound_s(const CostModel& cost, const Layout& layout, const ZeroPlan& zero, bool checkpointing,
                            int layers, const SoftwareCosts& software, double gpu_out_Bps, long accumulation) {
  double a2a = 0.0;
  if (layout.a2a) {
    const double k = layout.a2a_size;
    auto call = [&](double bytes) {
      const double copy = software.local_copy_Bps > 0.0 ? bytes / k / software.local_copy_Bps : 0.0;
      return software.launch_s + software.per_peer_s * (k - 1) + std::max(bytes * (k - 1) / k / gpu_out_Bps, copy);
    };
    // Forward (and recomputation): Q, K, V, O; backward: dO, dQ, dK, dV.
    const double pass = 2 * call(layout.q_bytes) + 2 * call(layout.kv_bytes);
    a2a = layers * pass * (checkpointing ? 3 : 2);
  }
  const StepCosts c = step_costs(cost, layout, zero);
  const double steps = layout.ring_size > 1 ? layout.ring_size : 1;
  const double send = software.launch_s + software.per_peer_s;  // a send/recv call's overheads
  auto attention = [&](double block) { return std::max(steps * block, (steps - 1) * send + block); };
  const double forward =
      c.pre_attention[0].time_s + attention(c.attention_block[0].time_s) + c.post_attention[0].time_s;
  const double backward =
      c.post_attention[1].time_s + attention(c.attention_block[1].time_s) + c.pre_attention[1].time_s;
  const double gradients = c.embedding[0].time_s + layers * forward + c.lm_head[0].time_s + c.lm_head[1].time_s +
                           layers * ((checkpointing ? forward : 0.0) + backward) + c.embedding[1].time_s + a2a;
  return double(accumulation) * gradients + c.optimizer.time_s;
}

// The most a GPU of the topology can send at once: the sum of its outgoing links.
double max_gpu_out_Bps(const Topology& topo) {
  std::vector<double> out(boost::num_vertices(topo.graph), 0.0);
  for (int id = 0; id < topo.link_count(); ++id) out[topo.link(id).from] += topo.link(id).capacity_Bps;
  double most = 0.0;
  for (VertexId g : topo.gpus) most = std::max(most, out[g]);
  return most;
}

// Runs job(k, thread) for every k on `threads` threads, each job once the estimates of those
// running leave room for its own `need` within `budget` (or none runs): the first such job in
// order. A thread left with no job to start while others still run calls idle(thread), one
// small piece of work at a time, until it returns false or none runs. Rethrows the first error in
// k order once all have run (an error of `idle` at once).
void within_memory(int threads, const std::vector<double>& need, double budget,
                   const std::function<void(std::size_t, int)>& job,
                   const std::function<bool(int)>& idle = nullptr) {
  const std::size_t count = need.size();
  std::vector<std::exception_ptr> errors(count);
  std::vector<char> started(count, 0);
  std::size_t waiting = count, running = 0;
  bool idle_done = !idle;
  std::exception_ptr idle_error;
  double in_use = 0;  // sums of the estimates: whole bytes, so it returns to 0 exactly
  std::mutex lock;
  std::condition_variable freed;
  auto work = [&](int t) {
    for (;;) {
      std::size_t k = count;
      {
        std::unique_lock<std::mutex> hold(lock);
        for (;;) {
          if (waiting == 0 && (running == 0 || idle_done)) return;
          if (waiting == 0) break;
          for (std::size_t j = 0; j < count && k == count; ++j)
            if (!started[j] && (in_use == 0 || in_use + std::ceil(need[j]) <= budget)) k = j;
          if (k < count) break;
          freed.wait(hold);
        }
        if (k < count) {
          started[k] = 1;
          --waiting;
          ++running;
          in_use += std::ceil(need[k]);
        }
      }
      if (k == count) {  // every job has started, some still run: meanwhile, the idle work
        bool more = false;
        try {
          more = idle(t);
        } catch (...) {
          std::lock_guard<std::mutex> hold(lock);
          if (!idle_error) idle_error = std::current_exception();
        }
        if (!more) {
          std::lock_guard<std::mutex> hold(lock);
          idle_done = true;
        }
        continue;
      }
      try {
        job(k, t);
      } catch (...) {
        errors[k] = std::current_exception();
      }
      {
        std::lock_guard<std::mutex> hold(lock);
        in_use -= std::ceil(need[k]);
        --running;
      }
      freed.notify_all();
    }
  };
  std::vector<std::thread> pool;
  const int spawned = idle ? threads : std::min<int>(threads, int(count));
  for (int t = 1; t < spawned; ++t) pool.emplace_back(work, t);
  work(0);
  for (std::thread& t : pool) t.join();
  if (idle_error) std::rethrow_exception(idle_error);
  for (const std::exception_ptr& e : errors)
    if (e) std::rethrow_exception(e);
}

}  // namespace

std::vector<PlanCandidate> enumerate_plans(const PlanQuestion& q, const StepSetup& setup, int gpus,
                                           double memory_limit_bytes, std::map<std::string, int>& pruned) {
  const StepReport& rep = setup.report;
  const int per_node = rep.topology().gpus_per_node;
  const CostModel cost{rep.model, *setup.gpu, rep.calibration.compute};
  const double gpu_out_Bps = max_gpu_out_Bps(rep.topology());
  std::vector<PlanCandidate> out;
  std::set<std::string> seen;
  for (Strategy s : q.strategies)
    for (StepConfig c : strategy_shapes(q, s, gpus)) {
      // ZeRO: no sharding, or stage 1-3 over the whole job, an SP group or a node.
      std::vector<std::pair<int, int>> zeros{{0, gpus}};
      std::set<int> shard_groups{gpus, c.sp, per_node};
      for (int stage = 1; stage <= 3; ++stage)
        for (auto it = shard_groups.rbegin(); it != shard_groups.rend(); ++it)
          if (*it >= 1 && gpus % *it == 0) zeros.push_back({stage, *it});
      // The layout depends on the shape alone (not on ZeRO or checkpointing): made and keyed once.
      Layout layout;
      try {
        layout = make_layout(c, rep.model, s, gpus, per_node);
      } catch (const InputError& e) {
        pruned["strategy constraint (" + e.field + ")"] += 2 * static_cast<int>(zeros.size());
        continue;
      }
      const std::string shape_key = layout_shape_key(layout);
      for (auto [stage, group] : zeros)
        for (bool checkpointing : {false, true}) {
          c.zero = stage;
          c.zero_group = group;
          c.zero_overlap_comm = stage == 0 ? OverlapComm::deepspeed_default : q.job.zero_overlap_comm;  // none at 0
          c.checkpointing = checkpointing;
          if (!seen.insert(layout_key(shape_key, c)).second) {
            ++pruned["same layout as one listed before"];
            continue;
          }
          const double memory = memory_per_gpu(rep.model, layout, zero_plan(c), checkpointing).total();
          if (memory > memory_limit_bytes) {
            ++pruned["does not fit in memory"];
            continue;
          }
          const long per_step = std::lround(layout.sequences);
          const long accumulation = q.global_batch / per_step;
          StepConfig with = c;
          with.accumulation = accumulation;
          out.push_back({s, with, memory,
                         global_batch_bound_s(cost, layout, zero_plan(c), checkpointing, rep.model.layers,
                                              rep.topology().software, gpu_out_Bps, accumulation)});
        }
    }
  return out;
}

void check_front_within(double front_within) {
  if (!(front_within == 0 || front_within >= 1))  // NaN too
    throw InputError("", 0, "--front-within", "must be 0 (no limit) or at least 1 (times the best plan's time)");
}

PlanReport plan(const PlanQuestion& q) {
  const auto t0 = std::chrono::steady_clock::now();
  if (q.global_batch < 1) throw InputError("", 0, "--global-batch", "must be at least 1 sequence");
  if (q.strategies.empty()) throw InputError("", 0, "--strategy", "name at least one strategy");
  check_front_within(q.front_within);
  PlanReport r;
  r.setup = prepare_step(q.job);
  const StepReport& rep = r.setup.report;
  StepConfig job = q.job;
  resolve_job(job, rep);
  r.gpus = job.gpus;
  r.memory_limit_bytes = q.memory_limit_bytes > 0 ? q.memory_limit_bytes : r.setup.gpu->hbm_bytes;

  std::map<std::string, int> pruned;
  std::vector<PlanCandidate> candidates = enumerate_plans(q, r.setup, r.gpus, r.memory_limit_bytes, pruned);
  for (const auto& [why, n] : pruned) r.enumerated += n;
  r.enumerated += static_cast<int>(candidates.size());
  r.pruned = pruned;
  if (candidates.empty()) {
    const int memory = pruned.count("does not fit in memory") ? pruned.at("does not fit in memory") : 0;
    if (memory > 0)
      throw InputError("", 0, "--memory-limit",
                       "none of the " + std::to_string(memory) + " layouts that reach the global batch fits in " +
                           format_bytes(r.memory_limit_bytes) + " per GPU (more GPUs, a shorter sequence or checkpointing "
                           "may help)");
    throw InputError("", 0, "--global-batch",
                     "no layout of the strategies asked for reaches " + std::to_string(q.global_batch) +
                         " sequences per optimizer step on " + std::to_string(r.gpus) +
                         " GPUs: DP x micro-batch must divide it (DP = GPUs / SP degree)");
  }

  r.simulation_memory_bytes =
      q.simulation_memory_bytes > 0 ? q.simulation_memory_bytes : host_memory_budget_bytes();
  const int threads = std::max(1, q.threads > 0 ? q.threads : int(std::thread::hardware_concurrency()));
  std::vector<RunCache> caches(threads);
  auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); };

  // Layouts are simulated by ascending bound, in batches of a fixed size, in parallel within a
  // batch. Each starts with the simple bound; the critical-path bound is worked out (in slices, in
  // parallel) when a layout comes up, and the layout goes back in line under it: a layout is
  // simulated only once it has the lowest bound of all that are left. After each batch, what
  // cannot beat a simulated plan is left out. Each result lands in its candidate's slot and the
  // slices and batches do not depend on the thread count, so neither does the output.
  std::vector<std::size_t> order(candidates.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return candidates[a].bound_s < candidates[b].bound_s; });
  constexpr std::size_t batch = 16;
  std::vector<StrategyResult> results(candidates.size());
  constexpr char by_itself = 1, shared_simulation = 2;
  std::vector<char> simulated(candidates.size(), 0);  // 0: not, or how
  // A layout is left out when a simulated plan of its own strategy needs no more memory and is
  // no slower than the layout's bound: it can then be neither its strategy's best (the speedups'
  // baseline, for Ulysses) nor on the Pareto front of throughput against memory.
  std::map<Strategy, std::vector<std::pair<double, double>>> simulated_by;  // (memory, time per batch)
  // The `ranked` fastest simulated times (a max-heap): a layout whose bound is above the last of
  // them cannot be among the `ranked` fastest, which are then all simulated.
  std::priority_queue<double> fastest;
  const std::size_t ranked = std::size_t(std::max(1, q.ranked));
  auto outranked = [&](const PlanCandidate& c) { return fastest.size() == ranked && fastest.top() < c.bound_s; };
  auto dominated = [&](const PlanCandidate& c) {
    if (q.exhaustive || !outranked(c)) return false;
    for (auto [memory, time] : simulated_by[c.strategy])
      if (memory <= c.memory_bytes && time <= c.bound_s) return true;
    return false;
  };
  double best_s = std::numeric_limits<double>::infinity();
  // A layout is also left out when its bound is over front_within times the best time and a
  // simulated plan of its strategy is faster than that bound: it can then be neither the best,
  // nor its strategy's best, nor on the Pareto front (which covers plans within that factor).
  const bool front_limited = !q.exhaustive && q.front_within > 0 && std::isfinite(q.front_within);
  auto beyond_front = [&](const PlanCandidate& c) {
    if (!front_limited || !(c.bound_s > q.front_within * best_s) || !outranked(c)) return false;
    for (auto [memory, time] : simulated_by[c.strategy])
      if (time < c.bound_s) return true;  // strictly: a tie could be its strategy's best
    return false;
  };
  std::size_t simulated_count = 0, decided = 0, bounded = 0;
  const std::string beaten = "beaten by a plan of its strategy with no more memory (lower bound)";
  std::ostringstream factor;
  factor << q.front_within;
  const std::string slow = "over " + factor.str() + "x the best plan's time and not its strategy's best (lower bound)";
  const std::string too_big = "its simulation would need more host memory than allowed";
  std::set<std::pair<double, std::size_t>> refined;  // (critical-path bound, candidate)
  auto graph_key = [&](const PlanCandidate& c) {
    StepConfig same = c.config;
    if (same.zero == 2 && same.accumulation == 1 && same.zero_overlap_comm == OverlapComm::on) same.zero = 1;
    const Layout l = make_layout(same, rep.model, c.strategy, r.gpus, rep.topology().gpus_per_node);
    return layout_key(l, same);
  };
  std::map<std::string, std::size_t> simulated_graph;  // step graph -> the layout simulated for it
  std::size_t next = 0;                               // in `order`: the first layout not yet refined
  // A thread with nothing left in a parallel phase works out the critical-path bounds of the
  // layouts next in line ahead of time. A bound is the same whatever cache or thread works it out
  // (a test checks), so this changes no output; it only uses time that was idle. A layout left
  // out before its turn had its bound worked out for nothing.
  // Each layout's critical-path bound and simulation memory estimate, once worked out (ahead of
  // its turn, or in it).
  std::vector<char> worked_out(candidates.size(), 0);
  std::vector<double> path_bound_s(candidates.size()), estimate_bytes(candidates.size());
  std::vector<std::size_t> ahead;  // the layouts next in line whose bounds are not worked out yet
  std::atomic<std::size_t> ahead_taken{0};
  auto line_up_ahead = [&] {
    ahead.clear();
    for (std::size_t j = next; j < order.size() && ahead.size() < 2 * batch; ++j)
      if (!worked_out[order[j]]) ahead.push_back(order[j]);
    ahead_taken = 0;
  };
  auto work_out_bound = [&](std::size_t i, int t) {
    const PlanCandidate& c = candidates[i];
    path_bound_s[i] = step_lower_bound_s(r.setup, c.config, c.strategy, caches[t]);
    estimate_bytes[i] = simulation_memory_bytes(r.setup, c.config, c.strategy, caches[t]);
    worked_out[i] = 1;
  };
  auto bound_one_ahead = [&](int t) {
    const std::size_t k = ahead_taken++;
    if (k >= ahead.size()) return false;
    try {
      work_out_bound(ahead[k], t);
    } catch (...) {
      // Left for its turn, which reports the error where the search would have met it anyway
      // (or never, if the layout is left out first).
    }
    return true;
  };
  while (next < order.size() || !refined.empty()) {
    std::vector<std::size_t> todo;
    while (todo.size() < batch && (next < order.size() || !refined.empty())) {
      const double next_simple =
          next < order.size() ? candidates[order[next]].bound_s : std::numeric_limits<double>::infinity();
      if (!refined.empty() && refined.begin()->first <= next_simple) {
        const std::size_t i = refined.begin()->second;
        refined.erase(refined.begin());
        ++decided;
        if (dominated(candidates[i])) {
          ++r.pruned[beaten];
        } else if (beyond_front(candidates[i])) {
          ++r.pruned[slow];
        } else if (!(candidates[i].simulation_bytes <= r.simulation_memory_bytes)) {  // NaN too
          ++r.pruned[too_big];
          r.not_simulated.push_back(candidates[i]);
        } else {
          todo.push_back(i);
        }
        continue;
      }
      std::vector<std::size_t> slice;
      for (; slice.size() < batch && next < order.size(); ++next) {
        const std::size_t i = order[next];
        if (dominated(candidates[i])) {
          ++decided;
          ++r.pruned[beaten];
        } else if (beyond_front(candidates[i])) {
          ++decided;
          ++r.pruned[slow];
        } else {
          slice.push_back(i);
        }
      }
      // Layouts on one traffic pattern go to one thread: its fold and call bounds, worked out
      // once there, serve them all (each thread's cache would work them out again). A hash that
      // collides only puts two patterns on one thread: no figure depends on where a bound is worked out.
      std::vector<std::vector<std::size_t>> by_pattern;
      std::map<std::uint64_t, std::size_t> pattern_of;
      for (std::size_t i : slice) {
        const auto [it, fresh] = pattern_of.try_emplace(
            traffic_pattern_hash(r.setup, candidates[i].config, candidates[i].strategy), by_pattern.size());
        if (fresh) by_pattern.emplace_back();
        by_pattern[it->second].push_back(i);
      }
      line_up_ahead();
      within_memory(
          threads, std::vector<double>(by_pattern.size(), 0.0), std::numeric_limits<double>::infinity(),
          [&](std::size_t k, int t) {
            for (std::size_t i : by_pattern[k]) {
              if (!worked_out[i]) work_out_bound(i, t);
              candidates[i].bound_s = std::max(candidates[i].bound_s, path_bound_s[i]);
              candidates[i].simulation_bytes = estimate_bytes[i];
            }
          },
          bound_one_ahead);
      bounded += slice.size();
      for (std::size_t i : slice) refined.insert({candidates[i].bound_s, i});
    }
    if (todo.empty()) continue;
    // With overlap_comm on and without accumulation ZeRO-1 and ZeRO-2 differ in memory only (both
    // reduce-scatter gradients from backward hooks and gather the updated weights after the
    // optimizer; with accumulation ZeRO-1's micro-steps before the boundary reduce nothing, and
    // without overlap_comm it has no hooks): a layout whose step graph was simulated already takes
    // that result with its own memory.
    std::vector<std::size_t> to_simulate;
    std::vector<std::pair<std::size_t, std::size_t>> shared;  // (layout, the one simulated)
    for (std::size_t i : todo) {
      const auto [it, fresh] = simulated_graph.try_emplace(graph_key(candidates[i]), i);
      if (fresh) to_simulate.push_back(i);
      else shared.push_back({i, it->second});
    }
    // Largest first, so that a long simulation does not start last and leave the other threads idle.
    std::stable_sort(to_simulate.begin(), to_simulate.end(), [&](std::size_t x, std::size_t y) {
      return candidates[x].simulation_bytes > candidates[y].simulation_bytes;
    });
    std::vector<double> need(to_simulate.size());
    for (std::size_t k = 0; k < need.size(); ++k) need[k] = candidates[to_simulate[k]].simulation_bytes;
    line_up_ahead();
    within_memory(
        threads, need, r.simulation_memory_bytes,
        [&](std::size_t k, int t) {
          const PlanCandidate& c = candidates[to_simulate[k]];
          results[to_simulate[k]] = simulate_strategy(r.setup, c.config, c.strategy, caches[t]);
        },
        bound_one_ahead);
    for (auto [i, from] : shared) {
      const PlanCandidate& c = candidates[i];
      results[i] = results[from];
      results[i].memory = memory_per_gpu(rep.model, results[i].layout, zero_plan(c.config),
                                         c.config.checkpointing);
      results[i].fits = results[i].memory.total() <= r.setup.gpu->hbm_bytes;
      results[i].wall_s = 0.0;
      simulated[i] = shared_simulation;
    }
    for (std::size_t i : todo) {
      if (!simulated[i]) simulated[i] = by_itself;
      const double time = results[i].global_batch_s;
      simulated_by[candidates[i].strategy].push_back({candidates[i].memory_bytes, time});
      best_s = std::min(best_s, time);
      if (fastest.size() < ranked) fastest.push(time);
      else if (time < fastest.top()) fastest.pop(), fastest.push(time);
    }
    simulated_count += todo.size();
    if (q.progress) q.progress({decided, order.size(), simulated_count, best_s, elapsed(), bounded});
  }

  if (simulated_count == 0) {
    double least = std::numeric_limits<double>::infinity();
    for (const PlanCandidate& c : r.not_simulated) least = std::min(least, c.simulation_bytes);
    throw InputError("", 0, "--sim-memory",
                     "no layout can be simulated within " + format_bytes(r.simulation_memory_bytes) +
                         " of host memory: the smallest simulation needs about " + format_bytes(least));
  }
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    if (!simulated[i]) continue;
    Plan p{candidates[i], std::move(results[i]), 0, 0, simulated[i] == shared_simulation};
    p.global_batch_s = p.result.global_batch_s;
    r.plans.push_back(std::move(p));
  }
  std::stable_sort(r.plans.begin(), r.plans.end(),
                   [](const Plan& a, const Plan& b) { return a.global_batch_s < b.global_batch_s; });
  double best_ulysses = 0;
  for (const Plan& p : r.plans)
    if (p.candidate.strategy == Strategy::ulysses) best_ulysses = std::max(best_ulysses, p.result.tokens_per_s);
  for (Plan& p : r.plans) p.speedup_vs_best_ulysses = best_ulysses > 0 ? p.result.tokens_per_s / best_ulysses : 0;
  r.front_limit_s = front_limited ? q.front_within * r.plans.front().global_batch_s
                                  : std::numeric_limits<double>::infinity();
  r.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

std::vector<const Plan*> pareto_front(const std::vector<Plan>& plans, double slowest_s) {
  std::vector<const Plan*> by_memory;
  for (const Plan& p : plans)
    if (p.global_batch_s <= slowest_s) by_memory.push_back(&p);
  std::stable_sort(by_memory.begin(), by_memory.end(), [](const Plan* a, const Plan* b) {
    if (a->candidate.memory_bytes != b->candidate.memory_bytes) return a->candidate.memory_bytes < b->candidate.memory_bytes;
    return a->result.tokens_per_s > b->result.tokens_per_s;
  });
  std::vector<const Plan*> front;
  for (const Plan* p : by_memory)
    if (front.empty() || p->result.tokens_per_s > front.back()->result.tokens_per_s) front.push_back(p);
  return front;
}

}  // namespace basp
