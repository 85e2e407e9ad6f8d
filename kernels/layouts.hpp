// How a rank's tensors are laid out around the sequence-parallel all-to-all (which heads go to
// which peer, GQA replication included) and in attention. Shared by the CPU and CUDA kernels.
#pragma once

#include <cmath>

namespace basp::kernels {

// A rank holds `nseq` sequences × `chunk` tokens of "all heads"; after the exchange with `peers`
// ranks it holds the same `nseq` sequences × (peers·chunk) tokens of heads/peers heads.
// Ulysses: nseq = B, chunk = S/N, peers = N. BASP: nseq = 1, chunk = S/K, peers = K.
struct ExchangeShape {
  int nseq = 1;
  long chunk = 0;
  int peers = 1;
  long head_dim = 0;
  long tokens() const { return nseq * chunk; }    // tokens on a rank before the exchange
  long seq_len() const { return chunk * peers; }  // tokens of one sequence after it
};

// Heads of a tensor with `heads` heads that peer j works on. Query heads divide evenly; with fewer
// KV heads than peers, each peer gets the one KV head its query heads use (replication).
inline long heads_per_peer(long heads, int peers) {
  return heads >= peers ? heads / peers : 1;
}
inline long first_head_of_peer(long heads, int peers, int j) {
  return (long(j) * heads) / peers;
}

// Attention's operands: q [nseq][seq][q_heads][dh], k and v [nseq][seq][kv_heads][dh].
struct AttentionShape {
  int nseq = 1;
  long seq = 0;       // tokens of one sequence
  long q_heads = 0;   // local query heads
  long kv_heads = 0;  // local KV heads; q_heads / kv_heads query heads share one
  long head_dim = 0;
  double scale() const { return 1.0 / std::sqrt(double(head_dim)); }
};

}  // namespace basp::kernels
