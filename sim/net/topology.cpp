// Building blocks shared by the template builder and the explicit loader, and the checks every
// topology must pass before anything routes over it (connected, consistent nodes, NIC affinity).
#include "topology.hpp"

#include "input_error.hpp"

#include <deque>
#include <functional>
#include <map>

namespace basp {

std::string_view to_string(VertexKind kind) {
  switch (kind) {
    case VertexKind::gpu: return "gpu";
    case VertexKind::nvswitch: return "nvswitch";
    case VertexKind::pcie: return "pcie";
    case VertexKind::host: return "host";
    case VertexKind::nic: return "nic";
    case VertexKind::fabric_switch: return "switch";
  }
  return "?";
}

std::string_view to_string(LinkClass cls) {
  switch (cls) {
    case LinkClass::nvlink: return "nvlink";
    case LinkClass::pcie: return "pcie";
    case LinkClass::host: return "host";
    case LinkClass::nic: return "nic";
    case LinkClass::fabric: return "fabric";
  }
  return "?";
}

VertexId add_vertex(Topology& topo, Vertex v) { return boost::add_vertex(std::move(v), topo.graph); }

int add_link(Topology& topo, VertexId from, VertexId to, double capacity_Bps, double latency_s,
             LinkClass cls) {
  const int id = topo.link_count();
  boost::add_edge(from, to, EdgeLink{id}, topo.graph);
  topo.links.push_back(Link{from, to, capacity_Bps, latency_s, cls});
  return id;
}

void add_duplex(Topology& topo, VertexId a, VertexId b, double capacity_Bps, double latency_s,
                LinkClass cls) {
  add_link(topo, a, b, capacity_Bps, latency_s, cls);
  add_link(topo, b, a, capacity_Bps, latency_s, cls);
}

std::vector<char> reachable(const Graph& g, VertexId start, const std::function<bool(VertexId)>& may_transit) {
  std::vector<char> seen(boost::num_vertices(g), 0);
  std::deque<VertexId> todo{start};
  seen[start] = 1;
  auto visit = [&](VertexId v) {
    if (seen[v]) return;
    seen[v] = 1;
    if (may_transit(v)) todo.push_back(v);
  };
  while (!todo.empty()) {
    VertexId u = todo.front();
    todo.pop_front();
    for (auto [e, end] = boost::out_edges(u, g); e != end; ++e) visit(boost::target(*e, g));
    for (auto [e, end] = boost::in_edges(u, g); e != end; ++e) visit(boost::source(*e, g));
  }
  return seen;
}

void finalize_topology(Topology& topo) {
  Graph& g = topo.graph;
  const std::string& file = topo.source;
  topo.gpus.clear();
  for (VertexId v = 0; v < boost::num_vertices(g); ++v)
    if (g[v].kind == VertexKind::gpu) topo.gpus.push_back(v);
  if (topo.gpus.empty()) throw InputError(file, 0, "explicit.vertices", "the topology has no GPU");

  std::map<int, int> gpus_in_node;
  std::map<int, std::string> first_gpu;  // of each node: names the node in messages
  int last_node = -1;
  for (VertexId v : topo.gpus) {
    const int node = g[v].node;
    if (node < 0) throw InputError(file, 0, g[v].name, "every GPU needs a node index >= 0");
    if (node < last_node)
      throw InputError(file, 0, g[v].name,
                       "GPUs must be listed node by node (rank order is node-major)");
    last_node = node;
    ++gpus_in_node[node];
    first_gpu.try_emplace(node, g[v].name);
  }
  topo.nodes = static_cast<int>(gpus_in_node.size());
  topo.gpus_per_node = gpus_in_node.begin()->second;
  for (auto [node, count] : gpus_in_node)
    if (count != topo.gpus_per_node)
      throw InputError(file, 0, first_gpu[node] + ".node", "node " + std::to_string(node) + " has " +
                                        std::to_string(count) + " GPUs, node " +
                                        std::to_string(gpus_in_node.begin()->first) + " has " +
                                        std::to_string(topo.gpus_per_node) +
                                        ": every node must have the same number of GPUs");

  for (int id = 0; id < topo.link_count(); ++id) {
    const Link& l = topo.link(id);
    auto name = [&] { return g[l.from].name + "->" + g[l.to].name; };
    if (!(l.capacity_Bps > 0.0)) throw InputError(file, 0, name(), "link capacity must be > 0");
    if (!(l.latency_s >= 0.0)) throw InputError(file, 0, name(), "link latency must be >= 0");
  }

  // Everything must hang together, or some collective would never finish.
  const auto all = reachable(g, topo.gpus.front(), [](VertexId) { return true; });
  for (VertexId v = 0; v < boost::num_vertices(g); ++v)
    if (!all[v])
      throw InputError(file, 0, g[v].name,
                       "is not connected to " + g[topo.gpus.front()].name +
                           ": the topology is disconnected");

  // NIC rails default to the NIC's index within its node.
  std::map<int, int> nics_in_node;
  for (VertexId v = 0; v < boost::num_vertices(g); ++v)
    if (g[v].kind == VertexKind::nic && g[v].rail < 0) g[v].rail = nics_in_node[g[v].node]++;

  // A GPU that cannot reach every other GPU over its scale-up network needs a NIC: the nearest
  // one through PCIe unless the file named one.
  auto scale_up = [&](VertexId v) {
    const VertexKind k = g[v].kind;
    return k == VertexKind::nvswitch || k == VertexKind::pcie || k == VertexKind::host;
  };
  const auto first_domain = reachable(g, topo.gpus.front(), scale_up);
  bool one_domain = true;
  for (VertexId v : topo.gpus) one_domain = one_domain && first_domain[v];
  for (VertexId v : topo.gpus) {
    if (g[v].nic >= 0) {
      if (g[g[v].nic].kind != VertexKind::nic)
        throw InputError(file, 0, g[v].name + ".nic", "names a vertex that is not a NIC");
      continue;
    }
    auto pcie_only = [&](VertexId u) {
      return g[u].kind == VertexKind::pcie || g[u].kind == VertexKind::host;
    };
    std::deque<VertexId> todo{v};
    std::vector<char> seen(boost::num_vertices(g), 0);
    seen[v] = 1;
    while (!todo.empty() && g[v].nic < 0) {
      VertexId u = todo.front();
      todo.pop_front();
      for (auto [e, end] = boost::out_edges(u, g); e != end; ++e) {
        VertexId w = boost::target(*e, g);
        if (seen[w]) continue;
        seen[w] = 1;
        if (g[w].kind == VertexKind::nic) { g[v].nic = static_cast<int>(w); break; }
        if (pcie_only(w)) todo.push_back(w);
      }
    }
    if (g[v].nic < 0 && !one_domain)
      throw InputError(file, 0, g[v].name,
                       "this GPU reaches no NIC over PCIe, and not every GPU is in its "
                       "NVLink/PCIe domain: it could not talk to other nodes");
  }
}

}  // namespace basp
