// `basp collective`: one collective on B concurrent groups, swept over sizes like nccl-tests,
// predicted by the flow-level simulator. Several --groups values compare Ulysses (1) with BASP (B).
#include "calibration.hpp"
#include "collective_run.hpp"
#include "commands.hpp"
#include "input_error.hpp"
#include "options.hpp"
#include "outages.hpp"

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdio>
#include <iostream>
#include <memory>

namespace basp::cli {
namespace {

struct CollectiveArgs {
  TopologyOptions topo;
  std::string calibration;
  FormatOptions format;
  std::string op = "alltoall";
  std::string size, min_size, max_size;
  double factor = 2.0;
  std::vector<int> groups{1};
  std::string placement = "contiguous";
  int ranks = 0;
  std::string engine = "auto";
};

struct Row {
  CollectiveResult r;
  double size = 0.0;
  double nic_bytes = 0.0;  // bytes on NIC<->fabric links, both directions
};

// A rank's buffer: 1 B to 1 TiB (ranges::buffer_bytes: no GPU holds more; beyond, figures mean nothing).
double buffer_size(const std::string& flag, const std::string& text) {
  return parse_flag_quantity(flag, text, ranges::buffer_bytes);
}

// A sweep's factor: above 1, and at most the largest buffer over the smallest (2^40), beyond which
// no sweep has a second row (an infinite factor would be no sweep at all).
void check_factor(double factor) {
  constexpr double max_factor = ranges::buffer_bytes.max / ranges::buffer_bytes.min;
  if (!(factor > 1.0 && factor <= max_factor)) {
    char message[128];
    std::snprintf(message, sizeof message, "'%g': the size factor must be > 1 and at most %.0f (1 TiB / 1 B)", factor,
                  max_factor);
    throw InputError("", 0, "-f", message);
  }
}

std::vector<double> sizes(const CollectiveArgs& a) {
  if (!a.size.empty()) {
    if (!a.min_size.empty() || !a.max_size.empty())
      throw InputError("", 0, "--size", "give either --size or -b/-e, not both");
    return {buffer_size("--size", a.size)};
  }
  if (a.min_size.empty() || a.max_size.empty())
    throw InputError("", 0, "--size", "give --size BYTES, or -b MIN and -e MAX (and -f FACTOR)");
  const double lo = buffer_size("-b", a.min_size);
  const double hi = buffer_size("-e", a.max_size);
  check_factor(a.factor);
  if (hi < lo) throw InputError("", 0, "-e", "the largest size must be >= the smallest (-b)");
  // Whole bytes, as nccl-tests sizes are; a sweep is a table, not a stress test.
  constexpr std::size_t max_rows = 1000;
  std::vector<double> out;
  for (double s = lo; s <= hi * (1 + 1e-12); s *= a.factor) {
    if (out.size() == max_rows)
      throw InputError("", 0, "-f", "the sweep would have more than " + std::to_string(max_rows) +
                                        " sizes: use a larger factor or a narrower range");
    out.push_back(std::round(s));
  }
  return out;
}

nlohmann::ordered_json row_json(const CollectiveArgs& a, const Topology& topo, const Row& row) {
  const auto& r = row.r;
  return {{"op", a.op},
          {"topology", topo.name},
          {"calibration", topo.calibration},
          {"excluded_nodes", topo.excluded_nodes},
          {"down_links", down_cable_names(topo)},
          {"ranks", r.ranks},
          {"groups", r.groups},
          {"group_size", r.group_size},
          {"placement", a.placement},
          {"size_bytes", row.size},
          {"time_s", r.time_s},
          {"algbw_Bps", r.algbw_Bps},
          {"busbw_Bps", r.busbw_Bps},
          {"nic_bytes", row.nic_bytes},
          {"flows", r.stats.flows},
          {"events", r.stats.events},
          {"solves", r.stats.solves},
          {"engine",
           {{"engine", r.engine.engine},
            {"why", r.engine.why},
            {"rank_classes", r.engine.rank_classes},
            {"link_classes", r.engine.link_classes},
            {"members_per_class", r.engine.members}}},
          {"wall_s", r.wall_s}};
}

int run_collective(const CollectiveArgs& a) {
  TopologyFile file = a.topo.read();
  // The topology's own calibration unless told otherwise, as `basp simulate` uses it.
  const std::string& own = file.templ ? file.templ->calibration : file.explicit_topology.calibration;
  const std::string cal_name = !a.calibration.empty() ? a.calibration : own.empty() ? "none" : own;
  const Calibration cal = load_calibration(cal_name);
  ClusterBuilds cluster(std::move(file), [&cal](Topology& t) {
    apply_calibration(t, cal);
    t.calibration = cal.name;  // from here on: the one applied
  });
  const Topology& topo = cluster.sample();  // names, routing, software: the cluster's
  const int gpus = cluster.gpus(), nodes = cluster.nodes();
  MoveCache moves;  // node moves found on the skeleton, for every row
  const auto op = parse_collective_op(a.op);
  CollectiveSpec spec;
  spec.op = *op;  // CLI11 checked membership
  spec.ranks = a.ranks;
  spec.placement = a.placement == "strided" ? Placement::strided : Placement::contiguous;
  spec.engine = *parse_engine_mode(a.engine);  // CLI11 checked membership
  std::vector<Row> rows;
  for (double size : sizes(a))
    for (int g : a.groups) {
      spec.size_bytes = size;
      spec.groups = g;
      Row row{simulate_collective(cluster, spec, &moves), size, 0.0};
      row.nic_bytes = row.r.class_bytes[LinkClass::nic];
      rows.push_back(std::move(row));
    }

  if (a.format.format() == Format::json) {
    if (rows.size() == 1) {
      std::cout << row_json(a, topo, rows[0]).dump(2) << "\n";
    } else {
      nlohmann::ordered_json j{{"op", a.op}, {"topology", topo.name}, {"rows", nlohmann::json::array()}};
      for (const Row& row : rows) j["rows"].push_back(row_json(a, topo, row));
      std::cout << j.dump(2) << "\n";
    }
    return 0;
  }
  if (a.format.format() == Format::csv) {
    std::cout << "op,topology,ranks,groups,group_size,placement,size_bytes,time_s,algbw_Bps,busbw_Bps,"
                 "nic_bytes,flows,events,solves,engine,wall_s\n";
    for (const Row& row : rows) {
      const auto& r = row.r;
      std::printf("%s,%s,%d,%d,%d,%s,%.17g,%.17g,%.17g,%.17g,%.17g,%llu,%llu,%llu,%s,%.6f\n", a.op.c_str(),
                  topo.name.c_str(), r.ranks, r.groups, r.group_size, a.placement.c_str(), row.size, r.time_s,
                  r.algbw_Bps, r.busbw_Bps, row.nic_bytes, (unsigned long long)r.stats.flows,
                  (unsigned long long)r.stats.events, (unsigned long long)r.stats.solves, r.engine.engine.c_str(),
                  r.wall_s);
    }
    return 0;
  }
  std::printf("# basp collective: %s on %s (%d GPUs: %d nodes x %d, GPU %s), %s placement\n", a.op.c_str(),
              topo.name.c_str(), gpus, nodes, topo.gpus_per_node,
              topo.gpu_kind.c_str(), a.placement.c_str());
  if (const std::string out = describe_outages(topo); !out.empty())
    std::printf("# outages: %s; ranks run on the other nodes in order\n", out.c_str());
  std::printf("# calibration %s (link capacities below are effective ones)\n", cal.name.c_str());
  std::printf("# routing: ecmp %s, cross-rail %s; software: launch %s, per peer %s, local copy %.0f GB/s\n",
              topo.routing.ecmp == EcmpMode::split ? "split" : "hash",
              topo.routing.cross_rail == CrossRail::pxn ? "pxn" : "spine", format_time(topo.software.launch_s).c_str(),
              format_time(topo.software.per_peer_s).c_str(), topo.software.local_copy_Bps / 1e9);
  std::printf("# size: %s (nccl-tests convention); time: entry to the slowest rank's return\n#\n",
              a.op == "alltoall" || a.op == "reducescatter" ? "per-rank send buffer"
              : a.op == "allgather"                        ? "per-rank receive buffer"
                                                           : "per-rank buffer");
  const bool compare = a.groups.size() > 1;
  std::printf("#%6s %6s %13s %12s %10s %10s %12s %9s %9s %8s%s\n", "groups", "K", "size", "time", "algbw",
              "busbw", "nic bytes", "flows", "events", "wall", compare ? " vs first" : "");
  std::printf("#%6s %6s %13s %12s %10s %10s %12s %9s %9s %8s%s\n", "", "", "(B)", "(us)", "(GB/s)", "(GB/s)",
              "(B)", "", "", "(s)", compare ? "        " : "");
  double first_time = 0.0;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const auto& r = rows[i].r;
    if (i % a.groups.size() == 0) first_time = r.time_s;
    std::printf(" %6d %6d %13.0f %12.3f %10.2f %10.2f %12.4g %9llu %9llu %8.3f", r.groups, r.group_size,
                rows[i].size, r.time_s * 1e6, r.algbw_Bps / 1e9, r.busbw_Bps / 1e9, rows[i].nic_bytes,
                (unsigned long long)r.stats.flows, (unsigned long long)r.stats.events, r.wall_s);
    if (compare) std::printf(" %7.2fx", first_time / r.time_s);
    std::printf("\n");
  }
  for (std::size_t i = 0; i < a.groups.size() && i < rows.size(); ++i) {
    const EngineUse& e = rows[i].r.engine;
    std::printf("# groups %d: %s engine, %d ranks and %d links simulated (%s)\n", rows[i].r.groups, e.engine.c_str(),
                e.rank_classes, e.link_classes, e.why.c_str());
  }
  std::printf("# %zu rows simulated\n", rows.size());
  return 0;
}

}  // namespace

void add_collective_command(CLI::App& app, Chosen& chosen) {
  auto a = std::make_shared<CollectiveArgs>();
  CLI::App* sub = app.add_subcommand("collective", "Simulate one collective on B concurrent groups (nccl-tests style)");
  a->topo.add_to(*sub, "paper-a100-2x4");
  a->topo.add_outages_to(*sub);
  sub->add_option("--calibration", a->calibration,
                  "Calibration name or file (default: the topology's own; 'none': nominal link rates and overheads)");
  a->format.add_to(*sub);
  sub->add_option("--op", a->op, "Collective: alltoall, allgather, reducescatter, allreduce, sendrecv")
      ->check(CLI::IsMember({"alltoall", "allgather", "reducescatter", "allreduce", "sendrecv"}))
      ->capture_default_str();
  sub->add_option("--size", a->size, "Size per rank with unit (64MiB, 1GB; nccl-tests convention)");
  sub->add_option("-b,--minbytes", a->min_size, "Smallest size of a sweep");
  sub->add_option("-e,--maxbytes", a->max_size, "Largest size of a sweep");
  sub->add_option("-f,--stepfactor", a->factor, "Size multiplication factor of a sweep")->capture_default_str();
  sub->add_option("--groups,-g", a->groups,
                  "B: groups of K = ranks/B (1 = one global group, Ulysses); a list compares, e.g. 1,2")
      ->delimiter(',')
      ->check(within(ranges::gpu_count))
      ->capture_default_str();
  sub->add_option("--placement", a->placement, "Group membership: contiguous (g*K..g*K+K-1) or strided (rank mod B)")
      ->check(CLI::IsMember({"contiguous", "strided"}))
      ->capture_default_str();
  sub->add_option("--ranks", a->ranks, "Ranks taking part (the first ones); 0 = every GPU")->capture_default_str();
  sub->add_option("--engine", a->engine,
                  "auto: symmetry classes when they are exact, else every rank and flow; classes: demand them "
                  "(equitable cells where no translation exists); full: every rank and flow (docs/symmetry.md)")
      ->check(CLI::IsMember({"auto", "classes", "full"}))
      ->capture_default_str();
  sub->callback([a, &chosen] {
    chosen.check = [a] {
      a->topo.read();
      sizes(*a);
    };
    chosen.run = [a] { return run_collective(*a); };
  });
}

}  // namespace basp::cli
