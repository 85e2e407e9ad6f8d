// Speed of `basp plan` (the plan target: >= 500 layouts ranked within 60 s on 2048 DGX H100 nodes,
// Llama-3.1-8B, 128K tokens, 4096 sequences per step, on this 2-core machine). A layout counts as
// ranked once it is simulated or a proven lower bound decides it, as in any branch-and-bound search.
#include "plan.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <limits>
#include <thread>

namespace {

struct Case {
  const char* name;
  int nodes;
  long seq, global_batch;
  double budget_s;  // stop after this much search (0: search to the end)
  bool target;      // the target case: >= 500 layouts ranked (simulated or decided by a bound) within 60 s
};

const Case cases[] = {
    {"32 GPUs, 32K, 64 sequences", 4, 32768, 64, 0, false},
    {"2048 GPUs, 128K, 512 sequences", 256, 131072, 512, 60, false},
    // To the end: the whole question, every layout decided.
    {"16,384 GPUs, 128K, 4096 sequences (target)", 2048, 131072, 4096, 0, true},
};

struct Stop {};

}  // namespace

int main(int argc, char** argv) {
  const char* only = argc > 1 ? argv[1] : nullptr;
  std::printf("# basp plan bench: dgx-h100, llama-3.1-8b, all six strategies, %u threads\n",
              std::thread::hardware_concurrency());
  std::printf("# wall: setup, enumeration and search; a budget (60 s) stops the search after the batch that\n"
              "# crosses it ('-': the layouts were not all counted then; 'fit': layouts that fit in memory);\n"
              "# estimate/engine: the simulation memory estimate over the engine's peak, least and most\n#\n");
  std::printf("# %-44s %9s %9s %9s %9s %9s %9s %10s %15s\n", "case", "layouts", "fit", "simulated", "by bound", "wall",
              "per s", "best", "estimate/engine");
  for (const Case& c : cases) {
    if (only && !std::strstr(c.name, only)) continue;
    basp::PlanQuestion q;
    q.job.topology = "dgx-h100";
    q.job.overrides.nodes = c.nodes;
    q.job.model = "llama-3.1-8b";
    q.job.seq = c.seq;
    q.global_batch = c.global_batch;
    const auto t0 = std::chrono::steady_clock::now();
    basp::PlanProgress last;
    if (c.budget_s > 0)
      q.progress = [&](const basp::PlanProgress& p) {
        last = p;
        if (std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() > c.budget_s) throw Stop{};
      };
    std::size_t layouts = 0, fit = 0, simulated = 0, by_bound = 0;
    double best = 0, least_ratio = std::numeric_limits<double>::infinity(), most_ratio = 0;
    try {
      const basp::PlanReport r = basp::plan(q);
      layouts = r.enumerated;
      simulated = r.plans.size();
      fit = simulated;
      for (const auto& [why, n] : r.pruned)
        if (why.find("bound") != std::string::npos || why.find("cannot beat") != std::string::npos) {
          by_bound += n;
          fit += n;
        }
      best = r.plans.front().global_batch_s;
      for (const basp::Plan& p : r.plans) {
        if (p.shared_simulation || !(p.result.engine_bytes > 0)) continue;
        const double ratio = p.candidate.simulation_bytes / p.result.engine_bytes;
        least_ratio = std::min(least_ratio, ratio);
        most_ratio = std::max(most_ratio, ratio);
      }
    } catch (const Stop&) {
      simulated = last.simulated;
      fit = last.total;
      by_bound = last.decided - last.simulated;  // decided so far: simulated or left out by the bound
      best = last.best_s;
    }
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const std::string shown_layouts = layouts ? std::to_string(layouts) : "-";
    char ratios[32] = "-";
    if (most_ratio > 0) std::snprintf(ratios, sizeof ratios, "%.2f-%.2f", least_ratio, most_ratio);
    std::printf("  %-44s %9s %9zu %9zu %9zu %9.1f %9.2f %9.3fs %15s%s\n", c.name, shown_layouts.c_str(), fit, simulated,
                by_bound, wall, simulated / wall, best, ratios,
                c.target ? (simulated + by_bound >= 500 && wall <= 60 ? "  >= 500 ranked in 60 s: met"
                                                                      : "  >= 500 ranked in 60 s: MISSED")
                         : "");
    std::fflush(stdout);
  }
}
