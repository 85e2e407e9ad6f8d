// Simulates a training step under each requested strategy on one network and derives what the
// report shows: step time, compute, all-to-all time and share (docs/design.md, "Definitions"), ZeRO traffic,
// memory, throughput, MFU and the speedup over Ulysses.
#pragma once

#include "calibration.hpp"
#include "cluster_part.hpp"
#include "engine.hpp"
#include "memory_model.hpp"
#include "model.hpp"
#include "rank_fold.hpp"
#include "step_config.hpp"
#include "step_figures.hpp"
#include "strategy.hpp"
#include "topology.hpp"

#include <array>
#include <functional>
#include <iosfwd>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace basp {

struct StrategyResult {
  Strategy strategy = Strategy::ulysses;
  Layout layout;
  double step_s = 0;          // one micro-step that ends with the optimizer
  // A micro-step that only accumulates: until every rank's gradients are reduced (ZeRO-2/3), or
  // its backward ends (ZeRO-0/1: no reductions before the boundary, a graph simulated on its own).
  double accumulation_step_s = 0;
  // config.accumulation micro-steps, one after another: all but the last accumulate. Throughput
  // and MFU are over it (with accumulation 1 it is step_s).
  double global_batch_s = 0;
  double compute_s = 0;       // per rank, averaged: time its compute stream is busy
  double a2a_s = 0;           // per rank, averaged: time inside the strategy's exchange calls
  double a2a_exposed_s = 0;   // the part of a2a_s not overlapped with the rank's compute
  double a2a_share = 0;       // a2a_s / step_s
  double a2a_wait_s = 0;      // per rank, averaged: of a2a_s, waiting for the group's last member to enter
  double zero_comm_s = 0;     // per rank, averaged: time inside ZeRO calls, summed over calls
  double zero_exposed_s = 0;  // the part overlapped neither with compute nor with the exchanges
  double tokens_per_s = 0;
  double mfu = 0;             // model FLOPs / (step time · peak)
  double model_flops = 0;     // per rank per step
  std::optional<double> speedup_vs_ulysses;
  MemoryBreakdown memory;
  bool fits = true;           // memory.total() within the GPU's HBM
  // Link figures cover the simulated graph (all layers, or the window when layers_simulated is
  // fewer than the model's): busiest links by bytes, most first; bytes per link class.
  std::vector<LinkUse> busiest_links;
  PerLinkClass<double> class_bytes;
  int layers_simulated = 0;   // of the model's layers; the rest extrapolated from the middle one
  EngineUse engine;           // classes or full, and why
  // The engine of the micro-steps before the accumulation boundary where they are a graph of
  // their own (ZeRO-0/1 with accumulation): folded on the exchanges' traffic alone, often into
  // fewer classes than the step's. None otherwise.
  std::optional<EngineUse> accumulating_engine;
  RunStats stats;             // of the whole cluster (a quotient's counts times its class size)
  double wall_s = 0;          // host time to build and simulate
  double engine_bytes = 0;    // host memory the engine's arrays held (Engine::memory_bytes)
};

// Everything that was simulated, defaults resolved.
struct StepReport {
  StepConfig config;   // sp and gpus filled in
  // The cluster, calibrated: a template is built only in the parts a run needs (cluster_part.hpp).
  std::shared_ptr<const ClusterBuilds> cluster;
  // What names and describes it (name, GPUs per node, software costs, links of one node and the
  // fabric): a sample of a template, else the whole topology. Its node and GPU counts are the
  // sample's; the cluster's are gpus() and nodes().
  const Topology& topology() const { return cluster->sample(); }
  int gpus() const { return cluster->gpus(); }
  int nodes() const { return cluster->nodes(); }
  Calibration calibration;
  ModelSpec model;
  std::string gpu_kind;
  std::vector<StrategyResult> results;
  // Strategies asked for that lay out plain data parallelism at the job's N = 1 (every sequence
  // whole on one rank): config.strategies has them once, as dp.
  std::vector<Strategy> as_dp;
  // The Ulysses run made only for the speedup column (Ulysses not among config.strategies, and
  // possible for the job): its engine (and, in its turn, its accumulating graph's). None when
  // there was no such run.
  std::optional<EngineUse> baseline_engine;
  std::optional<EngineUse> baseline_accumulating_engine;
  // Stragglers (config.stragglers): the slow GPUs' ranks and the slow links' names, ascending.
  std::vector<int> slow_gpus;
  std::vector<std::string> slow_links;
};

struct StepOptions {
  int busiest_links = 10;
  std::ostream* trace = nullptr;  // Chrome/Perfetto trace-event JSON goes here when set
  int trace_ranks = 64;           // ranks traced (the first ones); 0: all
  // Called before each strategy's run (and the Ulysses baseline's): its name, runs done, runs in all.
  std::function<void(std::string_view strategy, int done, int total)> progress;
  // Refuse (InputError, before any engine is built) a strategy whose engine would hold more host
  // memory than this, by simulation_memory_bytes' estimate. 0: no limit.
  double memory_budget_bytes = 0;
  // When set, each engine run publishes its progress here (Engine::publish_progress).
  EngineProgress* engine_progress = nullptr;
};

// Throws InputError for bad input (exit 2).
StepReport simulate_step(const StepConfig& config, const StepOptions& options = {});
// The same under a calibration given as values (a fit trying parameters), not named by the config.
StepReport simulate_step(const StepConfig& config, const Calibration& calibration,
                         const StepOptions& options = {});

}  // namespace basp
