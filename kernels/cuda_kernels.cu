// CUDA kernels of the measured layer (bf16 storage, fp32 arithmetic): the all-to-all's pack/unpack,
// rotary embedding at global positions, causal flash-style attention forward and backward.
#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>

#include "cuda_kernels.hpp"

namespace basp::kernels::cuda {

namespace {

using bf162 = __nv_bfloat162;

constexpr unsigned kFullMask = 0xffffffffu;
constexpr int kWarpSize = 32;

// ---------------------------------------------------------------------------------------------
// Launch plumbing

void throw_on_error(cudaError_t err, const char* what) {
  if (err != cudaSuccess) throw std::runtime_error(std::string(what) + " failed: " + cudaGetErrorString(err));
}

void check_launch(const char* kernel) {
  throw_on_error(cudaGetLastError(), kernel);
}

__host__ __device__ long ceil_div(long a, long b) {
  return (a + b - 1) / b;
}
__device__ long min_of(long a, long b) {
  return a < b ? a : b;
}
__device__ long max_of(long a, long b) {
  return a > b ? a : b;
}

// Elementwise kernels loop grid-stride, so the grid stays small however large the tensor is.
constexpr int kElementThreads = 256;
constexpr long kMaxElementBlocks = 1L << 20;

unsigned elementwise_blocks(long n) {
  return unsigned(std::min(ceil_div(n, kElementThreads), kMaxElementBlocks));
}

__device__ long first_thread_index() {
  return long(blockIdx.x) * blockDim.x + threadIdx.x;
}
__device__ long grid_thread_count() {
  return long(gridDim.x) * blockDim.x;
}

// ---------------------------------------------------------------------------------------------
// Exchange pack/unpack: one thread per output element, indices decomposed from the output side
// so every write is coalesced.

// Device twin of layouts.hpp's first_head_of_peer, which is host-only.
__device__ long peer_first_head(long heads, int peers, int j) {
  return (long(j) * heads) / peers;
}

__global__ void scatter_heads_to_peers_kernel(const bf16* src, bf16* send, long tokens, long heads, long hp,
                                              int peers, long dh) {
  const long total = long(peers) * tokens * hp * dh;
  for (long n = first_thread_index(); n < total; n += grid_thread_count()) {
    const long e = n % dh, row = n / dh;
    const long head_in_peer = row % hp, t = (row / hp) % tokens;
    const int j = int(row / hp / tokens);
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

// First peer whose heads [peer_first_head, +hp) can contain head h: peer_first_head(j) =
// floor(j·heads/peers) >= h-hp+1  ⇔  j·heads >= (h-hp+1)·peers.
__device__ int first_possible_holder(long h, long heads, int peers, long hp) {
  const long lowest_start = h - hp + 1;
  return lowest_start <= 0 ? 0 : int(ceil_div(lowest_start * peers, heads));
}

// Each output element sums its holders directly (fp32, one rounding), so no atomics are needed
// and the result does not depend on scheduling.
__global__ void gather_heads_from_peers_kernel(const bf16* recv, bf16* dst, long tokens, long heads, long hp,
                                               int peers, long dh) {
  const long total = tokens * heads * dh;
  for (long n = first_thread_index(); n < total; n += grid_thread_count()) {
    const long e = n % dh, h = (n / dh) % heads, t = n / dh / heads;
    float sum = 0.0f;
    for (int j = first_possible_holder(h, heads, peers, hp); j < peers; ++j) {
      const long h0 = peer_first_head(heads, peers, j);
      if (h0 > h) break;  // starts only grow with j
      sum += __bfloat162float(recv[((j * tokens + t) * hp + (h - h0)) * dh + e]);
    }
    dst[n] = __float2bfloat16(sum);
  }
}

// ---------------------------------------------------------------------------------------------
// Rotary embedding: one thread per (token, pair), the angle computed once and applied to every
// head. Angles reach 1e6 rad (positions up to 1M), so they are formed and reduced in double, as the
// CPU twin does, and only cos/sin are rounded to float.

__global__ void rotary_kernel(bf16* x, long tokens, long chunk, long heads, long dh, long first_position,
                              double theta, bool inverse) {
  const long half = dh / 2, total = tokens * half;
  for (long n = first_thread_index(); n < total; n += grid_thread_count()) {
    const long d = n % half, t = n / half;
    const double pos = double(first_position + t % chunk);
    const double angle = pos * pow(theta, -2.0 * double(d) / double(dh));
    double sin_d, cos_d;
    sincos(angle, &sin_d, &cos_d);
    const float c = float(cos_d), s = float(inverse ? -sin_d : sin_d);
    for (long h = 0; h < heads; ++h) {
      bf16* r = x + (t * heads + h) * dh;
      const float a = __bfloat162float(r[d]), b = __bfloat162float(r[d + half]);
      r[d] = __float2bfloat16(a * c - b * s);
      r[d + half] = __float2bfloat16(b * c + a * s);
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Attention.
//
// Design: a block of kAttentionWarps warps; each warp owns one row (a query row in the forward and
// dQ kernels, a key row in the dK/dV kernel). The row's own vectors live in shared memory as fp32
// and are read as broadcasts. The block stages `tile` rows of the other operand (keys/values, or
// queries/output gradients) in shared memory as bf16; lane l scores rows l, l+32, ... of the tile
// (lane-parallel over rows, serial over dh), so no per-score warp reduction is needed. For the
// accumulation (o, dq, dk, dv), lane l owns element pairs l, l+32, ... of dh in fp32 registers;
// each row's weight reaches the lanes by a shuffle.
//
// Shared memory: the staging buffer holds ONE operand tile (tile × dh bf16, rows padded to an odd
// number of 32-bit words so lanes reading different rows hit different banks). Kernels that need
// two operands of the same rows (K then V; V then K; Q, dO, Q) restage the buffer in turn instead of
// holding both: this keeps every allowed (tile, dh) — up to 128 × 256 — within
//   forward: 8·dh·4 + tile·((dh/2)|1)·4 <= 8 KiB + 64.5 KiB = 72.5 KiB,
//   dQ, dK/dV: 2·8·dh·4 + tile·((dh/2)|1)·4 <= 16 KiB + 64.5 KiB = 80.5 KiB,
// under the 99 KiB a block may opt into on every sm_80+ part.
//
// Tensors must be 4-byte aligned: rows are moved as bf16 pairs (head_dim is even).

constexpr int kAttentionWarps = 8;  // rows per block: 8 rows share each staged tile
constexpr int kAttentionThreads = kAttentionWarps * kWarpSize;
constexpr int kAttentionMinBlocks = 2;  // caps registers at 128 so two blocks fit per SM
constexpr int kMaxPairChunks = int(kMaxHeadDim / 2 / kWarpSize);  // pair chunks a lane may own

struct AttentionDims {
  long nseq, seq, q_heads, kv_heads, group, dh;
  float scale;
};

__device__ float warp_max(float x) {
  for (int offset = kWarpSize / 2; offset > 0; offset /= 2)
    x = fmaxf(x, __shfl_xor_sync(kFullMask, x, offset));
  return x;
}

__device__ float warp_sum(float x) {
  for (int offset = kWarpSize / 2; offset > 0; offset /= 2) x += __shfl_xor_sync(kFullMask, x, offset);
  return x;
}

// Row stride of the staging buffer in bf16 pairs: odd, so a warp reading one pair from each of 32
// rows touches 32 distinct banks.
__host__ __device__ int padded_row_pairs(long dh) {
  return int(dh / 2) | 1;
}

// Offset of row `token` of head `head` in a [nseq][seq][heads][dh] tensor.
__device__ long row_offset(long s, long token, long head, long seq, long heads, long dh) {
  return ((s * seq + token) * heads + head) * dh;
}

// One warp copies a bf16 row into fp32 shared memory.
__device__ void load_row(const bf16* src, float* dst, int half, int lane) {
  const bf162* src2 = reinterpret_cast<const bf162*>(src);
  float2* dst2 = reinterpret_cast<float2*>(dst);
  for (int w = lane; w < half; w += kWarpSize) dst2[w] = __bfloat1622float2(src2[w]);
}

// The whole block fills the staging buffer with rows first..first+count of one head (consecutive
// rows `stride` elements apart), zeros past `count` so no lane ever reads stale data. It first waits
// for every warp to finish with the previous contents, and returns once the new ones are visible.
template <int kTile>
__device__ void stage_tile(bf162* tile, int row_pairs, const bf16* head_row0, long stride, long first,
                           int count, int half) {
  __syncthreads();
  const int warp = threadIdx.x / kWarpSize, lane = threadIdx.x % kWarpSize;
  const bf162 zero = __floats2bfloat162_rn(0.0f, 0.0f);
  for (int r = warp; r < kTile; r += kAttentionWarps) {
    bf162* dst = tile + r * row_pairs;
    if (r < count) {
      const bf162* src = reinterpret_cast<const bf162*>(head_row0 + (first + r) * stride);
      for (int w = lane; w < half; w += kWarpSize) dst[w] = src[w];
    } else {
      for (int w = lane; w < half; w += kWarpSize) dst[w] = zero;
    }
  }
  __syncthreads();
}

// dot[c] = row · tile[lane + 32c] for the rows this lane scores.
template <int kPerLane>
__device__ void dot_with_tile(const float* row, const bf162* tile, int row_pairs, int half, int lane,
                              float (&dot)[kPerLane]) {
#pragma unroll
  for (int c = 0; c < kPerLane; ++c) dot[c] = 0.0f;
  const float2* row2 = reinterpret_cast<const float2*>(row);
  for (int w = 0; w < half; ++w) {
    const float2 a = row2[w];
#pragma unroll
    for (int c = 0; c < kPerLane; ++c) {
      const float2 b = __bfloat1622float2(tile[(lane + kWarpSize * c) * row_pairs + w]);
      dot[c] = fmaf(a.x, b.x, dot[c]);
      dot[c] = fmaf(a.y, b.y, dot[c]);
    }
  }
}

// acc += Σ_{r in [lo, hi)} weight(r) · tile[r], where weight(r) is held by lane r % 32 in
// weight[r / 32]. lo and hi are warp-uniform, so the shuffles are never divergent.
template <int kPerLane, int kChunks>
__device__ void accumulate_weighted_rows(float2 (&acc)[kChunks], const float (&weight)[kPerLane],
                                         const bf162* tile, int row_pairs, int half, int lo, int hi,
                                         int lane) {
#pragma unroll
  for (int c = 0; c < kPerLane; ++c) {
    const int first = max(lo - c * kWarpSize, 0), last = min(hi - c * kWarpSize, kWarpSize);
#pragma unroll 2
    for (int src = first; src < last; ++src) {
      const float wr = __shfl_sync(kFullMask, weight[c], src);
      const bf162* tile_row = tile + (c * kWarpSize + src) * row_pairs;
#pragma unroll
      for (int k = 0; k < kChunks; ++k) {
        const int w = lane + kWarpSize * k;
        if (w < half) {
          const float2 b = __bfloat1622float2(tile_row[w]);
          acc[k].x = fmaf(wr, b.x, acc[k].x);
          acc[k].y = fmaf(wr, b.y, acc[k].y);
        }
      }
    }
  }
}

template <int kChunks>
__device__ void scale_accumulator(float2 (&acc)[kChunks], float factor) {
#pragma unroll
  for (int k = 0; k < kChunks; ++k) {
    acc[k].x *= factor;
    acc[k].y *= factor;
  }
}

// Writes the lane-distributed fp32 accumulator divided by `divisor` as one bf16 row.
template <int kChunks>
__device__ void store_row(const float2 (&acc)[kChunks], float divisor, bf16* dst, int half, int lane) {
  bf162* dst2 = reinterpret_cast<bf162*>(dst);
#pragma unroll
  for (int k = 0; k < kChunks; ++k) {
    const int w = lane + kWarpSize * k;
    if (w < half) dst2[w] = __floats2bfloat162_rn(acc[k].x / divisor, acc[k].y / divisor);
  }
}

// Query-row blocks are numbered heaviest first (the last rows see the most keys) so the causal
// triangle's long blocks start early and the short ones fill the tail.
struct QueryBlock {
  long s, h, first_row;
};

__device__ QueryBlock query_block(const AttentionDims& d) {
  const long blocks_per_head = ceil_div(d.seq, kAttentionWarps);
  const long head_index = long(blockIdx.x) / blocks_per_head;
  const long reversed = blocks_per_head - 1 - long(blockIdx.x) % blocks_per_head;
  return {head_index / d.q_heads, head_index % d.q_heads, reversed * kAttentionWarps};
}

// Forward: warp = one query row, online softmax over key tiles 0..i. Scores are scaled, as in the
// CPU twin, and the first tile's correction exp(-inf - max) is 0.
template <int kTile, int kChunks>
__global__ void __launch_bounds__(kAttentionThreads, kAttentionMinBlocks)
    attention_forward_kernel(const bf16* q, const bf16* k, const bf16* v, bf16* o, float* lse,
                             AttentionDims d) {
  constexpr int kPerLane = kTile / kWarpSize;
  extern __shared__ float4 smem[];
  const int warp = threadIdx.x / kWarpSize, lane = threadIdx.x % kWarpSize;
  const int half = int(d.dh / 2), row_pairs = padded_row_pairs(d.dh);
  float* q_row = reinterpret_cast<float*>(smem) + warp * d.dh;
  bf162* tile = reinterpret_cast<bf162*>(reinterpret_cast<float*>(smem) + kAttentionWarps * d.dh);

  const QueryBlock b = query_block(d);
  const long g = b.h / d.group, i = b.first_row + warp;
  const long last_row = min_of(b.first_row + kAttentionWarps, d.seq) - 1;
  const bool active = i < d.seq;
  const long kv_stride = d.kv_heads * d.dh;
  const bf16* k_head = k + row_offset(b.s, 0, g, d.seq, d.kv_heads, d.dh);
  const bf16* v_head = v + row_offset(b.s, 0, g, d.seq, d.kv_heads, d.dh);
  if (active) load_row(q + row_offset(b.s, i, b.h, d.seq, d.q_heads, d.dh), q_row, half, lane);
  __syncwarp();

  float m = -INFINITY, l = 0.0f;
  float2 acc[kChunks] = {};
  for (long j0 = 0; j0 <= last_row; j0 += kTile) {
    const int count = int(min_of(kTile, d.seq - j0));
    const bool sees_tile = active && j0 <= i;
    stage_tile<kTile>(tile, row_pairs, k_head, kv_stride, j0, count, half);
    float p[kPerLane];
    if (sees_tile) {
      dot_with_tile(q_row, tile, row_pairs, half, lane, p);
      float tile_max = m;
#pragma unroll
      for (int c = 0; c < kPerLane; ++c) {
        p[c] = j0 + lane + kWarpSize * c <= i ? d.scale * p[c] : -INFINITY;
        tile_max = fmaxf(tile_max, p[c]);
      }
      tile_max = warp_max(tile_max);  // finite: key j0 <= i is always visible
      const float correction = expf(m - tile_max);
      float tile_sum = 0.0f;
#pragma unroll
      for (int c = 0; c < kPerLane; ++c) {
        p[c] = expf(p[c] - tile_max);
        tile_sum += p[c];
      }
      l = l * correction + warp_sum(tile_sum);
      scale_accumulator(acc, correction);
      m = tile_max;
    }
    stage_tile<kTile>(tile, row_pairs, v_head, kv_stride, j0, count, half);
    if (sees_tile)
      accumulate_weighted_rows(acc, p, tile, row_pairs, half, 0, int(min_of(kTile, i + 1 - j0)), lane);
  }
  if (!active) return;
  store_row(acc, l, o + row_offset(b.s, i, b.h, d.seq, d.q_heads, d.dh), half, lane);
  if (lane == 0) lse[(b.s * d.q_heads + b.h) * d.seq + i] = m + logf(l);
}

// D_i = dO_i · O_i, one warp per row, stored like lse: [nseq][q_heads][seq].
__global__ void __launch_bounds__(kAttentionThreads, kAttentionMinBlocks)
    attention_row_delta_kernel(const bf16* o, const bf16* dout, float* delta, AttentionDims d) {
  const int warp = threadIdx.x / kWarpSize, lane = threadIdx.x % kWarpSize;
  const long row = long(blockIdx.x) * kAttentionWarps + warp;
  if (row >= d.nseq * d.seq * d.q_heads) return;
  const long h = row % d.q_heads, i = (row / d.q_heads) % d.seq, s = row / d.q_heads / d.seq;
  const bf162* o2 = reinterpret_cast<const bf162*>(o + row * d.dh);
  const bf162* do2 = reinterpret_cast<const bf162*>(dout + row * d.dh);
  float sum = 0.0f;
  for (long w = lane; w < d.dh / 2; w += kWarpSize) {
    const float2 a = __bfloat1622float2(o2[w]), b = __bfloat1622float2(do2[w]);
    sum = fmaf(a.x, b.x, sum);
    sum = fmaf(a.y, b.y, sum);
  }
  sum = warp_sum(sum);
  if (lane == 0) delta[(s * d.q_heads + h) * d.seq + i] = sum;
}

// dQ: warp = one query row i, over key tiles 0..i. V is staged first (dp = dO·v), then K, which
// serves both the score (p) and the accumulation dq += ds·k.
template <int kTile, int kChunks>
__global__ void __launch_bounds__(kAttentionThreads, kAttentionMinBlocks)
    attention_dq_kernel(const bf16* q, const bf16* k, const bf16* v, const bf16* dout, const float* lse,
                        const float* delta, bf16* dq, AttentionDims d) {
  constexpr int kPerLane = kTile / kWarpSize;
  extern __shared__ float4 smem[];
  const int warp = threadIdx.x / kWarpSize, lane = threadIdx.x % kWarpSize;
  const int half = int(d.dh / 2), row_pairs = padded_row_pairs(d.dh);
  float* q_row = reinterpret_cast<float*>(smem) + warp * d.dh;
  float* do_row = reinterpret_cast<float*>(smem) + (kAttentionWarps + warp) * d.dh;
  bf162* tile = reinterpret_cast<bf162*>(reinterpret_cast<float*>(smem) + 2 * kAttentionWarps * d.dh);

  const QueryBlock b = query_block(d);
  const long g = b.h / d.group, i = b.first_row + warp;
  const long last_row = min_of(b.first_row + kAttentionWarps, d.seq) - 1;
  const bool active = i < d.seq;
  const long kv_stride = d.kv_heads * d.dh;
  const bf16* k_head = k + row_offset(b.s, 0, g, d.seq, d.kv_heads, d.dh);
  const bf16* v_head = v + row_offset(b.s, 0, g, d.seq, d.kv_heads, d.dh);
  const long q_off = row_offset(b.s, i, b.h, d.seq, d.q_heads, d.dh);
  const long stat = (b.s * d.q_heads + b.h) * d.seq + i;
  float row_lse = 0.0f, row_delta = 0.0f;
  if (active) {
    load_row(q + q_off, q_row, half, lane);
    load_row(dout + q_off, do_row, half, lane);
    row_lse = lse[stat];
    row_delta = delta[stat];
  }
  __syncwarp();

  float2 acc[kChunks] = {};
  for (long j0 = 0; j0 <= last_row; j0 += kTile) {
    const int count = int(min_of(kTile, d.seq - j0));
    const bool sees_tile = active && j0 <= i;
    float dp[kPerLane];
    stage_tile<kTile>(tile, row_pairs, v_head, kv_stride, j0, count, half);
    if (sees_tile) dot_with_tile(do_row, tile, row_pairs, half, lane, dp);
    stage_tile<kTile>(tile, row_pairs, k_head, kv_stride, j0, count, half);
    if (sees_tile) {
      float ds[kPerLane];
      dot_with_tile(q_row, tile, row_pairs, half, lane, ds);
#pragma unroll
      for (int c = 0; c < kPerLane; ++c) {
        const float p = expf(d.scale * ds[c] - row_lse);
        ds[c] = j0 + lane + kWarpSize * c <= i ? p * (dp[c] - row_delta) * d.scale : 0.0f;
      }
      accumulate_weighted_rows(acc, ds, tile, row_pairs, half, 0, int(min_of(kTile, i + 1 - j0)), lane);
    }
  }
  if (active) store_row(acc, 1.0f, dq + q_off, half, lane);
}

// dK, dV: warp = one key row j of KV head g; block = kAttentionWarps consecutive keys. For every
// query head of g's group and every query tile from the block's first key on (causality: key j
// only receives from queries i >= j), Q is staged (p), then dO (dp, ds, dv += p·dO), then Q again
// (dk += ds·q). Sums over the group stay in registers: one bf16 write per row, no atomics.
template <int kTile, int kChunks>
__global__ void __launch_bounds__(kAttentionThreads, kAttentionMinBlocks)
    attention_dkdv_kernel(const bf16* q, const bf16* k, const bf16* v, const bf16* dout, const float* lse,
                          const float* delta, bf16* dk, bf16* dv, AttentionDims d) {
  constexpr int kPerLane = kTile / kWarpSize;
  extern __shared__ float4 smem[];
  const int warp = threadIdx.x / kWarpSize, lane = threadIdx.x % kWarpSize;
  const int half = int(d.dh / 2), row_pairs = padded_row_pairs(d.dh);
  float* k_row = reinterpret_cast<float*>(smem) + warp * d.dh;
  float* v_row = reinterpret_cast<float*>(smem) + (kAttentionWarps + warp) * d.dh;
  bf162* tile = reinterpret_cast<bf162*>(reinterpret_cast<float*>(smem) + 2 * kAttentionWarps * d.dh);

  // Key blocks in ascending order: the first keys receive from the most queries, so start first.
  const long blocks_per_head = ceil_div(d.seq, kAttentionWarps);
  const long head_index = long(blockIdx.x) / blocks_per_head;
  const long s = head_index / d.kv_heads, g = head_index % d.kv_heads;
  const long first_key = long(blockIdx.x) % blocks_per_head * kAttentionWarps;
  const long j = first_key + warp;
  const bool active = j < d.seq;
  const long kv_off = row_offset(s, j, g, d.seq, d.kv_heads, d.dh);
  if (active) {
    load_row(k + kv_off, k_row, half, lane);
    load_row(v + kv_off, v_row, half, lane);
  }
  __syncwarp();

  const long q_stride = d.q_heads * d.dh;
  float2 dk_acc[kChunks] = {}, dv_acc[kChunks] = {};
  for (long h = g * d.group; h < (g + 1) * d.group; ++h) {
    const bf16* q_head = q + row_offset(s, 0, h, d.seq, d.q_heads, d.dh);
    const bf16* do_head = dout + row_offset(s, 0, h, d.seq, d.q_heads, d.dh);
    const float* head_lse = lse + (s * d.q_heads + h) * d.seq;
    const float* head_delta = delta + (s * d.q_heads + h) * d.seq;
    for (long i0 = first_key; i0 < d.seq; i0 += kTile) {
      const int count = int(min_of(kTile, d.seq - i0));
      const bool sees_tile = active && j < i0 + count;  // some query of the tile is >= j
      const int lo = int(max_of(0, j - i0));
      float p[kPerLane], ds[kPerLane];
      stage_tile<kTile>(tile, row_pairs, q_head, q_stride, i0, count, half);
      if (sees_tile) {
        dot_with_tile(k_row, tile, row_pairs, half, lane, p);
#pragma unroll
        for (int c = 0; c < kPerLane; ++c) {
          const long i = i0 + lane + kWarpSize * c;
          p[c] = i >= j && i < d.seq ? expf(d.scale * p[c] - head_lse[i]) : 0.0f;
        }
      }
      stage_tile<kTile>(tile, row_pairs, do_head, q_stride, i0, count, half);
      if (sees_tile) {
        dot_with_tile(v_row, tile, row_pairs, half, lane, ds);
#pragma unroll
        for (int c = 0; c < kPerLane; ++c) {
          const long i = i0 + lane + kWarpSize * c;
          ds[c] = i >= j && i < d.seq ? p[c] * (ds[c] - head_delta[i]) * d.scale : 0.0f;
        }
        accumulate_weighted_rows(dv_acc, p, tile, row_pairs, half, lo, count, lane);
      }
      stage_tile<kTile>(tile, row_pairs, q_head, q_stride, i0, count, half);
      if (sees_tile) accumulate_weighted_rows(dk_acc, ds, tile, row_pairs, half, lo, count, lane);
    }
  }
  if (!active) return;
  store_row(dk_acc, 1.0f, dk + kv_off, half, lane);
  store_row(dv_acc, 1.0f, dv + kv_off, half, lane);
}

// ---------------------------------------------------------------------------------------------
// Attention host side

void check_attention_arguments(const AttentionShape& a, int tile) {
  if (std::find(kAttentionTiles.begin(), kAttentionTiles.end(), tile) == kAttentionTiles.end())
    throw std::invalid_argument("attention tile must be one of 32, 64, 128; got " + std::to_string(tile));
  if (a.head_dim < 2 || a.head_dim % 2 != 0 || a.head_dim > kMaxHeadDim)
    throw std::invalid_argument("attention head_dim must be even and in [2, " + std::to_string(kMaxHeadDim) +
                                "]; got " + std::to_string(a.head_dim));
  if (a.kv_heads <= 0 || a.q_heads < a.kv_heads || a.q_heads % a.kv_heads != 0)
    throw std::invalid_argument("attention q_heads (" + std::to_string(a.q_heads) +
                                ") must be a positive multiple of kv_heads (" + std::to_string(a.kv_heads) +
                                ")");
  if (a.nseq < 0 || a.seq < 0) throw std::invalid_argument("attention nseq and seq must not be negative");
}

void check_pair_aligned(const void* p, const char* name) {
  if (reinterpret_cast<std::uintptr_t>(p) % alignof(bf162) != 0)
    throw std::invalid_argument(std::string("attention tensor ") + name + " must be 4-byte aligned");
}

AttentionDims attention_dims(const AttentionShape& a) {
  return {a.nseq, a.seq, a.q_heads, a.kv_heads, a.q_heads / a.kv_heads, a.head_dim, float(a.scale())};
}

// Dynamic shared memory of an attention kernel: `rows_per_warp` fp32 rows per warp plus the staging tile.
std::size_t attention_smem_bytes(int rows_per_warp, int tile, long dh) {
  return sizeof(float) *
         (std::size_t(rows_per_warp) * kAttentionWarps * dh + std::size_t(tile) * padded_row_pairs(dh));
}

unsigned attention_blocks(long nseq, long heads, long seq) {
  const long blocks = nseq * heads * ceil_div(seq, kAttentionWarps);
  if (blocks > INT_MAX)
    throw std::invalid_argument("attention grid too large: " + std::to_string(blocks) + " blocks");
  return unsigned(blocks);
}

template <class Kernel, class... Args>
void launch_attention_kernel(Kernel kernel, const char* name, unsigned blocks, std::size_t smem,
                             cudaStream_t stream, Args... args) {
  throw_on_error(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)), name);
  kernel<<<blocks, kAttentionThreads, smem, stream>>>(args...);
  check_launch(name);
}

// Calls launch(tile constant, pair-chunk constant): the kernels are compiled per tile and per number
// of dh pairs a lane owns (1..4), so accumulators are register arrays of exactly that size.
template <class Launch>
void dispatch_attention(int tile, long dh, Launch&& launch) {
  const auto with_chunks = [&](auto tile_c) {
    switch ((dh / 2 + kWarpSize - 1) / kWarpSize) {
      case 1:
        return launch(tile_c, std::integral_constant<int, 1>{});
      case 2:
        return launch(tile_c, std::integral_constant<int, 2>{});
      case 3:
        return launch(tile_c, std::integral_constant<int, 3>{});
      default:
        return launch(tile_c, std::integral_constant<int, kMaxPairChunks>{});
    }
  };
  switch (tile) {
    case 32:
      return with_chunks(std::integral_constant<int, 32>{});
    case 64:
      return with_chunks(std::integral_constant<int, 64>{});
    default:
      return with_chunks(std::integral_constant<int, 128>{});
  }
}

}  // namespace

// -------------------------------------------------------------------------------------------------
// Public entry points

void scatter_heads_to_peers(const bf16* src, bf16* send, const ExchangeShape& s, long heads,
                            cudaStream_t stream) {
  const long hp = heads_per_peer(heads, s.peers), total = long(s.peers) * s.tokens() * hp * s.head_dim;
  if (total == 0) return;
  scatter_heads_to_peers_kernel<<<elementwise_blocks(total), kElementThreads, 0, stream>>>(
      src, send, s.tokens(), heads, hp, s.peers, s.head_dim);
  check_launch("scatter_heads_to_peers_kernel");
}

void gather_tokens_from_peers(const bf16* recv, bf16* dst, const ExchangeShape& s, long hp,
                              cudaStream_t stream) {
  const long row = hp * s.head_dim, total = s.nseq * s.seq_len() * row;
  if (total == 0) return;
  gather_tokens_from_peers_kernel<<<elementwise_blocks(total), kElementThreads, 0, stream>>>(
      recv, dst, s.nseq, s.chunk, s.peers, row);
  check_launch("gather_tokens_from_peers_kernel");
}

void scatter_tokens_to_peers(const bf16* src, bf16* send, const ExchangeShape& s, long hp,
                             cudaStream_t stream) {
  const long row = hp * s.head_dim, total = s.nseq * s.seq_len() * row;
  if (total == 0) return;
  scatter_tokens_to_peers_kernel<<<elementwise_blocks(total), kElementThreads, 0, stream>>>(
      src, send, s.nseq, s.chunk, s.peers, row);
  check_launch("scatter_tokens_to_peers_kernel");
}

void gather_heads_from_peers(const bf16* recv, bf16* dst, const ExchangeShape& s, long heads,
                             cudaStream_t stream) {
  const long hp = heads_per_peer(heads, s.peers), total = s.tokens() * heads * s.head_dim;
  if (total == 0) return;
  gather_heads_from_peers_kernel<<<elementwise_blocks(total), kElementThreads, 0, stream>>>(
      recv, dst, s.tokens(), heads, hp, s.peers, s.head_dim);
  check_launch("gather_heads_from_peers_kernel");
}

void rotary(bf16* x, const ExchangeShape& s, long heads, long first_position, double theta, bool inverse,
            cudaStream_t stream) {
  const long total = s.tokens() * (s.head_dim / 2);
  if (total == 0 || heads == 0) return;
  rotary_kernel<<<elementwise_blocks(total), kElementThreads, 0, stream>>>(
      x, s.tokens(), s.chunk, heads, s.head_dim, first_position, theta, inverse);
  check_launch("rotary_kernel");
}

void attention_forward(const bf16* q, const bf16* k, const bf16* v, bf16* o, float* lse,
                       const AttentionShape& a, int tile, cudaStream_t stream) {
  check_attention_arguments(a, tile);
  for (const auto& [p, name] : {std::pair<const void*, const char*>{q, "q"}, {k, "k"}, {v, "v"}, {o, "o"}})
    check_pair_aligned(p, name);
  if (a.nseq == 0 || a.seq == 0) return;
  const AttentionDims d = attention_dims(a);
  const unsigned blocks = attention_blocks(a.nseq, a.q_heads, a.seq);
  dispatch_attention(tile, a.head_dim, [&](auto tile_c, auto chunks_c) {
    constexpr int kTile = decltype(tile_c)::value, kChunks = decltype(chunks_c)::value;
    launch_attention_kernel(attention_forward_kernel<kTile, kChunks>, "attention_forward_kernel", blocks,
                            attention_smem_bytes(1, kTile, a.head_dim), stream, q, k, v, o, lse, d);
  });
}

std::size_t attention_backward_workspace_bytes(const AttentionShape& a) {
  return sizeof(float) * std::size_t(a.nseq) * std::size_t(a.q_heads) * std::size_t(a.seq);
}

void attention_backward(const bf16* q, const bf16* k, const bf16* v, const bf16* o, const bf16* dout,
                        const float* lse, bf16* dq, bf16* dk, bf16* dv, const AttentionShape& a, int tile,
                        void* workspace, cudaStream_t stream) {
  check_attention_arguments(a, tile);
  for (const auto& [p, name] : {std::pair<const void*, const char*>{q, "q"},
                                {k, "k"},
                                {v, "v"},
                                {o, "o"},
                                {dout, "dout"},
                                {dq, "dq"},
                                {dk, "dk"},
                                {dv, "dv"}})
    check_pair_aligned(p, name);
  if (a.nseq == 0 || a.seq == 0) return;
  if (workspace == nullptr) throw std::invalid_argument("attention_backward needs a workspace");
  const AttentionDims d = attention_dims(a);
  float* delta = static_cast<float*>(workspace);
  const unsigned q_blocks = attention_blocks(a.nseq, a.q_heads, a.seq);
  const unsigned kv_blocks = attention_blocks(a.nseq, a.kv_heads, a.seq);

  const long rows = a.nseq * a.seq * a.q_heads;  // at most q_blocks·kAttentionWarps, so the grid fits
  attention_row_delta_kernel<<<unsigned(ceil_div(rows, kAttentionWarps)), kAttentionThreads, 0, stream>>>(
      o, dout, delta, d);
  check_launch("attention_row_delta_kernel");
  dispatch_attention(tile, a.head_dim, [&](auto tile_c, auto chunks_c) {
    constexpr int kTile = decltype(tile_c)::value, kChunks = decltype(chunks_c)::value;
    const std::size_t smem = attention_smem_bytes(2, kTile, a.head_dim);
    launch_attention_kernel(attention_dq_kernel<kTile, kChunks>, "attention_dq_kernel", q_blocks, smem,
                            stream, q, k, v, dout, lse, static_cast<const float*>(delta), dq, d);
    launch_attention_kernel(attention_dkdv_kernel<kTile, kChunks>, "attention_dkdv_kernel", kv_blocks, smem,
                            stream, q, k, v, dout, lse, static_cast<const float*>(delta), dk, dv, d);
  });
}

}  // namespace basp::kernels::cuda
