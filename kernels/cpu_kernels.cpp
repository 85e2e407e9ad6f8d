// CPU reference twins (fp32) of the measured layer's kernels. Plain loops: these are the oracle the
// CUDA kernels are tested against, so clarity beats speed; attention still never forms seq×seq.
#include "cpu_kernels.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

namespace basp::kernels::cpu {

void scatter_heads_to_peers(const float* src, float* send, const ExchangeShape& s, long heads) {
  const long hp = heads_per_peer(heads, s.peers), dh = s.head_dim, T = s.tokens();
  for (int j = 0; j < s.peers; ++j) {
    const long h0 = first_head_of_peer(heads, s.peers, j);
    for (long t = 0; t < T; ++t)
      std::memcpy(send + ((j * T + t) * hp) * dh, src + (t * heads + h0) * dh, sizeof(float) * hp * dh);
  }
}

void gather_tokens_from_peers(const float* recv, float* dst, const ExchangeShape& s, long hp) {
  const long row = hp * s.head_dim, S = s.seq_len();
  for (int p = 0; p < s.peers; ++p)
    for (int q = 0; q < s.nseq; ++q)
      for (long i = 0; i < s.chunk; ++i)
        std::memcpy(dst + (q * S + p * s.chunk + i) * row,
                    recv + ((long(p) * s.nseq + q) * s.chunk + i) * row, sizeof(float) * row);
}

void scatter_tokens_to_peers(const float* src, float* send, const ExchangeShape& s, long hp) {
  const long row = hp * s.head_dim, S = s.seq_len();
  for (int p = 0; p < s.peers; ++p)
    for (int q = 0; q < s.nseq; ++q)
      for (long i = 0; i < s.chunk; ++i)
        std::memcpy(send + ((long(p) * s.nseq + q) * s.chunk + i) * row,
                    src + (q * S + p * s.chunk + i) * row, sizeof(float) * row);
}

void gather_heads_from_peers(const float* recv, float* dst, const ExchangeShape& s, long heads) {
  const long hp = heads_per_peer(heads, s.peers), dh = s.head_dim, T = s.tokens();
  std::fill(dst, dst + T * heads * dh, 0.0f);
  for (int j = 0; j < s.peers; ++j) {
    const long h0 = first_head_of_peer(heads, s.peers, j);
    for (long t = 0; t < T; ++t) {
      const float* in = recv + ((j * T + t) * hp) * dh;
      float* out = dst + (t * heads + h0) * dh;
      for (long e = 0; e < hp * dh; ++e) out[e] += in[e];
    }
  }
}

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

namespace {
float dot(const float* a, const float* b, long n) {
  float acc = 0.0f;
  for (long e = 0; e < n; ++e) acc += a[e] * b[e];
  return acc;
}
}  // namespace

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
