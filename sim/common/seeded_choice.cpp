// Seeded draws by sorting hashes rather than a sequential generator: which indices are drawn does
// not depend on the build, the thread order or how many other draws were made.
#include "seeded_choice.hpp"

#include "splitmix64.hpp"

#include <algorithm>
#include <cmath>
#include <utility>

namespace basp {

std::uint64_t seeded_hash(std::uint64_t seed, std::uint64_t salt, std::uint64_t a, std::uint64_t b, std::uint64_t c) {
  return splitmix64(splitmix64(splitmix64(splitmix64(seed ^ salt) ^ a) ^ b) ^ c);
}

int fraction_count(double fraction, int total) {
  if (fraction <= 0.0 || total <= 0) return 0;
  return std::clamp(static_cast<int>(std::llround(fraction * total)), 1, total);
}

std::vector<int> seeded_choice(int total, int count, std::uint64_t seed, std::uint64_t salt) {
  std::vector<std::pair<std::uint64_t, int>> keyed(total);
  for (int i = 0; i < total; ++i) keyed[i] = {seeded_hash(seed, salt, std::uint64_t(i)), i};
  count = std::clamp(count, 0, total);
  std::partial_sort(keyed.begin(), keyed.begin() + count, keyed.end());
  std::vector<int> out;
  for (int k = 0; k < count; ++k) out.push_back(keyed[k].second);
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace basp
