// Speed of the simulator on large collectives (issue targets in bench/README.md): wall time,
// peak memory, flows and events. Each case runs in its own child process so peak RSS is its own.
#include "collective_run.hpp"
#include "topology_file.hpp"

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
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
  double target_s;     // issue target on one core; 0: none
};

const Case cases[] = {
    {"global a2a, 64 GPUs", 8, 1, basp::EcmpMode::split, 0, 0, 0},
    {"global a2a, 256 GPUs", 32, 1, basp::EcmpMode::split, 0, 0, 0},
    {"global a2a, 1024 GPUs", 128, 1, basp::EcmpMode::split, 0, 0, 5.0},
    {"global a2a, 4096 GPUs", 512, 1, basp::EcmpMode::split, 0, 0, 0},
    {"1024 x 8-way a2a, 8192 GPUs", 1024, 1024, basp::EcmpMode::split, 0, 0, 2.0},
    {"global a2a, 128 GPUs, hashed ECMP, 8 spines", 16, 1, basp::EcmpMode::hash, 8, 4, 1.0},
};

void run_case(const Case& c, int fd) {
  basp::TopologyOverrides o;
  o.nodes = c.nodes;
  o.ecmp = c.ecmp;
  if (c.spines) o.spines = c.spines;
  if (c.nodes_per_leaf) o.nodes_per_leaf = c.nodes_per_leaf;
  const auto t0 = std::chrono::steady_clock::now();
  const basp::Topology topo = basp::load_topology("dgx-h100", o);
  basp::CollectiveSpec spec;
  spec.op = basp::CollectiveOp::alltoall;
  spec.size_bytes = 64.0 * 1048576;
  spec.groups = c.groups;
  const basp::CollectiveResult r = basp::simulate_collective(topo, spec);
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  char line[256];
  const int n = std::snprintf(line, sizeof line, "%.3f %llu %llu %llu %llu %.9g %llu", wall,
                              (unsigned long long)r.stats.flows, (unsigned long long)r.stats.events,
                              (unsigned long long)r.stats.batches, (unsigned long long)r.stats.solves, r.time_s,
                              (unsigned long long)r.stats.refilled);
  if (write(fd, line, n) != n) _exit(3);
}

}  // namespace

int main(int argc, char** argv) {
  const char* only = argc > 1 ? argv[1] : nullptr;
  std::printf("# basp bench: all-to-all of 64 MiB per rank on dgx-h100 rail fabrics (PXN), one core\n");
  std::printf("# wall: topology + routing + simulation, in a child process; peak: its max RSS\n#\n");
  std::printf("# %-44s %8s %9s %11s %11s %8s %7s %9s %12s %8s %s\n", "case", "wall", "peak", "flows", "events",
              "batches", "solves", "refill", "simulated", "target", "");
  std::printf("# %-44s %8s %9s %11s %11s %8s %7s %9s %12s %8s\n", "", "(s)", "(MiB)", "", "", "", "",
              "(/solve)", "(ms)", "(s)");
  bool all_met = true;
  for (const Case& c : cases) {
    if (only && !std::strstr(c.name, only)) continue;
    int fds[2];
    if (pipe(fds) != 0) return 1;
    const pid_t pid = fork();
    if (pid == 0) {
      close(fds[0]);
      run_case(c, fds[1]);
      _exit(0);
    }
    close(fds[1]);
    char buf[256] = {};
    const ssize_t got = read(fds[0], buf, sizeof buf - 1);
    close(fds[0]);
    int status = 0;
    rusage usage{};
    wait4(pid, &status, 0, &usage);
    double wall = 0, sim = 0;
    unsigned long long flows = 0, events = 0, batches = 0, solves = 0, refilled = 0;
    if (got <= 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0 ||
        std::sscanf(buf, "%lf %llu %llu %llu %llu %lf %llu", &wall, &flows, &events, &batches, &solves, &sim,
                    &refilled) != 7) {
      std::printf("  %-44s FAILED (status %d)\n", c.name, status);
      all_met = false;
      continue;
    }
    const bool met = c.target_s == 0 || wall <= c.target_s;
    all_met = all_met && met;
    char target[16] = "-";
    if (c.target_s > 0) std::snprintf(target, sizeof target, "%.1f", c.target_s);
    std::printf("  %-44s %8.3f %9.1f %11llu %11llu %8llu %7llu %9llu %12.4f %8s %s\n", c.name, wall,
                usage.ru_maxrss / 1024.0, flows, events, batches, solves, solves ? refilled / solves : 0, sim * 1e3,
                target,
                c.target_s > 0 ? (met ? "met" : "MISSED") : "");
    std::fflush(stdout);
  }
  std::printf("# %s\n", all_met ? "all targets met" : "some targets missed");
  return 0;
}
