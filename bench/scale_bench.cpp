// Speed of whole training steps and topology summaries at cluster scale (the scale targets,
// bench/README.md): wall time and peak memory of each case in a child process of its own.
#include "child_run.hpp"
#include "step_run.hpp"
#include "topology_file.hpp"
#include "topology_summary.hpp"

#include <cstdio>
#include <cstring>
#include <string>

namespace {

struct Case {
  const char* name;
  const char* topology;
  int nodes;
  bool step;        // a training step; else `basp topo`'s summary
  basp::EngineMode engine;
  double target_s;  // 0: none
  double target_MiB;
};

constexpr auto classes = basp::EngineMode::automatic, full = basp::EngineMode::full;
const Case cases[] = {
    {"topo summary, 3 tiers, 16,384 GPUs", "dgx-h100-3tier", 2048, false, classes, 0, 0},
    {"topo summary, 3 tiers, 131,072 GPUs", "dgx-h100-3tier", 16384, false, classes, 1.0, 0},
    {"step, 1024 GPUs", "dgx-h100", 128, true, classes, 0, 0},
    {"step, 1024 GPUs, full engine", "dgx-h100", 128, true, full, 0, 0},
    {"step, 16,384 GPUs", "dgx-h100", 2048, true, classes, 2.0, 1000.0 / 1.048576},
    {"step, 3 tiers, 131,072 GPUs", "dgx-h100-3tier", 16384, true, classes, 10.0, 4000.0 / 1.048576},
    {"step, 3 tiers, 1,048,576 GPUs", "dgx-h100-3tier", 131072, true, classes, 60.0, 0},
    {"step, GB200 NVL72, 131,328 GPUs", "gb200-nvl72", 32832, true, classes, 0, 0},
};

// llama-3.1-8b, 32K tokens, B = 4, SP 32, ZeRO-3 over 32: the job the scale targets time.
std::string run_case(const Case& c) {
  if (!c.step) {
    const basp::TopologySummary s = basp::summarize(basp::read_topology_file(c.topology, {.nodes = c.nodes}));
    return std::to_string(s.gpus) + " - - summary";
  }
  basp::StepConfig config;
  config.topology = c.topology;
  config.overrides.nodes = c.nodes;
  config.model = "llama-3.1-8b";
  config.seq = 32768;
  config.batch = 4;
  config.sp = 32;
  config.zero_group = 32;
  config.engine = c.engine;
  const basp::StepReport r = basp::simulate_step(config);
  char line[256];
  std::snprintf(line, sizeof line, "%d %.6g %d %s", r.config.gpus, r.results[1].step_s * 1e3,
                r.results[1].layers_simulated, r.results[1].engine.engine.c_str());
  return line;
}

}  // namespace

int main(int argc, char** argv) {
  const char* only = argc > 1 ? argv[1] : nullptr;
  std::printf("# basp scale bench: llama-3.1-8b, 32K, B=4, SP 32, ZeRO-3 over 32 (Ulysses and BASP); one core\n");
  std::printf("# wall: topology + both strategies (or the topo summary), in a child process; peak: its max RSS\n#\n");
  std::printf("# %-40s %9s %9s %9s %11s %7s %-8s %-16s %s\n", "case", "GPUs", "wall", "peak", "BASP step", "layers",
              "engine", "target", "");
  std::printf("# %-40s %9s %9s %9s %11s %7s %-8s %-16s\n", "", "", "(s)", "(MiB)", "(ms)", "", "", "(s, MiB)");
  bool all_met = true;
  for (const Case& c : cases) {
    if (only && !std::strstr(c.name, only)) continue;
    const basp::bench::ChildResult r = basp::bench::run_in_child([&] { return run_case(c); });
    int gpus = 0;
    char step[32] = {}, layers[16] = {}, engine[16] = {};
    if (!r.ok || std::sscanf(r.figures.c_str(), "%d %31s %15s %15s", &gpus, step, layers, engine) != 4) {
      std::printf("  %-40s FAILED\n", c.name);
      all_met = false;
      continue;
    }
    const bool met = (c.target_s == 0 || r.wall_s <= c.target_s) && (c.target_MiB == 0 || r.peak_MiB <= c.target_MiB);
    all_met = all_met && met;
    char target[32] = "-";
    if (c.target_s > 0)
      std::snprintf(target, sizeof target, c.target_MiB > 0 ? "%.0f, %.0f" : "%.0f", c.target_s, c.target_MiB);
    std::printf("  %-40s %9d %9.2f %9.1f %11s %7s %-8s %-16s %s\n", c.name, gpus, r.wall_s, r.peak_MiB, step, layers,
                engine, target, c.target_s > 0 ? (met ? "met" : "MISSED") : "");
    std::fflush(stdout);
  }
  std::printf("# %s\n", all_met ? "all targets met" : "some targets missed");
  return 0;
}
