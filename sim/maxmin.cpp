// Progressive filling over a CSR link -> flows index rebuilt per solve (O(incidences)); each round
// scans only the links some flow crosses. Ties within 1e-9 relative saturate in the same round.
#include "maxmin.hpp"

#include <algorithm>
#include <limits>

namespace basp {

MaxMinSolver::MaxMinSolver(std::size_t links)
    : remaining_(links, 0.0), weight_(links, 0.0), unfrozen_(links, 0), begin_(links, 0), end_(links, 0) {}

void MaxMinSolver::solve(std::span<const double> capacity, std::span<const Hop> hops,
                         std::span<const FlowPath> flows, std::span<double> rates) {
  rounds_ = 0;
  for (std::uint32_t l : touched_) {  // reset only what the last solve touched
    weight_[l] = 0.0;
    unfrozen_[l] = 0;
  }
  touched_.clear();
  for (const FlowPath& f : flows)
    for (std::uint32_t h = f.hop_begin; h < f.hop_begin + f.hop_count; ++h) {
      const auto l = static_cast<std::uint32_t>(hops[h].link);
      if (unfrozen_[l]++ == 0) touched_.push_back(l);
      weight_[l] += double(f.multiplicity) * hops[h].share;
    }
  std::uint32_t offset = 0;
  for (std::uint32_t l : touched_) {
    begin_[l] = end_[l] = offset;
    offset += unfrozen_[l];
    remaining_[l] = capacity[l];
  }
  flows_on_.resize(offset);
  for (std::uint32_t i = 0; i < flows.size(); ++i)
    for (std::uint32_t h = flows[i].hop_begin; h < flows[i].hop_begin + flows[i].hop_count; ++h)
      flows_on_[end_[hops[h].link]++] = i;

  frozen_.assign(flows.size(), 0);
  std::size_t left = flows.size();
  while (left > 0) {
    ++rounds_;
    double level = std::numeric_limits<double>::infinity();
    for (std::uint32_t l : touched_)
      if (unfrozen_[l] > 0) level = std::min(level, std::max(0.0, remaining_[l]) / weight_[l]);
    const double cut = level * (1.0 + 1e-9);
    saturated_.clear();
    for (std::uint32_t l : touched_)
      if (unfrozen_[l] > 0 && std::max(0.0, remaining_[l]) / weight_[l] <= cut) saturated_.push_back(l);
    for (std::uint32_t l : saturated_) {
      for (std::uint32_t k = begin_[l]; k < end_[l]; ++k) {
        const std::uint32_t i = flows_on_[k];
        if (frozen_[i]) continue;
        frozen_[i] = 1;
        --left;
        rates[i] = level;
        const FlowPath& f = flows[i];
        for (std::uint32_t h = f.hop_begin; h < f.hop_begin + f.hop_count; ++h) {
          const auto m = static_cast<std::uint32_t>(hops[h].link);
          const double use = double(f.multiplicity) * hops[h].share;
          remaining_[m] -= level * use;
          weight_[m] -= use;
          --unfrozen_[m];
        }
      }
    }
  }
}

}  // namespace basp
