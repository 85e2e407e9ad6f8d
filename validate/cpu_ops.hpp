// The CPU backend of the measured layer: fp32 buffers in host memory, Eigen GEMMs, the reference
// kernels of kernels/, MPI_Alltoall on the rank's group communicator, steady-clock phase timing.
#pragma once

#include <mpi.h>

#include <chrono>
#include <vector>

#include "layer_ops.hpp"
#include "watchdog.hpp"

namespace basp::validate {

// LayerOps over host memory; the attention tile is the CPU twin's key tile.
struct CpuOps {
  using Buffer = std::vector<float>;
  MPI_Comm group = MPI_COMM_NULL;
  Watchdog* watchdog = nullptr;
  long attention_tile = 64;
  int world_rank = 0;
  PhaseTimes times{};  // this iteration's
  PhaseTimes waits{};  // this iteration's, per exchange: waiting in the barrier before it
  std::chrono::steady_clock::time_point started;

  Buffer alloc(long n) { return Buffer(std::size_t(n), 0.0f); }
  Buffer alloc_fp32(long n) { return alloc(n); }
  void upload(Buffer& b, const std::vector<float>& host) { b = host; }
  std::vector<float> download(const Buffer& b) { return b; }
  double element_bytes() const { return sizeof(float); }
  void start_iteration() {
    times = {};
    waits = {};
  }
  PhaseTimes finish_iteration() { return times; }
  PhaseTimes peer_waits() const { return waits; }

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
  void wait_for_group(Phase p);  // MPI_Barrier on the group, timed into waits[p]

  void begin(Phase) { started = std::chrono::steady_clock::now(); }
  void end(Phase p) {
    times[int(p)] += std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  }
};

static_assert(LayerOps<CpuOps>);

}  // namespace basp::validate
