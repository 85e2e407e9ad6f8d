// Expands a node kind × fabric template into devices and links. Names are stable and
// human-readable (n3.gpu5, rail2.leaf0, spine1) because reports and --dot show them.
#include "topology_template.hpp"

#include "input_error.hpp"

#include <algorithm>
#include <map>
#include <stdexcept>
#include <string>

namespace basp {
namespace {

std::string node_name(int n, const std::string& what) { return "n" + std::to_string(n) + "." + what; }

struct NodeDevices {
  int node = 0;
  double weight = 1.0;
  std::vector<VertexId> gpus, nics;
};

// `w` multiplies every capacity: the node stands for w interchangeable ones (NodeSubset).
NodeDevices build_node(Topology& topo, const TopologyTemplate& t, int n, double w,
                       std::map<int, VertexId>& domain_switches) {
  const NodeTemplate& nt = t.node;
  NodeDevices d{n, w, {}, {}};
  for (int i = 0; i < nt.gpus; ++i)
    d.gpus.push_back(add_vertex(topo, {node_name(n, "gpu" + std::to_string(i)), VertexKind::gpu, n}));

  // Host bridges and PCIe switches: GPUs and NICs are spread evenly over the switches, switches
  // evenly over the sockets.
  std::vector<VertexId> hosts, switches;
  for (int s = 0; s < nt.sockets; ++s)
    hosts.push_back(add_vertex(topo, {node_name(n, "cpu" + std::to_string(s)), VertexKind::host, n}));
  for (int a = 0; a < nt.sockets; ++a)
    for (int b = a + 1; b < nt.sockets; ++b)
      add_duplex(topo, hosts[a], hosts[b], w * nt.inter_socket_Bps, nt.inter_socket_latency_s,
                 LinkClass::host);
  for (int s = 0; s < nt.pcie_switches; ++s) {
    VertexId sw = add_vertex(topo, {node_name(n, "pcie" + std::to_string(s)), VertexKind::pcie, n});
    add_duplex(topo, sw, hosts[s * nt.sockets / nt.pcie_switches], w * nt.pcie_uplink_Bps,
               nt.pcie_latency_s, LinkClass::pcie);
    switches.push_back(sw);
  }
  auto pcie_parent = [&](int index, int count) {
    if (switches.empty()) return hosts[index * nt.sockets / count];
    return switches[index * nt.pcie_switches / count];
  };
  for (int i = 0; i < nt.gpus; ++i)
    add_duplex(topo, d.gpus[i], pcie_parent(i, nt.gpus), w * nt.pcie_Bps, nt.pcie_latency_s,
               LinkClass::pcie);
  for (int j = 0; j < nt.nics; ++j) {
    Vertex nic{node_name(n, "nic" + std::to_string(j)), VertexKind::nic, n};
    nic.rail = j;
    d.nics.push_back(add_vertex(topo, nic));
    add_duplex(topo, d.nics[j], pcie_parent(j, nt.nics), w * nt.pcie_Bps, nt.pcie_latency_s,
               LinkClass::pcie);
  }
  for (int i = 0; i < nt.gpus && nt.nics > 0; ++i) {
    const int j = nt.nic_of_gpu.empty() ? i * nt.nics / nt.gpus : nt.nic_of_gpu[i];
    topo.graph[d.gpus[i]].nic = static_cast<int>(d.nics[j]);
  }

  switch (nt.kind) {
    case NodeKind::nvswitch: {
      // One switch vertex per NVLink domain; each GPU's port is its own pair of links.
      const int domain = n / nt.domain_nodes;
      auto sw = domain_switches.find(domain);
      if (sw == domain_switches.end()) {
        const std::string name = nt.domain_nodes == 1 ? node_name(n, "nvswitch")
                                                      : "domain" + std::to_string(domain) + ".nvswitch";
        sw = domain_switches
                 .emplace(domain, add_vertex(topo, {name, VertexKind::nvswitch, nt.domain_nodes == 1 ? n : -1}))
                 .first;
      }
      for (VertexId g : d.gpus)
        add_duplex(topo, g, sw->second, w * nt.nvlink_Bps, nt.nvlink_latency_s, LinkClass::nvlink);
      break;
    }
    case NodeKind::nvlink_mesh:
      for (int a = 0; a < nt.gpus; ++a)
        for (int b = a + 1; b < nt.gpus; ++b)
          add_duplex(topo, d.gpus[a], d.gpus[b], w * nt.nvlink_Bps, nt.nvlink_latency_s, LinkClass::nvlink);
      break;
    case NodeKind::pcie: break;
  }
  return d;
}

// Leaf -> spine -> core. Leaves serve groups of nodes_per_leaf nodes (per rail when `rails`);
// pods (spine groups) join their leaves through every one of their spines; spine s of each pod
// joins the cores of plane s. Trunks carry the tier's down capacity over its oversubscription,
// split evenly over the switches above: as in two tiers, the switch counts set the ECMP fan-out.
void build_three_tier(Topology& topo, const TopologyTemplate& t, const std::vector<NodeDevices>& nodes,
                      double link_Bps) {
  const FabricTemplate& f = t.fabric;
  const int groups = (t.nodes + f.nodes_per_leaf - 1) / f.nodes_per_leaf;
  const int rails = f.rails ? t.node.nics : 1;
  const int nics_per_leaf_node = f.rails ? 1 : t.node.nics;
  // Leaves in rail-major order; leaf (r, g) is in pod r (rails) or pod g / leaves_per_pod.
  std::vector<VertexId> leaves;
  for (int r = 0; r < rails; ++r)
    for (int g = 0; g < groups; ++g)
      leaves.push_back(add_vertex(topo, {f.rails ? "rail" + std::to_string(r) + ".leaf" + std::to_string(g)
                                                 : "leaf" + std::to_string(g),
                                         VertexKind::fabric_switch}));
  for (const NodeDevices& d : nodes)
    for (int j = 0; j < t.node.nics; ++j)
      add_duplex(topo, d.nics[j], leaves[(f.rails ? j : 0) * groups + d.node / f.nodes_per_leaf],
                 d.weight * link_Bps, f.latency_s, LinkClass::nic);
  const int pods = f.rails ? rails : (groups + f.leaves_per_pod - 1) / f.leaves_per_pod;
  const auto pod_of = [&](int leaf) { return f.rails ? leaf / groups : leaf / f.leaves_per_pod; };
  const double leaf_down_Bps = double(f.nodes_per_leaf) * nics_per_leaf_node * link_Bps;
  const double leaf_trunk_Bps = leaf_down_Bps / (f.oversubscription * f.spines);
  const int leaves_per_pod = f.rails ? groups : f.leaves_per_pod;
  const double spine_down_Bps = leaves_per_pod * leaf_trunk_Bps;
  const double core_trunk_Bps = spine_down_Bps / (f.spine_oversubscription * f.cores_per_plane);
  std::vector<VertexId> spines;  // pod-major
  for (int p = 0; p < pods; ++p)
    for (int s = 0; s < f.spines; ++s)
      spines.push_back(add_vertex(
          topo, {"pod" + std::to_string(p) + ".spine" + std::to_string(s), VertexKind::fabric_switch}));
  for (std::size_t l = 0; l < leaves.size(); ++l)
    for (int s = 0; s < f.spines; ++s)
      add_duplex(topo, leaves[l], spines[pod_of(int(l)) * f.spines + s], leaf_trunk_Bps, f.latency_s,
                 LinkClass::fabric);
  if (pods == 1) return;
  for (int s = 0; s < f.spines; ++s)
    for (int c = 0; c < f.cores_per_plane; ++c) {
      VertexId core = add_vertex(
          topo, {"plane" + std::to_string(s) + ".core" + std::to_string(c), VertexKind::fabric_switch});
      for (int p = 0; p < pods; ++p)
        add_duplex(topo, spines[p * f.spines + s], core, core_trunk_Bps, f.latency_s, LinkClass::fabric);
    }
}

void build_fabric(Topology& topo, const TopologyTemplate& t, const std::vector<NodeDevices>& nodes) {
  const FabricTemplate& f = t.fabric;
  const double link_Bps = f.link_Bps > 0.0 ? f.link_Bps : t.node.nic_Bps;
  switch (f.kind) {
    case FabricKind::none: return;
    case FabricKind::single_switch: {
      VertexId sw = add_vertex(topo, {"switch", VertexKind::fabric_switch});
      for (const NodeDevices& d : nodes)
        for (VertexId nic : d.nics) add_duplex(topo, nic, sw, d.weight * link_Bps, f.latency_s, LinkClass::nic);
      return;
    }
    case FabricKind::leaf_spine:
    case FabricKind::rail: {
      // Leaves: one per group of nodes_per_leaf nodes (per rail on rail fabrics). Each leaf joins
      // every spine with one trunk of (down capacity)/(oversubscription · spines): in the fluid
      // model a trunk of parallel cables carrying an even split is one link of their sum.
      const bool rail = f.kind == FabricKind::rail;
      const int groups = (t.nodes + f.nodes_per_leaf - 1) / f.nodes_per_leaf;
      const int rails = rail ? t.node.nics : 1;
      const int nics_per_leaf_node = rail ? 1 : t.node.nics;
      std::vector<VertexId> leaves;
      for (int r = 0; r < rails; ++r)
        for (int g = 0; g < groups; ++g)
          leaves.push_back(add_vertex(
              topo, {rail ? "rail" + std::to_string(r) + ".leaf" + std::to_string(g)
                          : "leaf" + std::to_string(g),
                     VertexKind::fabric_switch}));
      for (const NodeDevices& d : nodes)
        for (int j = 0; j < t.node.nics; ++j) {
          const int r = rail ? j : 0;
          add_duplex(topo, d.nics[j], leaves[r * groups + d.node / f.nodes_per_leaf], d.weight * link_Bps,
                     f.latency_s, LinkClass::nic);
        }
      if (leaves.size() == 1) return;
      const double down_Bps = double(f.nodes_per_leaf) * nics_per_leaf_node * link_Bps;
      const double trunk_Bps = down_Bps / (f.oversubscription * f.spines);
      for (int s = 0; s < f.spines; ++s) {
        VertexId spine = add_vertex(topo, {"spine" + std::to_string(s), VertexKind::fabric_switch});
        for (VertexId leaf : leaves) add_duplex(topo, leaf, spine, trunk_Bps, f.latency_s, LinkClass::fabric);
      }
      return;
    }
    case FabricKind::three_tier: build_three_tier(topo, t, nodes, link_Bps); return;
  }
}

}  // namespace

Topology build_topology(const TopologyTemplate& t) {
  NodeSubset all;
  all.nodes.resize(std::max(t.nodes, 0));
  for (int n = 0; n < t.nodes; ++n) all.nodes[n] = n;
  return build_topology(t, all);
}

int nodes_per_nvlink_domain(const TopologyTemplate& t) {
  return t.node.kind == NodeKind::nvswitch ? t.node.domain_nodes : 1;
}

int nvlink_domain_of(const TopologyTemplate& t, int node) { return node / nodes_per_nvlink_domain(t); }

namespace {

// What every build of a template (whole, part or skeleton) checks first. Throws InputError.
void check_template(const TopologyTemplate& t) {
  const NodeTemplate& nt = t.node;
  auto bad = [&](const std::string& field, const std::string& what) {
    throw InputError(t.source, 0, field, what);
  };
  if (t.nodes < 1) bad("nodes", "must be >= 1");
  if (nt.gpus < 1) bad("node.gpus", "must be >= 1");
  if (nt.kind == NodeKind::nvswitch && t.nodes % nt.domain_nodes != 0)
    bad("node.nvlink.domain_nodes", std::to_string(t.nodes) + " nodes do not fill whole NVLink domains of " +
                                        std::to_string(nt.domain_nodes) + " nodes");
  if (!nt.nic_of_gpu.empty() && static_cast<int>(nt.nic_of_gpu.size()) != nt.gpus)
    bad("node.nics.affinity", "must list one NIC index per GPU (" + std::to_string(nt.gpus) + ")");
  for (int j : nt.nic_of_gpu)
    if (j < 0 || j >= nt.nics) bad("node.nics.affinity", "NIC index " + std::to_string(j) + " does not exist");
  const bool scale_up_spans_all = nt.kind == NodeKind::nvswitch && nt.domain_nodes == t.nodes;
  if (t.fabric.kind == FabricKind::none && t.nodes > 1 && !scale_up_spans_all)
    bad("fabric.kind", "'none' joins no nodes, but there are " + std::to_string(t.nodes) +
                           " nodes: use single-switch, leaf-spine or rail");
  if (t.fabric.kind != FabricKind::none && nt.nics < 1)
    bad("node.nics.count", "a fabric needs at least one NIC per node");
}

// A topology without devices: what every build of the template says about itself.
Topology topology_shell(const TopologyTemplate& t) {
  Topology topo;
  topo.name = t.name;
  topo.source = t.source;
  topo.gpu_kind = t.gpu_kind;
  topo.calibration = t.calibration;
  topo.software = t.software;
  topo.routing = t.routing;
  topo.rail_optimized =
      t.fabric.kind == FabricKind::rail || (t.fabric.kind == FabricKind::three_tier && t.fabric.rails);
  return topo;
}

}  // namespace

Topology build_topology(const TopologyTemplate& t, const NodeSubset& subset) {
  const NodeTemplate& nt = t.node;
  check_template(t);
  // A malformed subset is a caller's mistake, not bad input.
  const std::vector<int>& ids = subset.nodes;
  if (ids.empty() || (!subset.weights.empty() && subset.weights.size() != ids.size()))
    throw std::logic_error("build_topology: empty subset or weights of another length");
  const int domain_nodes = nodes_per_nvlink_domain(t);
  for (std::size_t i = 0; i < ids.size(); ++i) {
    const bool first_of_domain = ids[i] % domain_nodes == 0;
    const bool follows = i > 0 && ids[i - 1] + 1 == ids[i];
    const bool last_of_domain = (ids[i] + 1) % domain_nodes == 0;
    const bool next_follows = i + 1 < ids.size() && ids[i] + 1 == ids[i + 1];
    const bool whole = (first_of_domain || follows) && (last_of_domain || next_follows);
    const bool ascending = i == 0 || ids[i - 1] < ids[i];
    if (ids[i] < 0 || ids[i] >= t.nodes || !ascending || (subset.weights.empty() && !whole))
      throw std::logic_error("build_topology: subset is not ascending (whole NVLink domains when unweighted)");
    if (!subset.weights.empty() && subset.weights[i] < 1) throw std::logic_error("build_topology: weight < 1");
  }

  Topology topo = topology_shell(t);
  std::vector<NodeDevices> nodes;
  std::map<int, VertexId> domain_switches;
  for (std::size_t i = 0; i < ids.size(); ++i)
    nodes.push_back(build_node(topo, t, ids[i], subset.weights.empty() ? 1.0 : subset.weights[i], domain_switches));
  build_fabric(topo, t, nodes);
  finalize_topology(topo);
  if (static_cast<int>(ids.size()) != t.nodes)
    for (std::size_t r = 0; r < topo.gpus.size(); ++r)
      topo.cluster_ranks.push_back(topo.graph[topo.gpus[r]].node * nt.gpus + static_cast<int>(r) % nt.gpus);
  return topo;
}

Topology build_skeleton(const TopologyTemplate& t) {
  check_template(t);
  Topology topo = topology_shell(t);
  topo.nodes = t.nodes;
  topo.gpus_per_node = t.node.gpus;
  std::vector<NodeDevices> nodes;
  std::vector<VertexId> stubs;
  nodes.reserve(t.nodes);
  for (int n = 0; n < t.nodes; ++n) {
    stubs.push_back(add_vertex(topo, {"n" + std::to_string(n), VertexKind::host, n}));
    nodes.push_back({n, 1.0, {}, std::vector<VertexId>(std::max(t.node.nics, 0), stubs.back())});
  }
  build_fabric(topo, t, nodes);
  // A shared NVLink domain (GB200 NVL72) joins its nodes' stubs, each by one link that stands for
  // the node's GPU ports, after the NIC ports: a move keeps the skeleton only if it maps whole
  // domains onto domains, which is what keeps the nodes' GPU links onto each other's.
  const int per_domain = nodes_per_nvlink_domain(t);
  if (per_domain > 1) {
    VertexId sw = 0;
    for (int n = 0; n < t.nodes; ++n) {
      if (n % per_domain == 0)
        sw = add_vertex(topo, {"domain" + std::to_string(n / per_domain) + ".nvswitch", VertexKind::nvswitch, -1});
      add_duplex(topo, stubs[n], sw,
                 t.node.gpus * t.node.nvlink_Bps, t.node.nvlink_latency_s, LinkClass::nvlink);
    }
  }
  return topo;
}

}  // namespace basp
