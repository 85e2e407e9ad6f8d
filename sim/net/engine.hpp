// Discrete-event simulation of a static task graph: delays (compute, fixed waits) and flows
// (bytes over a path of links) with dependencies, the flows sharing links max-min fairly.
//
// A task is ready when all tasks it depends on have finished. A delay then finishes after its
// duration. A flow first waits `wait_s` (its path latency plus software overheads), holding no
// bandwidth, then transfers at the max-min fair rate, recomputed whenever a flow starts or ends.
// Events closer than 1e-9 relative in time are processed as one batch (one rate solve). Event
// order is deterministic: by time, then task id. The engine knows nothing of collectives.
#pragma once

#include "big_vector.hpp"
#include "hop.hpp"
#include "maxmin.hpp"

#include <atomic>
#include <cstdint>
#include <limits>
#include <map>
#include <span>
#include <vector>

namespace basp {

using TaskId = std::uint32_t;

// The load of a watched link from time_s until its next sample.
struct LinkSample {
  double time_s;
  std::uint32_t link;
  double load_Bps;
};

struct RunStats {
  std::uint64_t flows = 0;    // flow tasks (each may stand for several identical flows)
  std::uint64_t events = 0;   // task starts and finishes
  std::uint64_t batches = 0;  // distinct event times
  std::uint64_t solves = 0;   // max-min solves
  std::uint64_t refilled = 0; // flows whose rate a solve recomputed, over all solves
  double end_s = 0.0;         // time the last task finished
};

// How far a run has got, for a progress line read from another thread.
struct EngineProgress {
  std::atomic<std::uint64_t> tasks{0};     // of the running engine
  std::atomic<std::uint64_t> finished{0};  // of those, finished so far
};

class Engine {
 public:
  explicit Engine(std::vector<double> link_capacity_Bps);

  TaskId add_delay(double duration_s);
  // `multiplicity` identical flows on the same path with the same start share one task.
  TaskId add_flow(std::span<const Hop> hops, double bytes, double wait_s, std::uint32_t multiplicity = 1);
  // A path stored once for many flows (a step's repeated calls): add_flow_on then takes it
  // instead of a copy of its hops.
  struct StoredPath {
    std::uint32_t hop_begin = 0, hop_count = 0;
  };
  StoredPath store_path(std::span<const Hop> hops);
  std::uint64_t serial() const { return serial_; }  // distinct for every engine made in the process
  TaskId add_flow_on(StoredPath path, double bytes, double wait_s, std::uint32_t multiplicity = 1);
  void depends(TaskId task, TaskId on);  // `task` becomes ready only after `on` finishes
  // Room for this many more tasks, flows, hops and dependencies, so that building a million-flow
  // collective does not copy its arrays over and over.
  void reserve(std::size_t tasks, std::size_t flows, std::size_t hops, std::size_t deps);
  // How many flows may transfer at once, at most: run() reserves that much room for them (default:
  // every flow, right for one collective; a step's calls take turns). Past it they grow by doubling.
  void expect_concurrent_flows(std::size_t flows) { concurrent_flows_ = flows; }

  // Task t stands for this many tasks of the whole cluster in the run's counts (flows, events,
  // refills); tasks not weighed count once. A quotient of cells whose sizes differ counts its
  // tasks this way (flow_cells.hpp).
  void weigh(TaskId t, std::uint32_t tasks);
  // Bytes a never-binding link carries that its hops do not say exactly: such a link's hops give
  // the solver its load, the caller its bytes (MaxMinSolver::never_binding).
  void add_link_bytes(int link, double bytes) { link_bytes_[link] += bytes; }

  // Links that never bind but are checked below capacity at every solve (MaxMinSolver::never_binding).
  void never_binding(std::vector<char> links) { solver_.never_binding(std::move(links)); }
  bool unbinding_held() const { return solver_.unbinding_held(); }

  // Record the load of these links whenever it changes (for timelines; costs nothing if empty).
  void watch_links(std::vector<int> links);

  RunStats run();  // once
  // run() then stores its task count and, once per event batch, its finished tasks there.
  void publish_progress(EngineProgress* progress) { progress_ = progress; }

  // Instead of run(), for a graph of delays only: when its last task finishes, each task starting
  // once all it depends on have finished (the longest path; no events, so no batching within 1e-9).
  // ready_time and finish_time then give each task's.
  double longest_path_s();

  double ready_time(TaskId t) const { return ready_[t]; }
  double finish_time(TaskId t) const { return finish_[t]; }
  // Bytes each link carried (all flows, all of their multiplicity).
  const std::vector<double>& link_bytes() const { return link_bytes_; }
  std::size_t task_count() const { return kind_.size(); }
  const std::vector<LinkSample>& link_samples() const { return samples_; }
  // Host memory its arrays held at most (capacities, solver included): after run(), the larger of
  // what they held once the graph was indexed and what they hold at the end. The pending-event
  // buckets, the one being processed included, hold at most a task id per task at once and are
  // not counted.
  std::size_t memory_bytes() const;

 private:
  enum class Kind : std::uint8_t { delay, flow };
  void index_successors();  // preds_left_, succ_begin_ and succ_ from deps_
  void make_ready(TaskId t, double now);
  void finish(TaskId t, double now);
  void solve_rates(bool added, double min_removed_rate);
  void check_invariants() const;
  std::size_t held_bytes() const;  // the arrays' capacities now
  void sample_watched(double now);
  void carry(const FlowPath& f, double bytes);  // invariant checks: bytes moved over f's links

  std::vector<double> capacity_;
  std::vector<double> link_bytes_;
  std::vector<double> carried_;  // invariant checks only: bytes the rates moved, per link
  // Per task.
  BigVector<Kind> kind_;
  BigVector<double> duration_;  // delay: its duration; flow: its wait before transferring
  BigVector<double> ready_, finish_;
  BigVector<std::uint32_t> flow_of_;  // flow index of a flow task
  BigVector<std::uint32_t> preds_left_;
  BigVector<std::pair<TaskId, TaskId>> deps_;  // (on, task)
  BigVector<std::uint32_t> succ_begin_;
  BigVector<TaskId> succ_;
  // Per flow.
  BigVector<Hop> hops_;
  BigVector<FlowPath> paths_;
  BigVector<double> bytes_;
  BigVector<TaskId> task_of_;
  // Transferring flows, compact (swap-removed on completion).
  BigVector<FlowPath> active_paths_;
  BigVector<std::uint32_t> active_;
  BigVector<double> remaining_, rate_;
  // Pending delay ends and flow starts, bucketed by time: collectives make many tasks ready at
  // once with few distinct times, which a bucket handles far faster than a heap of tasks.
  std::map<double, BigVector<TaskId>> pending_;
  BigVector<TaskId> bucket_;
  // Buckets of past times, empty but with their capacity: a new time takes one instead of a fresh
  // map node and array (a step makes a bucket per event time, over a million of them).
  std::vector<std::map<double, BigVector<TaskId>>::node_type> spare_buckets_;
  MaxMinSolver solver_;
  std::vector<int> watched_;
  std::vector<double> watched_load_;
  std::vector<LinkSample> samples_;
  RunStats stats_;
  std::uint64_t finished_tasks_ = 0;
  std::vector<std::uint32_t> weight_;  // per task: tasks of the cluster it stands for (empty: 1 each)
  std::uint64_t weight(TaskId t) const { return weight_.empty() ? 1 : weight_[t]; }
  EngineProgress* progress_ = nullptr;
  bool ran_ = false;
  std::size_t built_bytes_ = 0;  // held_bytes() once run() indexed the graph
  std::size_t concurrent_flows_ = std::numeric_limits<std::size_t>::max();
  std::uint64_t serial_;
};

}  // namespace basp
