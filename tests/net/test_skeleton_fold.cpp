// Symmetry classes found on a template's skeleton (its fabric and one stub per node, joined to its
// NVLink domain's switch where domains span nodes) against the search on the whole build: the same
// group, the same classes of fabric, NIC-port and domain links, and node links classed as their
// representative node's, on every shipped template.
#include "collective_run.hpp"
#include "collectives.hpp"
#include "helpers.hpp"
#include "nccl_rings.hpp"
#include "rank_fold.hpp"
#include "topology_file.hpp"
#include "topology_template.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <map>
#include <string>

using namespace basp;

namespace {

struct Traffic {
  std::string label;
  std::vector<std::vector<std::vector<int>>> groups;
  std::vector<GroupTraffic> kinds;
};

// Patterns like a step's: all-to-alls in groups, NCCL rings across them, send/recv rings.
std::vector<Traffic> patterns(int ranks, int per_node) {
  std::vector<Traffic> out;
  for (int groups : {1, 2, 4, ranks / per_node, ranks / (2 * per_node)}) {
    if (groups < 1 || ranks % groups != 0) continue;
    for (Placement p : {Placement::contiguous, Placement::strided})
      for (GroupTraffic kind : {GroupTraffic::all_pairs, GroupTraffic::nccl_rings, GroupTraffic::successor})
        out.push_back({std::to_string(groups) + " groups " + (p == Placement::strided ? "strided" : "contiguous") +
                           " kind " + std::to_string(int(kind)),
                       {make_groups(ranks, groups, p)},
                       {kind}});
    // A step's mix: exchanges within groups, ZeRO rings across the replicas.
    out.push_back({std::to_string(groups) + " groups and rings across them",
                   {make_groups(ranks, groups, Placement::contiguous),
                    make_groups(ranks, ranks / groups, Placement::strided)},
                   {GroupTraffic::all_pairs, GroupTraffic::nccl_rings}});
  }
  return out;
}

void check_agrees(const TopologyFile& file) {
  const TopologyTemplate& t = *file.templ;
  const Topology whole = build_topology(t);
  const Topology skeleton = build_skeleton(t);
  const int ranks = static_cast<int>(whole.gpus.size());
  INFO(t.name << " with " << t.nodes << " nodes");

  // Rank places from the template, against the graph's nodes and NICs.
  const RankPlaces places = rank_places(t);
  for (int r = 0; r < ranks; ++r) {
    const int nic = whole.vertex(whole.gpus[r]).nic;
    CHECK(places.node_of(r) == whole.node_of_rank(r));
    CHECK(places.rail_of(r) == (nic < 0 ? -1 : whole.vertex(VertexId(nic)).rail));
  }

  // Whole links on the skeleton: fabric links by their switches' names, NIC ports by node and NIC.
  std::map<std::pair<std::string, std::string>, int> skeleton_link;
  std::map<std::pair<int, int>, std::vector<int>> ports;  // (node, 0 up / 1 down) -> links in NIC order
  for (int l = 0; l < skeleton.link_count(); ++l) {
    const Vertex &a = skeleton.vertex(skeleton.link(l).from), &b = skeleton.vertex(skeleton.link(l).to);
    if (a.node >= 0) ports[{a.node, 0}].push_back(l);
    else if (b.node >= 0) ports[{b.node, 1}].push_back(l);
    else REQUIRE(skeleton_link.emplace(std::pair{a.name, b.name}, l).second);
  }
  const bool shared_domain = t.node.kind == NodeKind::nvswitch && t.node.domain_nodes > 1;
  // The link between node n's first GPU and its domain's switch (dir 0: up, 1: down).
  auto first_gpu_link = [&](int n, int dir) {
    const VertexId gpu = whole.gpus[std::size_t(n) * whole.gpus_per_node];
    for (int l = 0; l < whole.link_count(); ++l) {
      const Link& k = whole.link(l);
      const VertexId other = dir == 0 ? k.to : k.from;
      if ((dir == 0 ? k.from : k.to) == gpu && whole.vertex(other).kind == VertexKind::nvswitch) return l;
    }
    return -1;
  };
  std::vector<int> on_skeleton(whole.link_count(), -1);
  std::map<int, std::vector<int>> node_links;  // links of each node's devices, NIC ports included
  for (int l = 0; l < whole.link_count(); ++l) {
    const Vertex &a = whole.vertex(whole.link(l).from), &b = whole.vertex(whole.link(l).to);
    if (a.node >= 0 || b.node >= 0) node_links[a.node >= 0 ? a.node : b.node].push_back(l);
    if (a.node < 0 && b.node < 0) on_skeleton[l] = skeleton_link.at({a.name, b.name});
    else if (a.kind == VertexKind::nic && b.node < 0) on_skeleton[l] = ports.at({a.node, 0}).at(a.rail);
    else if (b.kind == VertexKind::nic && a.node < 0) on_skeleton[l] = ports.at({b.node, 1}).at(b.rail);
    // A shared NVLink domain: the stub's last port stands for the node's GPU links; its first GPU's.
    else if (shared_domain && a.kind == VertexKind::gpu && l == first_gpu_link(a.node, 0))
      on_skeleton[l] = ports.at({a.node, 0}).back();
    else if (shared_domain && b.kind == VertexKind::gpu && l == first_gpu_link(b.node, 1))
      on_skeleton[l] = ports.at({b.node, 1}).back();
  }

  int folded = 0;
  for (const Traffic& p : patterns(ranks, whole.gpus_per_node)) {
    INFO(p.label);
    std::vector<TrafficGroups> traffic;
    for (std::size_t k = 0; k < p.groups.size(); ++k) traffic.push_back({&p.groups[k], p.kinds[k]});
    const FoldChoice a = choose_fold(EngineMode::automatic, whole, ranks, traffic);
    const FoldChoice b = choose_fold_on_skeleton(EngineMode::automatic, skeleton, places, ranks, traffic);
    CHECK(b.use.engine == a.use.engine);
    CHECK(b.use.why == a.use.why);
    CHECK(b.use.rank_classes == a.use.rank_classes);
    CHECK(b.use.members == a.use.members);
    CHECK(b.fold.period == a.fold.period);
    CHECK(b.fold.step_nodes == a.fold.step_nodes);
    CHECK(b.fold.block_nodes == a.fold.block_nodes);
    if (a.use.engine != "classes" || b.use.engine != "classes") continue;
    ++folded;
    // Skeleton links: classes correspond one to one, loads equal.
    std::map<int, int> whole_to_skeleton, skeleton_to_whole;
    int wrong = 0;
    for (int l = 0; l < whole.link_count(); ++l) {
      const int s = on_skeleton[l];
      if (s < 0) continue;
      const int cw = a.fold.link_class[l], cs = b.fold.link_class[s];
      wrong += whole_to_skeleton.emplace(cw, cs).first->second != cs;
      wrong += skeleton_to_whole.emplace(cs, cw).first->second != cw;
      wrong += a.fold.link_load[l] != b.fold.link_load[s];
    }
    CHECK(wrong == 0);
    // Node links: in the class of the same link of the node's representative, carrying one hop each.
    const int step = a.fold.step_nodes;
    for (const auto& [node, links] : node_links) {
      const std::vector<int>& rep = node_links.at(node % step);
      REQUIRE(links.size() == rep.size());
      for (std::size_t k = 0; k < links.size(); ++k) {
        wrong += a.fold.link_class[links[k]] != a.fold.link_class[rep[k]];
        wrong += a.fold.link_load[links[k]] != 1;
      }
    }
    CHECK(wrong == 0);
  }
  CHECK(folded > 0);
}

TopologyFile file(const std::string& name, TopologyOverrides o) { return read_topology_file(name, o); }

}  // namespace

TEST_CASE("skeleton: the search on a template's skeleton finds the whole build's group and classes") {
  // Systems: every shipped template whose nodes are self-contained, at sizes where moves within
  // leaves, across leaves, pods and rails exist, 1:1 and oversubscribed, PXN and spine cross-rail.
  // Expectations: for every traffic pattern, the same engine, reason, group and classes.
  check_agrees(file("pcie-8gpu", {.nodes = 8, .nodes_per_leaf = 2}));
  check_agrees(file("paper-a100-2x4", {}));
  for (CrossRail rail : {CrossRail::pxn, CrossRail::spine}) {
    check_agrees(file("dgx-h100", {.nodes = 8, .nodes_per_leaf = 2, .spines = 2, .cross_rail = rail}));
    check_agrees(file("dgx-h100-3tier", {.nodes = 8, .nodes_per_leaf = 2, .spines = 2, .cross_rail = rail}));
  }
  check_agrees(file("dgx-h100", {.nodes = 16, .oversubscription = 2.0, .nodes_per_leaf = 4, .spines = 2}));
  check_agrees(file("dgx-a100-superpod", {.nodes = 8, .nodes_per_leaf = 4, .spines = 2}));
  check_agrees(file("dgx-h100-3tier", {.nodes = 12, .nodes_per_leaf = 2}));
}

TEST_CASE("skeleton: no symmetry on the skeleton where the whole build has none") {
  // Systems: an uneven last leaf (6 nodes, 4 per leaf); hashed ECMP.
  // Expectations: both searches run the full engine for the same reason.
  for (const TopologyFile& f : {file("dgx-h100", {.nodes = 6, .nodes_per_leaf = 4, .spines = 2}),
                                file("dgx-h100", {.nodes = 8, .nodes_per_leaf = 2, .ecmp = EcmpMode::hash})}) {
    const Topology whole = build_topology(*f.templ);
    const int ranks = static_cast<int>(whole.gpus.size());
    const auto groups = make_groups(ranks, 1, Placement::contiguous);
    const TrafficGroups traffic[] = {{&groups, GroupTraffic::all_pairs}};
    const FoldChoice a = choose_fold(EngineMode::automatic, whole, ranks, traffic);
    const FoldChoice b = choose_fold_on_skeleton(EngineMode::automatic, build_skeleton(*f.templ),
                                                 rank_places(*f.templ), ranks, traffic);
    CHECK(a.use.engine == "full");
    CHECK(b.use.engine == "full");
    CHECK(b.use.why == a.use.why);
  }
}

// GB200 NVL72 racks (18 trays of 4 GPUs in one NVLink domain) over a fabric given inline.
std::string nvl72_yaml(const std::string& name, int nodes, const std::string& fabric) {
  return "name: " + name + "\ngpu: GB200\nnodes: " + std::to_string(nodes) + R"(
node:
  kind: nvswitch
  gpus: 4
  nvlink: {bandwidth: 900 GB/s, latency: 1 us, domain_nodes: 18}
  pcie: {bandwidth: 64 GB/s, latency: 0.5 us, switches: 0, sockets: 2, inter_socket_bandwidth: 300 GB/s,
         inter_socket_latency: 0.3 us}
  nics: {count: 4, bandwidth: 400 Gb/s}
fabric:
)" + fabric;
}
const std::string three_tier = "  kind: three-tier\n  latency: 0.5 us\n  nodes_per_leaf: 18\n  spines: 2\n";
const std::string two_racks_per_leaf = "  kind: three-tier\n  latency: 0.5 us\n  nodes_per_leaf: 36\n  spines: 2\n";
const std::string one_switch = "  kind: single-switch\n  latency: 0.5 us\n";

TEST_CASE("skeleton: NVLink domains across nodes (GB200 NVL72)") {
  // Systems: racks of 18 trays under a rail fabric (leaves of 18, 9 and 36 trays, so domains fill,
  // split or share leaves), a three-tier rail fabric, and one switch (every tray interchangeable
  // within its rack: node steps smaller than a domain).
  // Expectations: for every traffic pattern, the whole build's engine, reason, group and classes;
  // domain links classed as the nodes they join.
  check_agrees(file("gb200-nvl72", {.nodes = 36, .nodes_per_leaf = 18, .spines = 2}));
  check_agrees(file("gb200-nvl72", {.nodes = 36, .nodes_per_leaf = 9, .spines = 2}));
  check_agrees(file("gb200-nvl72", {.nodes = 72, .nodes_per_leaf = 36, .spines = 2}));
  const test::TempFile tiers(nvl72_yaml("nvl72-3tier", 72, three_tier)),
      one(nvl72_yaml("nvl72-switch", 54, one_switch));
  check_agrees(read_topology_file(tiers.path));
  check_agrees(read_topology_file(one.path));
}

namespace {

bool close(double a, double b) { return std::abs(a - b) <= 1e-9 * std::max({std::abs(a), std::abs(b), 1e-300}); }

// A collective from the template file (classes on a part where possible) against the full engine on
// the whole build, and against the classes engine on the whole build.
int check_part_matrix(const TopologyFile& f) {
  const Topology whole = build_topology(*f.templ);
  const int ranks = static_cast<int>(whole.gpus.size());
  ClusterBuilds cluster(f);
  int on_parts = 0;
  for (CollectiveOp op : {CollectiveOp::alltoall, CollectiveOp::allgather, CollectiveOp::reducescatter,
                          CollectiveOp::allreduce, CollectiveOp::sendrecv})
    for (int groups : {1, 2, 4, ranks / whole.gpus_per_node})
      for (Placement p : {Placement::contiguous, Placement::strided}) {
        if (groups < 1 || ranks % groups != 0) continue;
        CollectiveSpec spec{.op = op, .size_bytes = 8 << 20, .groups = groups, .placement = p};
        INFO(f.templ->name << " " << collective_info(op).name << ", " << groups << " groups, "
                           << (p == Placement::strided ? "strided" : "contiguous"));
        const CollectiveResult part = simulate_collective(cluster, spec);
        const CollectiveResult classes = simulate_collective(whole, spec);
        spec.engine = EngineMode::full;
        const CollectiveResult full = simulate_collective(whole, spec);
        CHECK(part.engine.engine == classes.engine.engine);
        CHECK(part.engine.why == classes.engine.why);
        CHECK(part.engine.rank_classes == classes.engine.rank_classes);
        CHECK(part.engine.link_classes == classes.engine.link_classes);
        CHECK(close(part.time_s, full.time_s));
        CHECK(close(part.busbw_Bps, full.busbw_Bps));
        CHECK(part.stats.flows == full.stats.flows);
        CHECK(part.stats.events == full.stats.events);
        CHECK(part.stats.solves == classes.stats.solves);
        PerLinkClass<double> by_class;
        for (int l = 0; l < whole.link_count(); ++l) by_class[whole.link(l).cls] += full.link_bytes[l];
        for (LinkClass c : link_classes) CHECK(close(part.class_bytes[c], by_class[c]));
        for (LinkClass c : link_classes) CHECK(close(classes.class_bytes[c], by_class[c]));
        on_parts += part.link_bytes.empty();
        if (classes.engine.engine == "classes") CHECK(part.link_bytes.empty());  // stand-ins: always a part
      }
  return on_parts;
}

}  // namespace

TEST_CASE("parts: collectives on a part of a template equal the full engine on the whole build") {
  // Systems: templates with a skeleton at sizes with several leaves, pods and spines, 1:1 and
  // oversubscribed, PXN and spine cross-rail.
  // Expectations: every op, group count and placement gives the full engine's time, bandwidth,
  // flow and event counts and bytes per link class (1e-9), and the whole build's classes, with most
  // runs on a part (no whole build).
  CHECK(check_part_matrix(file("pcie-8gpu", {.nodes = 8, .nodes_per_leaf = 2})) > 0);
  for (CrossRail rail : {CrossRail::pxn, CrossRail::spine}) {
    CHECK(check_part_matrix(file("dgx-h100", {.nodes = 8, .nodes_per_leaf = 2, .spines = 2, .cross_rail = rail})) > 0);
    CHECK(check_part_matrix(file("dgx-h100-3tier", {.nodes = 8, .nodes_per_leaf = 2, .spines = 2, .cross_rail = rail})) > 0);
  }
  CHECK(check_part_matrix(file("dgx-h100", {.nodes = 16, .oversubscription = 2.0, .nodes_per_leaf = 4, .spines = 2})) > 0);
  CHECK(check_part_matrix(file("dgx-a100-superpod", {.nodes = 8, .nodes_per_leaf = 4, .spines = 2})) > 0);
}

TEST_CASE("parts: collectives on parts of GB200 NVL72 clusters equal the full engine") {
  // Systems: racks of 18 trays over a rail fabric and a three-tier one (two racks per leaf group,
  // so that a leaf has stand-ins outside the sources' racks), and over one switch, where trays
  // rotate within their rack (a node step of 1): parts hold whole racks, and a stand-in is never
  // in a source's rack (it would route over NVLink).
  // Expectations: as above, with runs on parts in each.
  CHECK(check_part_matrix(file("gb200-nvl72", {.nodes = 144, .nodes_per_leaf = 36, .spines = 2})) > 0);
  const test::TempFile tiers(nvl72_yaml("nvl72-3tier", 144, two_racks_per_leaf)),
      one(nvl72_yaml("nvl72-switch", 180, one_switch));
  CHECK(check_part_matrix(read_topology_file(tiers.path)) > 0);
  CHECK(check_part_matrix(read_topology_file(one.path)) > 0);
}
