// CPU reference twins (fp32) of the measured layer's kernels, one file per operation beside its
// CUDA twin: exchange.cpp, rotary.cpp, attention_forward.cpp, attention_backward.cpp.
#pragma once

#include "layouts.hpp"

namespace basp::kernels::cpu {

// [tokens][heads][dh] → [peer][tokens][heads_per_peer][dh] (the all-to-all's send buffer).
void scatter_heads_to_peers(const float* src, float* send, const ExchangeShape& s, long heads);
// [peer][nseq][chunk][heads_per_peer][dh] (received) → [nseq][peers·chunk][heads_per_peer][dh]:
// whole sequences.
void gather_tokens_from_peers(const float* recv, float* dst, const ExchangeShape& s, long heads_per_peer);
// The reverse of gather_tokens_from_peers: [nseq][S][heads_per_peer][dh] →
// [peer][nseq][chunk][heads_per_peer][dh].
void scatter_tokens_to_peers(const float* src, float* send, const ExchangeShape& s, long heads_per_peer);
// The reverse of scatter_heads_to_peers: [peer][tokens][heads_per_peer][dh] → [tokens][heads][dh]. Heads that
// several peers hold (replicated KV heads) get the sum of their gradients; dst is overwritten.
void gather_heads_from_peers(const float* recv, float* dst, const ExchangeShape& s, long heads);

// Rotates x [nseq][chunk][heads][dh] in place by the rotary angles of global positions
// first_position + i (i the token's index within its chunk), Llama's rotate-half pairing (d, d+dh/2).
// inverse = true rotates back: the backward pass of the embedding.
void rotary(float* x, const ExchangeShape& s, long heads, long first_position, double theta, bool inverse);

// Causal attention, q [nseq][seq][q_heads][dh], k, v [nseq][seq][kv_heads][dh] → o (like q) and
// lse [nseq][q_heads][seq] (log-sum-exp of each row's scaled scores, kept for backward). Keys are
// visited in tiles of `tile` with an online softmax: no seq×seq matrix exists.
void attention_forward(const float* q, const float* k, const float* v, float* o, float* lse,
                       const AttentionShape& a, long tile);
// Gradients dq, dk, dv (overwritten) from do, recomputing probabilities from lse.
void attention_backward(const float* q, const float* k, const float* v, const float* o, const float* dout,
                        const float* lse, float* dq, float* dk, float* dv, const AttentionShape& a);

// a · b over n elements, accumulated in fp32 in index order: the twins' one reduction.
inline float dot(const float* a, const float* b, long n) {
  float acc = 0.0f;
  for (long e = 0; e < n; ++e) acc += a[e] * b[e];
  return acc;
}

}  // namespace basp::kernels::cpu
