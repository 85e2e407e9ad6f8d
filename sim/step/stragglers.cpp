// Draws from a counter-based hash (splitmix64) rather than a sequential generator: a draw depends
// only on (seed, what it is for), so results do not depend on build or thread order.
#include "stragglers.hpp"

#include <algorithm>
#include <cmath>
#include <utility>

namespace basp {
namespace {

// Uniform in [0, 1): the top 53 bits.
double unit(std::uint64_t h) { return double(h >> 11) * 0x1.0p-53; }

constexpr std::uint64_t salt_gpus = 1, salt_links = 2, salt_jitter = 3;

}  // namespace

ComputeSpeed::ComputeSpeed(const Stragglers& s, int ranks)
    : jitter_(s.compute_jitter), seed_(s.seed), base_(ranks, 1.0),
      slow_(seeded_choice(ranks, fraction_count(s.slow_gpu_fraction, ranks), s.seed, salt_gpus)) {
  for (int r : slow_) base_[r] = s.slow_gpu_factor;
}

double ComputeSpeed::factor(int rank, int layer, int pass) const {
  double f = base_[rank];
  if (jitter_ > 0.0)
    f *= 1.0 + jitter_ * (2.0 * unit(seeded_hash(seed_, salt_jitter, std::uint64_t(rank), std::uint64_t(layer + 1),
                                          std::uint64_t(pass))) - 1.0);
  return f;
}

std::vector<int> slow_links(const Topology& topo, const Stragglers& s) {
  std::vector<int> network;
  for (int l = 0; l < topo.link_count(); ++l)
    if (topo.link(l).cls == LinkClass::nic || topo.link(l).cls == LinkClass::fabric) network.push_back(l);
  const int total = static_cast<int>(network.size());
  std::vector<int> out;
  for (int k : seeded_choice(total, fraction_count(s.slow_link_fraction, total), s.seed, salt_links))
    out.push_back(network[k]);
  return out;
}

}  // namespace basp
