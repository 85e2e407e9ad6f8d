// The all-to-all's pack and unpack on the GPU (bf16): heads to peers and back, tokens from peers
// and back; one thread per output element. Twin of exchange.cpp.
#include "cuda_kernels.hpp"
#include "cuda_launch.cuh"

namespace basp::kernels::cuda {
namespace {

using namespace detail;

// Exchange pack/unpack: one thread per output element, indices decomposed from the output side
// so every write is coalesced.

// Device twin of layouts.hpp's first_head_of_peer, which is host-only.
__device__ long peer_first_head(long heads, int peers, int j) {
  return (long(j) * heads) / peers;
}

__global__ void scatter_heads_to_peers_kernel(const bf16* src, bf16* send, long tokens, long heads,
                                              long heads_per_peer, int peers, long dh) {
  const long total = long(peers) * tokens * heads_per_peer * dh;
  for (long n = first_thread_index(); n < total; n += grid_thread_count()) {
    const long e = n % dh, row = n / dh;
    const long head_in_peer = row % heads_per_peer, t = (row / heads_per_peer) % tokens;
    const int j = int(row / heads_per_peer / tokens);
    const long h = peer_first_head(heads, peers, j) + head_in_peer;
    send[n] = src[(t * heads + h) * dh + e];
  }
}

__global__ void gather_tokens_from_peers_kernel(const bf16* recv, bf16* dst, long nseq, long chunk, int peers,
                                                long row) {
  const long seq = chunk * peers, total = nseq * seq * row;
  for (long n = first_thread_index(); n < total; n += grid_thread_count()) {
    const long x = n % row, token = (n / row) % seq, q = n / row / seq;
    const long p = token / chunk, i = token % chunk;
    dst[n] = recv[((p * nseq + q) * chunk + i) * row + x];
  }
}

__global__ void scatter_tokens_to_peers_kernel(const bf16* src, bf16* send, long nseq, long chunk, int peers,
                                               long row) {
  const long seq = chunk * peers, total = long(peers) * nseq * chunk * row;
  for (long n = first_thread_index(); n < total; n += grid_thread_count()) {
    const long x = n % row, i = (n / row) % chunk, q = (n / row / chunk) % nseq;
    const long p = n / row / chunk / nseq;
    send[n] = src[(q * seq + p * chunk + i) * row + x];
  }
}

// First peer whose heads [peer_first_head, +heads_per_peer) can contain head h: peer_first_head(j) =
// floor(j·heads/peers) >= h-heads_per_peer+1  ⇔  j·heads >= (h-heads_per_peer+1)·peers.
__device__ int first_possible_holder(long h, long heads, int peers, long heads_per_peer) {
  const long lowest_start = h - heads_per_peer + 1;
  return lowest_start <= 0 ? 0 : int(ceil_div(lowest_start * peers, heads));
}

// Each output element sums its holders directly (fp32, one rounding), so no atomics are needed
// and the result does not depend on scheduling.
__global__ void gather_heads_from_peers_kernel(const bf16* recv, bf16* dst, long tokens, long heads,
                                               long heads_per_peer, int peers, long dh) {
  const long total = tokens * heads * dh;
  for (long n = first_thread_index(); n < total; n += grid_thread_count()) {
    const long e = n % dh, h = (n / dh) % heads, t = n / dh / heads;
    float sum = 0.0f;
    for (int j = first_possible_holder(h, heads, peers, heads_per_peer); j < peers; ++j) {
      const long h0 = peer_first_head(heads, peers, j);
      if (h0 > h) break;  // starts only grow with j
      sum += __bfloat162float(recv[((j * tokens + t) * heads_per_peer + (h - h0)) * dh + e]);
    }
    dst[n] = __float2bfloat16(sum);
  }
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Host launchers

void scatter_heads_to_peers(const bf16* src, bf16* send, const ExchangeShape& s, long heads,
                            cudaStream_t stream) {
  const long heads_per_peer = kernels::heads_per_peer(heads, s.peers);
  const long total = long(s.peers) * s.tokens() * heads_per_peer * s.head_dim;
  if (total == 0) return;
  scatter_heads_to_peers_kernel<<<elementwise_blocks(total), kElementThreads, 0, stream>>>(
      src, send, s.tokens(), heads, heads_per_peer, s.peers, s.head_dim);
  check_launch("scatter_heads_to_peers_kernel");
}

void gather_tokens_from_peers(const bf16* recv, bf16* dst, const ExchangeShape& s, long heads_per_peer,
                              cudaStream_t stream) {
  const long row = heads_per_peer * s.head_dim, total = s.nseq * s.seq_len() * row;
  if (total == 0) return;
  gather_tokens_from_peers_kernel<<<elementwise_blocks(total), kElementThreads, 0, stream>>>(
      recv, dst, s.nseq, s.chunk, s.peers, row);
  check_launch("gather_tokens_from_peers_kernel");
}

void scatter_tokens_to_peers(const bf16* src, bf16* send, const ExchangeShape& s, long heads_per_peer,
                             cudaStream_t stream) {
  const long row = heads_per_peer * s.head_dim, total = s.nseq * s.seq_len() * row;
  if (total == 0) return;
  scatter_tokens_to_peers_kernel<<<elementwise_blocks(total), kElementThreads, 0, stream>>>(
      src, send, s.nseq, s.chunk, s.peers, row);
  check_launch("scatter_tokens_to_peers_kernel");
}

void gather_heads_from_peers(const bf16* recv, bf16* dst, const ExchangeShape& s, long heads,
                             cudaStream_t stream) {
  const long heads_per_peer = kernels::heads_per_peer(heads, s.peers);
  const long total = s.tokens() * heads * s.head_dim;
  if (total == 0) return;
  gather_heads_from_peers_kernel<<<elementwise_blocks(total), kElementThreads, 0, stream>>>(
      recv, dst, s.tokens(), heads, heads_per_peer, s.peers, s.head_dim);
  check_launch("gather_heads_from_peers_kernel");
}

}  // namespace basp::kernels::cuda
