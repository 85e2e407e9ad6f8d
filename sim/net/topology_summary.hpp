// What `basp topo` reports about a topology: device and link counts, per-GPU injection bandwidth,
// bisection bandwidth (max-flow between the two halves of the ranks) and example routes.
#pragma once

#include "topology.hpp"
#include "topology_file.hpp"

#include <map>
#include <string>
#include <vector>

namespace basp {

struct ExampleRoute {
  std::string label;     // "intra-node", "inter-node", ...
  int src_rank = 0, dst_rank = 0;
  std::string path;      // vertex names; ECMP alternatives shown as {a|b}
  double latency_s = 0.0;
  double bottleneck_Bps = 0.0;  // smallest capacity / share along the path
};

struct TopologySummary {
  std::string name, source, gpu_kind;
  RoutingOptions routing;
  SoftwareCosts software;
  bool rail_optimized = false;
  int gpus = 0, nodes = 0, gpus_per_node = 0;
  std::map<std::string, int> vertices_by_kind;
  std::map<std::string, std::pair<int, double>> links_by_class;  // count, total capacity (B/s)
  double scale_up_Bps_per_gpu = 0.0;   // NVLink/PCIe out of one GPU
  double scale_out_Bps_per_gpu = 0.0;  // NIC->fabric capacity of a node / its GPUs
  double bisection_Bps = 0.0;          // first half of the ranks -> second half, one direction
  std::vector<ExampleRoute> routes;
  std::vector<std::string> unused_classes;  // link classes no route from rank 0 crosses
  std::string unused_scope = "any rank";     // the destinations that statement covers
};

TopologySummary summarize(const Topology& topo);
// The same figures; a template is summed up from parts of it (no vertex per GPU), so that a
// cluster of any size summarizes in well under a second. Equal to summarizing the whole build.
TopologySummary summarize(const TopologyFile& file);

}  // namespace basp
