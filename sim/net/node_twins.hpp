// Twin nodes: units of the cluster built alike (the same devices, links and edge order, capacities
// and latencies), so that a route inside one is the same route inside the other, link for link.
//
// A unit is what links join without a fabric switch: a node, or an NVL72 rack (its nodes and the
// NVSwitch trays between them). The router works out a segment that stays inside a unit once per
// kind of unit and carries it to the unit's twins, instead of a Dijkstra per unit. That is exact
// where no path of the segment's transit class can leave the unit: every device outside that a
// unit's link reaches (a fabric switch) must be one a path of that class may not pass through,
// which `closed` records per class. Then shortest paths, their ties, the order they are found in
// and their latencies depend only on the unit's own graph, which twins share by construction
// (docs/symmetry.md).
#pragma once

#include "topology.hpp"

#include <cstdint>
#include <span>
#include <vector>

namespace basp {

struct NodeTwins {
  std::vector<int> unit;              // by vertex: its unit (-1: a fabric switch), by first vertex
  std::vector<int> representative;    // by unit: the first unit built like it (itself when none before)
  std::vector<std::uint8_t> closed;   // by unit: bit t set when no neighbour outside may transit class t
  std::vector<std::uint32_t> local;   // by vertex: its index among its unit's vertices (id order); by link
  std::vector<std::uint32_t> link_local;  // id: its index among its unit's links (-1: not inside a unit)
  std::vector<std::uint32_t> vertex_begin, vertices;  // unit k's vertices: vertices[vertex_begin[k]...]
  std::vector<std::uint32_t> link_begin, links;       // unit k's links in their local order
  int kinds = 0;                      // distinct kinds of unit

  // The vertex or link of unit k that stands where `v` (or `link`) stands in its own unit.
  VertexId vertex_in(int k, VertexId v) const { return vertices[vertex_begin[k] + local[v]]; }
  int link_in(int k, int link) const { return static_cast<int>(links[link_begin[k] + link_local[link]]); }
};

// The twins of `topo`'s units; `transit[v]` is the bit mask of the transit classes vertex v may
// pass (the router's). Linear in the graph's size.
NodeTwins node_twins(const Topology& topo, std::span<const std::uint8_t> transit);

}  // namespace basp
