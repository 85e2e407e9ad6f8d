// What the attention kernels share: the block design (a warp per row, a staged tile of the other
// operand), warp reductions, staging and accumulation helpers, and the host side's checks and launch.
#pragma once

#include "cuda_kernels.hpp"
#include "cuda_launch.cuh"

#include <climits>
#include <cmath>
#include <cstdint>
#include <type_traits>
#include <utility>

namespace basp::kernels::cuda::detail {

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

__device__ inline float warp_max(float x) {
  for (int offset = kWarpSize / 2; offset > 0; offset /= 2)
    x = fmaxf(x, __shfl_xor_sync(kFullMask, x, offset));
  return x;
}

__device__ inline float warp_sum(float x) {
  for (int offset = kWarpSize / 2; offset > 0; offset /= 2) x += __shfl_xor_sync(kFullMask, x, offset);
  return x;
}

// Row stride of the staging buffer in bf16 pairs: odd, so a warp reading one pair from each of 32
// rows touches 32 distinct banks.
__host__ __device__ inline int padded_row_pairs(long dh) {
  return int(dh / 2) | 1;
}

// Offset of row `token` of head `head` in a [nseq][seq][heads][dh] tensor.
__device__ inline long row_offset(long s, long token, long head, long seq, long heads, long dh) {
  return ((s * seq + token) * heads + head) * dh;
}

// One warp copies a bf16 row into fp32 shared memory.
__device__ inline void load_row(const bf16* src, float* dst, int half, int lane) {
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

__device__ inline QueryBlock query_block(const AttentionDims& d) {
  const long blocks_per_head = ceil_div(d.seq, kAttentionWarps);
  const long head_index = long(blockIdx.x) / blocks_per_head;
  const long reversed = blocks_per_head - 1 - long(blockIdx.x) % blocks_per_head;
  return {head_index / d.q_heads, head_index % d.q_heads, reversed * kAttentionWarps};
}

// What a query-row warp (forward, dQ) works on: its block, KV head g, row i, the block's last row,
// whether row i exists, and the first K and V rows of head g (rows kv_stride elements apart).
struct QueryRow {
  QueryBlock b;
  long g, i, last_row;
  bool active;
  long kv_stride;
  const bf16 *k_head, *v_head;
};

__device__ inline QueryRow query_row(const AttentionDims& d, int warp, const bf16* k, const bf16* v) {
  const QueryBlock b = query_block(d);
  const long g = b.h / d.group, i = b.first_row + warp;
  return {b,
          g,
          i,
          min_of(b.first_row + kAttentionWarps, d.seq) - 1,
          i < d.seq,
          d.kv_heads * d.dh,
          k + row_offset(b.s, 0, g, d.seq, d.kv_heads, d.dh),
          v + row_offset(b.s, 0, g, d.seq, d.kv_heads, d.dh)};
}

// ---------------------------------------------------------------------------------------------
// Host side

inline void check_attention_arguments(const AttentionShape& a, int tile) {
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

inline void check_pair_aligned(const void* p, const char* name) {
  if (reinterpret_cast<std::uintptr_t>(p) % alignof(bf162) != 0)
    throw std::invalid_argument(std::string("attention tensor ") + name + " must be 4-byte aligned");
}

inline AttentionDims attention_dims(const AttentionShape& a) {
  return {a.nseq, a.seq, a.q_heads, a.kv_heads, a.q_heads / a.kv_heads, a.head_dim, float(a.scale())};
}

// Dynamic shared memory of an attention kernel: `rows_per_warp` fp32 rows per warp plus the staging tile.
inline std::size_t attention_smem_bytes(int rows_per_warp, int tile, long dh) {
  return sizeof(float) *
         (std::size_t(rows_per_warp) * kAttentionWarps * dh + std::size_t(tile) * padded_row_pairs(dh));
}

inline unsigned attention_blocks(long nseq, long heads, long seq) {
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

}  // namespace basp::kernels::cuda::detail
