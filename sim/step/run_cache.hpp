// Caches what simulations of many layouts on one cluster share: parts of a template, folds of
// traffic patterns with their call bounds, call periods and routers (none of it changes a result).
#pragma once

#include "cluster_part.hpp"
#include "collective_bounds.hpp"
#include "rank_fold.hpp"
#include "routing.hpp"
#include "topology.hpp"

#include <cstddef>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <utility>
#include <vector>

namespace basp {

// What runs on one cluster keep from one layout to the next (one per thread): the node moves
// choose_fold derived, the folds of the latest traffic patterns (matched exactly) with the call
// bounds worked out on them, and the routes found. None of it changes a result: each is what
// would be derived again.
class RunCache {
 public:
  MoveCache moves, skeleton_moves;
  // A pattern's equitable cells (cell_choice), worked out once: [0] with the fabric trunks left
  // out of the refinement, [1] with them in; empty where they merge nothing.
  struct PatternCells {
    bool tried[2] = {false, false};
    std::optional<FoldChoice> found[2];
  };
  // What one strategy runs on: the whole topology, or a part of a template (its ranks the
  // cluster's), and the fold on its links.
  struct Network {
    const Topology& topo;
    const FoldChoice& choice;
    CallBounds& bounds;  // the calls' bounds worked out on this fold so far (step_lower_bound_s)
    PatternCells& cells;  // where choice found no translation
  };
  // The network and fold for a traffic pattern, valid until the next call. `parts`: a template
  // with a skeleton runs on a part where the class engine applies; a part built for an earlier
  // pattern is reused when it holds the nodes this one needs (routes found on it stay).
  Network network(EngineMode mode, const ClusterBuilds& cluster, int ranks, std::span<const TrafficGroups> traffic,
                  bool parts);
  Router& router(const Topology& topo);
  // The period of the finest translation of the cluster that keeps the topology and one call's
  // traffic alone (choose_fold on that traffic; `ranks` when there is none): ranks r and
  // r mod period then have the same call bounds. A step's fold keeps all its calls' traffic, so
  // this is often finer (strided groups rotate within their SP group; ZeRO's rings shift).
  int call_period(EngineMode mode, const ClusterBuilds& cluster, int ranks, const TrafficGroups& traffic, bool parts);
  // false: step_lower_bound_s works out every rank class's lines itself (tests compare the two).
  bool call_periods = true;
  // The calls' lines on the whole topology come from `other`'s store from now on: the planner's
  // threads work each call out once (a store serves threads; parts of a template stay per cache).
  void share_whole_lines(const RunCache& other) { whole_lines_ = other.whole_lines_; }

 private:
  // The router of the topology last routed on that is not a kept part (the whole topology, or a
  // part only a pattern still holds, kept alive with it).
  std::shared_ptr<const Topology> routed_part_;
  const Topology* routed_ = nullptr;
  std::unique_ptr<Router> router_;
  struct Part {
    std::shared_ptr<const Topology> topo;
    std::vector<int> nodes;
    std::unique_ptr<Router> router;  // made when first asked for
    std::shared_ptr<TransferLineStore> lines = std::make_shared<TransferLineStore>();  // its patterns' calls
  };
  struct WholeLines {  // the calls of patterns on the whole topology, of the cluster last asked for
    std::mutex mutex;
    const ClusterBuilds* cluster = nullptr;
    std::shared_ptr<TransferLineStore> store;
  };
  std::shared_ptr<WholeLines> whole_lines_ = std::make_shared<WholeLines>();
  std::deque<Part> parts_;  // most recent first
  std::shared_ptr<const Topology> part_holding(const ClusterBuilds& cluster, const std::vector<int>& nodes);
  struct Pattern {
    EngineMode mode;
    int ranks;
    bool parts;
    std::vector<std::pair<GroupTraffic, std::vector<std::vector<int>>>> traffic;
    std::shared_ptr<const Topology> part;  // null: the whole topology
    FoldChoice choice;
    std::unique_ptr<CallBounds> bounds;
    std::unique_ptr<PatternCells> cells = std::make_unique<PatternCells>();
    std::size_t bytes() const;  // host memory held, roughly
  };
  const ClusterBuilds* cluster_ = nullptr;
  std::deque<Pattern> patterns_;  // most recent first
  struct CallPeriod {
    EngineMode mode;
    int ranks;
    bool parts;
    GroupTraffic traffic;
    std::vector<std::vector<int>> groups;
    int period;
  };
  std::deque<CallPeriod> call_periods_;  // most recent first, 64 kept
  const ClusterBuilds* periods_cluster_ = nullptr;  // the cluster they belong to
};

}  // namespace basp
