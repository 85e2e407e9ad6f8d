// Routes between ranks as NCCL would take them: the NVLink/PCIe scale-up path when one exists,
// else out through a NIC (on rail fabrics first over NVLink to the destination's rail: PXN).
#pragma once

#include "hop.hpp"
#include "node_twins.hpp"
#include "topology.hpp"

#include <cstdint>
#include <optional>
#include <span>
#include <unordered_map>
#include <utility>
#include <vector>

namespace basp {

struct RouteView {
  std::span<const Hop> hops;
  double latency_s;  // sum of link latencies along the path (the longest one when split)
};

// Shortest paths with link cost = latency + time to move 1 MiB (fast links first); paths of equal
// cost are equal-cost multipaths. Segments are cached, so a Router must outlive the views it returns.
class Router {
 public:
  explicit Router(const Topology& topo);
  // On a part of a template (topo.cluster_ranks), `cluster_ranks` makes route() take the
  // cluster's ranks, as the collectives and steps name them; a rank outside the part is a bug.
  Router(const Topology& topo, bool cluster_ranks);
  // The same with the part's rank of each cluster rank given (stand-ins: cluster_part.hpp).
  Router(const Topology& topo, std::vector<int> part_rank);

  // The route from rank src to rank dst. `salt` varies the hashed ECMP choice between flows of the
  // same pair (e.g. channels); the hash sees the cluster's ranks and vertex names, so a part of a
  // template hashes as the whole does. The view is valid until the next call.
  RouteView route(int src_rank, int dst_rank, std::uint64_t salt = 0);
  // Works out the switch-to-switch segments these routes will need, grouped by destination switch,
  // so that each destination's distance field is grown once; routed in their own order (a ring's
  // edges) the field starts again whenever the destination changes. Changes no route.
  void prepare_routes(std::span<const std::pair<int, int>> rank_pairs);

  // Off: every node's (unit's) segments worked out in itself, as exactness checks compare against
  // (node_twins.hpp). Only before the first route.
  void share_twin_nodes(bool share);
  // Off: every field relaxes all of a settled vertex's links in, and a path graph reads every link
  // out of its vertices, as exactness checks compare against (relax_links_into, tight_links_out).
  void search_lazily(bool lazily) { lazy_ = lazily; }
  std::size_t segments_built() const { return segments_.size(); }

 private:
  // What a segment may pass through: NVLink only (PXN hops), NVLink/PCIe (peers in a domain),
  // PCIe (GPU <-> NIC), the fabric (NIC <-> NIC).
  enum class Transit : std::uint8_t { nvlink, scale_up, local, fabric };
  struct DagEdge { VertexId from, to; int link; };
  struct Segment {
    std::vector<DagEdge> dag;  // every link of every shortest path, from the source outwards
    std::vector<Hop> split;    // the even split over those paths
    double latency_s = 0.0;    // longest path latency
    bool single = true;        // exactly one shortest path
  };

  // A segment as cached and the unit it is carried into (-1: none; it is that unit's own).
  struct SegmentRef {
    const Segment* segment;
    int node;
  };
  SegmentRef segment(VertexId from, VertexId to, Transit transit);
  const Segment& cached_segment(VertexId from, VertexId to, Transit transit);
  SegmentRef nic_segment(VertexId gpu, bool outbound);
  SegmentRef proxy_segment(VertexId gpu, VertexId proxy, int rail);  // null segment: no NVLink path
  // v's unit where its segments of `transit` are its twin's carried over, else -1.
  int twin_node(VertexId v, Transit transit);
  struct Field;
  void distances_to(VertexId to, VertexId from, Transit transit);  // until `from` is settled
  // Relaxes v's links in from in_links_[i] on, cheapest first, until one could not bring its tail
  // closer than `from` is already: those wait in the heap, keyed by the cheapest.
  void relax_links_into(Field& f, VertexId v, std::uint32_t i, VertexId from, VertexId to, Transit transit);
  // Appends to dag_scratch_ the links from u on a shortest path toward the field's `to`, in the order
  // u's links out are held (ascending link id).
  void tight_links_out(const Field& f, VertexId u, VertexId to, Transit transit);
  bool may_transit(VertexId v, Transit transit) const { return transit_[v] >> static_cast<int>(transit) & 1u; }
  static std::uint8_t transit_mask(VertexKind kind);  // bit t: a path of Transit t may pass through it
  void append(SegmentRef s, std::uint64_t salt, double& latency_s);
  // NIC to NIC over the fabric. A NIC whose only fabric link is its switch port reaches every
  // other NIC through that switch, so the route is that link, the switch-to-switch segment and
  // the far NIC's port: segments are then cached per switch pair, not per NIC pair.
  void append_fabric(VertexId nic_s, VertexId nic_d, std::uint64_t salt, double& latency_s);
  int sole_fabric_link(VertexId nic, bool outbound);  // the link id, or -1 when not exactly one

  const Topology& topo_;
  std::vector<int> part_rank_;          // by cluster rank (cluster_ranks mode): the part's, or -1
  std::vector<double> cost_;            // routing cost by link id
  std::vector<std::uint8_t> transit_;   // by vertex: transit_mask of its kind (asked per edge)
  std::vector<int> domain_;             // scale-up domain of each vertex (-1: none)
  // Every vertex's links in, cheapest first (ties by link id): what a field relaxes lazily, so that
  // a spine's thousands of leaves are not all pushed for each destination.
  std::vector<std::uint32_t> in_begin_;
  std::vector<std::pair<std::uint32_t, int>> in_links_;  // (tail vertex, link id)
  bool out_by_id_ = true;               // every vertex's links out are held in ascending link id
  bool lazy_ = true;
  std::vector<std::uint64_t> vertex_key_;  // what hashed ECMP hashes for a vertex: its name's hash
  std::vector<std::vector<VertexId>> proxy_;  // [node][rail] -> a GPU of that node whose NIC has that rail
  bool share_twins_ = true;
  // While prepare_routes collects: the switch pairs whose fabric segment is not yet built.
  std::vector<std::pair<VertexId, VertexId>>* wanted_ = nullptr;
  std::optional<NodeTwins> twins_;            // made at the first segment asked for
  // Scratch distance fields, one per transit class, valid for the destination they were made for.
  // A field is grown lazily: Dijkstra from `to` stops once the source asked for is settled and
  // resumes from its heap for the next source with the same destination.
  // A heap entry: a vertex reached at `key`, or (next < npos) a settled vertex whose links in from
  // `next` on (in_links_ order) are not yet relaxed, the cheapest of them giving `key`.
  struct Pending {
    double key;
    VertexId v;
    std::uint32_t next;
    static constexpr std::uint32_t npos = ~std::uint32_t(0);
    auto operator<=>(const Pending&) const = default;
  };
  struct Field {
    std::vector<double> dist;
    std::vector<VertexId> touched;
    std::vector<VertexId> settled;  // in the order settled
    std::vector<Pending> heap;      // min-heap via std::greater
    VertexId to = ~VertexId(0);
    bool passed_over = false;  // an endpoint other than the sources asked for was left unreached
  };
  Field fields_[4];
  std::unordered_map<std::uint64_t, Segment> segments_;  // node-based: references stay valid
  std::vector<const Segment*> to_nic_, from_nic_;         // by GPU vertex (a twin's where carried over)
  static constexpr int unknown_link = -2;
  std::vector<int> sole_up_, sole_down_;                  // by NIC vertex: sole_fabric_link, cached
  std::size_t rails_ = 0;
  std::vector<const Segment*> to_proxy_;                  // by GPU vertex · rails_ + rail
  std::vector<char> no_pxn_;                              // same index: no NVLink path to that proxy
  struct Memo { std::uint64_t key = 0; const Segment* segment = nullptr; };
  Memo memo_[4];                                          // last segment per transit class
  // Scratch for building a segment, indexed by vertex.
  std::vector<VertexId> order_;
  std::vector<DagEdge> dag_scratch_;
  std::vector<Hop> split_scratch_;
  std::vector<char> mark_;
  std::vector<double> paths_to_, paths_from_, latency_to_;
  std::vector<Hop> hops_;
};

}  // namespace basp
