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

#include <condition_variable>
#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
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

// The lines of calls on one topology, by (groups, op) and rank, worked out as ranks are asked
// for. A rank's lines depend on its group's routes (and NCCL's rings) alone, not on the fold its
// set was built for nor the router that routed them (routes do not depend on what a router routed
// before), so a store outlives traffic patterns and serves several threads: the planner's
// patterns differ in a few calls' groups, and their folds in classes, but most of their calls
// recur, on every thread. Safe to call from several threads at once; lines handed out never change.
class TransferLineStore {
 public:
  struct Lines {
    std::vector<double> overhead_s;       // per rank: launch and per-peer overheads
    std::vector<TransferLines> transfer;  // distinct lines, worked out for ranks 0..period-1
    std::vector<int> index;               // per rank: its lines in `transfer`
    int period = 0;                       // 0: every rank's lines worked out
    const TransferLines& of(int rank) const { return transfer[index[rank]]; }
  };
  // An id for set's groups, equal for sets with equal groups.
  int groups_id(const GroupSet& set);
  int groups_id(const std::vector<std::vector<int>>& groups);
  // The lines of calls of `op` on the groups `id` (set's) for at least ranks 0..ranks-1, which
  // must be the representatives of set's fold. `period` > 0: ranks r and r mod period have the
  // same lines (a translation of the cluster keeping the topology and this call's traffic maps
  // one onto the other: the call's own fold, often finer than the step's), so only ranks below
  // it are worked out. Lines are kept per period too, so they never depend on earlier requests.
  // `router` (the calling thread's) routes on `topo`; lines another thread is working out are
  // waited for, not worked out twice.
  std::shared_ptr<const Lines> lines(Router& router, const Topology& topo, int id, CollectiveOp op, GroupSet& set,
                                     int ranks, int period = 0);
  std::size_t bytes() const;  // host memory held, roughly
  // What one rank's flows put on a link, per byte of the call's size, and the least wait among them.
  struct LinkSum {
    double load = 0.0;
    double first_wait_s = std::numeric_limits<double>::infinity();
  };

 private:
  mutable std::mutex mutex_;
  std::condition_variable worked_out_;  // an entry's work ended
  std::vector<std::vector<std::vector<int>>> groups_;  // distinct groups seen; id = index
  std::multimap<std::uint64_t, int> by_hash_;          // hash of groups -> ids
  struct Entry {
    std::shared_ptr<const Lines> lines;  // replaced, never changed, when more ranks are asked for
    bool working = false;                // a thread is working out more of them
  };
  std::map<std::tuple<int, int, int>, Entry> lines_;  // (groups' id, op, period)
  std::size_t bytes_ = 0;
};

// Those bounds, handed out for one rank class at a time: a step's bound is the longest of its
// classes' chains, and classes whose bounds agree on every call have the same chain. A step
// repeats the same calls every layer, and layouts on one traffic pattern (the planner's) share
// most of theirs: the lines come from a store on the pattern's topology, worked out once for all
// patterns there. Group sets are matched by their groups, not their address, so a kept bound is
// exactly the one call_transfer_bounds would give again.
class CallBounds {
 public:
  // `store` must belong to the topology and router every get() is given.
  explicit CallBounds(std::shared_ptr<TransferLineStore> store = std::make_shared<TransferLineStore>());
  struct Call {
    double overhead_s;  // launch and per-peer overheads
    double transfer_s;  // then at least this until the call returns
  };
  Call get(Router& router, const Topology& topo, const RankFold& fold, CollectiveOp op, GroupSet& set,
           double size_bytes);
  // The class whose chain the next build asks for. It starts a build: its group sets are matched
  // anew (a new build's may reuse an earlier one's address).
  void select(int rank_class);
  // Starts a layout: distinct_classes looks at its calls only, and it sets its calls' periods
  // anew; what was worked out stays.
  void start_layout() {
    used_.clear();
    periods_.clear();
  }
  // This layout's calls of the `traffic` kind on `groups` have that period (TransferLineStore::lines).
  void set_period(const std::vector<std::vector<int>>& groups, GroupTraffic traffic, int period) {
    periods_[{store_->groups_id(groups), static_cast<int>(traffic)}] = period;
  }
  // One class of each set of classes whose bounds agree on every call handed out since start_layout.
  std::vector<int> distinct_classes() const;
  // Host memory held, roughly, besides the store's.
  std::size_t bytes() const { return sizeof(*this) + matched_.size() * sizeof(matched_[0]); }

 private:
  std::shared_ptr<TransferLineStore> store_;
  std::vector<std::pair<const GroupSet*, int>> matched_;  // this build's sets -> the store's groups id
  std::map<std::pair<int, int>, int> periods_;  // (groups' id, traffic) -> set_period's, this layout
  std::map<std::pair<int, int>, std::shared_ptr<const TransferLineStore::Lines>> used_lines_;  // (groups' id, op)
  std::set<std::tuple<int, int, double>> used_;  // (groups' id, op, size) since start_layout
  int selected_ = 0;
  int classes_ = 0;  // of the fold get() was last given
};

}  // namespace basp
