// CUDA launch plumbing shared by the kernel files: error checks, grid-stride loops for
// elementwise kernels, warp constants. Included by .cu files only.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <stdexcept>
#include <string>

namespace basp::kernels::cuda::detail {

using bf162 = __nv_bfloat162;

constexpr unsigned kFullMask = 0xffffffffu;
constexpr int kWarpSize = 32;

inline void throw_on_error(cudaError_t err, const char* what) {
  if (err != cudaSuccess) throw std::runtime_error(std::string(what) + " failed: " + cudaGetErrorString(err));
}

inline void check_launch(const char* kernel) {
  throw_on_error(cudaGetLastError(), kernel);
}

__host__ __device__ inline long ceil_div(long a, long b) {
  return (a + b - 1) / b;
}
__device__ inline long min_of(long a, long b) {
  return a < b ? a : b;
}
__device__ inline long max_of(long a, long b) {
  return a > b ? a : b;
}

// Elementwise kernels loop grid-stride, so the grid stays small however large the tensor is.
constexpr int kElementThreads = 256;
constexpr long kMaxElementBlocks = 1L << 20;

inline unsigned elementwise_blocks(long n) {
  return unsigned(std::min(ceil_div(n, kElementThreads), kMaxElementBlocks));
}

__device__ inline long first_thread_index() {
  return long(blockIdx.x) * blockDim.x + threadIdx.x;
}
__device__ inline long grid_thread_count() {
  return long(gridDim.x) * blockDim.x;
}

}  // namespace basp::kernels::cuda::detail
