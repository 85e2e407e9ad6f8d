// Runs a training step on the full engine and on auto (equitable cells where no translation
// exists) and checks that every reported figure agrees to 1e-9: the cells' exactness contract.
#pragma once

#include "step_run.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <string>

namespace basp::test {

inline bool close(double a, double b) { return std::abs(a - b) <= 1e-9 * std::max({std::abs(a), std::abs(b), 1e-300}); }

// Runs c on the full engine and on auto; every figure must agree. Returns how many strategies ran
// on cells (the others on a translation, or on the full engine where cells merge no rank).
inline int check_cells(StepConfig c, int busiest = 10) {
  StepOptions options;
  options.busiest_links = busiest;
  c.engine = EngineMode::full;
  const StepReport full = simulate_step(c, options);
  c.engine = EngineMode::automatic;
  const StepReport cells = simulate_step(c, options);
  REQUIRE(full.results.size() == cells.results.size());
  int on_cells = 0;
  for (std::size_t i = 0; i < full.results.size(); ++i) {
    const StrategyResult &f = full.results[i], &q = cells.results[i];
    INFO(c.topology << " (" << full.config.gpus << " GPUs; excluded '" << c.overrides.outages.exclude_nodes
                    << "', down '" << c.overrides.outages.down_links << "'), " << to_string(q.strategy) << ", sp " << full.config.sp
                    << ", zero " << c.zero << " over " << full.config.zero_group
                    << (c.placement == Placement::strided ? ", strided" : "") << ": " << q.engine.why);
    on_cells += q.engine.engine == "classes" && q.engine.why.find("equitable cells") != std::string::npos;
    CHECK(f.engine.engine == "full");
    CHECK(q.layers_simulated == f.layers_simulated);
    for (auto [a, b] : {std::pair{q.step_s, f.step_s}, {q.compute_s, f.compute_s}, {q.a2a_s, f.a2a_s},
                        {q.a2a_exposed_s, f.a2a_exposed_s}, {q.a2a_wait_s, f.a2a_wait_s},
                        {q.zero_comm_s, f.zero_comm_s}, {q.zero_exposed_s, f.zero_exposed_s},
                        {q.tokens_per_s, f.tokens_per_s}, {q.mfu, f.mfu}, {q.accumulation_step_s, f.accumulation_step_s},
                        {q.global_batch_s, f.global_batch_s}})
      CHECK(close(a, b));
    REQUIRE(q.speedup_vs_ulysses.has_value() == f.speedup_vs_ulysses.has_value());
    if (f.speedup_vs_ulysses) CHECK(close(*q.speedup_vs_ulysses, *f.speedup_vs_ulysses));
    for (LinkClass cls : link_classes) CHECK(close(q.class_bytes[cls], f.class_bytes[cls]));
    REQUIRE(q.busiest_links.size() == f.busiest_links.size());
    for (std::size_t k = 0; k < f.busiest_links.size(); ++k) {
      CHECK(close(q.busiest_links[k].bytes, f.busiest_links[k].bytes));
      CHECK(close(q.busiest_links[k].utilization, f.busiest_links[k].utilization));
      CHECK(q.busiest_links[k].cls == f.busiest_links[k].cls);
    }
    CHECK(q.stats.flows == f.stats.flows);
    CHECK(q.stats.events == f.stats.events);
    CHECK(q.stats.batches == f.stats.batches);
    CHECK(q.stats.solves == f.stats.solves);
    CHECK(q.stats.refilled == f.stats.refilled);
  }
  return on_cells;
}

inline StepConfig job(std::string topology, TopologyOverrides overrides, int sp) {
  StepConfig c;
  c.topology = std::move(topology);
  c.overrides = overrides;
  c.seq = 8192;
  c.sp = sp;
  c.batch = 4;
  c.replica_batch = 2;
  c.strategies = {Strategy::ulysses, Strategy::basp, Strategy::sp_dp, Strategy::ring, Strategy::usp};
  return c;
}

}  // namespace basp::test
