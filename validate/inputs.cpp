// Counter-based generation (splitmix64 of seed, tensor and index): no state to share between
// ranks, and the same seed always gives the same problem.
#include "inputs.hpp"

#include "splitmix64.hpp"

#include <cmath>

namespace basp::validate {

double input_value(std::uint64_t seed, InputTensor t, std::uint64_t index, double scale) {
  const std::uint64_t h = splitmix64(splitmix64(seed ^ (std::uint64_t(t) << 58)) ^ index);
  // 24 random bits: the value is exact in fp32, so every backend starts from the same numbers.
  const double u = double(h >> 40) / double(1ull << 24);
  return scale * (2.0 * u - 1.0);
}

double input_scale(InputTensor t, const LayerShape& s) {
  switch (t) {
    case InputTensor::wq:
    case InputTensor::wk:
    case InputTensor::wv:
      return 1.0 / std::sqrt(double(s.hidden));
    case InputTensor::wo:
      return 1.0 / std::sqrt(double(s.q_width()));
    default:
      return 1.0;
  }
}

long weight_rows(InputTensor t, const LayerShape& s) {
  return t == InputTensor::wo ? s.q_width() : s.hidden;
}
long weight_cols(InputTensor t, const LayerShape& s) {
  switch (t) {
    case InputTensor::wq:
      return s.q_width();
    case InputTensor::wk:
    case InputTensor::wv:
      return s.kv_width();
    default:
      return s.hidden;
  }
}

std::vector<float> weight(std::uint64_t seed, InputTensor t, const LayerShape& s) {
  const long n = weight_rows(t, s) * weight_cols(t, s);
  const double scale = input_scale(t, s);
  std::vector<float> w(n);
  for (long i = 0; i < n; ++i) w[i] = float(input_value(seed, t, std::uint64_t(i), scale));
  return w;
}

std::vector<float> token_slice(std::uint64_t seed, InputTensor t, const LayerShape& s, const RankPlan& p) {
  const auto& e = p.exchange;
  std::vector<float> out(e.tokens() * s.hidden);
  const double scale = input_scale(t, s);
  for (int q = 0; q < e.nseq; ++q)
    for (long i = 0; i < e.chunk; ++i) {
      const long global_token = long(p.first_sequence + q) * s.seq + p.first_position + i;
      for (long c = 0; c < s.hidden; ++c)
        out[(q * e.chunk + i) * s.hidden + c] =
            float(input_value(seed, t, std::uint64_t(global_token * s.hidden + c), scale));
    }
  return out;
}

}  // namespace basp::validate
