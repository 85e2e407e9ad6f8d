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
#include <set>
#include <span>
#include <tuple>
#include <vector>

namespace basp {

// One rank's bound as a function of a call's size s: the largest of wait_s + s·per_byte_s over its
// lines (each flow alone, each link its flows load, the all-to-all's copy of its own slice), none
// below another at every size. Every wait and every byte of a call is fixed or proportional to s.
struct TransferLines {
  std::vector<std::pair<double, double>> lines;  // (wait_s, per_byte_s)
  double at(double size_bytes) const;
};

// Per rank class of `set`'s representatives: the lines for calls of `op` of any size.
std::vector<TransferLines> call_transfer_lines(Router& router, const Topology& topo, const RankFold& fold,
                                               CollectiveOp op, GroupSet& set);
// The bound per rank class for one call of `op` with `size_bytes` (add_collectives' convention),
// in seconds after the call's overheads.
std::vector<double> call_transfer_bounds(Router& router, const Topology& topo, const RankFold& fold,
                                         CollectiveOp op, GroupSet& set, double size_bytes);

// Those bounds, their lines worked out once per (groups, op) on one fold and router, handed out for one
// rank class at a time: a step's bound is the longest of its classes' chains, and classes whose
// bounds agree on every call have the same chain. A step repeats the same calls every layer, and
// layouts on one traffic pattern (the planner's) share most of theirs: kept with the pattern's
// fold, the lines are worked out once for all of them. Group sets are matched by their groups,
// not their address, so a kept bound is exactly the one call_transfer_bounds would give again.
class CallBounds {
 public:
  struct Call {
    double overhead_s;  // launch and per-peer overheads
    double transfer_s;  // then at least this until the call returns
  };
  Call get(Router& router, const Topology& topo, const RankFold& fold, CollectiveOp op, GroupSet& set,
           double size_bytes);
  // The class whose chain the next build asks for. It starts a build: its group sets are matched
  // anew (a new build's may reuse an earlier one's address).
  void select(int rank_class);
  // Starts a layout: distinct_classes looks at its calls only; what was worked out stays.
  void start_layout() { used_.clear(); }
  // One class of each set of classes whose bounds agree on every call handed out since start_layout.
  std::vector<int> distinct_classes() const;
  // Host memory held, roughly (a cache keeping several may cap their total).
  std::size_t bytes() const { return bytes_; }

 private:
  struct Lines {
    std::vector<double> overhead_s;       // per class
    std::vector<TransferLines> transfer;  // per class
  };
  int groups_id(const GroupSet& set);
  std::vector<std::vector<std::vector<int>>> groups_;  // distinct groups seen; id = index
  std::vector<std::pair<const GroupSet*, int>> matched_;  // this build's sets -> groups' id
  std::map<std::pair<int, int>, Lines> lines_;  // (groups' id, op)
  std::set<std::tuple<int, int, double>> used_;  // (groups' id, op, size) since start_layout
  int selected_ = 0;
  std::size_t bytes_ = 0;
};

}  // namespace basp
