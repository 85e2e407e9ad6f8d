// The rings NCCL builds for ring collectives on a group: node-major, one channel per NIC the group
// uses in a node, and the directed edges they use with how many channels share each edge.
#pragma once

#include "topology.hpp"
#include "topology_template.hpp"

#include <span>
#include <utility>
#include <vector>

namespace basp {

struct RingEdge {
  int from = 0, to = 0;  // ranks
  std::uint32_t channels = 0;  // channels whose ring has this edge
  friend bool operator<(const RingEdge& a, const RingEdge& b) {
    return a.from != b.from ? a.from < b.from : a.to < b.to;
  }
};

struct Rings {
  std::size_t channels = 1;
  std::vector<RingEdge> edges;  // ordered by (from, to); empty for groups of one rank
};

// Where ranks sit, as NCCL's ring search sees them: each rank's node and its NIC's rail (-1: no
// NIC). Templates build every node alike, so one node's rails stand for all (`local_rail`, by rank
// mod gpus_per_node, ranks node-major); other topologies list every rank.
struct RankPlaces {
  int gpus_per_node = 1;
  std::vector<int> local_rail;
  std::vector<int> node, rail;  // by rank; empty: the uniform form above
  int node_of(int rank) const { return node.empty() ? rank / gpus_per_node : node[rank]; }
  int rail_of(int rank) const { return rail.empty() ? local_rail[rank % gpus_per_node] : rail[rank]; }
};
RankPlaces rank_places(const TopologyTemplate& t);  // uniform, from the template (no graph)

// Ring c enters every node at the first member whose NIC is the node's c-th NIC and visits the
// others in rank order from there, so each channel's inter-node traffic lands on a NIC of its own.
Rings nccl_rings(const RankPlaces& places, std::span<const int> group);
// On a part of a template (topo.cluster_ranks), `group` names the cluster's ranks.
Rings nccl_rings(const Topology& topo, std::span<const int> group);

}  // namespace basp
