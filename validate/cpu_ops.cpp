// CPU backend operations. GEMMs map the row-major buffers into Eigen; the exchange is one
// MPI_Alltoall over the group's communicator, guarded by the watchdog (faults injected first).
#include "cpu_ops.hpp"

#include <Eigen/Core>
#include <climits>
#include <stdexcept>
#include <string>

#include "cpu_kernels.hpp"
#include "fault_injection.hpp"

namespace basp::validate {

namespace {
using RowMat = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using ConstMap = Eigen::Map<const RowMat>;
}  // namespace

void CpuOps::gemm(Trans ta, Trans tb, long m, long n, long k, const Buffer& a, const Buffer& b, Buffer& c,
                  float beta) {
  // op(A) is m×k: A is stored m×k, or k×m when transposed; likewise op(B) is k×n.
  const ConstMap A(a.data(), ta == Trans::no ? m : k, ta == Trans::no ? k : m);
  const ConstMap B(b.data(), tb == Trans::no ? k : n, tb == Trans::no ? n : k);
  Eigen::Map<RowMat> C(c.data(), m, n);
  if (beta == 0.0f)
    C.setZero();
  else
    C *= beta;
  if (ta == Trans::no && tb == Trans::no)
    C.noalias() += A * B;
  else if (ta == Trans::no)
    C.noalias() += A * B.transpose();
  else if (tb == Trans::no)
    C.noalias() += A.transpose() * B;
  else
    C.noalias() += A.transpose() * B.transpose();
}

void CpuOps::rotary(Buffer& x, const kernels::ExchangeShape& s, long heads, long first_position, double theta,
                    bool inverse) {
  kernels::cpu::rotary(x.data(), s, heads, first_position, theta, inverse);
}
void CpuOps::scatter_heads_to_peers(const Buffer& src, Buffer& send, const kernels::ExchangeShape& s,
                                    long heads) {
  kernels::cpu::scatter_heads_to_peers(src.data(), send.data(), s, heads);
}
void CpuOps::gather_tokens_from_peers(const Buffer& recv, Buffer& dst, const kernels::ExchangeShape& s,
                                      long heads_per_peer) {
  kernels::cpu::gather_tokens_from_peers(recv.data(), dst.data(), s, heads_per_peer);
}
void CpuOps::scatter_tokens_to_peers(const Buffer& src, Buffer& send, const kernels::ExchangeShape& s,
                                     long heads_per_peer) {
  kernels::cpu::scatter_tokens_to_peers(src.data(), send.data(), s, heads_per_peer);
}
void CpuOps::gather_heads_from_peers(const Buffer& recv, Buffer& dst, const kernels::ExchangeShape& s,
                                     long heads) {
  kernels::cpu::gather_heads_from_peers(recv.data(), dst.data(), s, heads);
}
void CpuOps::attention_forward(const Buffer& q, const Buffer& k, const Buffer& v, Buffer& o, Buffer& lse,
                               const kernels::AttentionShape& a) {
  kernels::cpu::attention_forward(q.data(), k.data(), v.data(), o.data(), lse.data(), a, attention_tile);
}
void CpuOps::attention_backward(const Buffer& q, const Buffer& k, const Buffer& v, const Buffer& o,
                                const Buffer& dout, const Buffer& lse, Buffer& dq, Buffer& dk, Buffer& dv,
                                const kernels::AttentionShape& a) {
  kernels::cpu::attention_backward(q.data(), k.data(), v.data(), o.data(), dout.data(), lse.data(), dq.data(),
                                   dk.data(), dv.data(), a);
}

void CpuOps::wait_for_group(Phase p) {
  exchange_faults(world_rank);
  const auto arrived = std::chrono::steady_clock::now();
  if (watchdog) watchdog->arm("MPI_Barrier before " + std::string(kPhaseNames[int(p)]));
  MPI_Barrier(group);
  if (watchdog) watchdog->disarm();
  waits[int(p)] += std::chrono::duration<double>(std::chrono::steady_clock::now() - arrived).count();
}

void CpuOps::all_to_all(const Buffer& send, Buffer& recv, long per_peer, Phase p) {
  if (per_peer > long(INT_MAX))
    throw std::runtime_error("all-to-all of " + std::to_string(per_peer) +
                             " elements per peer exceeds MPI's int count");
  if (watchdog) watchdog->arm("MPI_Alltoall " + std::string(kPhaseNames[int(p)]));
  MPI_Alltoall(send.data(), int(per_peer), MPI_FLOAT, recv.data(), int(per_peer), MPI_FLOAT, group);
  if (watchdog) watchdog->disarm();
}

}  // namespace basp::validate
