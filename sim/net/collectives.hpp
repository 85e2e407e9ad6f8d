// Collectives as schedules of flows on the engine (docs/design.md, "Definitions"): all-to-all posts
// every pairwise send at once; all-gather, reduce-scatter and all-reduce are pipelined rings.
#pragma once

#include "engine.hpp"
#include "routing.hpp"
#include "topology.hpp"

#include <optional>
#include <span>
#include <string_view>
#include <vector>

namespace basp {

enum class CollectiveOp { alltoall, allgather, reducescatter, allreduce, sendrecv };
enum class Placement { contiguous, strided };

// What nccl-tests says of each collective: its name and the bus-bandwidth factor for n ranks
// (busbw = algbw · factor), so predicted and measured bandwidth use one formula.
struct CollectiveInfo {
  std::string_view name;
  double (*busbw_factor)(int n);
};
const CollectiveInfo& collective_info(CollectiveOp op);
std::optional<CollectiveOp> parse_collective_op(std::string_view name);

// B groups of K = ranks/B: contiguous (g·K … g·K+K−1) or strided (ranks ≡ g mod B).
// Throws InputError (field "--groups") when B does not divide the ranks.
std::vector<std::vector<int>> make_groups(int ranks, int groups, Placement placement);

struct CollectiveTasks {
  std::vector<TaskId> member_call;  // per group member: its call (launch and per-peer overheads);
                                    // its ready time is when the member entered the call
  std::vector<TaskId> member_done;  // per group member, in group order: its call has returned
};

// The call of one collective on one group. `size_bytes` follows nccl-tests: the per-rank send
// buffer for all-to-all and reduce-scatter, the receive buffer for all-gather, the buffer for
// all-reduce, the message for send/recv (each member sends to the next). `entry[i]`, when given,
// is the task after which member i enters the call.
CollectiveTasks add_collective(Engine& engine, Router& router, const Topology& topo, CollectiveOp op,
                               std::span<const int> group, double size_bytes,
                               std::span<const TaskId> entry = {});

// The engine's link capacities for a topology, by link id.
std::vector<double> link_capacities(const Topology& topo);

}  // namespace basp
