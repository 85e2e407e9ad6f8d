// Symmetry classes against the full engine: every collective, group count and placement on every
// shipped template (several fabrics, PXN and spine cross-rail, oversubscription) gives the same
// figures and per-link bytes to 1e-9; and what must break the symmetry does.
#include "collective_run.hpp"
#include "input_error.hpp"
#include "rank_fold.hpp"
#include "helpers.hpp"
#include "topology_file.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>

using namespace basp;

namespace {

bool close(double a, double b) { return std::abs(a - b) <= 1e-9 * std::max({std::abs(a), std::abs(b), 1e-300}); }

// Runs `spec` on both engines; the classes run must have folded, and every figure must agree.
void check_same(const Topology& t, CollectiveSpec spec) {
  spec.engine = EngineMode::full;
  const CollectiveResult full = simulate_collective(t, spec);
  spec.engine = EngineMode::automatic;
  const CollectiveResult classes = simulate_collective(t, spec);
  INFO(t.name << " op " << collective_info(spec.op).name << ", " << spec.groups << " groups, "
              << (spec.placement == Placement::strided ? "strided" : "contiguous") << ": " << classes.engine.why);
  REQUIRE(classes.engine.engine == "classes");
  CHECK(classes.engine.members > 1);
  CHECK(classes.engine.rank_classes * classes.engine.members == full.ranks);
  CHECK(full.engine.engine == "full");
  CHECK(close(classes.time_s, full.time_s));
  CHECK(close(classes.algbw_Bps, full.algbw_Bps));
  CHECK(close(classes.busbw_Bps, full.busbw_Bps));
  CHECK(classes.stats.flows == full.stats.flows);
  CHECK(classes.stats.events == full.stats.events);
  REQUIRE(classes.link_bytes.size() == full.link_bytes.size());
  std::size_t differ = 0;
  for (std::size_t l = 0; l < full.link_bytes.size(); ++l) differ += !close(classes.link_bytes[l], full.link_bytes[l]);
  CHECK(differ == 0);
}

// The same on both engines, whichever `auto` picks (for topologies where either is right).
void check_agree(const Topology& t, const CollectiveSpec& base) {
  CollectiveSpec spec = base;
  spec.engine = EngineMode::full;
  const CollectiveResult full = simulate_collective(t, spec);
  spec.engine = EngineMode::automatic;
  const CollectiveResult any = simulate_collective(t, spec);
  INFO(t.name << " op " << collective_info(spec.op).name << ", " << spec.groups << " groups: " << any.engine.engine
              << ", " << any.engine.why);
  CHECK(close(any.time_s, full.time_s));
  REQUIRE(any.link_bytes.size() == full.link_bytes.size());
  for (std::size_t l = 0; l < full.link_bytes.size(); ++l) CHECK(close(any.link_bytes[l], full.link_bytes[l]));
}

void check_matrix(const Topology& t) {
  const int ranks = static_cast<int>(t.gpus.size());
  for (CollectiveOp op : {CollectiveOp::alltoall, CollectiveOp::allgather, CollectiveOp::reducescatter,
                          CollectiveOp::allreduce, CollectiveOp::sendrecv})
    for (int groups : {1, 2, 4})
      for (Placement placement : {Placement::contiguous, Placement::strided}) {
        if (ranks % groups != 0 || (groups == 1 && placement == Placement::strided)) continue;
        check_same(t, {.op = op, .size_bytes = 16.0 * 1048576, .groups = groups, .placement = placement});
      }
}

}  // namespace

TEST_CASE("classes equal the full engine: two nodes on one switch (paper-a100-2x4)") {
  check_matrix(load_topology("paper-a100-2x4"));
}

TEST_CASE("classes equal the full engine: PCIe nodes under leaves and spines") {
  check_matrix(load_topology("pcie-8gpu", {.nodes = 4, .nodes_per_leaf = 2}));
}

TEST_CASE("classes equal the full engine: rail-optimized DGX H100, PXN and spine cross-rail, 1:1 and 2:1") {
  for (CrossRail rail : {CrossRail::pxn, CrossRail::spine})
    for (double over : {1.0, 2.0})
      check_matrix(load_topology(
          "dgx-h100", {.nodes = 8, .oversubscription = over, .nodes_per_leaf = 2, .spines = 2, .cross_rail = rail}));
}

TEST_CASE("classes equal the full engine: DGX A100 SuperPOD and GB200 NVL72 racks") {
  check_matrix(load_topology("dgx-a100-superpod", {.nodes = 8, .nodes_per_leaf = 4, .spines = 2}));
  check_matrix(load_topology("gb200-nvl72", {.nodes = 36, .nodes_per_leaf = 18, .spines = 2}));
}

TEST_CASE("classes equal the full engine: three tiers, with core links the translation fixes") {
  // Pods are rails here, so a shift of leaf groups fixes every spine-core link: each carries the
  // load of every translate. With cores at 1/8 of their speed they bind, and the fold must scale them.
  for (CrossRail rail : {CrossRail::pxn, CrossRail::spine}) {
    Topology t = load_topology("dgx-h100-3tier", {.nodes = 8, .nodes_per_leaf = 2, .spines = 2, .cross_rail = rail});
    check_matrix(t);
    for (Link& l : t.links)
      if (t.vertex(l.from).name.find(".core") != std::string::npos ||
          t.vertex(l.to).name.find(".core") != std::string::npos)
        l.capacity_Bps /= 8;
    check_matrix(t);
  }
}

TEST_CASE("classes equal the full engine: 1024 GPUs, global and grouped all-to-all") {
  const Topology t = load_topology("dgx-h100", {.nodes = 128});
  for (int groups : {1, 8})
    check_same(t, {.op = CollectiveOp::alltoall, .size_bytes = 64.0 * 1048576, .groups = groups});
  check_same(t, {.op = CollectiveOp::allreduce, .size_bytes = 64.0 * 1048576, .groups = 8,
                 .placement = Placement::strided});
}

TEST_CASE("classes: what breaks the symmetry falls back to the full engine, and says why") {
  const CollectiveSpec a2a{.op = CollectiveOp::alltoall, .size_bytes = 1048576};
  auto why = [](const CollectiveResult& r) { return r.engine.engine + ": " + r.engine.why; };
  // Hashed ECMP picks paths by flow identity.
  const Topology hashed = load_topology("dgx-h100", {.nodes = 8, .nodes_per_leaf = 2, .ecmp = EcmpMode::hash});
  CHECK_THAT(why(simulate_collective(hashed, a2a)), Catch::Contains("full: hashed ECMP"));
  // An uneven last leaf (4 + 2 nodes): no shift by whole nodes maps leaves onto leaves.
  const Topology uneven = load_topology("dgx-h100", {.nodes = 6, .nodes_per_leaf = 4, .spines = 2});
  CHECK_THAT(why(simulate_collective(uneven, a2a)), Catch::Contains("full: no shift of whole nodes"));
  // Part of the cluster.
  CollectiveSpec part = a2a;
  part.ranks = 16;
  CHECK_THAT(why(simulate_collective(hashed, part)), Catch::Contains("full: the job uses 16 of the 64 GPUs"));
  // One node.
  CHECK_THAT(why(simulate_collective(load_topology("localhost-cpu"), a2a)), Catch::Contains("full: a single node"));
  // Demanding classes where neither a translation nor cells merge anything (one rank, no flow) is an
  // input error; on the uneven leaf, cells merge (tests/net/test_flow_cells.cpp).
  CollectiveSpec demand = a2a;
  demand.engine = EngineMode::classes;
  demand.ranks = 1;
  CHECK_THROWS_AS(simulate_collective(uneven, demand), InputError);
}

TEST_CASE("classes: moves derived from link order are verified as a group, not trusted") {
  // Two cases a review built. Swapped switches: moving 3 nodes by one also swaps switches A and
  // B, so three moves swap them while fixing every node; the link orbits are then twice the
  // group's size. Link order: node 2 lists its links in another order. Either way, whatever
  // `auto` runs must give the full engine's results.
  for (const char* file : {"fold-swapped-switches.yaml", "fold-link-order.yaml"}) {
    const Topology t = load_topology(basp::test::data(file));
    for (CollectiveOp op : {CollectiveOp::alltoall, CollectiveOp::allgather, CollectiveOp::sendrecv})
      for (int groups : {1, static_cast<int>(t.gpus.size()) / 2})
        check_agree(t, {.op = op, .size_bytes = 16.0 * 1048576, .groups = groups});
  }
  // The swapped switches break the cyclic group, so only the full engine is exact there.
  const Topology swapped = load_topology(basp::test::data("fold-swapped-switches.yaml"));
  const CollectiveResult r = simulate_collective(swapped, {.op = CollectiveOp::alltoall, .size_bytes = 1048576});
  CHECK(r.engine.engine == "full");
  CHECK_THAT(r.engine.why, Catch::Contains("no move of that kind was verified as a group"));
}

TEST_CASE("classes: one slower trunk breaks the translation that would move it") {
  // System: 8 DGX H100 nodes, 2 per leaf, 2 spines; one leaf-to-spine trunk of leaf group 0 at half speed.
  // Expectations: no shift maps that trunk onto a like one, so auto runs the full engine.
  Topology t = load_topology("dgx-h100", {.nodes = 8, .nodes_per_leaf = 2, .spines = 2});
  for (Link& l : t.links)
    if (t.vertex(l.from).name == "rail0.leaf0" && t.vertex(l.to).name == "spine0") l.capacity_Bps /= 2;
  const CollectiveResult r = simulate_collective(t, {.op = CollectiveOp::alltoall, .size_bytes = 1048576});
  CHECK(r.engine.engine == "full");
}

TEST_CASE("classes: the translation is the smallest that keeps the groups") {
  // System: 8 PCIe nodes of 8 GPUs, 2 nodes per leaf: the cluster repeats every leaf (2 nodes), and
  // the two nodes of a leaf may swap.
  // Expectations: all-to-alls in groups of one leaf (16 ranks) fold to one node (8 ranks); groups
  // of two leaves cannot swap nodes across leaves, only the leaves: 2 nodes; rings (node-major
  // order) forbid the swap within a leaf: 2 nodes; groups that no move maps onto groups, or a
  // send/recv order no move keeps, need the full engine.
  const Topology t = load_topology("pcie-8gpu", {.nodes = 8, .nodes_per_leaf = 2});
  REQUIRE(t.gpus.size() == 64);
  auto period = [&](const std::vector<std::vector<int>>& groups, GroupTraffic traffic) {
    const TrafficGroups described[] = {{&groups, traffic}};
    const FoldChoice c = choose_fold(EngineMode::automatic, t, 64, described);
    return c.use.engine == "classes" ? c.fold.period : 0;
  };
  CHECK(period(make_groups(64, 4, Placement::contiguous), GroupTraffic::all_pairs) == 8);
  CHECK(period(make_groups(64, 2, Placement::contiguous), GroupTraffic::all_pairs) == 16);
  CHECK(period(make_groups(64, 4, Placement::strided), GroupTraffic::nccl_rings) == 16);
  std::vector<std::vector<int>> lopsided(2);
  for (int r = 0; r < 64; ++r) lopsided[r < 48 ? 0 : 1].push_back(r);
  CHECK(period(lopsided, GroupTraffic::all_pairs) == 0);
  std::vector<std::vector<int>> swapped = make_groups(64, 1, Placement::contiguous);
  std::swap(swapped[0][0], swapped[0][1]);
  CHECK(period(swapped, GroupTraffic::all_pairs) == 8);  // the same members: all pairs do not care
  CHECK(period(swapped, GroupTraffic::successor) == 0);
}
