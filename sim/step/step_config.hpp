// What `basp simulate` is asked to simulate: cluster, model, shape of the job and the strategies.
// Defaults are the paper's setting (docs/design.md, "Published results"); 0 in a size: derive it.
#pragma once

#include "collectives.hpp"
#include "rank_fold.hpp"
#include "strategy.hpp"
#include "stragglers.hpp"
#include "topology_file.hpp"

#include <array>
#include <string>
#include <string_view>
#include <vector>

namespace basp {

enum class OverlapComm : std::uint8_t { deepspeed_default, on, off };

struct StepConfig {
  std::string topology = "paper-a100-2x4";
  TopologyOverrides overrides;
  std::string model = "llama-3.2-1b";
  long seq = 16384;        // tokens per sequence
  int batch = 2;           // micro-batch: sequences per SP group (BASP's B)
  int sp = 0;              // SP group size N; 0: every GPU of the job
  int gpus = 0;            // GPUs of the job G = DP × N; 0: every GPU of the topology
  std::vector<Strategy> strategies = {Strategy::ulysses, Strategy::basp};
  Placement placement = Placement::contiguous;  // BASP groups inside an SP group
  int zero = 3;            // ZeRO stage 0..3
  int zero_group = 0;      // ranks a ZeRO shard spans (hpZ / HSDP); 0: all G ranks
  // ZeRO as DeepSpeed runs it (docs/cost-model.md): gradients reduce-scattered a bucket of this
  // many elements at a time (reduce_bucket_size, stages 1-3; 0: every module's at once); ZeRO-3's
  // tensors under the
  // persistence threshold (stage3_param_persistence_threshold) kept whole, never gathered, weights
  // prefetched (stage3_prefetch_bucket_size per hook call, stage3_max_live_parameters in all) and
  // kept while used again soon (stage3_max_reuse_distance).
  double zero_reduce_bucket = 5e8;
  double zero_persistence = 1e5;
  double zero_prefetch = 5e7;
  double zero_max_live = 1e9;
  double zero_reuse_distance = 1e9;
  // DeepSpeed's overlap_comm (stages 1-3): gradient reductions on a stream of their own (on) or on
  // the compute stream (off); its default is on for ZeRO-3 only (docs/cost-model.md).
  OverlapComm zero_overlap_comm = OverlapComm::deepspeed_default;
  bool checkpointing = false;  // full activation checkpointing: recompute each layer's forward
  std::string calibration;     // "": the topology's own; "none": documented defaults
  int replica_batch = 1;       // sp-dp: sequences per replica (B gives the paper's foil)
  int ulysses_degree = 0;      // usp: Ulysses degree U (ring degree N/U); 0: GPUs per node
  // Micro-steps per optimizer step: each but the last ends once its gradients are reduced (ZeRO-2/3)
  // or its backward ends (ZeRO-0/1 reduce at the boundary only), the last runs the optimizer
  // (docs/cost-model.md, "Gradient accumulation").
  long accumulation = 1;
  // Transformer layers built into the graph. 0: all of them while the graph stays under
  // `flow_budget` flows, else the smallest window that does (at least 5): its middle layer then
  // stands for the layers left out (docs/cost-model.md, "Large jobs").
  int layers_simulated = 0;
  double flow_budget = 12e6;  // flows built per strategy (of the quotient, with symmetry classes)
  EngineMode engine = EngineMode::automatic;  // symmetry classes when exact (docs/symmetry.md)
  // Template clusters of at least this many GPUs run the class engine on parts of them, never
  // built whole (docs/symmetry.md, "Skeletons and parts"); smaller ones are built whole, which is
  // cheaper there: one topology and its routes serve every strategy and layout. Results are the
  // same either way (tests run both); tests lower it to exercise parts on small clusters.
  int parts_from_gpus = 65536;
  // Slow GPUs, slow links and compute jitter (docs/cost-model.md): ranks differ, the full engine runs.
  Stragglers stragglers;
};

// DeepSpeed's ZeRO settings above, one row each: the flag that sets it (simulate, sweep, plan),
// its key in JSON reports, what it does, and the lowest stage it applies to. Flags, checks and
// reports all go through this table.
struct ZeroSetting {
  std::string_view flag, json, help;
  double StepConfig::*field;
  int first_stage;
};
inline constexpr std::array<ZeroSetting, 5> zero_settings{{
    {"--zero-bucket", "zero_reduce_bucket_elements",
     "gradient elements reduce-scattered at a time, stages 1-3 (DeepSpeed's reduce_bucket_size; 0 = every "
     "module's gradients at once)",
     &StepConfig::zero_reduce_bucket, 1},
    {"--zero-persistence", "zero_persistence_threshold_elements",
     "tensors of fewer elements stay whole on every rank, never gathered (DeepSpeed's "
     "stage3_param_persistence_threshold)",
     &StepConfig::zero_persistence, 3},
    {"--zero-prefetch", "zero_prefetch_elements",
     "weight elements each module hook may prefetch (DeepSpeed's stage3_prefetch_bucket_size; 0 = none: each "
     "weight gathered at its use)",
     &StepConfig::zero_prefetch, 3},
    {"--zero-max-live", "zero_max_live_elements",
     "prefetching stops while this many gathered weight elements are held (DeepSpeed's stage3_max_live_parameters)",
     &StepConfig::zero_max_live, 3},
    {"--zero-reuse-distance", "zero_reuse_distance_elements",
     "gathered weights used again within this many elements of other weights are kept (DeepSpeed's "
     "stage3_max_reuse_distance)",
     &StepConfig::zero_reuse_distance, 3},
}};

}  // namespace basp
