// Twin nodes: a route inside a node carried over from the first node built like it must be the
// route the node's own Dijkstra gives, link for link, share for share, latency to the bit.
#include "helpers.hpp"
#include "node_twins.hpp"
#include "outages.hpp"
#include "routing.hpp"
#include "topology_file.hpp"

#include <catch2/catch.hpp>

#include <vector>

using namespace basp;

namespace {

struct Route {
  std::vector<std::pair<int, float>> hops;
  double latency_s;
  bool operator==(const Route&) const = default;
};

Route copy(const RouteView& r) {
  Route out{{}, r.latency_s};
  for (const Hop& h : r.hops) out.hops.push_back({h.link, h.share});
  return out;
}

// Every ordered pair of ranks, under two salts, by a router sharing twins' segments and by one that
// works each node out itself. Returns how many segments each built.
std::pair<std::size_t, std::size_t> compare_every_route(const Topology& t) {
  Router shared(t), own(t);
  own.share_twin_nodes(false);
  const int n = static_cast<int>(t.gpus.size());
  int compared = 0;
  for (std::uint64_t salt : {0u, 7u})
    for (int s = 0; s < n; ++s)
      for (int d = 0; d < n; ++d) {
        const Route a = copy(shared.route(s, d, salt)), b = copy(own.route(s, d, salt));
        CAPTURE(s, d, salt);
        CHECK(a == b);
        compared += !b.hops.empty();
      }
  CHECK(compared == 2 * n * (n - 1));
  return {shared.segments_built(), own.segments_built()};
}

}  // namespace

// System: small clusters of each kind of node and fabric the router knows (NVLink with PXN, spine
// cross-rail, hashed ECMP, PCIe-only nodes, NVL72 trays whose NVLink leaves the node, three tiers).
// Expectation: the same routes to the bit, and on clusters of alike nodes fewer segments built.
TEST_CASE("a route inside a node carried over from its twin is the route the node gives itself") {
  struct Case {
    const char* topology;
    TopologyOverrides overrides;
    bool fewer;  // nodes alike whose segments stay inside: sharing builds fewer segments
  };
  const Case cases[] = {
      {"dgx-h100", {.nodes = 4, .nodes_per_leaf = 2, .spines = 2}, true},
      {"dgx-h100", {.nodes = 3, .nodes_per_leaf = 2, .spines = 2, .cross_rail = CrossRail::spine}, true},
      {"dgx-h100", {.nodes = 4, .nodes_per_leaf = 2, .spines = 2, .ecmp = EcmpMode::hash}, true},
      {"pcie-8gpu", {.nodes = 3}, true},
      {"gb200-nvl72", {.nodes = 36}, true},  // two racks: NIC segments shared, NVLink ones not
      {"dgx-h100-3tier", {.nodes = 4}, true},
  };
  for (const Case& c : cases) {
    CAPTURE(c.topology);
    const Topology t = load_topology(c.topology, c.overrides);
    const auto [shared, own] = compare_every_route(t);
    if (c.fewer) CHECK(shared < own);
  }
}

// Unit: node 2 of four has one NVLink (n2.gpu3 to its NVSwitch) slower and longer, so routes from
// that GPU take longer than their twins' in other nodes; node 0 is left out of the job, so its PXN
// proxies are no one's to read (the graph keeps it: it stays the twin of nodes 1 and 3).
// Expectations: node 2 is its own kind, and every route equals the unshared router's, the long
// link's latency included.
TEST_CASE("a node built differently keeps its own routes") {
  Topology t = load_topology("dgx-h100", {.nodes = 4, .nodes_per_leaf = 2, .spines = 2});
  int slowed = -1;
  for (int id = 0; id < t.link_count(); ++id) {
    const Link& l = t.link(id);
    if (t.graph[l.from].name == "n2.gpu3" && l.cls == LinkClass::nvlink) slowed = id;
  }
  REQUIRE(slowed >= 0);
  t.links[slowed].capacity_Bps /= 4;
  t.links[slowed].latency_s *= 3;
  apply_outages(t, {"0", ""});
  std::vector<std::uint8_t> transit(boost::num_vertices(t.graph), 0);
  const NodeTwins twins = node_twins(t, transit);
  CHECK(twins.representative == std::vector<int>{0, 0, 2, 0});
  CHECK(twins.kinds == 2);
  compare_every_route(t);
  // Ranks 0-7 are node 1, 8-15 node 2, 16-23 node 3: n2.gpu3 is rank 11.
  Router router(t);
  const Route slow = copy(router.route(11, 8)), twin = copy(router.route(19, 16));
  CHECK(slow.hops.front().first == slowed);
  CHECK(slow.latency_s > twin.latency_s);
}
