// The CUDA backend of the measured layer: bf16 device buffers, cuBLAS GEMMs (fp32 accumulation),
// the kernels of kernels/cuda_kernels.hpp, NCCL grouped send/recv all-to-all, CUDA-event phase timing.
#pragma once

#include <cublas_v2.h>
#include <nccl.h>

#include <string>
#include <vector>

#include "layer_ops.hpp"
#include "cuda_kernels.hpp"

namespace basp::validate {

// Throws std::runtime_error naming the call and the library's error string.
void cuda_check(cudaError_t e, const char* what);
void nccl_check(ncclResult_t e, const char* what);
void cublas_check(cublasStatus_t e, const char* what);

// Device memory holding bf16 tensors, or fp32 ones (attention's log-sum-exp, workspaces).
struct DeviceBuffer {
  void* ptr = nullptr;
  std::size_t bytes = 0;
  DeviceBuffer() = default;
  explicit DeviceBuffer(std::size_t size_bytes);
  DeviceBuffer(DeviceBuffer&& o) noexcept : ptr(o.ptr), bytes(o.bytes) {
    o.ptr = nullptr;
    o.bytes = 0;
  }
  kernels::cuda::bf16* bf16() const { return static_cast<kernels::cuda::bf16*>(ptr); }
  float* fp32() const { return static_cast<float*>(ptr); }
  std::size_t bf16_count() const { return bytes / 2; }
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer();
};

// Waits for `stream` while watching `comm` for NCCL errors; after timeout_s (0: forever) it
// aborts the communicator, prints what hung and exits 1, as the MPI watchdog does.
void wait_for_exchange(cudaStream_t stream, ncclComm_t comm, double timeout_s, int rank,
                       const std::string& what);

// LayerOps on one GPU: everything is queued on `stream`; begin/end record CUDA events, so phase
// times are GPU time, read back in finish_iteration.
struct CudaOps {
  using Buffer = DeviceBuffer;
  int rank = 0;
  cudaStream_t stream = nullptr;
  cublasHandle_t blas = nullptr;
  ncclComm_t group = nullptr;  // this rank's all-to-all group; owned
  double timeout_s = 0;
  int attention_tile = 64;
  DeviceBuffer workspace;  // attention backward's fp32 row sums, grown on demand
  std::vector<cudaEvent_t> starts, stops;
  std::vector<bool> recorded;

  CudaOps(int device, int rank, ncclComm_t group, double timeout_s, int attention_tile);
  ~CudaOps();
  CudaOps(const CudaOps&) = delete;
  CudaOps& operator=(const CudaOps&) = delete;

  Buffer alloc(long n) { return Buffer(std::size_t(n) * 2); }
  Buffer alloc_fp32(long n) { return Buffer(std::size_t(n) * 4); }
  void upload(Buffer& b, const std::vector<float>& host);
  std::vector<float> download(const Buffer& b);
  double element_bytes() const { return 2.0; }
  void start_iteration();
  PhaseTimes finish_iteration();
  // GPU time: NCCL's kernels wait for their peers inside the phase, so no wait is told apart.
  void wait_for_group(Phase) {}
  PhaseTimes peer_waits() const { return {}; }
  void begin(Phase p);
  void end(Phase p);

  void gemm(Trans ta, Trans tb, long m, long n, long k, const Buffer& a, const Buffer& b, Buffer& c,
            float beta);
  void rotary(Buffer& x, const kernels::ExchangeShape& s, long heads, long first_position, double theta,
              bool inverse);
  void scatter_heads_to_peers(const Buffer& src, Buffer& send, const kernels::ExchangeShape& s, long heads);
  void gather_tokens_from_peers(const Buffer& recv, Buffer& dst, const kernels::ExchangeShape& s,
                                long heads_per_peer);
  void scatter_tokens_to_peers(const Buffer& src, Buffer& send, const kernels::ExchangeShape& s,
                               long heads_per_peer);
  void gather_heads_from_peers(const Buffer& recv, Buffer& dst, const kernels::ExchangeShape& s, long heads);
  void attention_forward(const Buffer& q, const Buffer& k, const Buffer& v, Buffer& o, Buffer& lse,
                         const kernels::AttentionShape& a);
  void attention_backward(const Buffer& q, const Buffer& k, const Buffer& v, const Buffer& o,
                          const Buffer& dout, const Buffer& lse, Buffer& dq, Buffer& dk, Buffer& dv,
                          const kernels::AttentionShape& a);
  void all_to_all(const Buffer& send, Buffer& recv, long per_peer, Phase p);
};

static_assert(LayerOps<CudaOps>);

}  // namespace basp::validate
