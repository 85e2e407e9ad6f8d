// Seeded draws of a few of many (slow GPUs and links, excluded nodes, links taken down): each
// index keyed by a counter-based hash of (seed, salt, index), so a draw depends on nothing else.
#pragma once

#include <cstdint>
#include <vector>

namespace basp {

// The `count` of `0..total-1` with the smallest hashes of (seed, salt, index), ascending: a
// choice that depends on nothing but the seed (not on the order anything is asked in).
std::vector<int> seeded_choice(int total, int count, std::uint64_t seed, std::uint64_t salt);
// How many of `total` a fraction picks: rounded, at least one when the fraction is above 0.
int fraction_count(double fraction, int total);
// splitmix64 over (seed, salt, a, b, c): the key seeded_choice sorts by, and the stragglers' jitter.
std::uint64_t seeded_hash(std::uint64_t seed, std::uint64_t salt, std::uint64_t a, std::uint64_t b = 0,
                          std::uint64_t c = 0);

}  // namespace basp
