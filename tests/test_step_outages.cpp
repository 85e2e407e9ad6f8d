// Outages (--exclude-nodes, --down-links) in whole training steps: every figure equal to the full
// engine's to 1e-9 on every shipped fabric and a seeded property test; the job's ranks on the
// remaining nodes in order; bad outages refused with the flag named.
#include "input_error.hpp"
#include "splitmix64.hpp"
#include "step_cells_check.hpp"
#include "step_run.hpp"

#include <catch2/catch.hpp>

#include <string>

using namespace basp;
using basp::test::check_cells;
using basp::test::job;

namespace {

StepConfig outage_job(std::string topology, TopologyOverrides overrides, int sp, std::string excluded,
                      std::string down = "") {
  overrides.outages = {std::move(excluded), std::move(down)};
  return job(std::move(topology), overrides, sp);
}

}  // namespace

TEST_CASE("outages: excluded nodes and cables down, every figure equals the full engine on rail DGX H100") {
  const TopologyOverrides dgx{.nodes = 6, .nodes_per_leaf = 4, .spines = 2};
  CHECK(check_cells(outage_job("dgx-h100", dgx, 8, "1,3")) == 5);          // 32 GPUs on nodes 0, 2, 4, 5
  CHECK(check_cells(outage_job("dgx-h100", dgx, 16, "2:7")) == 5);         // a seeded draw
  CHECK(check_cells(outage_job("dgx-h100", dgx, 16, "", "rail0.leaf0--spine0,rail5.leaf1--spine1")) == 5);
  CHECK(check_cells(outage_job("dgx-h100", dgx, 16, "", "3:1")) == 5);
  CHECK(check_cells(outage_job("dgx-h100", dgx, 8, "4", "4:2")) > 0);      // both at once
  StepConfig strided = outage_job("dgx-h100", {.nodes = 6, .nodes_per_leaf = 4, .spines = 2, .cross_rail = CrossRail::spine},
                                  16, "0", "2:3");
  strided.placement = Placement::strided;
  strided.gpus = 32;
  check_cells(strided);  // trunks bind here: the cells with trunks in merge no rank, the full engine runs
  strided.strategies = {Strategy::ulysses};
  strided.engine = EngineMode::automatic;
  CHECK_THAT(simulate_step(strided).results[0].engine.why,
             Catch::Contains("nodes are excluded") && Catch::Contains("equitable cells merge no rank"));
  StepConfig zero = outage_job("dgx-h100", dgx, 8, "5");  // ZeRO-1 accumulating, hpZ groups
  zero.zero = 1;
  zero.zero_group = 8;
  zero.accumulation = 2;
  CHECK(check_cells(zero) == 5);
}

TEST_CASE("outages: every figure equals the full engine on three tiers, PCIe, NVL72 and a --gpus subset") {
  CHECK(check_cells(outage_job("dgx-h100-3tier", {.nodes = 8, .nodes_per_leaf = 2, .spines = 2}, 8, "3", "2:5")) > 0);
  CHECK(check_cells(outage_job("pcie-8gpu", {.nodes = 4, .nodes_per_leaf = 2}, 8, "1")) > 0);
  StepConfig racks = outage_job("gb200-nvl72", {.nodes = 36, .nodes_per_leaf = 32, .spines = 2}, 16, "5,20-21");
  racks.gpus = 128;  // of the 132 left
  CHECK(check_cells(racks) > 0);
  StepConfig part = outage_job("dgx-h100", {.nodes = 8, .nodes_per_leaf = 2, .spines = 2}, 16, "0,7", "1:4");
  part.gpus = 32;
  CHECK(check_cells(part) > 0);
}

TEST_CASE("outages: a seeded property test over node counts, exclusion sets and cables down") {
  // Each draw: a DGX H100 cluster of 3-9 nodes under leaves of 2-4, some nodes excluded (a list or a
  // seeded draw), sometimes trunks down; the job is every remaining GPU or the largest SP-divisible
  // share of it. Every figure must equal the full engine's.
  int ran = 0;
  for (std::uint64_t seed = 1; ran < 10 && seed <= 40; ++seed) {
    const std::uint64_t h = splitmix64(seed);
    const int nodes = 3 + int(h % 7), per_leaf = 2 + int((h >> 8) % 3);
    const int excluded = 1 + int((h >> 16) % std::max(1, nodes / 3));
    std::string exclude = std::to_string(excluded) + ":" + std::to_string(seed);
    if ((h >> 24) % 2) {  // a plain list instead
      exclude.clear();
      for (int k = 0; k < excluded; ++k) exclude += (k ? "," : "") + std::to_string(int((h >> (28 + 4 * k)) % nodes));
    }
    const std::string down = (h >> 50) % 3 == 0 ? std::to_string(1 + (h >> 52) % 3) + ":" + std::to_string(seed) : "";
    StepConfig c = outage_job("dgx-h100", {.nodes = nodes, .nodes_per_leaf = per_leaf, .spines = 2}, 8, exclude, down);
    c.strategies = {Strategy::ulysses, Strategy::basp, Strategy::ring};
    INFO("seed " << seed << ": " << nodes << " nodes, " << per_leaf << " per leaf, excluded " << exclude << ", down "
                 << down);
    try {
      check_cells(c);
      ++ran;
    } catch (const InputError& e) {
      // A draw may cut a leaf off (refused, as it must be); the others must all run.
      CHECK_THAT(std::string(e.what()), Catch::Contains("--down-links") && Catch::Contains("--exclude-nodes"));
      CHECK(!down.empty());
    }
  }
  CHECK(ran == 10);  // refusals are rare: the draws must mostly run
}

TEST_CASE("outages: the job's ranks run on the remaining nodes in order, and the report says what is out") {
  StepConfig c = outage_job("dgx-h100", {.nodes = 6, .nodes_per_leaf = 4, .spines = 2}, 8, "1,3", "rail2.leaf0--spine1");
  c.strategies = {Strategy::ulysses};
  const StepReport r = simulate_step(c);
  const Topology& topo = r.topology();
  CHECK(r.config.gpus == 32);
  CHECK(topo.excluded_nodes == std::vector<int>{1, 3});
  REQUIRE(topo.gpus.size() == 32);
  const int expected_node[] = {0, 2, 4, 5};
  for (int rank = 0; rank < 32; ++rank) CHECK(topo.node_of_rank(rank) == expected_node[rank / 8]);
  CHECK(topo.down_links.size() == 2);  // both directions of the cable
}

TEST_CASE("outages: bad input is refused with the flag named") {
  const TopologyOverrides dgx{.nodes = 6, .nodes_per_leaf = 4, .spines = 2};
  auto refused = [](StepConfig c, const std::string& flag, const std::string& says) {
    INFO(c.overrides.outages.exclude_nodes << " / " << c.overrides.outages.down_links);
    try {
      simulate_step(c);
      FAIL("accepted");
    } catch (const InputError& e) {
      CHECK(e.field == flag);
      CHECK_THAT(std::string(e.what()), Catch::Contains(says));
    }
  };
  refused(outage_job("dgx-h100", dgx, 8, "6"), "--exclude-nodes", "node 6 does not exist");
  refused(outage_job("dgx-h100", dgx, 8, "0-5"), "--exclude-nodes", "excludes every one of the 6 nodes");
  refused(outage_job("dgx-h100", dgx, 8, "6:1"), "--exclude-nodes", "excludes every one");
  refused(outage_job("dgx-h100", dgx, 8, "2-1"), "--exclude-nodes", "is not a node number");
  refused(outage_job("dgx-h100", dgx, 8, "3:x"), "--exclude-nodes", "seed");
  StepConfig too_many = outage_job("dgx-h100", dgx, 8, "0-2");
  too_many.gpus = 32;  // 3 nodes remain: 24 GPUs
  refused(too_many, "--gpus", "3 of the 6 nodes excluded");
  refused(outage_job("dgx-h100", dgx, 32, "0-2"), "--sp", "");  // SP 32 does not divide the 24 GPUs left
  refused(outage_job("dgx-h100", dgx, 8, "", "spine0"), "--down-links", "is not a cable");
  refused(outage_job("dgx-h100", dgx, 8, "", "spine0--nowhere"), "--down-links", "no device named 'nowhere'");
  refused(outage_job("dgx-h100", dgx, 8, "", "rail0.leaf0--rail1.leaf0"), "--down-links", "no link joins");
  refused(outage_job("dgx-h100", dgx, 8, "", "n0.gpu0--n0.nvswitch"), "--down-links", "takes fabric cables");
  refused(outage_job("dgx-h100", dgx, 8, "", "n2.nic3--rail3.leaf0"), "--down-links", "--exclude-nodes 2");
  refused(outage_job("dgx-h100", dgx, 8, "", "rail0.leaf1--spine0,rail0.leaf1--spine1"), "--down-links",
          "--exclude-nodes 4,5");
  refused(outage_job("dgx-h100", dgx, 8, "", "99:1"), "--down-links", "only 32 switch-to-switch cables");
  // Cut off, but left out of the job: accepted.
  StepConfig out = outage_job("dgx-h100", dgx, 8, "4,5", "rail0.leaf1--spine0,rail0.leaf1--spine1");
  out.strategies = {Strategy::ulysses};
  CHECK(simulate_step(out).config.gpus == 32);
}
