// A cluster as a Boost.Graph of devices (GPUs, switches, NICs, host bridges) and directed links
// with capacity and latency. A full-duplex cable is two links; the engine only sees link ids.
#pragma once

#include <boost/graph/adjacency_list.hpp>

#include <array>
#include <cstddef>
#include <functional>
#include <string>
#include <type_traits>
#include <string_view>
#include <vector>

namespace basp {

// A GPU is never a transit vertex except as an explicit PXN proxy; NICs join the node to the fabric.
enum class VertexKind { gpu, nvswitch, pcie, host, nic, fabric_switch };
// Link classes name the hardware a link stands for; calibration fits one α/β per class.
enum class LinkClass { nvlink, pcie, host, nic, fabric };
inline constexpr std::array<LinkClass, 5> link_classes{LinkClass::nvlink, LinkClass::pcie, LinkClass::host,
                                                       LinkClass::nic, LinkClass::fabric};
// A value per link class (bytes carried, a calibration's parameters), indexed by the class.
template <class T>
struct PerLinkClass {
  std::array<T, link_classes.size()> values{};
  T& operator[](LinkClass c) { return values[static_cast<std::size_t>(c)]; }
  const T& operator[](LinkClass c) const { return values[static_cast<std::size_t>(c)]; }
  auto begin() const { return values.begin(); }  // the values in link_classes' order
  auto end() const { return values.end(); }
  bool operator==(const PerLinkClass&) const = default;
};

struct Vertex {
  std::string name;
  VertexKind kind = VertexKind::gpu;
  int node = -1;  // node index for devices inside a node; -1 for shared switches
  int rail = -1;  // NICs: rail index (NIC i of every node shares rail i on rail fabrics)
  int nic = -1;   // GPUs: vertex of the NIC this GPU uses for scale-out traffic (affinity)
};

using VertexId = std::size_t;

// Links are indexed 0..links-1 (what flows refer to); graph edges carry that index.
struct Link {
  VertexId from = 0, to = 0;
  double capacity_Bps = 0.0;   // bytes per second, this direction only
  double latency_s = 0.0;      // one hop
  LinkClass cls = LinkClass::fabric;
};

struct EdgeLink {
  int id = 0;
};

using Graph = boost::adjacency_list<boost::vecS, boost::vecS, boost::bidirectionalS, Vertex, EdgeLink>;
static_assert(std::is_same_v<Graph::vertex_descriptor, VertexId>);

// Default software costs until a calibration says otherwise (docs: topologies/README.md).
struct SoftwareCosts {
  double launch_s = 10e-6;    // per collective call (kernel launch, proxy wake-up)
  double per_peer_s = 1e-6;   // per peer of a rank within one call (NCCL's cost grows with peers)
  // An all-to-all copies a rank's own slice within its HBM: bytes of slice per second (reading and
  // writing each byte: half the GPU's bandwidth). Set from the GPU kind (apply_calibration);
  // 0 leaves the copy out (topologies built by hand in tests, whose kind has no bandwidth).
  double local_copy_Bps = 0.0;
};

enum class EcmpMode { split, hash };   // equal-cost paths: even split, or one path hashed per flow
enum class CrossRail { pxn, spine };   // rail fabrics: NVLink to the destination's rail first, or spines

struct RoutingOptions {
  EcmpMode ecmp = EcmpMode::split;
  CrossRail cross_rail = CrossRail::pxn;
};

struct Topology {
  std::string name;
  std::string source;          // file it came from
  std::string gpu_kind;        // e.g. "H100-SXM"; the device table lives with the cost model
  std::string calibration;     // calibration used unless the command line names another ("": none)
  Graph graph;
  std::vector<VertexId> gpus;  // rank r runs on gpus[r]; ranks are ordered node-major
  std::vector<int> cluster_ranks;  // a part of a template (NodeSubset): the cluster's rank of gpus[r]
  std::vector<int> excluded_nodes;  // nodes no rank runs on (--exclude-nodes, outages.hpp), ascending
  std::vector<int> down_links;      // links taken down (--down-links): off the graph, carrying nothing
  std::vector<Link> links;     // by link id
  int nodes = 0;
  int gpus_per_node = 0;
  bool rail_optimized = false;  // NICs of equal rail share leaves: cross-rail routing applies
  SoftwareCosts software;
  RoutingOptions routing;

  const Link& link(int id) const { return links[id]; }
  const Vertex& vertex(VertexId v) const { return graph[v]; }
  int link_count() const { return static_cast<int>(links.size()); }
  int node_of_rank(int rank) const { return graph[gpus[rank]].node; }
  int cluster_rank(int rank) const { return cluster_ranks.empty() ? rank : cluster_ranks[rank]; }
};

std::string_view to_string(VertexKind kind);
std::string_view to_string(LinkClass cls);

// Adds a link (or a duplex pair) and registers its id; the builders and the explicit loader use it.
int add_link(Topology& topo, VertexId from, VertexId to, double capacity_Bps, double latency_s,
             LinkClass cls);
void add_duplex(Topology& topo, VertexId a, VertexId b, double capacity_Bps, double latency_s,
                LinkClass cls);
VertexId add_vertex(Topology& topo, Vertex v);

// Vertices reachable from `start` over links in either direction, passing only through vertices
// `may_transit` accepts (the start and the reached vertices themselves are always included).
std::vector<char> reachable(const Graph& g, VertexId start, const std::function<bool(VertexId)>& may_transit);

// Checks what every topology must satisfy (GPUs present, equal GPUs per node, positive capacities,
// everything connected, scale-out GPUs have a NIC) and fills derived fields. Throws InputError.
void finalize_topology(Topology& topo);

}  // namespace basp
