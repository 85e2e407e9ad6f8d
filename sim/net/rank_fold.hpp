// Symmetry classes: a translation of the cluster by whole nodes that maps topology and traffic onto
// themselves, so ranks 0..period-1 stand for all ranks and one link per class for its class.
//
// Exactness (docs/symmetry.md): under such an automorphism the max-min rates, and so every task's
// times, are equal across a class. The quotient keeps the flows whose source is a representative
// rank, moves each hop to its link's representative (hops that land on one link stay separate, so
// the solver sums the class's load on one member link exactly) and indexes per-rank tasks by class.
// A link whose class has fewer members than the ranks' (fixed by the translation, or by a power of
// it) carries the load of members/|class| translates of each representative hop: its capacity in
// the quotient is divided by that count, and its bytes multiplied back.
#pragma once

#include "engine.hpp"
#include "flow_cells.hpp"
#include "hop.hpp"
#include "nccl_rings.hpp"
#include "topology.hpp"

#include <algorithm>
#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace basp {

enum class EngineMode { automatic, classes, full };
std::optional<EngineMode> parse_engine_mode(std::string_view name);  // "auto", "classes", "full"
std::string_view to_string(EngineMode mode);

struct CellFold;

// The group: blocks of block_nodes consecutive nodes move on by one block (generator 0), and nodes
// rotate by step_nodes within every block (generator 1). Nodes equal mod step_nodes form a class.
// Or, where no translation exists, equitable cells (cell_fold.hpp): classes of different sizes.
struct RankFold {
  int ranks = 0;   // ranks of the job, N
  int period = 0;  // representatives 0..period-1; rank r is in the class of r mod period
  int gpus_per_node = 1;
  int step_nodes = 0, block_nodes = 0;
  // Links of the quotient's engine are classes 0..link_classes-1 (unfolded: the links themselves).
  std::vector<int> link_class;  // link id -> its class (empty: unfolded)
  std::vector<int> class_link;  // class -> its representative, the smallest link id of the class
  std::vector<std::uint32_t> link_load;  // link id -> translates of a representative hop it carries

  // With cells: the step's cells and traffic, and its rank cells (within `cells`); link_class and
  // class_link then map links to engine links (a cell's, or a relaxed link's own), period is the
  // job's ranks and link_load empty.
  std::shared_ptr<const CellFold> cells;
  const Cells* rank_cells = nullptr;

  static RankFold identity(int ranks);
  bool folded() const { return cells != nullptr || period < ranks; }
  int link_classes() const { return static_cast<int>(class_link.size()); }
  int classes() const { return cells ? rank_cells->count() : period; }
  int rank_class(int rank) const { return cells ? rank_cells->of[rank] : rank % period; }
  bool represents(int rank) const { return cells ? rank_cells->representative[rank_class(rank)] == rank : rank < period; }
  // Per class; with cells (whose sizes differ: class_members) the average, for estimates: the
  // quotient's size then chooses the layers simulated and the memory it is sized for.
  std::uint32_t members() const { return static_cast<std::uint32_t>(std::max(1, ranks / classes())); }
  std::uint32_t class_members(int c) const { return cells ? rank_cells->members[c] : members(); }
  // What one member link's load is of its engine link's (traces): 1/members with cells, else the
  // translates a representative hop stands for.
  double member_load_factor(int engine_link) const;
  static constexpr int generators = 2;
  int moved(int rank, int generator) const;  // where a generator takes a rank
  int engine_link(int link) const { return link_class.empty() ? link : link_class[link]; }
  int topology_link(int engine_link) const { return class_link.empty() ? engine_link : class_link[engine_link]; }
  // `hops` on the engine's links (into `out`, returned).
  std::span<const Hop> fold_hops(std::span<const Hop> hops, std::vector<Hop>& out) const;
  // Per-class bytes of the quotient's engine, expanded to every link of the topology.
  std::vector<double> expand_links(const std::vector<double>& per_class) const;
  // The capacities the quotient's engine runs on, by class, from the topology's by link id.
  std::vector<double> quotient_capacities(const std::vector<double>& capacity_Bps) const;
  // The quotient's engine on those capacities, with a fold of cells' trunks marked never binding.
  Engine quotient_engine(const std::vector<double>& capacity_Bps) const;
  // Counts of the quotient's run as the whole cluster's: flows, events and refills times members
  // (batches and solves are shared by a class, so they stay).
  RunStats expand_stats(RunStats quotient) const;
  // Bytes by LinkClass over the whole cluster from the engine's per-class bytes: each class's
  // bytes times members (its links carry bytes·load each, and there are members/load of them).
  PerLinkClass<double> bytes_by_class(const Topology& topo, const std::vector<double>& per_class) const;
};

// How the groups of one kind of call exchange, which decides what the translation must preserve.
enum class GroupTraffic {
  all_pairs,   // all-to-all: the partition into groups
  nccl_rings,  // ring collectives: the edges of NCCL's rings
  successor,   // send/recv to the next member: the cyclic order within each group
};
struct TrafficGroups {
  const std::vector<std::vector<int>>* groups;
  GroupTraffic traffic;
};

// Which engine ran and why, with the sizes of the quotient.
struct EngineUse {
  std::string engine = "full";  // "classes" or "full"
  std::string why;              // why this engine: the symmetry found, or what broke it
  int rank_classes = 0;         // ranks simulated (all of them on the full engine)
  int link_classes = 0;         // links simulated
  int members = 1;              // ranks, flows and links per class
};

struct FoldChoice {
  RankFold fold;
  EngineUse use;
};

// What choose_fold derives about a topology's node moves, kept for further calls on the same
// topology, which must not change in between (each strategy of a run folds the same cluster;
// only the traffic differs).
class MoveCache {
 public:
  MoveCache();
  ~MoveCache();
  struct State;
  std::unique_ptr<State> state;
};

// The finest exact translation for `mode` (automatic: classes when one exists, else the full
// engine with the reason). Throws InputError (field "--engine") when classes are demanded and none
// exists. `ranks` are the job's ranks 0..ranks-1, node-major on topo.gpus.
FoldChoice choose_fold(EngineMode mode, const Topology& topo, int ranks, std::span<const TrafficGroups> traffic,
                       MoveCache* cache = nullptr);
// The same search on a template's skeleton (build_skeleton): each move is derived and verified on
// the fabric and the nodes' NIC ports, matched in NIC order (the nodes' insides are alike by
// construction, so a move that keeps the skeleton keeps the whole topology). The fold's links are
// the skeleton's; `places` (rank_places of the template) gives NCCL's rings.
FoldChoice choose_fold_on_skeleton(EngineMode mode, const Topology& skeleton, const RankPlaces& places, int ranks,
                                   std::span<const TrafficGroups> traffic, MoveCache* cache = nullptr);

}  // namespace basp
