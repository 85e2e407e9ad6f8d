// Three-tier fabrics (leaf -> spine -> core): the rail-optimized SuperPOD layout of
// dgx-h100-3tier.yaml, pods of consecutive leaves, GB200 NVL72 racks on one, and their refusals.
#include "collective_run.hpp"
#include "helpers.hpp"
#include "input_error.hpp"
#include "routing.hpp"
#include "topology_file.hpp"
#include "topology_summary.hpp"

#include <catch2/catch.hpp>

#include <sstream>

using namespace basp;
using basp::test::replaced;
using basp::test::TempFile;

namespace {

int count_switches(const Topology& t, const std::string& prefix) {
  int n = 0;
  for (VertexId v = 0; v < boost::num_vertices(t.graph); ++v)
    n += t.graph[v].kind == VertexKind::fabric_switch && t.graph[v].name.find(prefix) != std::string::npos;
  return n;
}

// Capacities of the fabric links leaving vertices whose name contains `from` towards `to`.
std::vector<double> trunks(const Topology& t, const std::string& from, const std::string& to) {
  std::vector<double> out;
  for (int id = 0; id < t.link_count(); ++id) {
    const Link& l = t.link(id);
    if (t.graph[l.from].name.find(from) != std::string::npos && t.graph[l.to].name.find(to) != std::string::npos)
      out.push_back(l.capacity_Bps);
  }
  return out;
}

bool crosses(const Topology& t, const RouteView& r, const std::string& what) {
  for (const Hop& h : r.hops)
    if (t.graph[t.link(h.link).to].name.find(what) != std::string::npos) return true;
  return false;
}

// Four-GPU nodes with four NICs under a three-tier fabric of 2-node leaves; pods per rail.
const std::string small_three_tier = R"(name: small-3tier
gpu: H100-SXM
nodes: 8
node:
  kind: nvswitch
  gpus: 4
  nvlink: {bandwidth: 450 GB/s, latency: 1 us}
  pcie: {bandwidth: 64 GB/s, latency: 0.5 us}
  nics: {count: 4, bandwidth: 400 Gb/s}
fabric:
  kind: three-tier
  latency: 0.5 us
  nodes_per_leaf: 2
  rails: true
  spines: 2
  cores_per_plane: 2
  oversubscription: 1
  spine_oversubscription: 1
)";

}  // namespace

// System: dgx-h100-3tier at 2 scalable units (64 nodes). Expectations: one leaf per rail and unit
// (16), one pod of 16 spines per rail (128), 16 planes of 4 cores (64); non-blocking trunks.
TEST_CASE("dgx-h100-3tier: leaves per rail and unit, a spine group per rail, cores in planes") {
  const Topology t = load_topology("dgx-h100-3tier", {.nodes = 64});
  CHECK(t.gpus.size() == 512);
  CHECK(t.rail_optimized);
  CHECK(count_switches(t, ".leaf") == 8 * 2);
  CHECK(count_switches(t, ".spine") == 8 * 16);
  CHECK(count_switches(t, ".core") == 16 * 4);
  // Leaf -> spine: 32 nodes x 50 GB/s over 16 spines; spine -> core: 2 leaves' trunks over 4 cores.
  for (double c : trunks(t, "rail3.leaf1", "pod3.spine")) CHECK(c == Approx(32 * 50e9 / 16));
  CHECK(trunks(t, "rail3.leaf1", "pod3.spine").size() == 16);
  CHECK(trunks(t, "rail3.leaf1", "pod2.spine").empty());  // a leaf reaches its own pod only
  for (double c : trunks(t, "pod5.spine7", "plane7.core")) CHECK(c == Approx(2 * 100e9 / 4));
  CHECK(trunks(t, "pod5.spine7", "plane7.core").size() == 4);
  CHECK(trunks(t, "pod5.spine7", "plane6.core").empty());  // spine s joins plane s only
  const TopologySummary s = summarize(t);
  CHECK(s.bisection_Bps == Approx(256 * 50e9));  // non-blocking: half the GPUs at their NIC rate
}

// System: dgx-h100-3tier, 2 units. Expectations: same-rail traffic between units turns at a spine
// of its rail's pod; cross-rail traffic takes PXN (no core) unless told to use the fabric, then a core.
TEST_CASE("dgx-h100-3tier: same-rail traffic turns at its pod's spines, cross-rail at a core") {
  const Topology pxn = load_topology("dgx-h100-3tier", {.nodes = 64});
  Router r1(pxn);
  const RouteView same_rail = r1.route(0, 32 * 8);  // n0.gpu0 -> n32.gpu0, rail 0, other unit
  CHECK(crosses(pxn, same_rail, "pod0.spine"));
  CHECK_FALSE(crosses(pxn, same_rail, "core"));
  CHECK_FALSE(crosses(pxn, r1.route(0, 32 * 8 + 1), "core"));  // PXN: over NVLink to rail 1 first
  const Topology spine = load_topology("dgx-h100-3tier", {.nodes = 64, .cross_rail = CrossRail::spine});
  Router r2(spine);
  const RouteView cross = r2.route(0, 32 * 8 + 1);
  CHECK(crosses(spine, cross, "pod0.spine"));
  CHECK(crosses(spine, cross, "core"));
  CHECK(crosses(spine, cross, "pod1.spine"));
  // Split evenly over 16 spines x 4 cores: each core-bound hop carries 1/64 of the flow.
  double up_to_cores = 0;
  for (const Hop& h : cross.hops)
    if (spine.graph[spine.link(h.link).to].name.find("core") != std::string::npos) {
      CHECK(h.share == Approx(1.0 / 64));
      up_to_cores += h.share;
    }
  CHECK(up_to_cores == Approx(1.0));
}

// System: the same fabric with the spine tier 4:1 oversubscribed. Expectations: core trunks carry a
// quarter; a global all-to-all forced across rails through the cores is slower, PXN is unaffected.
TEST_CASE("three-tier: the spine tier's oversubscription shrinks the core trunks and slows the fabric") {
  TempFile flat(small_three_tier);
  TempFile over(replaced(small_three_tier, "spine_oversubscription: 1", "spine_oversubscription: 4"));
  const Topology a = load_topology(flat.path), b = load_topology(over.path);
  // Leaves: 2 nodes x 50 GB/s over 2 spines = 50 GB/s; spines: 4 leaves x 50 GB/s over 2 cores.
  for (double c : trunks(a, "pod0.spine1", "plane1.core")) CHECK(c == Approx(4 * 50e9 / 2));
  for (double c : trunks(b, "pod0.spine1", "plane1.core")) CHECK(c == Approx(4 * 50e9 / (2 * 4)));
  const CollectiveSpec spec{.op = CollectiveOp::alltoall, .size_bytes = 64.0 * (1 << 20)};
  const auto time = [&](const std::string& file, CrossRail rail) {
    return simulate_collective(load_topology(file, {.cross_rail = rail}), spec).time_s;
  };
  CHECK(time(over.path, CrossRail::spine) > 1.5 * time(flat.path, CrossRail::spine));
  CHECK(time(over.path, CrossRail::pxn) == time(flat.path, CrossRail::pxn));
}

// System: 8 nodes on 2-node leaves, all NICs of a node on one leaf, pods of 2 leaves.
// Expectations: 4 leaves, 2 pods; traffic inside a pod turns at a spine, between pods at a core.
TEST_CASE("three-tier without rails: pods of consecutive leaves joined by cores") {
  TempFile f(replaced(small_three_tier, "rails: true", "rails: false\n  leaves_per_pod: 2"));
  const Topology t = load_topology(f.path);
  CHECK_FALSE(t.rail_optimized);
  CHECK(count_switches(t, "leaf") == 4);
  CHECK(count_switches(t, ".spine") == 2 * 2);
  CHECK(count_switches(t, ".core") == 2 * 2);
  // Leaf: 2 nodes x 4 NICs x 50 GB/s over 2 spines.
  for (double c : trunks(t, "leaf3", "pod1.spine")) CHECK(c == Approx(2 * 4 * 50e9 / 2));
  Router router(t);
  const RouteView in_pod = router.route(0, 2 * 4);  // node 0 -> node 2: leaves 0 and 1, pod 0
  CHECK(crosses(t, in_pod, "pod0.spine"));
  CHECK_FALSE(crosses(t, in_pod, "core"));
  CHECK(crosses(t, router.route(0, 4 * 4), "core"));  // node 0 -> node 4: pod 0 -> pod 1
}

// System: GB200 NVL72 racks (18 trays of 4 GPUs, one NVLink domain per rack) under a three-tier
// rail fabric, one rack per leaf. Expectations: traffic inside a rack stays on NVLink; traffic
// between racks leaves through its rail's leaf.
TEST_CASE("three-tier: GB200 NVL72 racks over a rail-optimized fabric") {
  TempFile f(R"(name: gb200-3tier
gpu: GB200
nodes: 72
node:
  kind: nvswitch
  gpus: 4
  nvlink: {bandwidth: 900 GB/s, latency: 1 us, domain_nodes: 18}
  pcie: {bandwidth: 64 GB/s, latency: 0.5 us}
  nics: {count: 4, bandwidth: 400 Gb/s}
fabric:
  kind: three-tier
  latency: 0.5 us
  nodes_per_leaf: 18
  spines: 4
  cores_per_plane: 2
)");
  const Topology t = load_topology(f.path);
  CHECK(t.gpus.size() == 288);
  CHECK(count_switches(t, ".leaf") == 4 * 4);
  Router router(t);
  const RouteView rack = router.route(0, 71);  // both in rack 0
  CHECK_FALSE(crosses(t, rack, "leaf"));
  CHECK(crosses(t, rack, "domain0.nvswitch"));
  const RouteView racks = router.route(0, 72);  // rack 0 -> rack 1, rail 0
  CHECK(crosses(t, racks, "rail0.leaf0"));
  CHECK(crosses(t, racks, "rail0.leaf1"));
  CHECK(summarize(t).bisection_Bps == Approx(144 * 50e9));
}

TEST_CASE("three-tier: bad fields are refused with their names") {
  struct Case {
    const char* from;
    const char* to;
    const char* field;
  };
  const Case cases[] = {
      {"rails: true", "rails: true\n  leaves_per_pod: 2", "leaves_per_pod"},  // only without rails
      {"rails: true", "rails: false", "fabric.leaves_per_pod"},                // required without rails
      {"spine_oversubscription: 1", "spine_oversubscription: 0", "fabric.spine_oversubscription"},
      {"cores_per_plane: 2", "cores_per_plane: 0", "fabric.cores_per_plane"},
      {"rails: true", "rails: maybe", "fabric.rails"},
  };
  for (const Case& c : cases) {
    INFO(c.to);
    TempFile f(replaced(small_three_tier, c.from, c.to));
    try {
      load_topology(f.path);
      FAIL("accepted");
    } catch (const InputError& e) {
      CHECK_THAT(std::string(e.what()), Catch::Contains(c.field));
    }
  }
}

// The explicit form of a three-tier topology loads back link for link, with the same times.
TEST_CASE("three-tier: the explicit form round-trips") {
  TempFile f(small_three_tier);
  const Topology tmpl = load_topology(f.path, {.cross_rail = CrossRail::spine});
  std::ostringstream text;
  write_explicit_topology(tmpl, text);
  TempFile g(text.str());
  const Topology expl = load_topology(g.path);
  REQUIRE(expl.link_count() == tmpl.link_count());
  CHECK(expl.rail_optimized);
  const CollectiveSpec spec{.op = CollectiveOp::alltoall, .size_bytes = 1 << 24};
  CHECK(simulate_collective(expl, spec).time_s == simulate_collective(tmpl, spec).time_s);
}
