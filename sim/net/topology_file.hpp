// Topology files: a template (node kind × fabric, see topologies/README.md) or the explicit form
// (named vertices and links). Loading applies command-line overrides; writing gives the explicit form.
#pragma once

#include "outages.hpp"
#include "topology.hpp"
#include "topology_template.hpp"

#include <iosfwd>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace basp {

// What the command line may change so that one file serves any cluster size.
struct TopologyOverrides {
  std::optional<int> nodes;
  std::optional<double> oversubscription;
  std::optional<int> nodes_per_leaf;
  std::optional<int> spines;
  std::optional<EcmpMode> ecmp;
  std::optional<CrossRail> cross_rail;
  OutageSpec outages;  // applied once the cluster is built (ClusterBuilds)
};

// A topology file as read, overrides applied: a template, not yet built (so that what needs only
// a part of a large cluster can build that part), or an explicit topology.
struct TopologyFile {
  std::optional<TopologyTemplate> templ;
  Topology explicit_topology;  // when templ is empty
  OutageSpec outages;          // from the overrides: what the built cluster loses
};

// NAME resolves to topologies/NAME.yaml (resolve_data_file). The network needs only the GPU kind's
// name; `gpu_kinds`, when given, lists the names the file may use (the step model's table).
TopologyFile read_topology_file(const std::string& name_or_path, const TopologyOverrides& overrides = {},
                                std::span<const std::string_view> gpu_kinds = {});
// The whole topology: the template built, or the explicit one; outages applied.
Topology build_topology(TopologyFile file);
Topology load_topology(const std::string& name_or_path, const TopologyOverrides& overrides = {},
                       std::span<const std::string_view> gpu_kinds = {});

// The explicit form of any topology; loading it back gives the same graph, link for link.
void write_explicit_topology(const Topology& topo, std::ostream& out);
void write_dot(const Topology& topo, std::ostream& out);

}  // namespace basp
