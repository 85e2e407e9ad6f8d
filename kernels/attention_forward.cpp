// Causal attention forward on the CPU (fp32): online softmax over key tiles, so no seq×seq matrix
// exists; writes O and the log-sum-exp. The oracle of attention_forward.cu: clarity beats speed.
#include "cpu_kernels.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace basp::kernels::cpu {

void attention_forward(const float* q, const float* k, const float* v, float* o, float* lse,
                       const AttentionShape& a, long tile) {
  const long dh = a.head_dim, group = a.q_heads / a.kv_heads;
  const float scale = float(a.scale());
  std::vector<float> scores(tile), acc(dh);
  for (int s = 0; s < a.nseq; ++s)
    for (long h = 0; h < a.q_heads; ++h) {
      const long g = h / group;
      for (long i = 0; i < a.seq; ++i) {
        const float* qi = q + ((s * a.seq + i) * a.q_heads + h) * dh;
        float m = -std::numeric_limits<float>::infinity(), l = 0.0f;
        std::fill(acc.begin(), acc.end(), 0.0f);
        for (long j0 = 0; j0 <= i; j0 += tile) {  // causal: keys 0..i only
          const long j1 = std::min(j0 + tile, i + 1);
          float tile_max = m;
          for (long j = j0; j < j1; ++j) {
            scores[j - j0] = scale * dot(qi, k + ((s * a.seq + j) * a.kv_heads + g) * dh, dh);
            tile_max = std::max(tile_max, scores[j - j0]);
          }
          const float correction = std::exp(m - tile_max);  // 0 on the first tile
          l *= correction;
          for (long e = 0; e < dh; ++e) acc[e] *= correction;
          for (long j = j0; j < j1; ++j) {
            const float p = std::exp(scores[j - j0] - tile_max);
            l += p;
            const float* vj = v + ((s * a.seq + j) * a.kv_heads + g) * dh;
            for (long e = 0; e < dh; ++e) acc[e] += p * vj[e];
          }
          m = tile_max;
        }
        float* oi = o + ((s * a.seq + i) * a.q_heads + h) * dh;
        for (long e = 0; e < dh; ++e) oi[e] = acc[e] / l;
        lse[(s * a.q_heads + h) * a.seq + i] = m + std::log(l);
      }
    }
}

}  // namespace basp::kernels::cpu
