// Parts of template clusters (build_topology's NodeSubset) against the whole build: routes between
// the nodes of a part, and `basp topo`'s summary of a template, which is summed up from parts.
#include "helpers.hpp"
#include "routing.hpp"
#include "topology_file.hpp"
#include "topology_summary.hpp"
#include "topology_template.hpp"

#include <catch2/catch.hpp>

#include <stdexcept>

using namespace basp;
using basp::test::replaced;
using basp::test::TempFile;

namespace {

// The summary of the whole build and the one summed up from parts must print the same: counts
// and routes exactly, bandwidth sums and the bisection to rounding.
void check_same_summary(const TopologyFile& file) {
  const TopologySummary whole = summarize(build_topology(file));
  const TopologySummary parts = summarize(file);
  INFO(file.templ->name << " with " << file.templ->nodes << " nodes");
  CHECK(parts.name == whole.name);
  CHECK(parts.gpus == whole.gpus);
  CHECK(parts.nodes == whole.nodes);
  CHECK(parts.gpus_per_node == whole.gpus_per_node);
  CHECK(parts.vertices_by_kind == whole.vertices_by_kind);
  REQUIRE(parts.links_by_class.size() == whole.links_by_class.size());
  for (const auto& [cls, v] : whole.links_by_class) {
    INFO("link class " << cls);
    CHECK(parts.links_by_class.at(cls).first == v.first);
    CHECK(parts.links_by_class.at(cls).second == Approx(v.second).epsilon(1e-12));
  }
  CHECK(parts.scale_up_Bps_per_gpu == whole.scale_up_Bps_per_gpu);
  CHECK(parts.scale_out_Bps_per_gpu == whole.scale_out_Bps_per_gpu);
  CHECK(parts.bisection_Bps == Approx(whole.bisection_Bps).epsilon(1e-9));
  CHECK(parts.bisection_Bps > 0.0);
  REQUIRE(parts.routes.size() == whole.routes.size());
  for (std::size_t i = 0; i < whole.routes.size(); ++i) {
    INFO("route " << whole.routes[i].label);
    CHECK(parts.routes[i].label == whole.routes[i].label);
    CHECK(parts.routes[i].src_rank == whole.routes[i].src_rank);
    CHECK(parts.routes[i].dst_rank == whole.routes[i].dst_rank);
    CHECK(parts.routes[i].path == whole.routes[i].path);
    CHECK(parts.routes[i].latency_s == whole.routes[i].latency_s);
    CHECK(parts.routes[i].bottleneck_Bps == whole.routes[i].bottleneck_Bps);
  }
  CHECK(parts.unused_classes == whole.unused_classes);
  CHECK(parts.unused_scope == whole.unused_scope);
}

// Two-socket PCIe nodes with two NICs under a three-tier fabric; pods of consecutive leaves.
const std::string pcie_three_tier = R"(name: pcie-3tier
gpu: A100-PCIe
nodes: 12
node:
  kind: pcie
  gpus: 4
  pcie: {bandwidth: 32 GB/s, latency: 1 us, switches: 2, sockets: 2, inter_socket_bandwidth: 40 GB/s, inter_socket_latency: 1 us}
  nics: {count: 2, bandwidth: 200 Gb/s}
fabric:
  kind: three-tier
  latency: 0.5 us
  nodes_per_leaf: 3
  rails: false
  leaves_per_pod: 2
  spines: 2
  cores_per_plane: 3
  oversubscription: 1.5
  spine_oversubscription: 2
)";

}  // namespace

// System: every shipped template at sizes within one leaf, across leaves, with an uneven last
// leaf, an odd node count (a node straddles the bisection) and beyond 64 nodes (routes then come
// from a part of the cluster). Expectations: the summary from parts equals the whole build's.
TEST_CASE("basp topo: a template summed up from parts equals its whole build") {
  struct Case {
    std::string topology;
    std::vector<int> nodes;
  };
  const std::vector<Case> cases{
      {"dgx-h100", {1, 3, 32, 33, 96, 131}},
      {"dgx-h100-3tier", {2, 64, 97, 160}},
      {"dgx-a100-superpod", {5, 40, 67}},
      {"gb200-nvl72", {18, 36, 90}},
      {"paper-a100-2x4", {2, 7, 70}},
      {"pcie-8gpu", {2, 9, 65}},
  };
  for (const Case& c : cases)
    for (int n : c.nodes) check_same_summary(read_topology_file(c.topology, {.nodes = n}));
  // Oversubscribed, hashed, and cross-rail through the spines.
  check_same_summary(read_topology_file("dgx-h100", {.nodes = 80, .oversubscription = 3.0}));
  check_same_summary(read_topology_file("dgx-h100-3tier", {.nodes = 72, .ecmp = EcmpMode::hash}));
  check_same_summary(read_topology_file("dgx-h100-3tier", {.nodes = 72, .cross_rail = CrossRail::spine}));
  check_same_summary(read_topology_file("dgx-h100", {.nodes = 70, .nodes_per_leaf = 4, .spines = 3}));
  TempFile pcie(pcie_three_tier);
  for (int n : {1, 12, 13, 67}) check_same_summary(read_topology_file(pcie.path, {.nodes = n}));
  TempFile rails(replaced(pcie_three_tier, "rails: false\n  leaves_per_pod: 2", "rails: true"));
  check_same_summary(read_topology_file(rails.path, {.nodes = 66}));
}

// System: dgx-h100-3tier with 96 nodes (split and hashed ECMP), dgx-h100 on small leaves (hashed),
// gb200-nvl72 with 4 racks; parts holding some nodes (whole NVLink domains). Expectations: every
// route between two ranks of the part, salted, has the same links (by their ends' names), shares
// and latency as on the whole build.
TEST_CASE("a part of a template routes between its nodes as the whole cluster does") {
  const auto check = [](const std::string& name, TopologyOverrides o, const std::vector<int>& part_nodes) {
    const TopologyTemplate t = *read_topology_file(name, o).templ;
    const Topology whole = build_topology(t);
    const Topology part = build_topology(t, {.nodes = part_nodes});
    REQUIRE(part.nodes == static_cast<int>(part_nodes.size()));
    Router rw(whole), rp(part);
    const int k = t.node.gpus;
    const auto link_name = [](const Topology& topo, int id) {
      return topo.graph[topo.link(id).from].name + ">" + topo.graph[topo.link(id).to].name;
    };
    for (int a = 0; a < part.nodes * k; ++a)
      for (int b = 0; b < part.nodes * k; ++b) {
        if (a == b) continue;
        const int wa = part_nodes[a / k] * k + a % k, wb = part_nodes[b / k] * k + b % k;
        INFO(name << ": rank " << wa << " -> " << wb);
        const std::uint64_t salt = a * 7 + b;
        const RouteView p = rp.route(a, b, salt);
        std::vector<std::pair<std::string, float>> ph;
        for (const Hop& h : p.hops) ph.push_back({link_name(part, h.link), h.share});
        const double latency = p.latency_s;
        const RouteView w = rw.route(wa, wb, salt);
        std::vector<std::pair<std::string, float>> wh;
        for (const Hop& h : w.hops) wh.push_back({link_name(whole, h.link), h.share});
        CHECK(ph == wh);
        CHECK(latency == w.latency_s);
      }
  };
  check("dgx-h100-3tier", {.nodes = 96}, {0, 5, 40, 95});
  check("dgx-h100-3tier", {.nodes = 96, .ecmp = EcmpMode::hash, .cross_rail = CrossRail::spine}, {0, 5, 40, 95});
  check("dgx-h100", {.nodes = 70, .nodes_per_leaf = 4, .ecmp = EcmpMode::hash}, {1, 2, 33, 69});
  check("gb200-nvl72", {.nodes = 72}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 54, 55, 56, 57, 58, 59,
                            60, 61, 62, 63, 64, 65, 66, 67, 68, 69, 70, 71});
}

// System: parts that are not ascending, split an NVLink domain, or weigh a node below 1.
// Expectations: refused (a caller's mistake, not bad input).
TEST_CASE("a malformed part of a template is refused") {
  const TopologyTemplate h100 = *read_topology_file("dgx-h100", {.nodes = 8}).templ;
  CHECK_THROWS_AS(build_topology(h100, {.nodes = {3, 1}}), std::logic_error);
  CHECK_THROWS_AS(build_topology(h100, {.nodes = {}}), std::logic_error);
  CHECK_THROWS_AS(build_topology(h100, {.nodes = {1, 2}, .weights = {1}}), std::logic_error);
  CHECK_THROWS_AS(build_topology(h100, {.nodes = {1, 2}, .weights = {1, 0}}), std::logic_error);
  CHECK_THROWS_AS(build_topology(h100, {.nodes = {8}}), std::logic_error);
  const TopologyTemplate nvl72 = *read_topology_file("gb200-nvl72", {.nodes = 36}).templ;
  CHECK_THROWS_AS(build_topology(nvl72, {.nodes = {0, 1}}), std::logic_error);
  CHECK_NOTHROW(build_topology(nvl72, {.nodes = {0, 1}, .weights = {9, 9}}));
}
