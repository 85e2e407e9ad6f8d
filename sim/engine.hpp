// Discrete-event simulation of a static task graph: delays (compute, fixed waits) and flows
// (bytes over a path of links) with dependencies, the flows sharing links max-min fairly.
//
// A task is ready when all tasks it depends on have finished. A delay then finishes after its
// duration. A flow first waits `wait_s` (its path latency plus software overheads), holding no
// bandwidth, then transfers at the max-min fair rate, recomputed whenever a flow starts or ends.
// Events closer than 1e-9 relative in time are processed as one batch (one rate solve). Event
// order is deterministic: by time, then task id. The engine knows nothing of collectives.
#pragma once

#include "maxmin.hpp"
#include "routing.hpp"

#include <cstdint>
#include <span>
#include <vector>

namespace basp {

using TaskId = std::uint32_t;

struct RunStats {
  std::uint64_t flows = 0;    // flow tasks (each may stand for several identical flows)
  std::uint64_t events = 0;   // task starts and finishes
  std::uint64_t batches = 0;  // distinct event times
  std::uint64_t solves = 0;   // max-min solves
  double end_s = 0.0;         // time the last task finished
};

class Engine {
 public:
  explicit Engine(std::vector<double> link_capacity_Bps);

  TaskId add_delay(double duration_s);
  // `multiplicity` identical flows on the same path with the same start share one task.
  TaskId add_flow(std::span<const Hop> hops, double bytes, double wait_s, std::uint32_t multiplicity = 1);
  void depends(TaskId task, TaskId on);  // `task` becomes ready only after `on` finishes
  // Room for this many more tasks, flows, hops and dependencies, so that building a million-flow
  // collective does not copy its arrays over and over.
  void reserve(std::size_t tasks, std::size_t flows, std::size_t hops, std::size_t deps);

  RunStats run();  // once

  double ready_time(TaskId t) const { return ready_[t]; }
  double finish_time(TaskId t) const { return finish_[t]; }
  // Bytes each link carried (all flows, all of their multiplicity).
  const std::vector<double>& link_bytes() const { return link_bytes_; }
  std::size_t task_count() const { return kind_.size(); }

 private:
  enum class Kind : std::uint8_t { delay, flow };
  void make_ready(TaskId t, double now);
  void finish(TaskId t, double now);
  void solve_rates(bool added, double min_removed_rate);
  void check_invariants() const;

  std::vector<double> capacity_;
  std::vector<double> link_bytes_;
  // Per task.
  std::vector<Kind> kind_;
  std::vector<double> duration_;  // delay: its duration; flow: its wait before transferring
  std::vector<double> ready_, finish_;
  std::vector<std::uint32_t> flow_of_;  // flow index of a flow task
  std::vector<std::uint32_t> preds_left_;
  std::vector<std::pair<TaskId, TaskId>> deps_;  // (on, task)
  std::vector<std::uint32_t> succ_begin_;
  std::vector<TaskId> succ_;
  // Per flow.
  std::vector<Hop> hops_;
  std::vector<FlowPath> paths_;
  std::vector<double> bytes_;
  std::vector<TaskId> task_of_;
  // Transferring flows, compact (swap-removed on completion).
  std::vector<FlowPath> active_paths_;
  std::vector<std::uint32_t> active_;
  std::vector<double> remaining_, rate_;
  // Pending: (time, task) of delays finishing and flows starting to transfer.
  std::vector<std::pair<double, TaskId>> heap_;
  MaxMinSolver solver_;
  RunStats stats_;
  bool ran_ = false;
};

}  // namespace basp
