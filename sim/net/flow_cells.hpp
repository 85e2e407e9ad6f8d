// Equitable cells of a call's traffic: ranks, flows and links coloured alike by refinement until
// every member of a cell sees the same of every other cell, so that one of each stands for its cell.
//
// Exactness (docs/symmetry.md, "Cells without a symmetry"): progressive filling asks of a link only
// its capacity and the shares of unfrozen flows crossing it, of a flow only its links. If (1) the
// flows of a cell have equal bytes, waits and multiplicity, their sources in one rank cell and their
// destinations in one, and each the same multiset of (link cell, share) on its path, and (2) the
// links of a cell have equal capacity and class and each carries the same multiset of (flow cell,
// share), and (3) the ranks of a cell send and receive the same multisets of flow cells, then by
// induction over the rounds of filling the flows of a cell freeze at one level, the links of a cell
// saturate together, and over the events a cell's tasks start and finish together. Colour
// refinement (1-dimensional Weisfeiler-Leman) finds the coarsest such cells; no symmetry of the
// cluster is needed. The quotient keeps one flow per flow cell standing for its members, one link
// per link cell with the capacity of all its members, and one task per rank cell.
#pragma once

#include "hop.hpp"
#include "topology.hpp"

#include <cstdint>
#include <span>
#include <vector>

namespace basp {

// One call's flows, every one of them, routed: what the cells are refined on.
struct CallFlow {
  int from = 0, to = 0;                              // ranks
  std::uint32_t hop_begin = 0, hop_count = 0;        // into CallTraffic::hops
  double factor = 1.0, divisor = 1.0, wait_s = 0.0;  // bytes = size · factor / divisor
  std::uint32_t count = 1;                           // identical flows it stands for (NCCL channels)
};
struct CallTraffic {
  std::vector<CallFlow> flows;
  std::vector<Hop> hops;
};

// A partition of elements 0..n-1 into cells numbered by their first element.
struct Cells {
  std::vector<int> of;                 // element -> its cell
  std::vector<int> representative;     // cell -> its first element
  std::vector<std::uint32_t> members;  // cell -> elements in it
  int count() const { return static_cast<int>(representative.size()); }
};

struct FlowCells {
  Cells ranks, flows, links;  // links: every link of the topology, crossed or not
  // Per link (or empty): left out of the refinement. Such links must never bind: the quotient gives
  // each its own engine link, checked below capacity at every solve (MaxMinSolver::never_binding).
  std::vector<char> relaxed;
  int rounds = 0;  // of refinement, until no cell split
};

// The coarsest equitable cells of `traffic` among `ranks` ranks and `topo`'s links other than the
// `relaxed` ones (per link, or empty: none). `rank_colour` (one per rank, or empty: all alike)
// separates ranks the traffic alone does not, such as ranks whose calls cost different overheads;
// `flow_colour` (one per flow, or empty) flows the traffic does not, such as different calls'.
FlowCells equitable_cells(const Topology& topo, int ranks, const CallTraffic& traffic,
                          std::span<const std::uint64_t> rank_colour = {}, std::vector<char> relaxed = {},
                          std::span<const std::uint64_t> flow_colour = {});

// The quotient's links: one per link cell, with the capacity of all its members, then one per
// relaxed link some flow crosses, with its own capacity, never binding.
struct QuotientLinks {
  std::vector<int> engine_link;      // topology link -> engine link (its cell's, or its own if relaxed)
  std::vector<double> capacity_Bps;  // by engine link
  std::vector<char> never_binding;   // by engine link; empty when nothing is relaxed
  std::vector<int> relaxed_link;     // engine link - cells -> the relaxed topology link
};
QuotientLinks quotient_links(const Topology& topo, const FlowCells& cells, const CallTraffic& traffic);

// The links that join two fabric switches (leaf-spine and spine-core trunks): on a fabric that is
// not oversubscribed they rarely bind, and leaving them out of the refinement lets the ranks on
// either side of an uneven leaf boundary fall into one cell.
std::vector<char> fabric_trunks(const Topology& topo);

}  // namespace basp
