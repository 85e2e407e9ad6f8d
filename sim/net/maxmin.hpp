// Max-min fair sharing of directed link capacities among flows, by progressive filling.
//
// Model. Links l with capacity c_l (B/s). Flows f, each standing for m_f identical flows, cross
// links with shares a_fl in (0, 1] (1 on a single path; 1/k per link of k equal-cost paths when
// ECMP splits evenly). Rates r_f must satisfy, for every link,  Σ_f m_f · a_fl · r_f ≤ c_l.
// Max-min fair (unweighted): no r_f can grow without lowering some r_g ≤ r_f.
//
// Progressive filling: all unfrozen flows rise together at level λ. Link l saturates when
// λ = (c_l − load of frozen flows) / Σ_{unfrozen f on l} m_f·a_fl. At the lowest such λ, every
// unfrozen flow crossing a saturated link freezes at λ. Repeat until all flows are frozen.
// This is SimGrid's lmm max-min model with unit weights (its TCP corrections off).
//
// Removing flows never changes the rates of flows frozen below the smallest removed rate r: every
// link of a flow saturates at or above its rate, so below r the removed flows' links were never
// the binding ones. After removals alone the solver therefore keeps those rates and re-fills only
// the flows at or above r (solve_from), which makes the many small completion events cheap.
//
// Cost per solve: O(crossings of the refilled flows + touched links · rounds), rounds past the first
// few O(log links) each; no allocation within the room reserved, or once its arrays have grown (by
// doubling) to the most flows and crossings a solve refills.
#pragma once

#include "big_vector.hpp"
#include "hop.hpp"

#include <cstdint>
#include <span>
#include <vector>

namespace basp {

struct FlowPath {
  std::uint32_t hop_begin = 0;  // index into the hop array
  std::uint32_t hop_count = 0;  // > 0
  std::uint32_t multiplicity = 1;
};

// Reusable scratch for repeated solves over the same link set.
class MaxMinSolver {
 public:
  explicit MaxMinSolver(std::size_t links);

  // rates[i] = the max-min fair rate (B/s) of one of flows[i]'s identical flows.
  void solve(std::span<const double> capacity_Bps, std::span<const Hop> hops,
             std::span<const FlowPath> flows, std::span<double> rates);

  // The same result as solve() when the only change since the last solve was the removal of flows
  // (reported through remove()) whose smallest rate was `level`: rates below it are kept.
  void solve_from(double level, std::span<const double> capacity_Bps, std::span<const Hop> hops,
                  std::span<const FlowPath> flows, std::span<double> rates);

  // Links marked here never bind: no flow freezes at them, but their load is kept like any other's,
  // and every solve checks it against their capacity (a quotient that leaves them out of its cells,
  // flow_cells.hpp, is exact only while they stay below it). Empty: every link may bind.
  void never_binding(std::vector<char> links) { unbinding_ = std::move(links); }
  // Whether every solve so far left each never-binding link clearly below its capacity (by 1e-6
  // relative: the quotient's shares of such links are floats).
  bool unbinding_held() const { return unbinding_held_; }
  bool never_binds(std::uint32_t link) const { return !unbinding_.empty() && unbinding_[link]; }

  // Room for this many flows and crossings in one solve, so that solves up to them do not reallocate.
  void reserve(std::size_t flows, std::size_t crossings);

  // A flow with this path and rate no longer transfers.
  void remove(std::span<const Hop> hops, const FlowPath& path, double rate);

  std::size_t memory_bytes() const;  // its arrays' capacities
  std::size_t refilled() const { return refill_.size(); }  // flows the last solve recomputed
  std::span<const std::uint32_t> refilled_flows() const { return {refill_.data(), refill_.size()}; }  // their indices
  double load(std::uint32_t link) const { return links_[link].load; }  // B/s the flows now move over it

 private:
  double key(std::uint32_t l) const;  // the level at which link l saturates
  void fill(std::span<const double> capacity, std::span<const Hop> hops, std::span<const FlowPath> flows,
            std::span<double> rates);
  std::size_t freeze_saturated(double level, std::span<const Hop> hops, std::span<const FlowPath> flows,
                               std::span<double> rates, std::size_t left);

  // Per-link state in one struct: the freezing loop touches all of it for each hop it visits.
  struct LinkState {
    double load = 0.0;        // Σ m·a·r over all flows of the last solve, kept up to date
    double remaining = 0.0;   // capacity left by frozen flows
    double weight = 0.0;      // Σ m·a over unfrozen flows
    std::uint32_t unfrozen = 0;          // unfrozen flows crossing the link
    std::uint32_t begin = 0, end = 0;    // CSR link -> flows: flows_on_[begin .. end)
  };
  std::vector<LinkState> links_;
  std::vector<char> unbinding_;  // per link, or empty
  bool unbinding_held_ = true;
  BigVector<std::uint32_t> flows_on_;
  std::vector<std::uint32_t> touched_;    // links with at least one flow
  std::vector<std::uint32_t> scan_;      // touched links that may still saturate (the first rounds)
  std::vector<double> scan_key_;         // their saturation levels this round
  std::vector<std::pair<double, std::uint32_t>> heap_;  // (saturation level, link), lower bounds
  BigVector<char> frozen_;
  std::vector<std::uint32_t> saturated_;
  BigVector<std::uint32_t> refill_;     // flows being (re)computed by this solve
};

}  // namespace basp
