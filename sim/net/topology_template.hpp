// The parameterised cluster shapes a topology file can name (node kinds × fabrics) and the
// builder that expands one into devices and links. Every field is documented in topologies/README.md.
#pragma once

#include "topology.hpp"

#include <optional>
#include <string>
#include <vector>

namespace basp {

enum class NodeKind { nvswitch, nvlink_mesh, pcie };
enum class FabricKind { none, single_switch, leaf_spine, rail, three_tier };

struct NodeTemplate {
  NodeKind kind = NodeKind::nvswitch;
  int gpus = 8;
  double nvlink_Bps = 0.0;          // nvswitch: per GPU port and direction; mesh: per GPU pair and direction
  double nvlink_latency_s = 0.0;    // per hop
  int domain_nodes = 1;             // nvswitch: nodes sharing one NVLink switch domain (GB200 NVL72: 18)
  double pcie_Bps = 0.0;            // GPU<->switch and NIC<->switch, per direction
  double pcie_latency_s = 0.0;
  int pcie_switches = 1;            // 0: GPUs and NICs hang off the host bridges directly
  double pcie_uplink_Bps = 0.0;     // switch<->host bridge
  int sockets = 1;
  double inter_socket_Bps = 0.0;    // e.g. UPI / xGMI, per direction
  double inter_socket_latency_s = 0.0;
  int nics = 0;
  double nic_Bps = 0.0;             // NIC<->fabric, per direction
  std::vector<int> nic_of_gpu;      // NIC index used by each GPU; empty: GPU i -> i*nics/gpus
};

struct FabricTemplate {
  FabricKind kind = FabricKind::none;
  double link_Bps = 0.0;            // 0: same as the NIC
  double latency_s = 0.0;           // per hop
  int nodes_per_leaf = 1;           // leaf-spine, rail, three-tier: nodes under one leaf (per rail)
  double oversubscription = 1.0;    // leaf down-capacity : up-capacity
  int spines = 1;                   // three-tier: spines of one pod
  // Three-tier only. Pods (spine groups): one per rail when `rails`, else `leaves_per_pod`
  // consecutive leaves; every leaf joins every spine of its pod. Cores come in `spines` planes of
  // `cores_per_plane`: spine s of every pod joins every core of plane s.
  bool rails = true;                // one leaf per rail per group of nodes, one pod per rail
  int leaves_per_pod = 1;
  int cores_per_plane = 1;
  double spine_oversubscription = 1.0;  // spine down-capacity : up-capacity
};

struct TopologyTemplate {
  std::string name;
  std::string source;               // file, for error messages
  std::string gpu_kind;
  std::string calibration;          // "": none
  int nodes = 1;
  NodeTemplate node;
  FabricTemplate fabric;
  SoftwareCosts software;
  RoutingOptions routing;
};

// Expands the template into devices and links, then finalizes (checks and derived fields).
Topology build_topology(const TopologyTemplate& t);

// Some of a template's nodes, for what needs a part of a large cluster: every fabric switch and
// trunk, but only the listed nodes and their NIC ports. Nodes are listed ascending.
// - Unweighted, with all nodes of their NVLink domain: routes between listed nodes are the whole
//   topology's (no route passes through a third node's devices).
// - Weighted: a node of weight m stands for m interchangeable nodes (a quotient). Its links,
//   NIC ports and NVLink ports carry m times their capacity: what the m nodes carry in all.
struct NodeSubset {
  std::vector<int> nodes;
  std::vector<int> weights;  // by position in `nodes`; empty: unweighted
};

// The part's ranks are its own (node-major over `nodes`); vertex names and node indices stay
// the cluster's, so routes read the same as on the whole topology.
Topology build_topology(const TopologyTemplate& t, const NodeSubset& subset);

// The NVLink domain a node belongs to, as the builder groups them (node index when nodes do not
// share one): nodes of one domain are built, and weighed, together.
int nvlink_domain_of(const TopologyTemplate& t, int node);
// Nodes per NVLink domain: domain_nodes for NVSwitch nodes, else 1 (each node its own).
int nodes_per_nvlink_domain(const TopologyTemplate& t);

// The template's fabric with each node reduced to one vertex (a stub, kind host) that holds the
// node's NIC ports in NIC order, then, where NVLink domains span nodes, one link to its domain's
// switch: all that moves of whole nodes can change, since every node is built alike. Not routable
// (no GPUs; `gpus_per_node` and `nodes` are the cluster's).
Topology build_skeleton(const TopologyTemplate& t);

}  // namespace basp
