// Outages: nodes a job leaves out and fabric cables taken down (--exclude-nodes, --down-links),
// each a list or a seeded draw, applied to a built cluster before anything is routed on it.
#pragma once

#include "topology.hpp"

#include <string>
#include <vector>

namespace basp {

// As the flags give them; "" is none.
//   --exclude-nodes: node numbers and ranges ("3,17,40-47"), or COUNT:SEED: COUNT nodes (or COUNT%
//     of them, "2%:1") drawn with that seed.
//   --down-links: cables named by their two ends ("rail0.leaf0--spine3,n4.nic0--rail0.leaf0"), both
//     directions down, or COUNT:SEED: that many switch-to-switch cables (or COUNT% of them) drawn.
struct OutageSpec {
  std::string exclude_nodes, down_links;
  bool empty() const { return exclude_nodes.empty() && down_links.empty(); }
};

// The nodes `spec` excludes of a cluster whose GPUs sit on nodes 0..nodes-1, ascending.
// InputError naming --exclude-nodes: no such node, malformed, or every node excluded.
std::vector<int> excluded_nodes(const std::string& spec, int nodes);

// Takes the spec's cables off the graph (routes avoid them; their ids stay, in topo.down_links, and
// carry nothing) and the excluded nodes' GPUs out of the ranks (topo.excluded_nodes): the job's
// ranks are the remaining nodes' GPUs in order. InputError where a node or cable does not exist or
// is no fabric cable, every node is excluded, or a remaining node is cut off from the others.
void apply_outages(Topology& topo, const OutageSpec& spec);

// "a--b": the cable one of whose directions is `link`.
std::string cable_name(const Topology& topo, int link);
// The cables down, each once ("a--b", a the end with the lower vertex id), in link order.
std::vector<std::string> down_cable_names(const Topology& topo);
// One line for reports: "nodes 3, 17 excluded; cables down: a--b" (long lists cut after 8); "" when none.
std::string describe_outages(const Topology& topo);

}  // namespace basp
