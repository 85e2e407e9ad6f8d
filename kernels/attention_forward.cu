// Causal flash-style attention forward on the GPU (bf16 data, fp32 math): a warp per query row,
// online softmax over staged key tiles; writes O and the log-sum-exp. Twin of attention_forward.cpp.
#include "attention_common.cuh"
#include "cuda_kernels.hpp"

namespace basp::kernels::cuda {
namespace {

using namespace detail;

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

  const auto [b, g, i, last_row, active, kv_stride, k_head, v_head] = query_row(d, warp, k, v);
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

}  // namespace

// ---------------------------------------------------------------------------------------------
// Host launchers

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

}  // namespace basp::kernels::cuda
