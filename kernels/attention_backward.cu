// Causal attention backward on the GPU (bf16 data, fp32 math): row sums D = rowsum(dO∘O), a dQ
// kernel (warp per query row) and a dK/dV kernel (warp per key row), no atomics. Twin of attention_backward.cpp.
#include "attention_common.cuh"
#include "cuda_kernels.hpp"

namespace basp::kernels::cuda {
namespace {

using namespace detail;

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

  const auto [b, g, i, last_row, active, kv_stride, k_head, v_head] = query_row(d, warp, k, v);
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

}  // namespace

// ---------------------------------------------------------------------------------------------
// Host launchers

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
