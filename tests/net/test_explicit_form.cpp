// Every shipped topology, written out in the explicit form and loaded back, gives the same graph
// and the same collective times bit for bit: proof that nothing is special-cased by template kind.
#include "collective_run.hpp"
#include "helpers.hpp"
#include "topology_file.hpp"

#include <catch2/catch.hpp>

#include <sstream>

using namespace basp;

TEST_CASE("explicit form round-trips every shipped topology") {
  for (const char* name : {"paper-a100-2x4", "dgx-a100-superpod", "dgx-h100", "gb200-nvl72", "pcie-8gpu"}) {
    INFO(name);
    const Topology tmpl = load_topology(name);
    std::ostringstream text;
    write_explicit_topology(tmpl, text);
    basp::test::TempFile file(text.str());
    const Topology expl = load_topology(file.path);
    REQUIRE(expl.link_count() == tmpl.link_count());
    REQUIRE(expl.gpus.size() == tmpl.gpus.size());
    CHECK(expl.rail_optimized == tmpl.rail_optimized);
    for (int id = 0; id < tmpl.link_count(); ++id) {
      CHECK(expl.link(id).capacity_Bps == tmpl.link(id).capacity_Bps);
      CHECK(expl.link(id).latency_s == tmpl.link(id).latency_s);
    }
    const int ranks = static_cast<int>(tmpl.gpus.size());
    for (CollectiveOp op : {CollectiveOp::alltoall, CollectiveOp::allgather, CollectiveOp::allreduce})
      for (int groups : {1, 2}) {
        const CollectiveSpec spec{.op = op, .size_bytes = 16.0 * 1048576, .ranks = ranks, .groups = groups};
        CHECK(simulate_collective(expl, spec).time_s == simulate_collective(tmpl, spec).time_s);
      }
  }
}
