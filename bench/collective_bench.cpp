// Speed of the simulator on large collectives (targets in bench/README.md): wall time,
// peak memory, flows and events, on symmetry classes (auto) and, for comparison, the full engine.
#include "child_run.hpp"
#include "collective_run.hpp"
#include "topology_file.hpp"

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace {

struct Case {
  const char* name;
  int nodes;
  int groups;
  basp::EcmpMode ecmp;
  int spines;          // 0: the file's
  int nodes_per_leaf;  // 0: the file's
  double target_s;     // target wall time on one core; 0: none
  basp::EngineMode engine;
};

constexpr auto classes = basp::EngineMode::automatic, full = basp::EngineMode::full;
const Case cases[] = {
    {"global a2a, 64 GPUs", 8, 1, basp::EcmpMode::split, 0, 0, 0, classes},
    {"global a2a, 256 GPUs", 32, 1, basp::EcmpMode::split, 0, 0, 0, classes},
    {"global a2a, 1024 GPUs", 128, 1, basp::EcmpMode::split, 0, 0, 5.0, classes},
    {"global a2a, 1024 GPUs, full engine", 128, 1, basp::EcmpMode::split, 0, 0, 5.0, full},
    {"global a2a, 4096 GPUs", 512, 1, basp::EcmpMode::split, 0, 0, 1.0, classes},
    {"1024 x 8-way a2a, 8192 GPUs", 1024, 1024, basp::EcmpMode::split, 0, 0, 2.0, classes},
    {"1024 x 8-way a2a, 8192 GPUs, full engine", 1024, 1024, basp::EcmpMode::split, 0, 0, 2.0, full},
    {"global a2a, 128 GPUs, hashed ECMP, 8 spines", 16, 1, basp::EcmpMode::hash, 8, 4, 1.0, classes},
    {"global a2a, 32768 GPUs", 4096, 1, basp::EcmpMode::split, 0, 0, 0, classes},
    {"16384 x 8-way a2a, 131072 GPUs", 16384, 16384, basp::EcmpMode::split, 0, 0, 0, classes},
};

std::string run_case(const Case& c) {
  basp::TopologyOverrides o;
  o.nodes = c.nodes;
  o.ecmp = c.ecmp;
  if (c.spines) o.spines = c.spines;
  if (c.nodes_per_leaf) o.nodes_per_leaf = c.nodes_per_leaf;
  // As `basp collective` runs it: a template's class engine on a part of the cluster.
  basp::ClusterBuilds cluster(basp::read_topology_file("dgx-h100", o));
  basp::CollectiveSpec spec;
  spec.op = basp::CollectiveOp::alltoall;
  spec.size_bytes = 64.0 * 1048576;
  spec.groups = c.groups;
  spec.engine = c.engine;
  const basp::CollectiveResult r = basp::simulate_collective(cluster, spec);
  char line[256];
  std::snprintf(line, sizeof line, "%llu %llu %llu %llu %.9g %llu %d %s", (unsigned long long)r.stats.flows,
                (unsigned long long)r.stats.events, (unsigned long long)r.stats.batches,
                (unsigned long long)r.stats.solves, r.time_s, (unsigned long long)r.stats.refilled,
                r.engine.rank_classes, r.engine.engine.c_str());
  return line;
}

}  // namespace

int main(int argc, char** argv) {
  const char* only = argc > 1 ? argv[1] : nullptr;
  std::printf("# basp bench: all-to-all of 64 MiB per rank on dgx-h100 rail fabrics (PXN), one core\n");
  std::printf("# wall: topology + routing + simulation, in a child process; peak: its max RSS\n#\n");
  std::printf("# %-44s %8s %9s %11s %11s %8s %7s %9s %12s %8s %-8s %s\n", "case", "wall", "peak", "flows", "events",
              "batches", "solves", "refill", "simulated", "target", "engine", "");
  std::printf("# %-44s %8s %9s %11s %11s %8s %7s %9s %12s %8s %-8s\n", "", "(s)", "(MiB)", "", "", "", "",
              "(/solve)", "(ms)", "(s)", "(ranks)");
  bool all_met = true;
  for (const Case& c : cases) {
    if (only && !std::strstr(c.name, only)) continue;
    const basp::bench::ChildResult r = basp::bench::run_in_child([&] { return run_case(c); });
    double sim = 0;
    unsigned long long flows = 0, events = 0, batches = 0, solves = 0, refilled = 0;
    int ranks = 0;
    char engine[16] = {};
    if (!r.ok || std::sscanf(r.figures.c_str(), "%llu %llu %llu %llu %lf %llu %d %15s", &flows, &events, &batches,
                             &solves, &sim, &refilled, &ranks, engine) != 8) {
      std::printf("  %-44s FAILED\n", c.name);
      all_met = false;
      continue;
    }
    const bool met = c.target_s == 0 || r.wall_s <= c.target_s;
    all_met = all_met && met;
    char target[16] = "-";
    if (c.target_s > 0) std::snprintf(target, sizeof target, "%.1f", c.target_s);
    const std::string used = std::string(engine) + " (" + std::to_string(ranks) + ")";
    std::printf("  %-44s %8.3f %9.1f %11llu %11llu %8llu %7llu %9llu %12.4f %8s %-8s %s\n", c.name, r.wall_s,
                r.peak_MiB, flows, events, batches, solves, solves ? refilled / solves : 0, sim * 1e3, target,
                used.c_str(), c.target_s > 0 ? (met ? "met" : "MISSED") : "");
    std::fflush(stdout);
  }
  std::printf("# %s\n", all_met ? "all targets met" : "some targets missed");
  return 0;
}
