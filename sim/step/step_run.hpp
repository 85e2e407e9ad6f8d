// Simulates a training step under each requested strategy on one network and derives what the
// report shows: step time, compute, all-to-all time and share (docs/design.md, "Definitions"), ZeRO traffic,
// memory, throughput, MFU and the speedup over Ulysses.
#pragma once

#include "calibration.hpp"
#include "cluster_part.hpp"
#include "collective_bounds.hpp"
#include "engine.hpp"
#include "gpu_kind.hpp"
#include "memory_model.hpp"
#include "model.hpp"
#include "rank_fold.hpp"
#include "routing.hpp"
#include "step_config.hpp"
#include "step_figures.hpp"
#include "strategy.hpp"
#include "topology.hpp"

#include <array>
#include <cstdint>
#include <deque>
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
  // fewer than the model's): busiest links by bytes, most first; bytes per LinkClass.
  std::vector<LinkUse> busiest_links;
  std::array<double, 5> class_bytes{};
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

// 3/4 of this machine's physical memory, or of the memory cgroup's limit where that is lower
// (containers): room for the process, the topology and the page cache besides the engines
// (8 GiB where the system does not say).
double host_memory_budget_bytes();
// A memory cgroup's limit from its v2 `memory.max` file, else its v1 `memory.limit_in_bytes`
// file (the first that can be read); none when unlimited or unreadable.
std::optional<double> cgroup_memory_limit_bytes(const std::string& v2_max, const std::string& v1_limit);

// The ZeRO plan a configuration asks for (stage, shard group, DeepSpeed's bucket and threshold).
ZeroPlan zero_plan(const StepConfig& c);

// Throws InputError for bad input (exit 2).
StepReport simulate_step(const StepConfig& config, const StepOptions& options = {});

// The cluster (built and calibrated), model and GPU of a config, loaded once for many layouts
// (basp plan): simulate_step loads them per call. `report` has no results and unresolved sizes.
struct StepSetup {
  StepReport report;
  const GpuKind* gpu = nullptr;
};
StepSetup prepare_step(const StepConfig& config);
// The job's sizes resolved (GPUs, SP degree, ZeRO group; 0: their defaults) and checked against
// the topology: what every strategy of `config` shares. Throws InputError (exit 2).
void resolve_job(StepConfig& config, const StepReport& cluster);
void resolve_job(StepConfig& config, int available_gpus, const std::string& topology);
// What runs on one cluster keep from one layout to the next (one per thread): the node moves
// choose_fold derived, the folds of the latest traffic patterns (matched exactly) with the call
// bounds worked out on them, and the routes found. None of it changes a result: each is what
// would be derived again.
class RunCache {
 public:
  MoveCache moves, skeleton_moves;
  // What one strategy runs on: the whole topology, or a part of a template (its ranks the
  // cluster's), and the fold on its links.
  struct Network {
    const Topology& topo;
    const FoldChoice& choice;
    CallBounds& bounds;  // the calls' bounds worked out on this fold so far (step_lower_bound_s)
  };
  // The network and fold for a traffic pattern, valid until the next call. `parts`: a template
  // with a skeleton runs on a part where the class engine applies; a part built for an earlier
  // pattern is reused when it holds the nodes this one needs (routes found on it stay).
  Network network(EngineMode mode, const ClusterBuilds& cluster, int ranks, std::span<const TrafficGroups> traffic,
                  bool parts);
  Router& router(const Topology& topo);
  // The period of the finest translation of the cluster that keeps the topology and one call's
  // traffic alone (choose_fold on that traffic; `ranks` when there is none): ranks r and
  // r mod period then have the same call bounds. A step's fold keeps all its calls' traffic, so
  // this is often finer (strided groups rotate within their SP group; ZeRO's rings shift).
  int call_period(EngineMode mode, const ClusterBuilds& cluster, int ranks, const TrafficGroups& traffic, bool parts);
  // false: step_lower_bound_s works out every rank class's lines itself (tests compare the two).
  bool call_periods = true;

 private:
  // The router of the topology last routed on that is not a kept part (the whole topology, or a
  // part only a pattern still holds, kept alive with it).
  std::shared_ptr<const Topology> routed_part_;
  const Topology* routed_ = nullptr;
  std::unique_ptr<Router> router_;
  struct Part {
    std::shared_ptr<const Topology> topo;
    std::vector<int> nodes;
    std::unique_ptr<Router> router;  // made when first asked for
    std::shared_ptr<TransferLineStore> lines = std::make_shared<TransferLineStore>();  // its patterns' calls
  };
  std::shared_ptr<TransferLineStore> whole_lines_;  // the calls of patterns on the whole topology
  std::deque<Part> parts_;  // most recent first
  std::shared_ptr<const Topology> part_holding(const ClusterBuilds& cluster, const std::vector<int>& nodes);
  struct Pattern {
    EngineMode mode;
    int ranks;
    bool parts;
    std::vector<std::pair<GroupTraffic, std::vector<std::vector<int>>>> traffic;
    std::shared_ptr<const Topology> part;  // null: the whole topology
    FoldChoice choice;
    std::unique_ptr<CallBounds> bounds;
    std::size_t bytes() const;  // host memory held, roughly
  };
  const ClusterBuilds* cluster_ = nullptr;
  std::deque<Pattern> patterns_;  // most recent first
  struct CallPeriod {
    EngineMode mode;
    int ranks;
    bool parts;
    GroupTraffic traffic;
    std::vector<std::vector<int>> groups;
    int period;
  };
  std::deque<CallPeriod> call_periods_;  // most recent first, 64 kept
  const ClusterBuilds* periods_cluster_ = nullptr;  // the cluster they belong to
};

// One strategy of `config` (whose topology, model and calibration must be the setup's) exactly
// as simulate_step runs it, without the Ulysses baseline. Thread-safe for distinct caches.
StrategyResult simulate_strategy(const StepSetup& setup, const StepConfig& config, Strategy strategy,
                                 RunCache& cache);
// What no simulation of that strategy's whole step (global_batch_s: all its micro-steps) can
// beat: the step graph with every call replaced by its per-rank bound (collective_bounds.hpp), a
// critical path over all layers, to the optimizer for the micro-steps that accumulate. (A
// simulation that builds a window of layers extrapolates the rest: its step may differ from the
// whole step's by that extrapolation's error.)
double step_lower_bound_s(const StepSetup& setup, const StepConfig& config, Strategy strategy, RunCache& cache);
// Equal for layouts on the same traffic pattern (the groups of their calls), which share a
// RunCache's fold and call bounds: basp plan works out such layouts' bounds on one thread.
std::uint64_t traffic_pattern_hash(const StepSetup& setup, const StepConfig& config, Strategy strategy);
// An estimate of the host memory simulate_strategy's engine will hold for that layout (a test
// holds it above Engine::memory_bytes after the run; transient copies while arrays grow are not
// seen there): what basp plan schedules and refuses simulations by.
double simulation_memory_bytes(const StepSetup& setup, const StepConfig& config, Strategy strategy,
                               RunCache& cache);
// The same under a calibration given as values (a fit trying parameters), not named by the config.
StepReport simulate_step(const StepConfig& config, const Calibration& calibration,
                         const StepOptions& options = {});

}  // namespace basp
