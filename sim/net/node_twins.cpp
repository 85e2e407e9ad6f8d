// Units (nodes, or racks whose NVLink joins nodes) grouped by how they are built: a unit's signature
// lists its devices, its links in the order the graph holds them and what lies beyond them.
#include "node_twins.hpp"

#include <algorithm>
#include <bit>
#include <map>

namespace basp {

NodeTwins node_twins(const Topology& topo, std::span<const std::uint8_t> transit) {
  const Graph& g = topo.graph;
  const std::size_t n = boost::num_vertices(g);
  constexpr std::uint32_t none = ~std::uint32_t(0);
  NodeTwins t;
  // Units: devices joined by links that pass no fabric switch, numbered by their first vertex.
  t.unit.assign(n, -1);
  int nodes = 0;
  std::vector<VertexId> todo;
  for (VertexId start = 0; start < n; ++start) {
    if (t.unit[start] >= 0 || g[start].kind == VertexKind::fabric_switch) continue;
    t.unit[start] = nodes;
    todo.assign(1, start);
    while (!todo.empty()) {
      const VertexId u = todo.back();
      todo.pop_back();
      auto visit = [&](VertexId v) {
        if (t.unit[v] >= 0 || g[v].kind == VertexKind::fabric_switch) return;
        t.unit[v] = nodes;
        todo.push_back(v);
      };
      for (auto [e, end] = boost::out_edges(u, g); e != end; ++e) visit(boost::target(*e, g));
      for (auto [e, end] = boost::in_edges(u, g); e != end; ++e) visit(boost::source(*e, g));
    }
    ++nodes;
  }
  t.local.assign(n, none);
  t.link_local.assign(topo.link_count(), none);
  t.vertex_begin.assign(nodes + 1, 0);
  for (VertexId v = 0; v < n; ++v)
    if (t.unit[v] >= 0) ++t.vertex_begin[t.unit[v] + 1];
  for (int k = 0; k < nodes; ++k) t.vertex_begin[k + 1] += t.vertex_begin[k];
  t.vertices.resize(t.vertex_begin[nodes]);
  {
    std::vector<std::uint32_t> next(t.vertex_begin.begin(), t.vertex_begin.end() - 1);
    for (VertexId v = 0; v < n; ++v)
      if (const int k = t.unit[v]; k >= 0) {
        t.local[v] = next[k] - t.vertex_begin[k];
        t.vertices[next[k]++] = static_cast<std::uint32_t>(v);
      }
  }
  auto inside = [&](VertexId v, int k) { return t.unit[v] == k; };
  t.link_begin.assign(nodes + 1, 0);
  for (int k = 0; k < nodes; ++k) {
    t.link_begin[k] = static_cast<std::uint32_t>(t.links.size());
    for (std::uint32_t i = t.vertex_begin[k]; i < t.vertex_begin[k + 1]; ++i)
      for (auto [e, end] = boost::out_edges(t.vertices[i], g); e != end; ++e)
        if (inside(boost::target(*e, g), k)) {
          t.link_local[g[*e].id] = static_cast<std::uint32_t>(t.links.size()) - t.link_begin[k];
          t.links.push_back(static_cast<std::uint32_t>(g[*e].id));
        }
  }
  t.link_begin[nodes] = static_cast<std::uint32_t>(t.links.size());

  // Everything a route inside the node reads, in the order it reads it: devices (kind, rail, NIC),
  // each device's links out and in, in the graph's order (a link inside by its end and local
  // index, one leaving by what may pass through its far end), and each link's class, capacity and
  // latency. A GPU whose NIC sits in another node gets a signature no other node shares.
  t.representative.assign(nodes, 0);
  t.closed.assign(nodes, 0);
  std::map<std::vector<std::uint64_t>, int> first_of;
  std::vector<std::uint64_t> sig;
  for (int k = 0; k < nodes; ++k) {
    sig.clear();
    bool unique = false;
    std::uint8_t beyond = 0;  // transit classes some neighbour outside the node may pass
    const std::uint32_t begin = t.vertex_begin[k], end = t.vertex_begin[k + 1];
    sig.push_back(end - begin);
    for (std::uint32_t i = begin; i < end; ++i) {
      const Vertex& d = g[t.vertices[i]];
      sig.push_back(static_cast<std::uint64_t>(d.kind));
      sig.push_back(static_cast<std::uint64_t>(d.rail + 1));
      if (d.nic >= 0 && !inside(d.nic, k)) unique = true;
      sig.push_back(d.nic < 0 ? 0 : 1 + std::uint64_t(t.local[d.nic]));
    }
    auto edge = [&](VertexId other, int id) {
      if (inside(other, k)) {
        sig.push_back(1);
        sig.push_back(t.local[other]);
        sig.push_back(t.link_local[id]);
      } else {
        sig.push_back(2);
        sig.push_back(transit[other]);
        beyond |= transit[other];
      }
    };
    for (std::uint32_t i = begin; i < end; ++i) {
      const VertexId v = t.vertices[i];
      for (auto [e, e_end] = boost::out_edges(v, g); e != e_end; ++e) edge(boost::target(*e, g), g[*e].id);
      sig.push_back(3);
      for (auto [e, e_end] = boost::in_edges(v, g); e != e_end; ++e) edge(boost::source(*e, g), g[*e].id);
      sig.push_back(3);
    }
    for (std::uint32_t i = t.link_begin[k]; i < t.link_begin[k + 1]; ++i) {
      const Link& l = topo.link(static_cast<int>(t.links[i]));
      sig.push_back(static_cast<std::uint64_t>(l.cls));
      sig.push_back(std::bit_cast<std::uint64_t>(l.capacity_Bps));
      sig.push_back(std::bit_cast<std::uint64_t>(l.latency_s));
    }
    t.closed[k] = static_cast<std::uint8_t>(~beyond);
    sig.push_back(t.closed[k]);
    t.representative[k] = unique ? k : first_of.try_emplace(sig, k).first->second;
  }
  for (int k = 0; k < nodes; ++k) t.kinds += t.representative[k] == k;
  return t;
}

}  // namespace basp
