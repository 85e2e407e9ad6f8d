// Fuzz target: a topology file (template or explicit form) from bytes. Accepted: every link of a
// small enough build has a finite, positive capacity and a finite latency >= 0, every GPU a node.
// Refused: an InputError naming the file and field. Anything else is a finding.
#include "fuzz_input.hpp"
#include "topology_file.hpp"

using namespace basp;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string path = fuzz::as_file(data, size, "-topology.yaml");
  try {
    TopologyFile file = read_topology_file(path);
    if (file.templ) {
      const TopologyTemplate& t = *file.templ;
      fuzz::require(t.nodes >= 1 && t.node.gpus >= 1, "a template without nodes or GPUs accepted");
      // Building is linear in the cluster: build what a test can afford, the rest was checked.
      if (double(t.nodes) * t.node.gpus > 4096 || double(t.nodes) * t.fabric.spines > 1e5) return 0;
    }
    const Topology topo = build_topology(std::move(file));
    fuzz::require(!topo.gpus.empty(), "a topology without GPUs accepted");
    for (const Link& l : topo.links) {
      fuzz::positive(l.capacity_Bps, "link capacity");
      fuzz::non_negative(l.latency_s, "link latency");
    }
    for (VertexId g : topo.gpus) fuzz::require(topo.vertex(g).node >= 0, "a GPU outside every node");
    fuzz::non_negative(topo.software.launch_s, "launch overhead");
    fuzz::non_negative(topo.software.per_peer_s, "per-peer overhead");
  } catch (const InputError& e) {
    fuzz::check_file_refusal(e);
  }
  return 0;
}
