// ZeRO's plan from a job's configuration, and the shard and replica groups its calls run on.
// DeepSpeed's defaults and what each setting does: docs/cost-model.md.
#include "zero_plan.hpp"

namespace basp {

ZeroPlan zero_plan(const StepConfig& c) {
  const bool overlap = c.zero_overlap_comm == OverlapComm::deepspeed_default ? c.zero == 3
                                                                            : c.zero_overlap_comm == OverlapComm::on;
  return {c.zero, c.zero_group, c.zero_reduce_bucket, c.zero_persistence, c.zero_prefetch, c.zero_max_live,
          c.zero_reuse_distance, overlap};
}

std::optional<ZeroPlan> accumulating_zero(const ZeroPlan& zero, long accumulation) {
  if (zero.stage > 1 || accumulation <= 1) return std::nullopt;
  ZeroPlan local = zero;
  local.reduce_gradients = false;
  return local;
}

ZeroGroups zero_groups(int ranks, const ZeroPlan& z) {
  ZeroGroups out;
  for (int g = 0; g < ranks / z.shard_ranks; ++g) {
    out.shard.emplace_back();
    for (int i = 0; i < z.shard_ranks; ++i) out.shard.back().push_back(g * z.shard_ranks + i);
  }
  for (int i = 0; i < z.shard_ranks && ranks > z.shard_ranks; ++i) {
    out.replica.emplace_back();
    for (int g = 0; g < ranks / z.shard_ranks; ++g) out.replica.back().push_back(g * z.shard_ranks + i);
  }
  return out;
}

}  // namespace basp
