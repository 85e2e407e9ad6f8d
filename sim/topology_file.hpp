// Topology files: a template (node kind × fabric, see topologies/README.md) or the explicit form
// (named vertices and links). Loading applies command-line overrides; writing gives the explicit form.
#pragma once

#include "topology.hpp"

#include <iosfwd>
#include <optional>
#include <string>

namespace basp {

// What the command line may change so that one file serves any cluster size.
struct TopologyOverrides {
  std::optional<int> nodes;
  std::optional<double> oversubscription;
  std::optional<int> nodes_per_leaf;
  std::optional<int> spines;
  std::optional<EcmpMode> ecmp;
  std::optional<CrossRail> cross_rail;
};

// NAME resolves to topologies/NAME.yaml under $BASP_DATA_DIR or the source tree; anything with a
// '/' or ending in .yaml is a path.
std::string resolve_data_file(const std::string& folder, const std::string& name_or_path);

Topology load_topology(const std::string& name_or_path, const TopologyOverrides& overrides = {});

// The explicit form of any topology; loading it back gives the same graph, link for link.
void write_explicit_topology(const Topology& topo, std::ostream& out);
void write_dot(const Topology& topo, std::ostream& out);

}  // namespace basp
