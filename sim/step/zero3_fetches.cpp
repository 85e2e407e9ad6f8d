// DeepSpeed's PartitionedParameterCoordinator (fetch_sub_module, release_sub_module) at the step
// graph's granularity: gather what is missing, prefetch by hooks within the live limit, release.
#include "zero3_fetches.hpp"

#include <algorithm>

namespace basp {

FetchDecisions coordinate_fetches(const std::vector<WeightUse>& trace, const std::vector<double>& unit_elements,
                                  const FetchLimits& limits) {
  FetchDecisions decisions;
  std::vector<UseGathers>& out = decisions.uses;
  out.resize(trace.size());
  std::vector<char> resident(unit_elements.size(), 0);
  std::vector<std::size_t> held_until(unit_elements.size(), 0);  // a use the prefetcher passed while resident
  double live = 0;            // elements gathered and not released
  std::size_t prefetched = 0;  // the first use the prefetcher has not passed
  auto gathered = [&](std::size_t u) {
    resident[u] = 1;
    live += unit_elements[u];
    decisions.peak_live = std::max(decisions.peak_live, live);
  };
  // After a use: release its unit unless the trace uses it again within the reuse distance, or
  // the prefetcher passed its next use while it was resident.
  auto release_after = [&](std::size_t use) {
    const std::size_t u = trace[use].unit;
    if (!resident[u] || held_until[u] > use) return;
    double between = 0;
    for (std::size_t k = use + 1; k < trace.size() && between < limits.reuse_distance; ++k) {
      if (trace[k].unit == u) return;
      between += unit_elements[trace[k].unit];
    }
    resident[u] = 0;
    live -= unit_elements[u];
  };
  for (std::size_t use = 0; use < trace.size(); ++use) {
    if (use > 0) release_after(use - 1);
    const std::size_t u = trace[use].unit;
    if (!resident[u]) {
      out[use].own = true;
      gathered(u);
    }
    prefetched = std::max(prefetched, use + 1);
    // Each hook pops uses until it has a bucket or the live limit is reached, checked as it
    // pops, so each hook's last unit may pass it, as DeepSpeed's does; the next hook sees what
    // the previous ones gathered.
    for (int hook = 0; hook < trace[use].hooks; ++hook) {
      const double allowed = std::min(limits.max_live - live, limits.prefetch_bucket);
      double prefetching = 0;
      std::vector<std::size_t> prefetch;
      while (prefetched < trace.size() && prefetching < allowed) {
        const std::size_t k = prefetched++;
        const std::size_t next = trace[k].unit;
        held_until[next] = std::max(held_until[next], k);  // DeepSpeed marks every use it pops
        if (!resident[next]) {
          prefetch.push_back(next);
          prefetching += unit_elements[next];
          gathered(next);
        }
      }
      if (!prefetch.empty()) out[use].prefetches.push_back(std::move(prefetch));
    }
  }
  return decisions;
}

}  // namespace basp
