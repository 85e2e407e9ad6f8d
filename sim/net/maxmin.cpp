// Progressive filling over a CSR link -> flows index rebuilt per solve (O(incidences)); each round
// scans only the links some flow crosses. Ties within 1e-9 relative saturate in the same round.
#include "maxmin.hpp"

#include <algorithm>
#include <functional>
#include <limits>
#include <stdexcept>

namespace basp {
namespace {
constexpr double tie = 1e-9;  // relative: levels this close saturate together
}

MaxMinSolver::MaxMinSolver(std::size_t links)
    : links_(links) {}

double MaxMinSolver::key(std::uint32_t l) const {
  if (!unbinding_.empty() && unbinding_[l]) return std::numeric_limits<double>::infinity();
  return std::max(0.0, links_[l].remaining) / links_[l].weight;
}

void MaxMinSolver::solve(std::span<const double> capacity, std::span<const Hop> hops,
                         std::span<const FlowPath> flows, std::span<double> rates) {
  refill_.resize(flows.size());
  for (std::uint32_t i = 0; i < flows.size(); ++i) refill_[i] = i;
  touched_.clear();
  for (const FlowPath& f : flows)
    for (std::uint32_t h = f.hop_begin; h < f.hop_begin + f.hop_count; ++h) {
      const auto l = static_cast<std::uint32_t>(hops[h].link);
      const double use = double(f.multiplicity) * hops[h].share;
      if (links_[l].unfrozen++ == 0) {
        touched_.push_back(l);
        links_[l].remaining = capacity[l];
        links_[l].weight = use;
      } else {
        links_[l].weight += use;
      }
    }
  fill(capacity, hops, flows, rates);
}

void MaxMinSolver::reserve(std::size_t flows, std::size_t crossings) {
  flows_on_.reserve(crossings);
  refill_.reserve(flows);
  frozen_.reserve(flows);
}

std::size_t MaxMinSolver::memory_bytes() const {
  return capacity_bytes(links_, flows_on_, touched_, scan_, scan_key_, heap_, frozen_, saturated_, refill_);
}

void MaxMinSolver::remove(std::span<const Hop> hops, const FlowPath& f, double rate) {
  for (std::uint32_t h = f.hop_begin; h < f.hop_begin + f.hop_count; ++h)
    links_[hops[h].link].load -= rate * double(f.multiplicity) * hops[h].share;
}

void MaxMinSolver::solve_from(double level, std::span<const double> capacity, std::span<const Hop> hops,
                              std::span<const FlowPath> flows, std::span<double> rates) {
  // Flows at or above `level` are taken out of the link loads and filled again; the rest stay.
  refill_.clear();
  const double keep_below = level * (1.0 - tie);
  for (std::uint32_t i = 0; i < flows.size(); ++i)
    if (rates[i] >= keep_below) refill_.push_back(i);
  touched_.clear();
  for (std::uint32_t i : refill_) {
    const FlowPath& f = flows[i];
    for (std::uint32_t h = f.hop_begin; h < f.hop_begin + f.hop_count; ++h) {
      const auto l = static_cast<std::uint32_t>(hops[h].link);
      const double use = double(f.multiplicity) * hops[h].share;
      if (links_[l].unfrozen++ == 0) {
        touched_.push_back(l);
        links_[l].weight = 0.0;
      }
      links_[l].load -= rates[i] * use;
      links_[l].weight += use;
    }
  }
  for (std::uint32_t l : touched_) links_[l].remaining = capacity[l] - links_[l].load;
  fill(capacity, hops, flows, rates);
}

// Every unfrozen flow crossing a link of saturated_ freezes at `level`; returns the flows left.
std::size_t MaxMinSolver::freeze_saturated(double level, std::span<const Hop> hops, std::span<const FlowPath> flows,
                                           std::span<double> rates, std::size_t left) {
  if (saturated_.empty()) throw std::logic_error("max-min: unfrozen flows but no link left to saturate");
  for (std::uint32_t l : saturated_) {
    for (std::uint32_t k = links_[l].begin; k < links_[l].end; ++k) {
      const std::uint32_t i = flows_on_[k];
      if (frozen_[i]) continue;
      frozen_[i] = 1;
      --left;
      rates[i] = level;
      const FlowPath& f = flows[i];
      for (std::uint32_t h = f.hop_begin; h < f.hop_begin + f.hop_count; ++h) {
        const auto m = static_cast<std::uint32_t>(hops[h].link);
        const double use = double(f.multiplicity) * hops[h].share;
        links_[m].remaining -= level * use;
        links_[m].weight -= use;
        --links_[m].unfrozen;
      }
    }
  }
  return left;
}

// Progressive filling of the flows in refill_ over the links in touched_: `remaining` already
// excludes every other flow, `unfrozen` and `weight` count the refilled flows. Leaves each touched
// link's `load` up to date.
void MaxMinSolver::fill(std::span<const double> capacity, std::span<const Hop> hops, std::span<const FlowPath> flows,
                        std::span<double> rates) {
  std::uint32_t offset = 0;
  for (std::uint32_t l : touched_) {
    links_[l].begin = links_[l].end = offset;
    offset += links_[l].unfrozen;
  }
  flows_on_.resize(offset);
  for (std::uint32_t i : refill_)
    for (std::uint32_t h = flows[i].hop_begin; h < flows[i].hop_begin + flows[i].hop_count; ++h)
      flows_on_[links_[hops[h].link].end++] = i;

  if (frozen_.size() < flows.size()) frozen_.resize(flows.size());
  for (std::uint32_t i : refill_) frozen_[i] = 0;
  std::size_t left = refill_.size();
  // Most solves freeze every flow in a round or two (a collective's flows share their levels), so
  // the first rounds find the lowest level by scanning the links still unfrozen, dropping those
  // whose flows have all frozen. A solve that goes on past `scan_rounds` moves to a heap, which
  // keeps the worst case at O(links · log links) where many distinct levels saturate one by one.
  // Both find the same links at the same level each round (the lowest level, and every link
  // within `tie` of it).
  constexpr int scan_rounds = 4;
  scan_.assign(touched_.begin(), touched_.end());
  for (int round = 0; left > 0 && round < scan_rounds; ++round) {
    double level = std::numeric_limits<double>::infinity();
    scan_key_.resize(scan_.size());
    for (std::size_t k = 0; k < scan_.size();) {
      if (links_[scan_[k]].unfrozen == 0) {
        scan_[k] = scan_.back();
        scan_.pop_back();
        continue;
      }
      scan_key_[k] = key(scan_[k]);
      level = std::min(level, scan_key_[k]);
      ++k;
    }
    if (!(level < std::numeric_limits<double>::infinity()))
      throw std::logic_error("max-min: unfrozen flows cross no link that can bind");
    saturated_.clear();
    for (std::size_t k = 0; k < scan_.size(); ++k)
      if (scan_key_[k] <= level * (1.0 + tie)) saturated_.push_back(scan_[k]);
    left = freeze_saturated(level, hops, flows, rates, left);
  }
  if (left > 0) {
    // Saturation levels only rise as flows freeze (a link's level λ' = (r − λu)/(w − u) ≥ r/w
    // when λ ≤ r/w), so a heap of stored levels holds lower bounds: an entry whose level has
    // risen is pushed again when it surfaces, and the top, once current, is the true minimum.
    heap_.clear();
    for (std::uint32_t l : scan_)
      if (links_[l].unfrozen > 0) heap_.push_back({key(l), l});
    std::make_heap(heap_.begin(), heap_.end(), std::greater<>());
  }
  while (left > 0) {
    double level = std::numeric_limits<double>::infinity();
    saturated_.clear();
    while (!heap_.empty()) {
      auto [stored, l] = heap_.front();
      if (stored > level * (1.0 + tie)) break;
      std::pop_heap(heap_.begin(), heap_.end(), std::greater<>());
      heap_.pop_back();
      if (links_[l].unfrozen == 0) continue;  // all its flows froze elsewhere
      const double current = key(l);
      if (saturated_.empty() ? current > stored : current > level * (1.0 + tie)) {
        heap_.push_back({current, l});
        std::push_heap(heap_.begin(), heap_.end(), std::greater<>());
        continue;
      }
      if (saturated_.empty()) level = current;
      saturated_.push_back(l);
    }
    if (!(level < std::numeric_limits<double>::infinity()))
      throw std::logic_error("max-min: unfrozen flows cross no link that can bind");
    left = freeze_saturated(level, hops, flows, rates, left);
  }
  // Every touched link's load is now its capacity less what the fill left over.
  for (std::uint32_t l : touched_) links_[l].load = capacity[l] - links_[l].remaining;
  if (!unbinding_.empty())
    for (std::uint32_t l : touched_)
      if (unbinding_[l] && links_[l].load > capacity[l] * (1.0 - 1e-6)) unbinding_held_ = false;
}

}  // namespace basp
