// The all-to-all's pack and unpack on the CPU (fp32): the oracle of exchange.cu. Heads go to peers
// (KV heads replicated when fewer than the peers) and come back summed; tokens gather into sequences.
#include "cpu_kernels.hpp"

#include <algorithm>
#include <cstring>

namespace basp::kernels::cpu {

void scatter_heads_to_peers(const float* src, float* send, const ExchangeShape& s, long heads) {
  const long heads_per_peer = kernels::heads_per_peer(heads, s.peers), dh = s.head_dim, tokens = s.tokens();
  for (int j = 0; j < s.peers; ++j) {
    const long h0 = first_head_of_peer(heads, s.peers, j);
    for (long t = 0; t < tokens; ++t)
      std::memcpy(send + ((j * tokens + t) * heads_per_peer) * dh, src + (t * heads + h0) * dh,
                  sizeof(float) * heads_per_peer * dh);
  }
}

void gather_tokens_from_peers(const float* recv, float* dst, const ExchangeShape& s, long heads_per_peer) {
  const long row = heads_per_peer * s.head_dim, S = s.seq_len();
  for (int p = 0; p < s.peers; ++p)
    for (int q = 0; q < s.nseq; ++q)
      for (long i = 0; i < s.chunk; ++i)
        std::memcpy(dst + (q * S + p * s.chunk + i) * row,
                    recv + ((long(p) * s.nseq + q) * s.chunk + i) * row, sizeof(float) * row);
}

void scatter_tokens_to_peers(const float* src, float* send, const ExchangeShape& s, long heads_per_peer) {
  const long row = heads_per_peer * s.head_dim, S = s.seq_len();
  for (int p = 0; p < s.peers; ++p)
    for (int q = 0; q < s.nseq; ++q)
      for (long i = 0; i < s.chunk; ++i)
        std::memcpy(send + ((long(p) * s.nseq + q) * s.chunk + i) * row,
                    src + (q * S + p * s.chunk + i) * row, sizeof(float) * row);
}

void gather_heads_from_peers(const float* recv, float* dst, const ExchangeShape& s, long heads) {
  const long heads_per_peer = kernels::heads_per_peer(heads, s.peers), dh = s.head_dim, tokens = s.tokens();
  std::fill(dst, dst + tokens * heads * dh, 0.0f);
  for (int j = 0; j < s.peers; ++j) {
    const long h0 = first_head_of_peer(heads, s.peers, j);
    for (long t = 0; t < tokens; ++t) {
      const float* in = recv + ((j * tokens + t) * heads_per_peer) * dh;
      float* out = dst + (t * heads + h0) * dh;
      for (long e = 0; e < heads_per_peer * dh; ++e) out[e] += in[e];
    }
  }
}

}  // namespace basp::kernels::cpu
