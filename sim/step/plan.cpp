// Searches a job's layouts for the fastest per global batch: by ascending lower bound, in
// batches simulated in parallel within a host memory budget, leaving out what bounds rule out.
#include "plan.hpp"

#include "engine_sizing.hpp"
#include "input_error.hpp"
#include "memory_model.hpp"
#include "parallel_jobs.hpp"
#include "step_bounds.hpp"
#include "strategy_run.hpp"
#include "units.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <queue>
#include <set>
#include <sstream>
#include <thread>

namespace basp {
namespace {

// The question's candidates, or a refusal saying why there are none.
std::vector<PlanCandidate> candidates_or_refusal(const PlanQuestion& q, PlanReport& r) {
  std::map<std::string, int> pruned;
  std::vector<PlanCandidate> candidates = enumerate_plans(q, r.setup, r.gpus, r.memory_limit_bytes, pruned);
  for (const auto& [why, n] : pruned) r.enumerated += n;
  r.enumerated += static_cast<int>(candidates.size());
  r.pruned = pruned;
  if (!candidates.empty()) return candidates;
  const int memory = pruned.count("does not fit in memory") ? pruned.at("does not fit in memory") : 0;
  if (memory > 0)
    throw InputError("", 0, "--memory-limit",
                     "none of the " + std::to_string(memory) + " layouts that reach the global batch fits in " +
                         format_bytes(r.memory_limit_bytes) + " per GPU (more GPUs, a shorter sequence or checkpointing "
                         "may help)");
  if (pruned.count(without_sequence_parallelism))
    throw InputError("", 0, "--strategy",
                     "the only layouts that reach " + std::to_string(q.global_batch) +
                         " sequences per optimizer step keep every sequence whole on one GPU: plain data "
                         "parallelism, which --strategy dp lists");
  throw InputError("", 0, "--global-batch",
                   "no layout of the strategies asked for reaches " + std::to_string(q.global_batch) +
                       " sequences per optimizer step on " + std::to_string(r.gpus) +
                       " GPUs: DP x micro-batch must divide it (DP = GPUs / SP degree)");
}

// How a layout's figures were obtained.
enum class Simulated : std::uint8_t {
  not_yet,
  by_itself,
  shared,  // another layout with the same step graph was simulated (docs/plan.md)
};

// What working out a layout's critical-path bound gives.
struct RefinedBound {
  double path_bound_s = 0;      // step_lower_bound_s
  double simulation_bytes = 0;  // simulation_memory_bytes
};

// The search: layouts are simulated by ascending bound, in batches of a fixed size, in parallel
// within a batch. Each starts with the simple bound; the critical-path bound is worked out (in
// slices, in parallel) when a layout comes up, and the layout goes back in line under it: a
// layout is simulated only once it has the lowest bound of all that are left. After each batch,
// what cannot beat a simulated plan is left out. Each result lands in its candidate's slot and the
// slices and batches do not depend on the thread count, so neither does the output.
class PlanSearch {
 public:
  PlanSearch(const PlanQuestion& q, PlanReport& r, std::vector<PlanCandidate> candidates,
             std::chrono::steady_clock::time_point t0)
      : t0_(t0), q_(q), r_(r), rep_(r.setup.report), candidates_(std::move(candidates)),
        threads_(std::max(1, q.threads > 0 ? q.threads : int(std::thread::hardware_concurrency()))),
        caches_(threads_), results_(candidates_.size()), simulated_(candidates_.size(), Simulated::not_yet),
        refined_bounds_(candidates_.size()), ranked_(std::size_t(std::max(1, q.ranked))),
        front_limited_(!q.exhaustive && q.front_within > 0 && std::isfinite(q.front_within)) {
    for (std::size_t t = 1; t < caches_.size(); ++t) caches_[t].share_whole_lines(caches_[0]);
    order_.resize(candidates_.size());
    for (std::size_t i = 0; i < order_.size(); ++i) order_[i] = i;
    std::stable_sort(order_.begin(), order_.end(),
                     [&](std::size_t a, std::size_t b) { return candidates_[a].bound_s < candidates_[b].bound_s; });
    std::ostringstream factor;
    factor << q.front_within;
    slow_ = "over " + factor.str() + "x the best plan's time and not its strategy's best (lower bound)";
  }

  // Batches until every layout is simulated or left out.
  void run() {
    while (next_ < order_.size() || !refined_.empty()) {
      const std::vector<std::size_t> todo = next_batch();
      if (todo.empty()) continue;
      simulate(todo);
      record(todo);
      if (q_.progress) q_.progress({decided_, order_.size(), simulated_count_, best_s_, elapsed_s(), bounded_});
    }
  }

  // The simulated layouts as plans, fastest per global batch first, with their speedups.
  void rank_plans() {
    if (simulated_count_ == 0) {
      double least = std::numeric_limits<double>::infinity();
      for (const PlanCandidate& c : r_.not_simulated) least = std::min(least, c.simulation_bytes);
      throw InputError("", 0, "--sim-memory",
                       "no layout can be simulated within " + format_bytes(r_.simulation_memory_bytes) +
                           " of host memory: the smallest simulation needs about " + format_bytes(least));
    }
    for (std::size_t i = 0; i < candidates_.size(); ++i) {
      if (simulated_[i] == Simulated::not_yet) continue;
      Plan p{candidates_[i], std::move(results_[i]), 0, 0, simulated_[i] == Simulated::shared};
      p.global_batch_s = p.result.global_batch_s;
      r_.plans.push_back(std::move(p));
    }
    std::stable_sort(r_.plans.begin(), r_.plans.end(),
                     [](const Plan& a, const Plan& b) { return a.global_batch_s < b.global_batch_s; });
    double best_ulysses = 0;
    for (const Plan& p : r_.plans)
      if (p.candidate.strategy == Strategy::ulysses) best_ulysses = std::max(best_ulysses, p.result.tokens_per_s);
    for (Plan& p : r_.plans) p.speedup_vs_best_ulysses = best_ulysses > 0 ? p.result.tokens_per_s / best_ulysses : 0;
    r_.front_limit_s = front_limited_ ? q_.front_within * r_.plans.front().global_batch_s
                                      : std::numeric_limits<double>::infinity();
  }

 private:
  // The `ranked` fastest simulated times are known and the layout's bound is above the last of
  // them: it cannot be among the `ranked` fastest, which are then all simulated.
  bool outranked(const PlanCandidate& c) const { return fastest_.size() == ranked_ && fastest_.top() < c.bound_s; }

  // A simulated plan of its own strategy is no slower than the layout's bound, and a simulated
  // plan of any strategy (the same or another) needs no more memory and is no slower than it: it
  // can then be neither its strategy's best (the speedups' baseline, for Ulysses) nor on the
  // Pareto front of throughput against memory, which spans all strategies.
  bool dominated(const PlanCandidate& c) const {
    if (q_.exhaustive || !outranked(c)) return false;
    const auto own = simulated_by_.find(c.strategy);
    if (own == simulated_by_.end()) return false;
    bool outrun = false;
    for (auto [memory, time] : own->second) outrun = outrun || time <= c.bound_s;
    if (!outrun) return false;
    for (const auto& [strategy, plans] : simulated_by_)
      for (auto [memory, time] : plans)
        if (memory <= c.memory_bytes && time <= c.bound_s) return true;
    return false;
  }

  // Its bound is over front_within times the best time and a simulated plan of its strategy is
  // faster than that bound: it can then be neither the best, nor its strategy's best, nor on the
  // Pareto front (which covers plans within that factor).
  bool beyond_front(const PlanCandidate& c) const {
    if (!front_limited_ || !(c.bound_s > q_.front_within * best_s_) || !outranked(c)) return false;
    const auto it = simulated_by_.find(c.strategy);
    if (it == simulated_by_.end()) return false;
    for (auto [memory, time] : it->second)
      if (time < c.bound_s) return true;  // strictly: a tie could be its strategy's best
    return false;
  }

  // Counts why a layout is left out; false when it is not (yet).
  bool left_out(const PlanCandidate& c) {
    if (dominated(c)) {
      ++r_.pruned[beaten_];
      return true;
    }
    if (beyond_front(c)) {
      ++r_.pruned[slow_];
      return true;
    }
    return false;
  }

  // The layouts to simulate next: those whose refined bound is the lowest of all left, until a
  // batch is full; a layout that comes up with its simple bound gets its critical-path bound
  // first, in a slice of such layouts, and goes back in line.
  std::vector<std::size_t> next_batch() {
    std::vector<std::size_t> todo;
    while (todo.size() < batch_ && (next_ < order_.size() || !refined_.empty())) {
      const double next_simple =
          next_ < order_.size() ? candidates_[order_[next_]].bound_s : std::numeric_limits<double>::infinity();
      if (!refined_.empty() && refined_.begin()->first <= next_simple) {
        const std::size_t i = refined_.begin()->second;
        refined_.erase(refined_.begin());
        ++decided_;
        if (left_out(candidates_[i])) continue;
        if (!(candidates_[i].simulation_bytes <= r_.simulation_memory_bytes)) {  // NaN too
          ++r_.pruned[too_big_];
          r_.not_simulated.push_back(candidates_[i]);
        } else {
          todo.push_back(i);
        }
        continue;
      }
      refine(next_slice());
    }
    return todo;
  }

  // The next layouts in simple-bound order that are not left out at once.
  std::vector<std::size_t> next_slice() {
    std::vector<std::size_t> slice;
    for (; slice.size() < batch_ && next_ < order_.size(); ++next_) {
      const std::size_t i = order_[next_];
      if (left_out(candidates_[i]))
        ++decided_;
      else
        slice.push_back(i);
    }
    return slice;
  }

  // Works out the slice's critical-path bounds and memory estimates, in parallel, and puts the
  // slice back in line under them. Layouts on one traffic pattern go to one thread: its fold and
  // call bounds, worked out once there, serve them all (each thread's cache would work them out
  // again). A hash that collides only puts two patterns on one thread: no figure depends on where
  // a bound is worked out.
  void refine(const std::vector<std::size_t>& slice) {
    std::vector<std::vector<std::size_t>> by_pattern;
    std::map<std::uint64_t, std::size_t> pattern_of;
    for (std::size_t i : slice) {
      const auto [it, fresh] = pattern_of.try_emplace(
          traffic_pattern_hash(r_.setup, candidates_[i].config, candidates_[i].strategy), by_pattern.size());
      if (fresh) by_pattern.emplace_back();
      by_pattern[it->second].push_back(i);
    }
    line_up_ahead();
    run_within_memory(
        threads_, std::vector<double>(by_pattern.size(), 0.0), std::numeric_limits<double>::infinity(),
        [&](std::size_t k, int t) {
          for (std::size_t i : by_pattern[k]) {
            if (!refined_bounds_[i]) work_out_bound(i, t);
            candidates_[i].bound_s = std::max(candidates_[i].bound_s, refined_bounds_[i]->path_bound_s);
            candidates_[i].simulation_bytes = refined_bounds_[i]->simulation_bytes;
          }
        },
        [&](int t) { return bound_one_ahead(t); });
    bounded_ += slice.size();
    for (std::size_t i : slice) refined_.insert({candidates_[i].bound_s, i});
  }

  void work_out_bound(std::size_t i, int t) {
    const PlanCandidate& c = candidates_[i];
    refined_bounds_[i] = RefinedBound{step_lower_bound_s(r_.setup, c.config, c.strategy, caches_[t]),
                                      simulation_memory_bytes(r_.setup, c.config, c.strategy, caches_[t])};
  }

  // A thread with nothing left in a parallel phase works out the critical-path bounds of the
  // layouts next in line ahead of time. A bound is the same whatever cache or thread works it out
  // (a test checks), so this changes no output; it only uses time that was idle. A layout left
  // out before its turn had its bound worked out for nothing.
  void line_up_ahead() {
    ahead_.clear();
    for (std::size_t j = next_; j < order_.size() && ahead_.size() < 2 * batch_; ++j)
      if (!refined_bounds_[order_[j]]) ahead_.push_back(order_[j]);
    ahead_taken_ = 0;
  }

  bool bound_one_ahead(int t) {
    const std::size_t k = ahead_taken_++;
    if (k >= ahead_.size()) return false;
    try {
      work_out_bound(ahead_[k], t);
    } catch (...) {
      // Left for its turn, which reports the error where the search would have met it anyway
      // (or never, if the layout is left out first).
    }
    return true;
  }

  // The layouts' step graphs: with overlap_comm on and without accumulation ZeRO-1 and ZeRO-2
  // differ in memory only (both reduce-scatter gradients from backward hooks and gather the
  // updated weights after the optimizer; with accumulation ZeRO-1's micro-steps before the
  // boundary reduce nothing, and without overlap_comm it has no hooks).
  std::string graph_key(const PlanCandidate& c) const {
    StepConfig same = c.config;
    if (same.zero == 2 && same.accumulation == 1 && same.zero_overlap_comm == OverlapComm::on) same.zero = 1;
    const Layout l = make_layout(same, rep_.model, c.strategy, r_.gpus, rep_.topology().gpus_per_node);
    return layout_key(l, same);
  }

  // Simulates the batch in parallel within the host memory budget; a layout whose step graph was
  // simulated already takes that result with its own memory.
  void simulate(const std::vector<std::size_t>& todo) {
    std::vector<std::size_t> to_simulate;
    std::vector<std::pair<std::size_t, std::size_t>> shared;  // (layout, the one simulated)
    for (std::size_t i : todo) {
      const auto [it, fresh] = simulated_graph_.try_emplace(graph_key(candidates_[i]), i);
      if (fresh) to_simulate.push_back(i);
      else shared.push_back({i, it->second});
    }
    // Largest first, so that a long simulation does not start last and leave the other threads idle.
    std::stable_sort(to_simulate.begin(), to_simulate.end(), [&](std::size_t x, std::size_t y) {
      return candidates_[x].simulation_bytes > candidates_[y].simulation_bytes;
    });
    std::vector<double> need(to_simulate.size());
    for (std::size_t k = 0; k < need.size(); ++k) need[k] = candidates_[to_simulate[k]].simulation_bytes;
    line_up_ahead();
    run_within_memory(
        threads_, need, r_.simulation_memory_bytes,
        [&](std::size_t k, int t) {
          const PlanCandidate& c = candidates_[to_simulate[k]];
          results_[to_simulate[k]] = simulate_strategy(r_.setup, c.config, c.strategy, caches_[t]);
        },
        [&](int t) { return bound_one_ahead(t); });
    for (auto [i, from] : shared) {
      const PlanCandidate& c = candidates_[i];
      results_[i] = results_[from];
      results_[i].memory = memory_per_gpu(rep_.model, results_[i].layout, zero_plan(c.config), c.config.checkpointing);
      results_[i].fits = results_[i].memory.total() <= r_.setup.gpu->hbm_bytes;
      results_[i].wall_s = 0.0;
      simulated_[i] = Simulated::shared;
    }
  }

  // What the batch's times rule out from now on.
  void record(const std::vector<std::size_t>& todo) {
    for (std::size_t i : todo) {
      if (simulated_[i] == Simulated::not_yet) simulated_[i] = Simulated::by_itself;
      const double time = results_[i].global_batch_s;
      simulated_by_[candidates_[i].strategy].push_back({candidates_[i].memory_bytes, time});
      best_s_ = std::min(best_s_, time);
      if (fastest_.size() < ranked_) fastest_.push(time);
      else if (time < fastest_.top()) fastest_.pop(), fastest_.push(time);
    }
    simulated_count_ += todo.size();
  }

  double elapsed_s() const { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count(); }

  static constexpr std::size_t batch_ = 16;
  const std::chrono::steady_clock::time_point t0_;  // when the question was asked
  const PlanQuestion& q_;
  PlanReport& r_;
  const StepReport& rep_;
  std::vector<PlanCandidate> candidates_;
  const int threads_;
  std::vector<RunCache> caches_;  // one per thread
  std::vector<std::size_t> order_;  // candidates by simple bound
  std::size_t next_ = 0;            // in order_: the first layout not yet refined
  std::set<std::pair<double, std::size_t>> refined_;  // (critical-path bound, candidate), waiting
  std::vector<StrategyResult> results_;                // per candidate, once simulated
  std::vector<Simulated> simulated_;                   // per candidate
  std::vector<std::optional<RefinedBound>> refined_bounds_;  // per candidate, once worked out
  std::map<Strategy, std::vector<std::pair<double, double>>> simulated_by_;  // (memory, time per batch)
  const std::size_t ranked_;
  std::priority_queue<double> fastest_;  // the `ranked_` fastest simulated times (a max-heap)
  double best_s_ = std::numeric_limits<double>::infinity();
  const bool front_limited_;
  std::map<std::string, std::size_t> simulated_graph_;  // step graph -> the layout simulated for it
  std::vector<std::size_t> ahead_;  // the layouts next in line whose bounds are not worked out yet
  std::atomic<std::size_t> ahead_taken_{0};
  std::size_t simulated_count_ = 0, decided_ = 0, bounded_ = 0;
  const std::string beaten_ = "beaten by a plan of its strategy and by one with no more memory (lower bound)";
  std::string slow_;
  const std::string too_big_ = "its simulation would need more host memory than allowed";
};

}  // namespace

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
  StepConfig job = q.job;
  resolve_job(job, r.setup.report);
  r.gpus = job.gpus;
  r.memory_limit_bytes = q.memory_limit_bytes > 0 ? q.memory_limit_bytes : r.setup.gpu->hbm_bytes;
  std::vector<PlanCandidate> candidates = candidates_or_refusal(q, r);
  r.simulation_memory_bytes = q.simulation_memory_bytes > 0 ? q.simulation_memory_bytes : host_memory_budget_bytes();
  PlanSearch search(q, r, std::move(candidates), t0);
  search.run();
  search.rank_plans();
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
