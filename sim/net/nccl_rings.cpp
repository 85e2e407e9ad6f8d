// NCCL's ring order for a group, reduced to directed edges with channel counts (identical edges of
// different channels are one flow of several channels' bytes).
#include "nccl_rings.hpp"

#include <algorithm>
#include <map>
#include <set>

namespace basp {

namespace {

template <class NodeOf, class RailOf>
Rings rings_of(std::span<const int> group, NodeOf node_of, RailOf rail_of) {
  std::vector<int> members(group.begin(), group.end());
  std::sort(members.begin(), members.end());
  std::map<int, std::vector<int>> by_node;
  for (int r : members) by_node[node_of(r)].push_back(r);
  std::set<int> rails;
  if (by_node.size() > 1)
    for (int r : by_node.begin()->second) rails.insert(rail_of(r));
  const std::vector<int> channel_rail(rails.begin(), rails.end());
  Rings out;
  out.channels = std::max<std::size_t>(1, channel_rail.size());
  const std::size_t n = members.size();
  if (n < 2) return out;
  std::vector<int> ring;
  // Every channel's edges, then identical ones counted: sorted by (from, to) as RingEdge orders.
  std::vector<std::pair<int, int>> edges;
  edges.reserve(out.channels * n);
  for (std::size_t c = 0; c < out.channels; ++c) {
    ring.clear();
    for (auto& [node, ranks] : by_node) {
      std::size_t start = 0;
      if (c < channel_rail.size())
        while (start + 1 < ranks.size() && rail_of(ranks[start]) != channel_rail[c]) ++start;
      for (std::size_t k = 0; k < ranks.size(); ++k) ring.push_back(ranks[(start + k) % ranks.size()]);
    }
    for (std::size_t k = 0; k < n; ++k) edges.push_back({ring[k], ring[(k + 1) % n]});
  }
  std::sort(edges.begin(), edges.end());
  for (std::size_t k = 0; k < edges.size();) {
    std::size_t same = k + 1;
    while (same < edges.size() && edges[same] == edges[k]) ++same;
    out.edges.push_back({edges[k].first, edges[k].second, static_cast<std::uint32_t>(same - k)});
    k = same;
  }
  return out;
}

int rail_of_rank(const Topology& topo, int rank) {
  const int nic = topo.graph[topo.gpus[rank]].nic;
  return nic < 0 ? -1 : topo.graph[nic].rail;
}

}  // namespace

RankPlaces rank_places(const TopologyTemplate& t) {
  // As build_node: GPU i uses NIC nic_of_gpu[i] (or i·nics/gpus), and NIC j is on rail j.
  RankPlaces p;
  p.gpus_per_node = std::max(1, t.node.gpus);
  for (int i = 0; i < t.node.gpus; ++i)
    p.local_rail.push_back(t.node.nics < 1 ? -1 : t.node.nic_of_gpu.empty() ? i * t.node.nics / t.node.gpus
                                                                             : t.node.nic_of_gpu[i]);
  return p;
}

Rings nccl_rings(const RankPlaces& places, std::span<const int> group) {
  return rings_of(group, [&](int r) { return places.node_of(r); }, [&](int r) { return places.rail_of(r); });
}

Rings nccl_rings(const Topology& topo, std::span<const int> group) {
  if (!topo.cluster_ranks.empty()) {  // a part of a template: the cluster's ranks, every node alike
    RankPlaces places;
    places.gpus_per_node = std::max(1, topo.gpus_per_node);
    for (int i = 0; i < topo.gpus_per_node; ++i) places.local_rail.push_back(rail_of_rank(topo, i));
    return nccl_rings(places, group);
  }
  return rings_of(group, [&](int r) { return topo.node_of_rank(r); }, [&](int r) { return rail_of_rank(topo, r); });
}

}  // namespace basp
