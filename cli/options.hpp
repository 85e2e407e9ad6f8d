// Command-line pieces shared by the subcommands: topology selection and overrides, quantities
// with units, output format. One table of options both validates input and prints help.
#pragma once

#include "input_ranges.hpp"
#include "topology_file.hpp"
#include "units.hpp"

#include <CLI/CLI.hpp>

#include <string>

namespace basp::cli {

struct TopologyOptions {
  std::string topology;
  TopologyOverrides overrides;
  std::string ecmp, cross_rail;
  void add_to(CLI::App& app, const std::string& default_topology);
  void add_outages_to(CLI::App& app);  // --exclude-nodes, --down-links (simulate, sweep, collective, plan)
  Topology load() const;
  TopologyFile read() const;  // the file as read: templates are not built yet
  TopologyOverrides resolved_overrides() const;  // overrides with --ecmp and --cross-rail applied
};

enum class Format { table, json, csv };
struct FormatOptions {
  bool json = false, csv = false;
  void add_to(CLI::App& app);
  Format format() const { return json ? Format::json : csv ? Format::csv : Format::table; }
};

// Parses a flag's value with units; InputError naming the flag otherwise.
double parse_flag_quantity(const std::string& flag, const std::string& text, Quantity kind);
// Parses a flag's value with units within its physical range (input_ranges.hpp); InputError
// naming the flag and what is allowed otherwise.
double parse_flag_quantity(const std::string& flag, const std::string& text, const PhysicalRange& range);
// A CLI11 check: a number (a whole one for counts) within the physical range, else a message that
// says what is allowed.
CLI::Validator within(const PhysicalRange& range);

// Writes `text` to `file` ("-": stdout); InputError naming the flag when it cannot.
void write_text_file(const std::string& file, const std::string& flag, const std::string& text);

}  // namespace basp::cli
