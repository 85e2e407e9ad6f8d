// The operations a backend gives the measured layer, stated once as a C++20 concept: the CPU
// backend (cpu_ops.hpp) and the CUDA backend (cuda_ops.hpp) are each checked against it at compile time.
#pragma once

#include "layouts.hpp"
#include "phases.hpp"

#include <concepts>
#include <vector>

namespace basp::validate {

enum class Trans { no, yes };

// A backend Ops holds one rank's device (or host) and its all-to-all group. Tensors are Buffers of
// `element_bytes()`-sized elements, laid out as kernels/layouts.hpp says.
//
// Memory: alloc(n) n activation elements (zeroed on the CPU), alloc_fp32(n) n fp32 elements
// (attention's log-sum-exp); upload(buffer, host values) and download(buffer) convert from and to fp32.
// Math: gemm(ta, tb, m, n, k, A, B, C, beta) is row-major C = op(A)·op(B) + beta·C (C is m×n); the
// kernels (rotary, the four exchange packs, attention forward and backward) have the semantics of
// kernels/cpu_kernels.hpp, over Buffers: the head exchanges take the tensor's heads, the token
// exchanges the heads each peer holds (heads_per_peer). all_to_all(send, recv, elements per peer, phase) exchanges
// within the rank's group.
// Timing: start_iteration() clears the phase times, begin(p) / end(p) bracket a phase (times add up
// when a phase repeats), finish_iteration() returns the iteration's times in seconds.
template <class Ops>
concept LayerOps = requires(Ops& ops, typename Ops::Buffer& out, const typename Ops::Buffer& in,
                            const std::vector<float>& host, const kernels::ExchangeShape& s,
                            const kernels::AttentionShape& a, Trans ta, Trans tb, Phase p, long n, long m,
                            long k, float beta, long heads, long heads_per_peer, long first_position,
                            double theta, bool inverse, long per_peer) {
  { ops.alloc(n) } -> std::same_as<typename Ops::Buffer>;
  { ops.alloc_fp32(n) } -> std::same_as<typename Ops::Buffer>;
  ops.upload(out, host);
  { ops.download(in) } -> std::same_as<std::vector<float>>;
  { ops.element_bytes() } -> std::convertible_to<double>;

  ops.gemm(ta, tb, m, n, k, in, in, out, beta);
  ops.rotary(out, s, heads, first_position, theta, inverse);
  ops.scatter_heads_to_peers(in, out, s, heads);
  ops.gather_tokens_from_peers(in, out, s, heads_per_peer);
  ops.scatter_tokens_to_peers(in, out, s, heads_per_peer);
  ops.gather_heads_from_peers(in, out, s, heads);
  ops.attention_forward(in, in, in, out, out, a);
  ops.attention_backward(in, in, in, in, in, in, out, out, out, a);
  ops.all_to_all(in, out, per_peer, p);
  ops.wait_for_group(p);

  ops.start_iteration();
  ops.begin(p);
  ops.end(p);
  { ops.finish_iteration() } -> std::same_as<PhaseTimes>;
  { ops.peer_waits() } -> std::same_as<PhaseTimes>;
};

}  // namespace basp::validate
