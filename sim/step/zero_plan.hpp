// ZeRO as DeepSpeed runs it, for one job: the stage, the shard group and DeepSpeed's bucket and
// prefetch settings (ZeroPlan), and the groups its collectives run on (ZeroGroups).
#pragma once

#include "step_config.hpp"

#include <optional>
#include <vector>

namespace basp {

struct ZeroPlan {
  int stage = 3;
  int shard_ranks = 1;  // M: ranks one shard group spans (contiguous); G/M replicas all-reduce
  // ZeRO-3 as DeepSpeed runs it, with DeepSpeed's defaults (docs/cost-model.md): gradients are
  // reduce-scattered a bucket of this many elements at a time, tensors of fewer elements than the
  // persistence threshold stay whole on every rank (never gathered), each module hook may prefetch
  // the prefetch bucket's elements while fewer than max_live are gathered, and gathered weights
  // used again within the reuse distance (in elements of the weights used in between) are kept.
  double reduce_bucket_elements = 5e8;
  double persistence_threshold = 1e5;
  double prefetch_elements = 5e7;
  double max_live_elements = 1e9;
  double reuse_distance_elements = 1e9;
  // DeepSpeed's overlap_comm: gradient reductions on a stream of their own, beside backward's
  // compute, or on the compute stream, which waits for them. Its default: on for ZeRO-3 only
  // (ZeRO-0 has no such setting: it reduces on the compute stream).
  bool overlap_comm = true;
  // False for a micro-step that only accumulates under ZeRO-0/1: DeepSpeed keeps those gradients
  // on each rank and reduces them at the accumulation boundary only (engine.allreduce_gradients),
  // so the micro-step makes no reduction, runs no optimizer step and gathers no weights.
  bool reduce_gradients = true;
};

// DeepSpeed's ZeRO-0 all-reduces gradients in buffers of this many elements (engine.py,
// allreduce_gradients' MEMORY_OPT_ALLREDUCE_SIZE), not of reduce_bucket_size.
inline constexpr double zero0_allreduce_bucket_elements = 5e8;

// The ZeRO plan a configuration asks for (stage, shard group, DeepSpeed's bucket and threshold).
ZeroPlan zero_plan(const StepConfig& config);

// The plan of the micro-steps before the accumulation boundary where they are a graph of their
// own: under ZeRO-0/1 they reduce nothing (ZeroPlan::reduce_gradients); none otherwise.
std::optional<ZeroPlan> accumulating_zero(const ZeroPlan& zero, long accumulation);

// ZeRO's groups: shards of M contiguous ranks; replicas (rank i of every shard) when M < ranks.
struct ZeroGroups {
  std::vector<std::vector<int>> shard, replica;
};
ZeroGroups zero_groups(int ranks, const ZeroPlan& zero);

}  // namespace basp
