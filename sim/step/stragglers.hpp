// Stragglers and jitter: GPUs that compute slower than the rest, per-layer variation of every
// GPU's compute, and network links that carry less. Ranks then differ, so the full engine runs.
#pragma once

#include "seeded_choice.hpp"
#include "topology.hpp"

#include <cstdint>
#include <vector>

namespace basp {

struct Stragglers {
  // Each GPU's compute in each layer and pass takes its time times a factor drawn uniformly from
  // [1 - jitter, 1 + jitter] (mean 1), independently per (GPU, layer, pass).
  double compute_jitter = 0.0;
  // That share of the GPUs (at least one when above 0) computes `factor` times slower throughout.
  double slow_gpu_fraction = 0.0, slow_gpu_factor = 1.0;
  // That share of the network's links (NIC ports and fabric trunks, each direction on its own; at
  // least one when above 0) carries 1/`factor` of its capacity.
  double slow_link_fraction = 0.0, slow_link_factor = 1.0;
  std::uint64_t seed = 1;  // which GPUs and links, and the jitter's draws

  bool any() const { return compute_jitter > 0.0 || slow_gpu_fraction > 0.0 || slow_link_fraction > 0.0; }
};

// Per rank, the factor its compute task takes in `layer` (-1: embedding, head, optimizer) and `pass`.
class ComputeSpeed {
 public:
  ComputeSpeed(const Stragglers& s, int ranks);
  double factor(int rank, int layer, int pass) const;
  const std::vector<int>& slow_gpus() const { return slow_; }

 private:
  double jitter_;
  std::uint64_t seed_;
  std::vector<double> base_;  // per rank: the slow factor or 1
  std::vector<int> slow_;
};

// The network links `s` slows (ascending ids): each carries 1/slow_link_factor of its capacity.
std::vector<int> slow_links(const Topology& topo, const Stragglers& s);

}  // namespace basp
