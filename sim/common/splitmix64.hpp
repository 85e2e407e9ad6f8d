// SplitMix64's finalizer (Steele, Lea and Flood, "Fast splittable pseudorandom number generators",
// 2014): a counter-based draw, so that a value depends only on what it is drawn for, not on order.
#pragma once

#include <cstdint>
#include <vector>

namespace basp {

inline std::uint64_t splitmix64(std::uint64_t z) {
  z += 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// `h` carried through a partition's groups, each group's size then its members in order.
inline std::uint64_t splitmix64_groups(std::uint64_t h, const std::vector<std::vector<int>>& groups) {
  for (const std::vector<int>& g : groups) {
    h = splitmix64(h ^ g.size());
    for (int r : g) h = splitmix64(h ^ static_cast<std::uint64_t>(r));
  }
  return h;
}

}  // namespace basp
