// The event loop: advance all transferring flows to the next event time, process every event of
// that batch (finishes, then ready successors and pending starts), re-solve rates once per batch.
#include "engine.hpp"

#include <algorithm>
#include <cmath>
#include <string>
#include <limits>
#include <stdexcept>

namespace basp {
namespace {

constexpr double inf = std::numeric_limits<double>::infinity();
constexpr double batch_tolerance = 1e-9;  // relative: events this close in time are simultaneous

}  // namespace

Engine::Engine(std::vector<double> capacity)
    : capacity_(std::move(capacity)), link_bytes_(capacity_.size(), 0.0), solver_(capacity_.size()) {
  static std::atomic<std::uint64_t> made{0};
  serial_ = ++made;
}

TaskId Engine::add_delay(double duration_s) {
  const auto id = static_cast<TaskId>(kind_.size());
  kind_.push_back(Kind::delay);
  duration_.push_back(duration_s);
  flow_of_.push_back(0);
  return id;
}

void Engine::weigh(TaskId t, std::uint32_t tasks) {
  if (weight_.size() <= t) weight_.resize(kind_.size(), 1);
  weight_[t] = tasks;
}

TaskId Engine::add_flow(std::span<const Hop> hops, double bytes, double wait_s, std::uint32_t multiplicity) {
  return add_flow_on(store_path(hops), bytes, wait_s, multiplicity);
}

Engine::StoredPath Engine::store_path(std::span<const Hop> hops) {
  const StoredPath path{static_cast<std::uint32_t>(hops_.size()), static_cast<std::uint32_t>(hops.size())};
  hops_.insert(hops_.end(), hops.begin(), hops.end());
  return path;
}

TaskId Engine::add_flow_on(StoredPath path, double bytes, double wait_s, std::uint32_t multiplicity) {
  const auto id = static_cast<TaskId>(kind_.size());
  kind_.push_back(Kind::flow);
  duration_.push_back(wait_s);
  flow_of_.push_back(static_cast<std::uint32_t>(paths_.size()));
  paths_.push_back({path.hop_begin, path.hop_count, multiplicity});
  bytes_.push_back(bytes);
  task_of_.push_back(id);
  for (std::uint32_t h = path.hop_begin; h < path.hop_begin + path.hop_count; ++h)
    if (!solver_.never_binds(static_cast<std::uint32_t>(hops_[h].link)))
      link_bytes_[hops_[h].link] += bytes * hops_[h].share * multiplicity;
  return id;
}

std::size_t Engine::memory_bytes() const { return std::max(built_bytes_, held_bytes()); }

std::size_t Engine::held_bytes() const {
  return capacity_bytes(capacity_, link_bytes_, carried_, kind_, duration_, ready_, finish_, flow_of_, preds_left_,
                        deps_, succ_begin_, succ_, hops_, paths_, bytes_, task_of_, active_paths_, active_,
                        remaining_, rate_, watched_, watched_load_, samples_, weight_) +
         solver_.memory_bytes();
}

void Engine::depends(TaskId task, TaskId on) { deps_.push_back({on, task}); }

namespace {
template <class Vector>
void grow(Vector& v, std::size_t more) {  // geometric, so repeated calls stay linear
  if (v.size() + more > v.capacity()) v.reserve(std::max(v.size() + more, 2 * v.capacity()));
}
}  // namespace

void Engine::reserve(std::size_t tasks, std::size_t flows, std::size_t hops, std::size_t deps) {
  grow(kind_, tasks);
  grow(duration_, tasks);
  grow(flow_of_, tasks);
  grow(paths_, flows);
  grow(bytes_, flows);
  grow(task_of_, flows);
  grow(hops_, hops);
  grow(deps_, deps);
}

void Engine::make_ready(TaskId t, double now) {
  ready_[t] = now;
  const double at = now + duration_[t];
  auto it = pending_.lower_bound(at);
  if (it == pending_.end() || it->first != at) {
    if (spare_buckets_.empty()) {
      it = pending_.emplace_hint(it, at, BigVector<TaskId>{});
    } else {
      auto node = std::move(spare_buckets_.back());
      spare_buckets_.pop_back();
      node.key() = at;
      it = pending_.insert(it, std::move(node));
    }
  }
  it->second.push_back(t);
}

void Engine::finish(TaskId t, double now) {
  finish_[t] = now;
  stats_.events += weight(t);
  ++finished_tasks_;
  for (std::uint32_t k = succ_begin_[t]; k < succ_begin_[t + 1]; ++k)
    if (--preds_left_[succ_[k]] == 0) make_ready(succ_[k], now);
}

void Engine::solve_rates(bool added, double min_removed_rate) {
  ++stats_.solves;
  if (added)
    solver_.solve(capacity_, hops_, active_paths_, rate_);
  else
    solver_.solve_from(min_removed_rate, capacity_, hops_, active_paths_, rate_);
  if (weight_.empty()) {
    stats_.refilled += solver_.refilled();
  } else {
    for (std::uint32_t i : solver_.refilled_flows()) stats_.refilled += weight(task_of_[active_[i]]);
  }
#ifdef BASP_CHECK_INVARIANTS
  check_invariants();
#endif
}

void Engine::watch_links(std::vector<int> links) {
  watched_ = std::move(links);
  watched_load_.assign(watched_.size(), 0.0);
}

void Engine::sample_watched(double now) {
  for (std::size_t w = 0; w < watched_.size(); ++w) {
    const double load = active_.empty() ? 0.0 : solver_.load(watched_[w]);
    if (load == watched_load_[w]) continue;
    watched_load_[w] = load;
    samples_.push_back({now, static_cast<std::uint32_t>(watched_[w]), load});
  }
}

void Engine::carry(const FlowPath& f, double bytes) {
  if (carried_.empty()) carried_.assign(capacity_.size(), 0.0);
  for (std::uint32_t h = f.hop_begin; h < f.hop_begin + f.hop_count; ++h)
    carried_[hops_[h].link] += bytes * hops_[h].share * f.multiplicity;
}

void Engine::check_invariants() const {
  std::vector<double> load(capacity_.size(), 0.0);
  for (std::size_t i = 0; i < active_.size(); ++i) {
    const FlowPath& f = active_paths_[i];
    if (!(rate_[i] > 0.0)) throw std::logic_error("engine: a transferring flow has no rate");
    for (std::uint32_t h = f.hop_begin; h < f.hop_begin + f.hop_count; ++h)
      load[hops_[h].link] += rate_[i] * hops_[h].share * f.multiplicity;
  }
  // A never-binding link may go over: the solver records it, and its caller runs again without it.
  for (std::size_t l = 0; l < load.size(); ++l)
    if (load[l] > capacity_[l] * (1.0 + 1e-6) && !solver_.never_binds(static_cast<std::uint32_t>(l)))
      throw std::logic_error("engine: a link is over capacity");
}

RunStats Engine::run() {
  if (ran_) throw std::logic_error("Engine::run called twice");
  ran_ = true;
  const std::size_t tasks = kind_.size();
  ready_.assign(tasks, inf);
  finish_.assign(tasks, inf);
  index_successors();
  built_bytes_ = held_bytes();  // the indexed graph: successors built, deps_ not yet freed
  deps_.clear();
  deps_.shrink_to_fit();
  stats_.flows = paths_.size();
  if (!weight_.empty()) {
    weight_.resize(kind_.size(), 1);
    stats_.flows = 0;
    for (std::uint32_t f = 0; f < task_of_.size(); ++f) stats_.flows += weight_[task_of_[f]];
  }

  // Room for the flows that may transfer at once, and their crossings at the average path length:
  // grown by doubling from nothing, the arrays' copies land on fresh pages, whose zeroing by the
  // kernel made a million-flow all-to-all 0.5 s (30 %) slower on this VM (bench/README.md).
  const std::size_t concurrent = std::min(concurrent_flows_, paths_.size());
  if (concurrent > 0) {
    std::size_t crossings = 0;
    for (const FlowPath& f : paths_) crossings += f.hop_count;
    active_.reserve(concurrent);
    active_paths_.reserve(concurrent);
    remaining_.reserve(concurrent);
    rate_.reserve(concurrent);
    solver_.reserve(concurrent, crossings / paths_.size() * concurrent + concurrent);
  }
  for (TaskId t = 0; t < tasks; ++t)
    if (preds_left_[t] == 0) make_ready(t, 0.0);
  if (progress_) {
    progress_->finished.store(0, std::memory_order_relaxed);
    progress_->tasks.store(tasks, std::memory_order_relaxed);
  }

  double now = 0.0;
  double next_finish = inf;  // absolute time the first transferring flow completes
  while (!pending_.empty() || !active_.empty()) {
    const double next_pending = pending_.empty() ? inf : pending_.begin()->first;
    const double next = std::min(next_pending, next_finish);
    const double tol = batch_tolerance * std::max(next, 1e-12);
    const double dt = next - now;
    now = next;
    ++stats_.batches;
    bool added = false, removed = false;
    double min_removed_rate = inf;

    // Advance every transferring flow; those done by now (within tolerance) finish.
    for (std::size_t i = 0; i < active_.size();) {
      if (remaining_[i] <= rate_[i] * (dt + tol)) {
        const std::uint32_t f = active_[i];
#ifdef BASP_CHECK_INVARIANTS
        carry(active_paths_[i], remaining_[i]);
#endif
        solver_.remove(hops_, active_paths_[i], rate_[i]);
        min_removed_rate = std::min(min_removed_rate, rate_[i]);
        removed = true;
        const std::size_t last = active_.size() - 1;
        active_[i] = active_[last];
        active_paths_[i] = active_paths_[last];
        remaining_[i] = remaining_[last];
        rate_[i] = rate_[last];
        active_.pop_back();
        active_paths_.pop_back();
        remaining_.pop_back();
        rate_.pop_back();
        finish(task_of_[f], now);
        continue;
      }
#ifdef BASP_CHECK_INVARIANTS
      carry(active_paths_[i], rate_[i] * dt);
#endif
      remaining_[i] -= rate_[i] * dt;
      ++i;
    }
    // Pending starts and delay ends of this batch, including those made ready by it: one time
    // bucket at a time, each in task-id order.
    while (!pending_.empty() && pending_.begin()->first <= now + tol) {
      auto node = pending_.extract(pending_.begin());
      bucket_.swap(node.mapped());  // bucket_ was empty: the node keeps its capacity for a later time
      if (node.mapped().capacity() > 1024) BigVector<TaskId>().swap(node.mapped());  // spares stay small
      spare_buckets_.push_back(std::move(node));
      if (!std::is_sorted(bucket_.begin(), bucket_.end())) std::sort(bucket_.begin(), bucket_.end());
      for (const TaskId t : bucket_) {
        if (kind_[t] == Kind::flow && bytes_[flow_of_[t]] > 0.0) {
          stats_.events += weight(t);
          const std::uint32_t f = flow_of_[t];
          active_.push_back(f);
          active_paths_.push_back(paths_[f]);
          remaining_.push_back(bytes_[f]);
          rate_.push_back(0.0);
          added = true;
        } else {
          finish(t, now);
        }
      }
      bucket_.clear();
    }
    if ((added || removed) && !active_.empty()) solve_rates(added, min_removed_rate);
    if ((added || removed) && !watched_.empty()) sample_watched(now);
    next_finish = inf;
    for (std::size_t i = 0; i < active_.size(); ++i)
      next_finish = std::min(next_finish, now + remaining_[i] / rate_[i]);
    if (progress_) progress_->finished.store(finished_tasks_, std::memory_order_relaxed);
  }
  stats_.end_s = now;
  for (TaskId t = 0; t < tasks; ++t)
    if (!(finish_[t] < inf)) throw std::logic_error("engine: a task never finished (dependency cycle)");
#ifdef BASP_CHECK_INVARIANTS
  // Every byte delivered: what the rates carried over time equals what the paths say each link carries.
  for (std::size_t l = 0; l < carried_.size(); ++l)
    if (std::abs(carried_[l] - link_bytes_[l]) > 1e-6 * std::max(1.0, link_bytes_[l]))
      throw std::logic_error("engine: link " + std::to_string(l) + " carried " + std::to_string(carried_[l]) +
                             " B, its flows hold " + std::to_string(link_bytes_[l]) + " B");
#endif
  return stats_;
}

void Engine::index_successors() {
  const std::size_t tasks = kind_.size();
  preds_left_.assign(tasks, 0);
  succ_begin_.assign(tasks + 1, 0);
  for (auto [on, task] : deps_) {
    ++preds_left_[task];
    ++succ_begin_[on + 1];
  }
  for (std::size_t t = 0; t < tasks; ++t) succ_begin_[t + 1] += succ_begin_[t];
  succ_.resize(deps_.size());
  // Each task's start serves as its cursor, which leaves it at the next task's start; shifted back after.
  for (auto [on, task] : deps_) succ_[succ_begin_[on]++] = task;
  for (std::size_t t = tasks; t > 0; --t) succ_begin_[t] = succ_begin_[t - 1];
  succ_begin_[0] = 0;
}

double Engine::longest_path_s() {
  if (!paths_.empty()) throw std::logic_error("Engine::longest_path_s: the graph has flows");
  const std::size_t tasks = kind_.size();
  index_successors();
  ready_.assign(tasks, 0.0);
  finish_.assign(tasks, 0.0);
  std::vector<TaskId> todo;
  for (TaskId t = 0; t < tasks; ++t)
    if (preds_left_[t] == 0) todo.push_back(t);
  double last = 0.0;
  std::size_t finished = 0;
  while (!todo.empty()) {
    const TaskId t = todo.back();
    todo.pop_back();
    ++finished;
    const double finish = ready_[t] + duration_[t];
    finish_[t] = finish;
    last = std::max(last, finish);
    for (std::uint32_t k = succ_begin_[t]; k < succ_begin_[t + 1]; ++k) {
      ready_[succ_[k]] = std::max(ready_[succ_[k]], finish);
      if (--preds_left_[succ_[k]] == 0) todo.push_back(succ_[k]);
    }
  }
  if (finished != tasks) throw std::logic_error("engine: a task never finished (dependency cycle)");
  return last;
}

}  // namespace basp
