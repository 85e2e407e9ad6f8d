// `basp-validate compute`: the layer's GEMMs, causal attention and memory-bound kernels (rotary,
// pack, unpack) at one rank's shapes under each strategy, timed on every rank at once (as in training).
#pragma once

#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "attention_layer.hpp"
#include "control.hpp"
#include "hardware.hpp"
#include "inputs.hpp"
#include "json_output.hpp"
#include "options.hpp"
#include "stats.hpp"

namespace basp::validate {

// FLOPs of causal attention forward over nseq sequences of S tokens: QKᵀ and PV over the S(S+1)/2
// visible pairs. Backward executes 2.5× that (the scores are recomputed), the count the simulator uses.
inline double attention_forward_flops(const kernels::AttentionShape& a) {
  return 4.0 * a.nseq * double(a.q_heads) * double(a.head_dim) * double(a.seq) * double(a.seq + 1) / 2.0;
}

template <LayerOps Ops>
int compute_command(const ValidateOptions& o, Control& ctl, Hardware hw, const std::string& precision,
                    Ops& ops) {
  const int N = o.compute_ranks > 0 ? o.compute_ranks : ctl.size();
  for (LayerStrategy s : o.strategies) check_layer_problem(s, o.shape, N);
  auto json = open_json_output(o.json_path, ctl);
  struct Op {
    const char* name;
    Phase phase;
    double flops;
    std::string shape;
    double bytes = 0;  // memory-bound kernels: bytes read and written
  };
  nlohmann::json results = nlohmann::json::array();
  std::ostringstream table;
  char b[320];
  for (LayerStrategy s : o.strategies) {
    const RankPlan plan = plan_rank(s, o.shape, N, 0);
    AttentionLayer<Ops> L(ops, o.shape, plan);
    ops.upload(L.x, token_slice(o.seed, InputTensor::x, o.shape, plan));
    const double T = double(L.T), D = double(L.D), H = o.shape.heads, Hk = o.shape.kv_heads,
                 dh = double(L.dh), e = ops.element_bytes();
    const kernels::AttentionShape a = L.attention_shape();
    const double fwd = attention_forward_flops(a);
    // Q, K, V per peer (K and V replicated when the group has more ranks than KV heads), read and
    // written once: what the packs and the token unpacks move.
    const double qkv_bytes = 2 * e * (T * H * dh + 2 * double(L.ex.peers) * T * double(L.hk) * dh);
    const std::vector<Op> ops_list = {
        {"gemm_qkv", Phase::qkv_proj, 2 * T * D * (H + 2 * Hk) * dh,
         std::to_string(L.T) + "x" + std::to_string(L.D) + " . " + std::to_string(L.D) + "x(" +
             std::to_string(long(H + 2 * Hk)) + "*" + std::to_string(L.dh) + ")"},
        {"gemm_out", Phase::out_proj, 2 * T * H * dh * D,
         std::to_string(L.T) + "x" + std::to_string(long(H * dh)) + " . " + std::to_string(long(H * dh)) +
             "x" + std::to_string(L.D)},
        {"gemm_bwd", Phase::qkv_proj_bwd, 2 * 2 * T * D * (2 * H + 2 * Hk) * dh, "dgrad + wgrad of both"},
        {"attn_fwd", Phase::attn_fwd, fwd,
         std::to_string(a.nseq) + " seq x " + std::to_string(a.seq) + " tok x " + std::to_string(a.q_heads) +
             "/" + std::to_string(a.kv_heads) + " heads x " + std::to_string(a.head_dim)},
        {"attn_bwd", Phase::attn_bwd, 2.5 * fwd, "as attn_fwd"},
        // Read and written once each, as the cost model counts them: Q and K rotated in place;
        // Q, K, V packed per peer (K and V replicated when the group has more ranks than KV heads).
        {"rotary", Phase::rotary, 0, "Q and K in place", 2 * e * T * (H + Hk) * dh},
        {"pack_qkv", Phase::pack_qkv, 0, "Q, K, V to " + std::to_string(L.ex.peers) + " peers", qkv_bytes},
        // The unpacks: tokens from peers (a copy, as the packs), and heads from peers, whose
        // kernel zero-fills its output and adds each peer's heads into it (replicated KV heads'
        // gradients are summed): counted as a copy, its extra traffic is in its efficiency.
        {"unpack_qkv", Phase::unpack_qkv, 0, "Q, K, V from " + std::to_string(L.ex.peers) + " peers", qkv_bytes},
        {"unpack_o", Phase::unpack_o, 0, "O's heads from " + std::to_string(L.ex.peers) + " peers, summed",
         2 * e * T * H * dh}};
    std::vector<double> mine;
    for (int it = 0; it < o.warmup + o.iters; ++it) {
      ctl.barrier();
      ops.start_iteration();
      ops.begin(Phase::qkv_proj);
      ops.gemm(Trans::no, Trans::no, L.T, long(H * dh), L.D, L.x, L.wq, L.q, 0.0f);
      ops.gemm(Trans::no, Trans::no, L.T, long(Hk * dh), L.D, L.x, L.wk, L.k, 0.0f);
      ops.gemm(Trans::no, Trans::no, L.T, long(Hk * dh), L.D, L.x, L.wv, L.v, 0.0f);
      ops.end(Phase::qkv_proj);
      ops.begin(Phase::out_proj);
      ops.gemm(Trans::no, Trans::no, L.T, L.D, long(H * dh), L.o_local, L.wo, L.y, 0.0f);
      ops.end(Phase::out_proj);
      ops.begin(Phase::qkv_proj_bwd);
      ops.gemm(Trans::no, Trans::yes, L.T, long(H * dh), L.D, L.dy, L.wo, L.do_local, 0.0f);
      ops.gemm(Trans::yes, Trans::no, long(H * dh), L.D, L.T, L.o_local, L.dy, L.dwo, 0.0f);
      ops.gemm(Trans::no, Trans::yes, L.T, L.D, long(H * dh), L.dq, L.wq, L.dx, 0.0f);
      ops.gemm(Trans::no, Trans::yes, L.T, L.D, long(Hk * dh), L.dk, L.wk, L.dx, 1.0f);
      ops.gemm(Trans::no, Trans::yes, L.T, L.D, long(Hk * dh), L.dv, L.wv, L.dx, 1.0f);
      ops.gemm(Trans::yes, Trans::no, L.D, long(H * dh), L.T, L.x, L.dq, L.dwq, 0.0f);
      ops.gemm(Trans::yes, Trans::no, L.D, long(Hk * dh), L.T, L.x, L.dk, L.dwk, 0.0f);
      ops.gemm(Trans::yes, Trans::no, L.D, long(Hk * dh), L.T, L.x, L.dv, L.dwv, 0.0f);
      ops.end(Phase::qkv_proj_bwd);
      ops.begin(Phase::attn_fwd);
      ops.attention_forward(L.qa, L.ka, L.va, L.oa, L.lse, a);
      ops.end(Phase::attn_fwd);
      ops.begin(Phase::attn_bwd);
      ops.attention_backward(L.qa, L.ka, L.va, L.oa, L.doa, L.lse, L.dqa, L.dka, L.dva, a);
      ops.end(Phase::attn_bwd);
      ops.begin(Phase::rotary);
      ops.rotary(L.q, L.ex, long(H), plan.first_position, o.shape.rope_theta, false);
      ops.rotary(L.k, L.ex, long(Hk), plan.first_position, o.shape.rope_theta, false);
      ops.end(Phase::rotary);
      ops.begin(Phase::pack_qkv);
      ops.scatter_heads_to_peers(L.q, L.send_q, L.ex, long(H));
      ops.scatter_heads_to_peers(L.k, L.send_k, L.ex, long(Hk));
      ops.scatter_heads_to_peers(L.v, L.send_v, L.ex, long(Hk));
      ops.end(Phase::pack_qkv);
      ops.begin(Phase::unpack_qkv);
      ops.gather_tokens_from_peers(L.recv_q, L.qa, L.ex, L.hq);
      ops.gather_tokens_from_peers(L.recv_k, L.ka, L.ex, L.hk);
      ops.gather_tokens_from_peers(L.recv_v, L.va, L.ex, L.hk);
      ops.end(Phase::unpack_qkv);
      ops.begin(Phase::unpack_o);
      ops.gather_heads_from_peers(L.recv_q, L.o_local, L.ex, long(H));
      ops.end(Phase::unpack_o);
      const PhaseTimes t = ops.finish_iteration();
      if (it >= o.warmup) mine.insert(mine.end(), t.begin(), t.end());
    }
    const std::vector<double> all = ctl.gather_vector(mine);
    if (ctl.rank() != 0) continue;
    for (const Op& op : ops_list) {
      std::vector<double> samples;
      for (std::size_t i = 0; i < all.size(); i += kPhases) samples.push_back(all[i + std::size_t(op.phase)]);
      const Stats st = stats_of(samples);
      const double tflops = op.flops / st.median / 1e12, gbps = op.bytes / st.median / 1e9;
      if (op.bytes > 0)  // memory-bound: the achieved rate is bandwidth
        std::snprintf(b, sizeof b, " %9s %9s %14.4e %10.1f %10.1f %10.1f %7.2f GB/s %s\n",
                      strategy_name(s).c_str(), op.name, op.bytes, st.min * 1e6, st.median * 1e6,
                      st.max * 1e6, gbps, op.shape.c_str());
      else
        std::snprintf(b, sizeof b, " %9s %9s %14.4e %10.1f %10.1f %10.1f %10.3f   %s\n",
                      strategy_name(s).c_str(), op.name, op.flops, st.min * 1e6, st.median * 1e6,
                      st.max * 1e6, tflops, op.shape.c_str());
      table << b;
      nlohmann::json row = {{"strategy", strategy_name(s)},
                            {"op", op.name},
                            {"shape", op.shape},
                            {"flops", op.flops},
                            {"bytes", op.bytes},
                            {"min_s", st.min},
                            {"median_s", st.median},
                            {"max_s", st.max},
                            {"times_s", samples}};
      if (op.bytes > 0)
        row["gbps"] = gbps;
      else
        row["tflops"] = tflops;
      results.push_back(row);
    }
  }
  if (ctl.rank() == 0) {
    const LayerShape& sh = o.shape;
    std::cout << "# basp-validate compute: one rank's GEMMs and attention, all ranks at once\n";
    for (const auto& line : header_lines(hw)) std::cout << "#  " << line << "\n";
    std::cout << "#  model " << o.model << ": heads " << sh.heads << ", kv heads " << sh.kv_heads
              << ", head dim " << sh.head_dim << ", hidden " << sh.hidden << ", seq " << sh.seq
              << ", micro-batch " << sh.batch << ", shapes of N = " << N << " ranks; precision " << precision
              << "\n";
    std::cout
        << "#  attention FLOPs: causal pairs only; attn_bwd counts 2.5x forward (scores recomputed)\n"
        << "#  rotary, pack_qkv: memory-bound; the flops column holds their bytes (read + written)\n#\n";
    std::snprintf(b, sizeof b, "#%9s %9s %14s %10s %10s %10s %10s   %s\n", "strategy", "op", "flops", "min",
                  "median", "max", "achieved", "shape");
    std::cout << b;
    std::snprintf(b, sizeof b, "#%9s %9s %14s %10s %10s %10s %10s\n", "", "", "(FLOP)", "(us)", "(us)",
                  "(us)", "(TFLOP/s)");
    std::cout << b << table.str() << std::flush;
    nlohmann::json config = {
        {"model", o.model},        {"precision", precision},  {"heads", sh.heads},
        {"kv_heads", sh.kv_heads}, {"head_dim", sh.head_dim}, {"hidden", sh.hidden},
        {"seq", sh.seq},           {"batch", sh.batch},       {"ranks", N},
        {"warmup", o.warmup},      {"iters", o.iters},        {"attention_tile", o.attention_tile}};
    write_json_output(json.get(), measurements_document("compute", config, to_json(hw), results, true));
  }
  return 0;
}

}  // namespace basp::validate
