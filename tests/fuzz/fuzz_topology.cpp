// Fuzz target: a topology file (template or explicit form) from bytes. Accepted: bandwidths,
// latencies and overheads within their physical ranges (input_ranges.hpp); every link of a small
// enough build has a finite, positive capacity and a latency in range, every GPU a node.
// Refused: an InputError naming the file and field. Anything else is a finding.
#include "fuzz_input.hpp"
#include "input_ranges.hpp"
#include "topology_file.hpp"

using namespace basp;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string path = fuzz::as_file(data, size, "-topology.yaml");
  try {
    TopologyFile file = read_topology_file(path);
    if (file.templ) {
      const TopologyTemplate& t = *file.templ;
      fuzz::require(t.nodes >= 1 && t.node.gpus >= 1, "a template without nodes or GPUs accepted");
      for (double bw : {t.node.nvlink_Bps, t.node.pcie_Bps, t.node.pcie_uplink_Bps, t.node.inter_socket_Bps,
                        t.node.nic_Bps, t.fabric.link_Bps})
        fuzz::require(bw == 0.0 || ranges::bandwidth.contains(bw), "a bandwidth beyond its range accepted");
      for (double lat : {t.node.nvlink_latency_s, t.node.pcie_latency_s, t.node.inter_socket_latency_s,
                         t.fabric.latency_s, t.software.launch_s, t.software.per_peer_s})
        fuzz::require(ranges::latency.contains(lat), "a latency or overhead beyond its range accepted");
      // Building is linear in the cluster: build what a test can afford, the rest was checked.
      if (double(t.nodes) * t.node.gpus > 4096 || double(t.nodes) * t.fabric.spines > 1e5) return 0;
    }
    const Topology topo = build_topology(std::move(file));
    fuzz::require(!topo.gpus.empty(), "a topology without GPUs accepted");
    for (const Link& l : topo.links) {
      fuzz::positive(l.capacity_Bps, "link capacity");
      fuzz::require(ranges::latency.contains(l.latency_s), "a link latency beyond its range accepted");
    }
    for (VertexId g : topo.gpus) fuzz::require(topo.vertex(g).node >= 0, "a GPU outside every node");
    fuzz::non_negative(topo.software.launch_s, "launch overhead");
    fuzz::non_negative(topo.software.per_peer_s, "per-peer overhead");
  } catch (const InputError& e) {
    fuzz::check_file_refusal(e);
  }
  return 0;
}
