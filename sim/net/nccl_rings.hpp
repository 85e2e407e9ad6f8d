// The rings NCCL builds for ring collectives on a group: node-major, one channel per NIC the group
// uses in a node, and the directed edges they use with how many channels share each edge.
#pragma once

#include "topology.hpp"

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

// Ring c enters every node at the first member whose NIC is the node's c-th NIC and visits the
// others in rank order from there, so each channel's inter-node traffic lands on a NIC of its own.
Rings nccl_rings(const Topology& topo, std::span<const int> group);

}  // namespace basp
