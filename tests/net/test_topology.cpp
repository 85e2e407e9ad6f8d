// Shipped topologies load and build what their files say: GPU counts, NVSwitch ports as their own
// link pairs, NIC affinity, rails, and CLI overrides of size and oversubscription.
#include "helpers.hpp"
#include "topology_file.hpp"
#include "topology_summary.hpp"

#include <catch2/catch.hpp>

using namespace basp;

namespace {
int count_links(const Topology& t, LinkClass cls) {
  int n = 0;
  for (int id = 0; id < t.link_count(); ++id) n += t.link(id).cls == cls;
  return n;
}
}  // namespace

TEST_CASE("every shipped topology loads and summarizes") {
  for (const char* name :
       {"paper-a100-2x4", "dgx-a100-superpod", "dgx-h100", "dgx-h100-3tier", "gb200-nvl72", "pcie-8gpu"}) {
    INFO(name);
    const Topology t = load_topology(name);
    CHECK(t.gpus.size() == std::size_t(t.nodes * t.gpus_per_node));
    const TopologySummary s = summarize(t);
    CHECK(s.bisection_Bps > 0.0);
    CHECK(s.scale_up_Bps_per_gpu > 0.0);
  }
}

TEST_CASE("paper-a100-2x4: 2 nodes of 4 GPUs on an NVLink mesh - 2 HDR NICs per node") {
  const Topology t = load_topology("paper-a100-2x4");
  CHECK(t.nodes == 2);
  CHECK(t.gpus_per_node == 4);
  CHECK(count_links(t, LinkClass::nvlink) == 2 * 4 * 3);  // every ordered GPU pair of each node
  CHECK(count_links(t, LinkClass::nic) == 2 * 2 * 2);     // 4 NICs, each a duplex cable
  const TopologySummary s = summarize(t);
  CHECK(s.scale_out_Bps_per_gpu == Approx(2 * 25e9 / 4));
  CHECK(s.bisection_Bps == Approx(50e9));  // 2 x 200 Gb/s out of a node
}

TEST_CASE("an NVSwitch is per-port links - never one shared capacity") {
  const Topology t = load_topology("dgx-h100", {.nodes = 2});
  CHECK(count_links(t, LinkClass::nvlink) == 2 * 8 * 2);
  for (int id = 0; id < t.link_count(); ++id)
    if (t.link(id).cls == LinkClass::nvlink) CHECK(t.link(id).capacity_Bps == Approx(450e9));
}

TEST_CASE("node count and oversubscription are overridable") {
  const Topology big = load_topology("dgx-h100", {.nodes = 64});
  CHECK(big.gpus.size() == 512);
  // 64 nodes, 32 per leaf: 2 leaf groups per rail; trunks carry 32·50 GB/s / (oversub · 16 spines).
  const Topology over = load_topology("dgx-h100", {.nodes = 64, .oversubscription = 4.0});
  for (int id = 0; id < over.link_count(); ++id)
    if (over.link(id).cls == LinkClass::fabric) CHECK(over.link(id).capacity_Bps == Approx(32 * 50e9 / (4 * 16)));
}

TEST_CASE("gb200-nvl72: 18 trays of 4 GPUs form one NVLink domain") {
  const Topology t = load_topology("gb200-nvl72");
  CHECK(t.gpus.size() == 72);
  int switches = 0;
  for (VertexId v = 0; v < boost::num_vertices(t.graph); ++v) switches += t.graph[v].kind == VertexKind::nvswitch;
  CHECK(switches == 1);
  const Topology two = load_topology("gb200-nvl72", {.nodes = 36});
  CHECK(two.gpus.size() == 144);
}

TEST_CASE("GPUs use the NIC their affinity names") {
  const Topology t = load_topology("paper-a100-2x4");
  const auto& g = t.graph;
  CHECK(g[g[t.gpus[0]].nic].name == "n0.nic0");
  CHECK(g[g[t.gpus[1]].nic].name == "n0.nic0");
  CHECK(g[g[t.gpus[2]].nic].name == "n0.nic1");
  CHECK(g[g[t.gpus[3]].nic].name == "n0.nic1");
}
