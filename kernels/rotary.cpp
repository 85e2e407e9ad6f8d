// Rotary embedding on the CPU (fp32) at global positions, Llama's rotate-half pairing; the inverse
// rotation is its backward pass. The oracle of rotary.cu: angles are formed in double there too.
#include "cpu_kernels.hpp"

#include <cmath>
#include <vector>

namespace basp::kernels::cpu {

void rotary(float* x, const ExchangeShape& s, long heads, long first_position, double theta, bool inverse) {
  const long dh = s.head_dim, half = dh / 2;
  std::vector<float> cosv(half), sinv(half);
  for (long t = 0; t < s.tokens(); ++t) {
    const double pos = double(first_position + t % s.chunk);
    for (long d = 0; d < half; ++d) {
      const double angle = pos * std::pow(theta, -2.0 * double(d) / double(dh));
      cosv[d] = float(std::cos(angle));
      sinv[d] = float(inverse ? -std::sin(angle) : std::sin(angle));
    }
    for (long h = 0; h < heads; ++h) {
      float* r = x + (t * heads + h) * dh;
      for (long d = 0; d < half; ++d) {
        const float a = r[d], b = r[d + half];
        r[d] = a * cosv[d] - b * sinv[d];
        r[d + half] = b * cosv[d] + a * sinv[d];
      }
    }
  }
}

}  // namespace basp::kernels::cpu
