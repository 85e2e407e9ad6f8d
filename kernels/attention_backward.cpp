// Causal attention backward on the CPU (fp32): probabilities recomputed from the log-sum-exp, dQ, dK
// and dV (GQA: summed over the query heads sharing a KV head). The oracle of attention_backward.cu.
#include "cpu_kernels.hpp"

#include <algorithm>
#include <cmath>

namespace basp::kernels::cpu {

void attention_backward(const float* q, const float* k, const float* v, const float* o, const float* dout,
                        const float* lse, float* dq, float* dk, float* dv, const AttentionShape& a) {
  const long dh = a.head_dim, group = a.q_heads / a.kv_heads;
  const float scale = float(a.scale());
  std::fill(dq, dq + a.nseq * a.seq * a.q_heads * dh, 0.0f);
  std::fill(dk, dk + a.nseq * a.seq * a.kv_heads * dh, 0.0f);
  std::fill(dv, dv + a.nseq * a.seq * a.kv_heads * dh, 0.0f);
  for (int s = 0; s < a.nseq; ++s)
    for (long h = 0; h < a.q_heads; ++h) {
      const long g = h / group;
      for (long i = 0; i < a.seq; ++i) {
        const long qrow = ((s * a.seq + i) * a.q_heads + h) * dh;
        const float* qi = q + qrow;
        const float* doi = dout + qrow;
        float* dqi = dq + qrow;
        const float row_lse = lse[(s * a.q_heads + h) * a.seq + i];
        const float delta = dot(doi, o + qrow, dh);  // rowsum(dO ∘ O) = Σ_j p_ij dp_ij
        for (long j = 0; j <= i; ++j) {
          const long krow = ((s * a.seq + j) * a.kv_heads + g) * dh;
          const float p = std::exp(scale * dot(qi, k + krow, dh) - row_lse);
          const float ds = p * (dot(doi, v + krow, dh) - delta) * scale;
          for (long e = 0; e < dh; ++e) {
            dv[krow + e] += p * doi[e];
            dqi[e] += ds * k[krow + e];
            dk[krow + e] += ds * qi[e];
          }
        }
      }
    }
}

}  // namespace basp::kernels::cpu
