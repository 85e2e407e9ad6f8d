// Shared command-line options. Overrides are only set when the user gave the flag, so the
// topology file's own values stay the single place defaults live.
#include "options.hpp"

#include "gpu_kind.hpp"
#include "input_error.hpp"

#include <cmath>
#include <fstream>
#include <iostream>

namespace basp::cli {

void TopologyOptions::add_to(CLI::App& app, const std::string& default_topology) {
  if (topology.empty()) topology = default_topology;  // sweep re-registers on arguments already parsed
  app.add_option("--topology,-t", topology, "Shipped topology name (topologies/NAME.yaml) or a YAML file")
      ->capture_default_str();
  app.add_option("--nodes", overrides.nodes, "Override the number of nodes (template topologies)");
  app.add_option("--oversubscription", overrides.oversubscription,
                 "Override the leaf down:up capacity ratio (leaf-spine and rail fabrics)");
  app.add_option("--nodes-per-leaf", overrides.nodes_per_leaf, "Override the nodes under one leaf (per rail)");
  app.add_option("--spines", overrides.spines, "Override the number of spine switches");
  app.add_option("--ecmp", ecmp, "Equal-cost paths: split (evenly) or hash (one path per flow)")
      ->check(CLI::IsMember({"split", "hash"}));
  app.add_option("--cross-rail", cross_rail,
                 "Rail fabrics: pxn (NVLink to the destination's rail first, NCCL's default) or spine")
      ->check(CLI::IsMember({"pxn", "spine"}));
}

void TopologyOptions::add_outages_to(CLI::App& app) {
  app.add_option("--exclude-nodes", overrides.outages.exclude_nodes,
                 "Nodes the job leaves out: numbers and ranges (3,17,40-47) or COUNT:SEED drawn (41:1, 2%:1); "
                 "ranks run on the other nodes in order");
  app.add_option("--down-links", overrides.outages.down_links,
                 "Fabric cables taken down, routes avoiding them: A--B by their ends as `basp topo --explicit` "
                 "names them (comma-separated), or COUNT:SEED switch-to-switch cables drawn (4:1, 1%:7)");
}

TopologyOverrides TopologyOptions::resolved_overrides() const {
  TopologyOverrides o = overrides;
  if (!ecmp.empty()) o.ecmp = ecmp == "split" ? EcmpMode::split : EcmpMode::hash;
  if (!cross_rail.empty()) o.cross_rail = cross_rail == "pxn" ? CrossRail::pxn : CrossRail::spine;
  return o;
}

Topology TopologyOptions::load() const { return build_topology(read()); }

TopologyFile TopologyOptions::read() const {
  return read_topology_file(topology, resolved_overrides(), gpu_kind_names());
}

void FormatOptions::add_to(CLI::App& app) {
  auto* j = app.add_flag("--json", json, "Print one JSON object on stdout");
  auto* c = app.add_flag("--csv", csv, "Print CSV with a header row");
  j->excludes(c);
}

double parse_flag_quantity(const std::string& flag, const std::string& text, Quantity kind) {
  auto v = parse_quantity(text, kind);
  if (!v) throw InputError("", 0, flag, "'" + text + "' is not " + quantity_examples(kind));
  return *v;
}

double parse_flag_quantity(const std::string& flag, const std::string& text, const PhysicalRange& range) {
  const Quantity kind = *written_as(range.unit);  // a range of bytes, bandwidth or time
  const auto v = parse_quantity(text, kind);
  if (!v) throw InputError("", 0, flag, "'" + text + "' is not " + quantity_examples(kind) + " (" + range.allowed() + ")");
  return require_in_range(*v, range, "", 0, flag, text);
}

CLI::Validator within(const PhysicalRange& range) {
  return CLI::Validator(
      [range](std::string& text) -> std::string {
        std::size_t used = 0;
        double v = 0.0;
        try {
          v = std::stod(text, &used);
        } catch (const std::exception&) {
          used = 0;
        }
        const bool whole = range.unit != RangeUnit::count || v == std::floor(v);
        if (used == 0 || used != text.size() || !whole)
          return "'" + text + "' is not " + (range.unit == RangeUnit::count ? "a whole number" : "a number") + " (" +
                 range.allowed() + ")";
        return range.contains(v) ? std::string() : out_of_range(v, range, text);
      },
      "in " + range.bounds());
}

void write_text_file(const std::string& file, const std::string& flag, const std::string& text) {
  if (file == "-") {
    std::cout << text;
    return;
  }
  std::ofstream out(file);
  out << text;
  out.close();
  if (!out) throw InputError("", 0, flag, "cannot write '" + file + "'");
}

}  // namespace basp::cli
