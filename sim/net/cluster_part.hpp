// A template cluster simulated without building it whole: its symmetry is found on its skeleton,
// and the quotient runs on a part holding the representatives' nodes, the nodes their flows reach
// and the whole fabric (docs/symmetry.md, "Parts"). Only the part has a vertex per device.
#pragma once

#include "nccl_rings.hpp"
#include "rank_fold.hpp"
#include "topology_file.hpp"
#include "topology_template.hpp"

#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <vector>

namespace basp {

// The nodes a quotient's flows and bounds touch: the representatives', every node of a group that
// exchanges all pairs with a representative (and of the first group, which sizes the engine), the
// nodes of NCCL ring edges into or out of a representative, and a representative's send/recv
// neighbours. Ascending.
// With `stand_in` (a node -> its stand-in), an all-to-all group's nodes are replaced by their
// stand-ins (stand_in_node).
std::vector<int> part_nodes(const RankFold& fold, const RankPlaces& places, std::span<const TrafficGroups> traffic,
                            const std::function<int(int)>& stand_in = {});

// `nodes` (ascending) with every other node of their NVLink domains: what a part must hold.
std::vector<int> whole_domains(const TopologyTemplate& t, const std::vector<int>& nodes);

// Where an all-to-all's destination outside the part is routed: the first node of its leaf group
// with its residue modulo the fold's step outside the representatives' NVLink domains. Exact for
// the class engine: the route to a GPU of the stand-in crosses the same fabric links (same leaves
// for every NIC, same PXN proxy) and links at the same positions of a node in the same class;
// latencies are equal. Not for per-link sums of one rank's load (the planner's bounds): two
// destinations share the stand-in's links.
int stand_in_node(const TopologyTemplate& t, const RankFold& fold, int node);
// The part's rank of every cluster rank (node-major): its own, its stand-in's, or -1 (Router).
std::vector<int> part_ranks(const Topology& part, const TopologyTemplate& t, const RankFold& fold, int ranks);

// The fold found on `skeleton` carried to `part` (a part of the same template holding the
// representative nodes): a node's links are in the class of the same link of its representative
// node and carry one hop each (moves of whole nodes map a node's devices in order); fabric links
// keep their skeleton class and its load. Ranks stay the cluster's; the link class count is the part's.
FoldChoice fold_on_part(FoldChoice on_skeleton, const Topology& skeleton, const Topology& part);

// A topology file and what has been built of it, for many runs on one cluster: the skeleton
// (built at once), a sample, and the whole topology only when asked for (once; thread-safe).
class ClusterBuilds {
 public:
  ClusterBuilds(TopologyFile file, std::function<void(Topology&)> adjust = {});
  const TopologyFile& file() const { return file_; }  // an explicit topology is moved out: whole()
  const std::function<void(Topology&)>& adjust() const { return adjust_; }
  int gpus() const;   // the GPUs ranks may run on: the excluded nodes' are not counted
  int nodes() const;  // every node, excluded or not
  const Topology& whole() const;                      // built and adjusted once
  const Topology* skeleton() const { return skeleton_ ? &*skeleton_ : nullptr; }  // null: explicit
  // What describes the cluster without building it: for a template with a skeleton, node 0's
  // NVLink domain with the whole fabric (adjusted; every node is built alike), else the whole.
  const Topology& sample() const;

 private:
  TopologyFile file_;
  std::function<void(Topology&)> adjust_;
  std::optional<Topology> skeleton_, sample_;
  mutable std::once_flag whole_once_;
  // Built straight into the heap: Boost's graph has no move, so a Topology moved is a Topology copied.
  mutable std::unique_ptr<Topology> whole_;
};

// The class engine's choice for a template before any part is built: the fold on the skeleton and
// the nodes its part needs (part_nodes). nullopt where the search finds no classes, or the part
// would hold every node; the caller then builds the whole topology and searches it (the same
// answer: tests). Throws as choose_fold does when classes are demanded and none exists.
struct PartPlan {
  FoldChoice on_skeleton;
  std::vector<int> nodes;
};
std::optional<PartPlan> plan_part(EngineMode mode, const TopologyTemplate& t, const Topology& skeleton, int ranks,
                                  std::span<const TrafficGroups> traffic, MoveCache* cache = nullptr,
                                  bool stand_ins = false);

// A part holding `nodes` (ascending), `adjust` applied (a calibration).
Topology build_part(const TopologyTemplate& t, std::vector<int> nodes, const std::function<void(Topology&)>& adjust);

struct FoldedPart {
  Topology part;      // Router(part, true) routes the cluster's ranks on it
  FoldChoice choice;  // classes over the part's links
  std::vector<int> part_rank;  // with stand-ins: Router(part, part_rank) routes on it instead
};

// plan_part, build_part and fold_on_part in one; `stand_ins` for the simulation of collectives.
std::optional<FoldedPart> fold_template(EngineMode mode, const TopologyTemplate& t, const Topology& skeleton,
                                        int ranks, std::span<const TrafficGroups> traffic,
                                        const std::function<void(Topology&)>& adjust, MoveCache* cache = nullptr,
                                        bool stand_ins = false);

}  // namespace basp
