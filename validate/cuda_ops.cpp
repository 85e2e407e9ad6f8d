// CUDA backend operations. Row-major GEMMs go to column-major cuBLAS as Cᵀ = op(B)ᵀ·op(A)ᵀ; the
// all-to-all is grouped ncclSend/ncclRecv (NCCL ≥ 2.7), so the runner works with the node's NCCL.
#include "cuda_ops.hpp"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <thread>

#include "fault_injection.hpp"

namespace basp::validate {

void cuda_check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(e));
}
void nccl_check(ncclResult_t e, const char* what) {
  if (e != ncclSuccess) throw std::runtime_error(std::string(what) + ": " + ncclGetErrorString(e));
}
void cublas_check(cublasStatus_t e, const char* what) {
  if (e != CUBLAS_STATUS_SUCCESS)
    throw std::runtime_error(std::string(what) + ": " + cublasGetStatusString(e));
}

DeviceBuffer::DeviceBuffer(std::size_t size_bytes) : bytes(size_bytes) {
  if (bytes == 0) return;
  cuda_check(cudaMalloc(&ptr, bytes), "cudaMalloc");
  cuda_check(cudaMemset(ptr, 0, bytes), "cudaMemset");
}
DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& o) noexcept {
  if (this != &o) {
    if (ptr) cudaFree(ptr);
    ptr = o.ptr;
    bytes = o.bytes;
    o.ptr = nullptr;
    o.bytes = 0;
  }
  return *this;
}
DeviceBuffer::~DeviceBuffer() {
  if (ptr) cudaFree(ptr);
}

void wait_for_exchange(cudaStream_t stream, ncclComm_t comm, double timeout_s, int rank,
                       const std::string& what) {
  const auto start = std::chrono::steady_clock::now();
  for (;;) {
    const cudaError_t q = cudaStreamQuery(stream);
    if (q == cudaSuccess) return;
    if (q != cudaErrorNotReady) cuda_check(q, what.c_str());
    ncclResult_t async = ncclSuccess;
    nccl_check(ncclCommGetAsyncError(comm, &async), "ncclCommGetAsyncError");
    nccl_check(async, what.c_str());
    if (timeout_s > 0 &&
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() > timeout_s) {
      std::fprintf(
          stderr,
          "basp-validate: rank %d: %s did not complete within %g s (--timeout): a peer is missing, hung "
          "or far slower; aborting\n",
          rank, what.c_str(), timeout_s);
      std::fflush(stderr);
      ncclCommAbort(comm);
      std::_Exit(1);
    }
    std::this_thread::yield();
  }
}

CudaOps::CudaOps(int device, int rank_, ncclComm_t group_, double timeout, int tile)
    : rank(rank_), group(group_), timeout_s(timeout), attention_tile(tile) {
  cuda_check(cudaSetDevice(device), "cudaSetDevice");
  // A blocking stream: it orders after the legacy default stream, where cudaMalloc'd buffers are zeroed.
  cuda_check(cudaStreamCreate(&stream), "cudaStreamCreate");
  cublas_check(cublasCreate(&blas), "cublasCreate");
  cublas_check(cublasSetStream(blas, stream), "cublasSetStream");
  starts.resize(kPhases);
  stops.resize(kPhases);
  recorded.assign(kPhases, false);
  for (int p = 0; p < kPhases; ++p) {
    cuda_check(cudaEventCreate(&starts[p]), "cudaEventCreate");
    cuda_check(cudaEventCreate(&stops[p]), "cudaEventCreate");
  }
}

CudaOps::~CudaOps() {
  if (stream) cudaStreamSynchronize(stream);
  for (auto e : starts) cudaEventDestroy(e);
  for (auto e : stops) cudaEventDestroy(e);
  if (blas) cublasDestroy(blas);
  if (group) ncclCommDestroy(group);
  if (stream) cudaStreamDestroy(stream);
}

void CudaOps::upload(Buffer& b, const std::vector<float>& host) {
  std::vector<kernels::cuda::bf16> staged(host.size());
  for (std::size_t i = 0; i < host.size(); ++i) staged[i] = __float2bfloat16(host[i]);
  if (staged.size() * 2 > b.bytes) throw std::logic_error("upload larger than its device buffer");
  cuda_check(cudaMemcpyAsync(b.ptr, staged.data(), staged.size() * 2, cudaMemcpyHostToDevice, stream),
             "upload");
  cuda_check(cudaStreamSynchronize(stream), "upload");
}

std::vector<float> CudaOps::download(const Buffer& b) {
  std::vector<kernels::cuda::bf16> staged(b.bf16_count());
  cuda_check(cudaMemcpyAsync(staged.data(), b.ptr, b.bytes, cudaMemcpyDeviceToHost, stream), "download");
  cuda_check(cudaStreamSynchronize(stream), "download");
  std::vector<float> out(staged.size());
  for (std::size_t i = 0; i < staged.size(); ++i) out[i] = __bfloat162float(staged[i]);
  return out;
}

void CudaOps::start_iteration() {
  recorded.assign(kPhases, false);
}

PhaseTimes CudaOps::finish_iteration() {
  cuda_check(cudaStreamSynchronize(stream), "iteration");
  PhaseTimes t{};
  for (int p = 0; p < kPhases; ++p) {
    if (!recorded[p]) continue;
    float ms = 0;
    cuda_check(cudaEventElapsedTime(&ms, starts[p], stops[p]), "cudaEventElapsedTime");
    t[p] = double(ms) * 1e-3;
  }
  return t;
}

void CudaOps::begin(Phase p) {
  cuda_check(cudaEventRecord(starts[int(p)], stream), "cudaEventRecord");
}
void CudaOps::end(Phase p) {
  cuda_check(cudaEventRecord(stops[int(p)], stream), "cudaEventRecord");
  recorded[int(p)] = true;
  // Watched after the stop event is queued, so the host's polling never lands inside the phase.
  if (is_all_to_all(p) && timeout_s > 0)
    wait_for_exchange(stream, group, timeout_s, rank, "NCCL all-to-all " + std::string(kPhaseNames[int(p)]));
}

void CudaOps::gemm(Trans ta, Trans tb, long m, long n, long k, const Buffer& a, const Buffer& b, Buffer& c,
                   float beta) {
  // Row-major X (r×c) is column-major Xᵀ with leading dimension c.
  const cublasOperation_t op_b = tb == Trans::no ? CUBLAS_OP_N : CUBLAS_OP_T;
  const cublasOperation_t op_a = ta == Trans::no ? CUBLAS_OP_N : CUBLAS_OP_T;
  const long ldb = tb == Trans::no ? n : k, lda = ta == Trans::no ? k : m;
  const float alpha = 1.0f;
  cublas_check(cublasGemmEx(blas, op_b, op_a, int(n), int(m), int(k), &alpha, b.ptr, CUDA_R_16BF, int(ldb),
                            a.ptr, CUDA_R_16BF, int(lda), &beta, c.ptr, CUDA_R_16BF, int(n),
                            CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
               "cublasGemmEx");
}

void CudaOps::rotary(Buffer& x, const kernels::ExchangeShape& s, long heads, long first_position,
                     double theta, bool inverse) {
  kernels::cuda::rotary(x.bf16(), s, heads, first_position, theta, inverse, stream);
}
void CudaOps::scatter_heads_to_peers(const Buffer& src, Buffer& send, const kernels::ExchangeShape& s,
                                     long heads) {
  kernels::cuda::scatter_heads_to_peers(src.bf16(), send.bf16(), s, heads, stream);
}
void CudaOps::gather_tokens_from_peers(const Buffer& recv, Buffer& dst, const kernels::ExchangeShape& s,
                                       long heads_per_peer) {
  kernels::cuda::gather_tokens_from_peers(recv.bf16(), dst.bf16(), s, heads_per_peer, stream);
}
void CudaOps::scatter_tokens_to_peers(const Buffer& src, Buffer& send, const kernels::ExchangeShape& s,
                                      long heads_per_peer) {
  kernels::cuda::scatter_tokens_to_peers(src.bf16(), send.bf16(), s, heads_per_peer, stream);
}
void CudaOps::gather_heads_from_peers(const Buffer& recv, Buffer& dst, const kernels::ExchangeShape& s,
                                      long heads) {
  kernels::cuda::gather_heads_from_peers(recv.bf16(), dst.bf16(), s, heads, stream);
}
void CudaOps::attention_forward(const Buffer& q, const Buffer& k, const Buffer& v, Buffer& o, Buffer& lse,
                                const kernels::AttentionShape& a) {
  kernels::cuda::attention_forward(q.bf16(), k.bf16(), v.bf16(), o.bf16(), lse.fp32(), a, attention_tile,
                                   stream);
}
void CudaOps::attention_backward(const Buffer& q, const Buffer& k, const Buffer& v, const Buffer& o,
                                 const Buffer& dout, const Buffer& lse, Buffer& dq, Buffer& dk, Buffer& dv,
                                 const kernels::AttentionShape& a) {
  const std::size_t need = kernels::cuda::attention_backward_workspace_bytes(a);
  if (workspace.bytes < need) workspace = DeviceBuffer(need);
  kernels::cuda::attention_backward(q.bf16(), k.bf16(), v.bf16(), o.bf16(), dout.bf16(), lse.fp32(),
                                    dq.bf16(), dk.bf16(), dv.bf16(), a, attention_tile, workspace.ptr,
                                    stream);
}

void CudaOps::all_to_all(const Buffer& send, Buffer& recv, long per_peer, Phase) {
  exchange_faults(rank);
  int peers = 0;
  nccl_check(ncclCommCount(group, &peers), "ncclCommCount");
  nccl_check(ncclGroupStart(), "ncclGroupStart");
  for (int j = 0; j < peers; ++j) {
    nccl_check(
        ncclSend(send.bf16() + long(j) * per_peer, std::size_t(per_peer), ncclBfloat16, j, group, stream),
        "ncclSend");
    nccl_check(
        ncclRecv(recv.bf16() + long(j) * per_peer, std::size_t(per_peer), ncclBfloat16, j, group, stream),
        "ncclRecv");
  }
  nccl_check(ncclGroupEnd(), "ncclGroupEnd");
}

}  // namespace basp::validate
