// Lower bounds on collective calls, whatever else shares the network: the least time from a rank's
// call (its overheads done) to its return, from the flows it sends and receives alone.
//
// Why it bounds: each of the rank's flows waits its latency after both sides' calls, then moves at
// most at what each of its links can give it; and all the rank's flows that cross one link,
// started no earlier than its call plus their least wait, need their bytes over that link's
// capacity. This uses only the capacities, which no traffic can exceed, so it holds whatever else
// shares the network. The planner replaces every call of a step graph by these
// bounds, which makes the graph a critical-path problem (no rates to solve) whose length no
// simulation of that step can beat (docs/plan.md).
#pragma once

#include "collectives.hpp"

#include <map>
#include <span>
#include <tuple>
#include <vector>

namespace basp {

// Per rank class of `set`'s representatives: the bound for one call of `op` with `size_bytes`
// (add_collectives' convention), in seconds after the call's overheads.
std::vector<double> call_transfer_bounds(Router& router, const Topology& topo, const RankFold& fold,
                                         CollectiveOp op, GroupSet& set, double size_bytes);

// Those bounds, worked out once per (group set, op, size) as a step repeats the same calls every
// layer, handed out for one rank class at a time: a step's bound is the longest of its classes'
// chains, and classes whose bounds agree on every call have the same chain.
class CallBounds {
 public:
  struct Call {
    double overhead_s;  // launch and per-peer overheads
    double transfer_s;  // then at least this until the call returns
  };
  Call get(Router& router, const Topology& topo, const RankFold& fold, CollectiveOp op, GroupSet& set,
           double size_bytes);
  void select(int rank_class) { selected_ = rank_class; }
  // One class of each set of classes whose bounds agree on every call handed out so far.
  std::vector<int> distinct_classes() const;

 private:
  struct Known {
    std::vector<double> overhead_s, transfer_s;  // per class
  };
  std::map<std::tuple<const GroupSet*, int, double>, Known> known_;
  int selected_ = 0;
};

}  // namespace basp
