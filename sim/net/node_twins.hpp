// Twin nodes: nodes built alike (the same devices, internal links and edge order, capacities and
// latencies), so that a route inside one is the same route inside the other, link for link.
//
// The router works out a segment that stays inside a node once per kind of node and carries it to
// the node's twins, instead of a Dijkstra per node. That is exact where no path of the segment's
// transit class can leave the node: every device outside that a node's link reaches must be one a
// path of that class may not pass through (a fabric switch, a NIC), which `closed` records per
// class. Then shortest paths, their ties, the order they are found in and their latencies depend
// only on the node's own graph, which twins share by construction (docs/symmetry.md).
#pragma once

#include "topology.hpp"

#include <cstdint>
#include <span>
#include <vector>

namespace basp {

struct NodeTwins {
  std::vector<int> representative;    // by node: the first node built like it (itself when none before)
  std::vector<std::uint8_t> closed;   // by node: bit t set when no neighbour outside may transit class t
  std::vector<std::uint32_t> local;   // by vertex: its index among its node's vertices (id order); by link
  std::vector<std::uint32_t> link_local;  // id: its index among its node's links (-1: not inside a node)
  std::vector<std::uint32_t> vertex_begin, vertices;  // node k's vertices: vertices[vertex_begin[k]...]
  std::vector<std::uint32_t> link_begin, links;       // node k's links in their local order
  int kinds = 0;                      // distinct kinds of node

  // The vertex or link of node k that stands where `v` (or `link`) stands in its own node.
  VertexId vertex_in(int k, VertexId v) const { return vertices[vertex_begin[k] + local[v]]; }
  int link_in(int k, int link) const { return static_cast<int>(links[link_begin[k] + link_local[link]]); }
};

// The twins of `topo`'s nodes; `transit[v]` is the bit mask of the transit classes vertex v may
// pass (the router's). Linear in the graph's size.
NodeTwins node_twins(const Topology& topo, std::span<const std::uint8_t> transit);

}  // namespace basp
