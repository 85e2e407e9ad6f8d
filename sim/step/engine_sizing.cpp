// The engine's host memory estimated from a layout and its fold (fitted to Engine::memory_bytes),
// the room reserved by it, and the machine's budget that refusals and the planner go by.
#include "engine_sizing.hpp"

#include "input_error.hpp"
#include "step_costs.hpp"
#include "units.hpp"
#include "zero3_trace.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <unistd.h>

namespace basp {

EngineEstimate engine_estimate(const JobRun& run, const StrategyGraph& g, int layers_built) {
  const RankFold& fold = g.choice().fold;
  const Layout& l = g.layout;
  const double layers = layers_built > 0 ? layers_built : layers_to_simulate(run, l, fold);
  const double others = 3;  // embedding, head, optimizer
  // Flows per layer of the quotient: the exchanges', and the ZeRO calls' NCCL ring edges (a rank's
  // successor in the channel that enters its node plus one edge out of the node per channel: at
  // most 2 per rank per call); the other modules make ZeRO calls only.
  const auto [a2a, ring] = exchange_flows_per_layer(l, run.config.checkpointing);
  const int gathers = run.zero.stage == 3 ? zero3_gathers_per_layer(run.config.checkpointing) : 0;
  const int calls = gathers + 1 + (run.zero.stage > 0 && !g.groups.replica.empty() ? 1 : 0);
  const double zero = 2.0 * calls * l.ranks;
  // 200 B per all-to-all or ZeRO flow built (its task, dependencies and successors, as reserved),
  // 400 per ring send (each behind a chain of compute blocks), compute tasks per class and module
  // on top: fitted to Engine::memory_bytes, the engine's peak, over the test suite's simulations
  // and the 549 of the 2048-node question's top 500, which it exceeds by 1.19-1.64x (bench/README.md).
  const double m = fold.members();
  const double flows = (layers * (a2a + zero + ring) + others * zero) / m;
  const double bytes = (layers * (200 * (a2a + zero) + 400 * ring) + others * 200 * zero) / m +
                       (layers + others) * 3072.0 * fold.classes();
  const int links = fold.folded() ? fold.link_classes() : g.net.topo.link_count();
  // Measured over a 2048-GPU plan's layouts: 1.12 tasks per all-to-all or ZeRO flow (the calls'
  // entry and exit tasks), up to 4.5 per ring send (its blocks' compute); compute per class.
  const double tasks = (layers * (1.25 * (a2a + zero) + 5 * ring) + others * 1.25 * zero) / m +
                       (layers + others) * 32.0 * fold.classes();
  return {flows, tasks, bytes + 64.0 * links};
}

Engine sized_engine(const JobRun& run, const StrategyGraph& g, int layers) {
  std::vector<double> capacities = link_capacities(g.net.topo);
  for (int l : run.slow_links) capacities[l] /= run.config.stragglers.slow_link_factor;
  Engine engine = g.choice().fold.quotient_engine(capacities);
  // Room for the estimated graph up front: grown by doubling, the arrays were copied into fresh
  // pages whose zeroing by the kernel took a third of a 16,384-GPU step's wall (bench/README.md).
  // Dependencies: 4 per flow (both sides' calls), 2 per other task. Not the hops: a call's
  // repeats share its first two calls' stored paths, so they grow with the distinct calls, not
  // the flows (each all-to-all's first call reserves its own, add_collectives).
  const EngineEstimate expected = engine_estimate(run, g, layers);
  engine.reserve(std::size_t(expected.tasks), std::size_t(expected.flows), 0,
                 std::size_t(4 * expected.flows + 2 * expected.tasks));
  // No room for the flows transferring at once: a step's calls take turns, so they are a few
  // percent of its flows (at most 254 K of 10.5 M on 2048 nodes of strided BASP, an eighth of a
  // layer's), and those arrays grow by doubling.
  engine.expect_concurrent_flows(0);
  return engine;
}

namespace {

// What would bring a refused run under the budget, offering only what applies to it: classes where
// the full engine ran by request (where auto found none, the reason why instead), a smaller layer
// window where more than the smallest (5) is built.
std::string memory_advice(const JobRun& run, const StrategyGraph& g) {
  const RankFold& fold = g.choice().fold;
  std::string advice = "use fewer --nodes or --gpus";
  if (!fold.folded()) {
    if (run.speed)
      advice = "the class engine does not apply (stragglers or jitter make the ranks differ); " + advice;
    else if (run.config.engine == EngineMode::full)
      advice += ", --engine auto (alike ranks fold into symmetry classes where the cluster and traffic repeat)";
    else
      advice = "the class engine does not apply (" + g.net.choice.use.why + "); " + advice;
  }
  const int layers = layers_to_simulate(run, g.layout, fold);
  if (layers > 5)
    advice += ", a smaller --layers-simulated (now " + std::to_string(layers) + ", at least 5)";
  return advice + ", or raise --sim-memory";
}

}  // namespace

void check_host_memory(const JobRun& run, Strategy strategy, double budget_bytes) {
  StrategyGraph g = strategy_graph(run, strategy);
  // The engine the run will build: on cells where no translation exists (the run finds them kept).
  if (may_use_cells(run, g)) use_cells(run, g, true);
  const EngineEstimate e = engine_estimate(run, g);
  if (e.bytes <= budget_bytes) return;
  const RankFold& fold = g.choice().fold;
  char flows[32];
  std::snprintf(flows, sizeof flows, "%.3g", e.flows);
  const std::string engine = fold.folded() ? "the class engine (" + std::to_string(fold.classes()) + " classes of " +
                                                 std::to_string(run.config.gpus) + " ranks)"
                                           : "the full engine (all " + std::to_string(run.config.gpus) + " ranks)";
  throw InputError("", 0, "--sim-memory",
                   "simulating " + std::string(to_string(strategy)) + " with " + engine + " would build about " + flows +
                       " flows and hold about " + format_bytes(e.bytes) + " of host memory, more than the " +
                       format_bytes(budget_bytes) + " allowed; " + memory_advice(run, g));
}

double simulation_memory_bytes(const StepSetup& setup, const StepConfig& config, Strategy strategy,
                               RunCache& cache) {
  return with_run(setup, config, cache,
                  [&](const JobRun& run) { return engine_estimate(run, strategy_graph(run, strategy)).bytes; });
}

std::optional<double> cgroup_memory_limit_bytes(const std::string& v2_max, const std::string& v1_limit) {
  for (const std::string& path : {v2_max, v1_limit}) {
    std::ifstream in(path);
    std::string text;
    if (!(in >> text)) continue;
    if (text == "max") return std::nullopt;  // v2: no limit
    char* end = nullptr;
    const double bytes = std::strtod(text.c_str(), &end);
    // v1 writes "no limit" as the largest page-aligned 64-bit value (about 9.2e18).
    if (end != text.c_str() && *end == '\0' && bytes > 0 && bytes < 1e18) return bytes;
    return std::nullopt;
  }
  return std::nullopt;
}

double host_memory_budget_bytes() {
  const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGE_SIZE);
  double bytes = pages > 0 && page > 0 ? double(pages) * double(page) : 8.0 * (1L << 30) / 0.75;  // not reported: 8 GiB
  // In a container the cgroup's limit, not the machine's memory, is what the process may use.
  if (const auto limit = cgroup_memory_limit_bytes("/sys/fs/cgroup/memory.max",
                                                   "/sys/fs/cgroup/memory/memory.limit_in_bytes"))
    bytes = std::min(bytes, *limit);
  return 0.75 * bytes;
}

}  // namespace basp
