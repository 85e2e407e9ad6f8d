// CUDA kernels of the measured layer (bf16 data, fp32 arithmetic), twins of cpu_kernels.hpp, one
// file per operation: exchange.cu, rotary.cu, attention_forward.cu, attention_backward.cu.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include <array>
#include <cstddef>

#include "layouts.hpp"

namespace basp::kernels::cuda {

using bf16 = __nv_bfloat16;

// Same layouts and semantics as the CPU twins; every call is asynchronous on `stream`.
void scatter_heads_to_peers(const bf16* src, bf16* send, const ExchangeShape& s, long heads,
                            cudaStream_t stream);
void gather_tokens_from_peers(const bf16* recv, bf16* dst, const ExchangeShape& s, long heads_per_peer,
                              cudaStream_t stream);
void scatter_tokens_to_peers(const bf16* src, bf16* send, const ExchangeShape& s, long heads_per_peer,
                             cudaStream_t stream);
// Replicated heads' gradients are summed in fp32, then rounded once.
void gather_heads_from_peers(const bf16* recv, bf16* dst, const ExchangeShape& s, long heads,
                             cudaStream_t stream);
void rotary(bf16* x, const ExchangeShape& s, long heads, long first_position, double theta, bool inverse,
            cudaStream_t stream);

// Keys (forward, dQ) or queries (dK, dV) staged in shared memory per step. Every size is tested.
constexpr std::array<int, 3> kAttentionTiles = {32, 64, 128};
constexpr long kMaxHeadDim = 256;  // head_dim must be even and at most this
// Throws std::invalid_argument for an unsupported tile or head_dim.
void attention_forward(const bf16* q, const bf16* k, const bf16* v, bf16* o, float* lse,
                       const AttentionShape& a, int tile, cudaStream_t stream);
// `workspace` holds attention_backward_workspace_bytes(a) bytes of device memory (fp32 row sums).
std::size_t attention_backward_workspace_bytes(const AttentionShape& a);
void attention_backward(const bf16* q, const bf16* k, const bf16* v, const bf16* o, const bf16* dout,
                        const float* lse, bf16* dq, bf16* dk, bf16* dv, const AttentionShape& a, int tile,
                        void* workspace, cudaStream_t stream);

}  // namespace basp::kernels::cuda
