// One rank's share of the sequence-parallel attention layer, forward and backward, written once
// over a backend `Ops` (CPU: Eigen + reference kernels + MPI; CUDA: cuBLAS + kernels/ + NCCL).
#pragma once

#include "layer_config.hpp"
#include "layer_ops.hpp"
#include "layouts.hpp"
#include "phases.hpp"

namespace basp::validate {

template <LayerOps Ops>
struct AttentionLayer {
  using Buffer = typename Ops::Buffer;
  Ops& ops;
  LayerShape shape;
  RankPlan plan;
  long T, D, hq, hk, dh;  // local tokens, hidden, local query / KV heads, head dim
  kernels::ExchangeShape ex;
  Buffer x, dy, wq, wk, wv, wo;                           // inputs
  Buffer q, k, v, o_local, y;                             // [T][heads·dh], [T][D]
  Buffer send_q, recv_q, send_k, recv_k, send_v, recv_v;  // [peer][T][h/P][dh], reused backward
  Buffer qa, ka, va, oa, lse;                             // [nseq][S][h/P][dh], lse [nseq][hq][S]
  Buffer do_local, doa, dqa, dka, dva, dq, dk, dv;        // gradients
  Buffer dx, dwq, dwk, dwv, dwo;

  AttentionLayer(Ops& o, const LayerShape& s, const RankPlan& p)
      : ops(o),
        shape(s),
        plan(p),
        T(p.exchange.tokens()),
        D(s.hidden),
        hq(p.q_heads_local()),
        hk(p.kv_heads_local()),
        dh(s.head_dim),
        ex(p.exchange) {
    const long P = ex.peers, H = s.heads, Hk = s.kv_heads;
    x = ops.alloc(T * D);
    dy = ops.alloc(T * D);
    y = ops.alloc(T * D);
    dx = ops.alloc(T * D);
    wq = ops.alloc(D * H * dh);
    wk = ops.alloc(D * Hk * dh);
    wv = ops.alloc(D * Hk * dh);
    wo = ops.alloc(H * dh * D);
    dwq = ops.alloc(D * H * dh);
    dwk = ops.alloc(D * Hk * dh);
    dwv = ops.alloc(D * Hk * dh);
    dwo = ops.alloc(H * dh * D);
    q = ops.alloc(T * H * dh);
    k = ops.alloc(T * Hk * dh);
    v = ops.alloc(T * Hk * dh);
    o_local = ops.alloc(T * H * dh);
    do_local = ops.alloc(T * H * dh);
    dq = ops.alloc(T * H * dh);
    dk = ops.alloc(T * Hk * dh);
    dv = ops.alloc(T * Hk * dh);
    send_q = ops.alloc(T * H * dh);
    recv_q = ops.alloc(T * H * dh);
    send_k = ops.alloc(P * T * hk * dh);
    recv_k = ops.alloc(P * T * hk * dh);
    send_v = ops.alloc(P * T * hk * dh);
    recv_v = ops.alloc(P * T * hk * dh);
    const long S = ex.seq_len(), n = ex.nseq;
    qa = ops.alloc(n * S * hq * dh);
    oa = ops.alloc(n * S * hq * dh);
    doa = ops.alloc(n * S * hq * dh);
    dqa = ops.alloc(n * S * hq * dh);
    lse = ops.alloc_fp32(n * hq * S);
    ka = ops.alloc(n * S * hk * dh);
    va = ops.alloc(n * S * hk * dh);
    dka = ops.alloc(n * S * hk * dh);
    dva = ops.alloc(n * S * hk * dh);
  }

  kernels::AttentionShape attention_shape() const { return {ex.nseq, ex.seq_len(), hq, hk, dh}; }
  long elements_per_peer_q() const { return T * hq * dh; }
  long elements_per_peer_kv() const { return T * hk * dh; }

  void forward() {
    const long H = shape.heads, Hk = shape.kv_heads;
    ops.begin(Phase::qkv_proj);
    ops.gemm(Trans::no, Trans::no, T, H * dh, D, x, wq, q, 0.0f);
    ops.gemm(Trans::no, Trans::no, T, Hk * dh, D, x, wk, k, 0.0f);
    ops.gemm(Trans::no, Trans::no, T, Hk * dh, D, x, wv, v, 0.0f);
    ops.end(Phase::qkv_proj);
    ops.begin(Phase::rotary);
    ops.rotary(q, ex, H, plan.first_position, shape.rope_theta, false);
    ops.rotary(k, ex, Hk, plan.first_position, shape.rope_theta, false);
    ops.end(Phase::rotary);
    ops.begin(Phase::pack_qkv);
    ops.scatter_heads_to_peers(q, send_q, ex, H);
    ops.scatter_heads_to_peers(k, send_k, ex, Hk);
    ops.scatter_heads_to_peers(v, send_v, ex, Hk);
    ops.end(Phase::pack_qkv);
    exchange(Phase::a2a_q, send_q, recv_q, elements_per_peer_q());
    exchange(Phase::a2a_k, send_k, recv_k, elements_per_peer_kv());
    exchange(Phase::a2a_v, send_v, recv_v, elements_per_peer_kv());
    ops.begin(Phase::unpack_qkv);
    ops.gather_tokens_from_peers(recv_q, qa, ex, hq);
    ops.gather_tokens_from_peers(recv_k, ka, ex, hk);
    ops.gather_tokens_from_peers(recv_v, va, ex, hk);
    ops.end(Phase::unpack_qkv);
    ops.begin(Phase::attn_fwd);
    ops.attention_forward(qa, ka, va, oa, lse, attention_shape());
    ops.end(Phase::attn_fwd);
    ops.begin(Phase::pack_o);
    ops.scatter_tokens_to_peers(oa, send_q, ex, hq);
    ops.end(Phase::pack_o);
    exchange(Phase::a2a_o, send_q, recv_q, elements_per_peer_q());
    ops.begin(Phase::unpack_o);
    ops.gather_heads_from_peers(recv_q, o_local, ex, H);
    ops.end(Phase::unpack_o);
    ops.begin(Phase::out_proj);
    ops.gemm(Trans::no, Trans::no, T, D, H * dh, o_local, wo, y, 0.0f);
    ops.end(Phase::out_proj);
  }

  void backward() {
    const long H = shape.heads, Hk = shape.kv_heads;
    ops.begin(Phase::out_proj_bwd);
    ops.gemm(Trans::no, Trans::yes, T, H * dh, D, dy, wo, do_local, 0.0f);
    ops.gemm(Trans::yes, Trans::no, H * dh, D, T, o_local, dy, dwo, 0.0f);
    ops.end(Phase::out_proj_bwd);
    ops.begin(Phase::pack_do);
    ops.scatter_heads_to_peers(do_local, send_q, ex, H);
    ops.end(Phase::pack_do);
    exchange(Phase::a2a_do, send_q, recv_q, elements_per_peer_q());
    ops.begin(Phase::unpack_do);
    ops.gather_tokens_from_peers(recv_q, doa, ex, hq);
    ops.end(Phase::unpack_do);
    ops.begin(Phase::attn_bwd);
    ops.attention_backward(qa, ka, va, oa, doa, lse, dqa, dka, dva, attention_shape());
    ops.end(Phase::attn_bwd);
    ops.begin(Phase::pack_dqkv);
    ops.scatter_tokens_to_peers(dqa, send_q, ex, hq);
    ops.scatter_tokens_to_peers(dka, send_k, ex, hk);
    ops.scatter_tokens_to_peers(dva, send_v, ex, hk);
    ops.end(Phase::pack_dqkv);
    exchange(Phase::a2a_dq, send_q, recv_q, elements_per_peer_q());
    exchange(Phase::a2a_dk, send_k, recv_k, elements_per_peer_kv());
    exchange(Phase::a2a_dv, send_v, recv_v, elements_per_peer_kv());
    ops.begin(Phase::unpack_dqkv);  // replicated KV heads: the peers' gradients are summed here
    ops.gather_heads_from_peers(recv_q, dq, ex, H);
    ops.gather_heads_from_peers(recv_k, dk, ex, Hk);
    ops.gather_heads_from_peers(recv_v, dv, ex, Hk);
    ops.end(Phase::unpack_dqkv);
    ops.begin(Phase::rotary_bwd);
    ops.rotary(dq, ex, H, plan.first_position, shape.rope_theta, true);
    ops.rotary(dk, ex, Hk, plan.first_position, shape.rope_theta, true);
    ops.end(Phase::rotary_bwd);
    ops.begin(Phase::qkv_proj_bwd);
    ops.gemm(Trans::no, Trans::yes, T, D, H * dh, dq, wq, dx, 0.0f);
    ops.gemm(Trans::no, Trans::yes, T, D, Hk * dh, dk, wk, dx, 1.0f);
    ops.gemm(Trans::no, Trans::yes, T, D, Hk * dh, dv, wv, dx, 1.0f);
    ops.gemm(Trans::yes, Trans::no, D, H * dh, T, x, dq, dwq, 0.0f);
    ops.gemm(Trans::yes, Trans::no, D, Hk * dh, T, x, dk, dwk, 0.0f);
    ops.gemm(Trans::yes, Trans::no, D, Hk * dh, T, x, dv, dwv, 0.0f);
    ops.end(Phase::qkv_proj_bwd);
  }

  // The step's eight exchanges one after another with nothing between them: each one's time
  // alone, to set beside its time in the step (contention with nothing but itself).
  void exchanges_alone() {
    exchange(Phase::a2a_q, send_q, recv_q, elements_per_peer_q());
    exchange(Phase::a2a_k, send_k, recv_k, elements_per_peer_kv());
    exchange(Phase::a2a_v, send_v, recv_v, elements_per_peer_kv());
    exchange(Phase::a2a_o, send_q, recv_q, elements_per_peer_q());
    exchange(Phase::a2a_do, send_q, recv_q, elements_per_peer_q());
    exchange(Phase::a2a_dq, send_q, recv_q, elements_per_peer_q());
    exchange(Phase::a2a_dk, send_k, recv_k, elements_per_peer_kv());
    exchange(Phase::a2a_dv, send_v, recv_v, elements_per_peer_kv());
  }

 private:
  // The group is aligned first (timed apart as the exchange's wait for its last member), so that the
  // phase's own time is its transfer, as nccl-tests times a collective.
  void exchange(Phase p, Buffer& send, Buffer& recv, long per_peer) {
    ops.wait_for_group(p);
    ops.begin(p);
    ops.all_to_all(send, recv, per_peer, p);
    ops.end(p);
  }
};

}  // namespace basp::validate
