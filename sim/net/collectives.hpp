// Collectives as schedules of flows on the engine (docs/design.md, "Definitions"): all-to-all posts
// every pairwise send at once; all-gather, reduce-scatter and all-reduce are pipelined rings.
#pragma once

#include "engine.hpp"
#include "flow_cells.hpp"
#include "nccl_rings.hpp"
#include "rank_fold.hpp"
#include "routing.hpp"
#include "topology.hpp"

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

namespace basp {

enum class CollectiveOp { alltoall, allgather, reducescatter, allreduce, sendrecv };
inline constexpr std::size_t collective_op_count = 5;
enum class Placement { contiguous, strided };

// What nccl-tests says of each collective: its name and the bus-bandwidth factor for n ranks
// (busbw = algbw · factor), so predicted and measured bandwidth use one formula.
struct CollectiveInfo {
  std::string_view name;
  double (*busbw_factor)(int n);
};
const CollectiveInfo& collective_info(CollectiveOp op);
// What a fold must keep of a call's groups: the partition, NCCL's rings or the cyclic order.
GroupTraffic group_traffic(CollectiveOp op);
std::optional<CollectiveOp> parse_collective_op(std::string_view name);

// B groups of K = ranks/B: contiguous (g·K … g·K+K−1) or strided (ranks ≡ g mod B).
// Throws InputError (field "--groups") when B does not divide the ranks.
std::vector<std::vector<int>> make_groups(int ranks, int groups, Placement placement);

// The flows one call of an op on every group of a set builds, in build order, their paths stored
// once on one engine (Engine::store_path), with what depends on the call's size: bytes =
// size · factor / divisor (each flow's bytes computed as a fresh build computes them, to the bit).
// A step repeats its calls; routing and folding them again was a fifth of its simulation.
struct CallShape {
  struct Flow {
    int from_class, to_class;
    Engine::StoredPath path;
    double factor, divisor, wait_s;
    std::uint32_t count;
    std::uint32_t members = 1;  // with cells: the flows of its cell, which it stands for
    std::uint32_t relaxed_begin = 0, relaxed_count = 0;  // its bytes on relaxed links, in `relaxed`
  };
  std::vector<Flow> flows;
  // With cells: (engine link, count·share summed over the cell's members) on each relaxed link.
  std::vector<std::pair<int, double>> relaxed;
};

// The groups of one kind of call (a partition of the ranks), with what building their calls needs:
// each rank's group, and NCCL's rings (made on first use, representatives only).
class GroupSet {
 public:
  GroupSet(std::vector<std::vector<int>> groups, const RankFold& fold);
  const std::vector<std::vector<int>>& groups() const { return groups_; }

  int group_of(int rank) const { return group_of_[rank]; }
  // Positions in group g of the members that represent their class, in group order.
  const std::vector<int>& representatives(std::size_t g) const { return reps_[g]; }

  struct RingPlan {
    std::vector<std::size_t> channels;        // per group
    std::vector<std::vector<RingEdge>> edges; // per group: edges leaving a representative
    std::vector<std::vector<RingEdge>> into;  // per group: edges entering a representative
    std::vector<double> step_latency_s;       // per group: its slowest edge (over the whole group)
  };
  const RingPlan& rings(const Topology& topo, Router& router);
  // The flows of one call of `op` on every group, on `engine`: null at the set's first call there
  // (a set called once, as `basp collective` does, builds its flows straight into the engine),
  // made at its second.
  const CallShape* call_shape(const Topology& topo, Router& router, CollectiveOp op, Engine& engine);
  // With a fold of cells: the flows of one call of `op`, one per flow cell, on `engine`.
  const CallShape& cell_shape(CollectiveOp op, Engine& engine);

 private:
  std::vector<std::vector<int>> groups_;
  const RankFold& fold_;
  std::vector<int> group_of_;  // by rank
  std::vector<std::vector<int>> reps_;
  std::optional<RingPlan> rings_;
  struct Shape {
    std::uint64_t engine = 0;  // the serial of the engine its calls were on
    int calls = 0;             // there
    std::optional<CallShape> shape;
  };
  std::array<Shape, collective_op_count> shapes_;  // by op
};

struct GroupCalls {
  std::vector<TaskId> call;  // per rank class: its call (launch and per-peer overheads); its ready
                             // time is when the rank entered the call
  std::vector<TaskId> done;  // per rank class: its call has returned
};

// One call of a collective on every group of `set` at once. `size_bytes` follows nccl-tests: the
// per-rank send buffer for all-to-all and reduce-scatter, the receive buffer for all-gather, the
// buffer for all-reduce, the message for send/recv (each member sends to the next). `entry`, when
// given, holds per rank class the task after which it enters the call. With a fold, only the
// representatives' tasks and the flows they send are built (their hops on representative links).
GroupCalls add_collectives(Engine& engine, Router& router, const Topology& topo, const RankFold& fold,
                           CollectiveOp op, GroupSet& set, double size_bytes, std::span<const TaskId> entry = {});

// Every flow of one call of `op` on every group of `set` (a set on RankFold::identity), routed:
// the traffic equitable cells are refined on (flow_cells.hpp), each flow's bytes as a fresh build's.
CallTraffic call_traffic(const Topology& topo, Router& router, CollectiveOp op, GroupSet& set);
// The same flows appended to `into` (their hops after its hops), with room made for them first.
void append_call_traffic(const Topology& topo, Router& router, CollectiveOp op, GroupSet& set, CallTraffic& into);

// A rank's launch and per-peer overheads for one call of `op` on a group of n ranks: a delay
// before its flows, holding no bandwidth.
double call_overhead_s(const Topology& topo, CollectiveOp op, int n);
// An all-to-all's copy of a rank's own slice (size/n) within its GPU, after the overheads and
// alongside its flows (NCCL copies the send to self in the same call); 0 when not modelled.
double local_copy_s(const Topology& topo, double size_bytes, int n);

// The engine's link capacities for a topology, by link id.
std::vector<double> link_capacities(const Topology& topo);

}  // namespace basp
