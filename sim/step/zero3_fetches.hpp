// DeepSpeed's ZeRO-3 parameter coordinator replayed over a step's trace of weight uses: which
// units each use gathers (its own, then a prefetch) given DeepSpeed's prefetch and reuse limits.
#pragma once

#include <cstddef>
#include <vector>

namespace basp {

struct WeightUse {
  std::size_t unit;  // what it uses: an index into the units' sizes
  int hooks;         // DeepSpeed module hooks at this use, each of which may prefetch a bucket
};

struct UseGathers {
  bool own = false;  // its unit was not resident: gathered first, on its own
  // Then what each of its hooks prefetches, one all-gather per hook that finds something to
  // gather (DeepSpeed's fetch_sub_module issues one per hook), in hook order.
  std::vector<std::vector<std::size_t>> prefetches;
};

struct FetchLimits {      // in elements (DeepSpeed's defaults: StepConfig's)
  double prefetch_bucket;  // stage3_prefetch_bucket_size: per hook
  double max_live;         // stage3_max_live_parameters
  double reuse_distance;   // stage3_max_reuse_distance
};

struct FetchDecisions {
  std::vector<UseGathers> uses;  // per use of the trace
  double peak_live = 0;          // the most elements gathered at once (what the memory model bounds)
};

// The decisions depend on the trace and the sizes only, not on timing (docs/cost-model.md).
FetchDecisions coordinate_fetches(const std::vector<WeightUse>& trace, const std::vector<double>& unit_elements,
                                  const FetchLimits& limits);

}  // namespace basp
