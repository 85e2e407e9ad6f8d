// `basp-validate compute`: the layer's GEMMs, causal attention and memory-bound kernels (rotary,
// pack, unpack) at one rank's shapes under each strategy, timed on every rank at once (as in training).
#pragma once

#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

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

// One operation `compute` times: the phase its time is read from, the FLOPs it executes, its shape
// in words, and for memory-bound kernels the bytes it reads and writes.
struct TimedOp {
  const char* name;
  Phase phase;
  double flops;
  std::string shape;
  double bytes = 0;  // memory-bound kernels: bytes read and written
};

// "m x k . k x n": the operands of a GEMM, as the table shows them.
inline std::string gemm_shape_text(long m, long k, const std::string& n) {
  return std::to_string(m) + "x" + std::to_string(k) + " . " + std::to_string(k) + "x" + n;
}

// "nseq seq x S tok x q_heads/kv_heads heads x head_dim": attention's operands, as the table shows them.
inline std::string attention_shape_text(const kernels::AttentionShape& a) {
  return std::to_string(a.nseq) + " seq x " + std::to_string(a.seq) + " tok x " + std::to_string(a.q_heads) +
         "/" + std::to_string(a.kv_heads) + " heads x " + std::to_string(a.head_dim);
}

// The GEMMs and attention of one rank's layer, with the FLOPs each executes.
template <LayerOps Ops>
std::vector<TimedOp> compute_bound_ops(const AttentionLayer<Ops>& layer) {
  const double tokens = double(layer.T), hidden = double(layer.D), heads = layer.shape.heads,
               kv_heads = layer.shape.kv_heads, head_dim = double(layer.dh);
  const kernels::AttentionShape attention = layer.attention_shape();
  const double forward = attention_forward_flops(attention);
  const std::string qkv_width =
      "(" + std::to_string(long(heads + 2 * kv_heads)) + "*" + std::to_string(layer.dh) + ")";
  return {{"gemm_qkv", Phase::qkv_proj, 2 * tokens * hidden * (heads + 2 * kv_heads) * head_dim,
           gemm_shape_text(layer.T, layer.D, qkv_width)},
          {"gemm_out", Phase::out_proj, 2 * tokens * heads * head_dim * hidden,
           gemm_shape_text(layer.T, long(heads * head_dim), std::to_string(layer.D))},
          {"gemm_bwd", Phase::qkv_proj_bwd, 2 * 2 * tokens * hidden * (2 * heads + 2 * kv_heads) * head_dim,
           "dgrad + wgrad of both"},
          {"attn_fwd", Phase::attn_fwd, forward, attention_shape_text(attention)},
          {"attn_bwd", Phase::attn_bwd, 2.5 * forward, "as attn_fwd"}};
}

// The memory-bound kernels of one rank's layer, with the bytes each reads and writes (its FLOPs: 0).
template <LayerOps Ops>
std::vector<TimedOp> memory_bound_ops(const AttentionLayer<Ops>& layer, double element_bytes) {
  const double tokens = double(layer.T), heads = layer.shape.heads, kv_heads = layer.shape.kv_heads,
               head_dim = double(layer.dh);
  // Q, K, V per peer (K and V replicated when the group has more ranks than KV heads), read and
  // written once: what the packs and the token unpacks move.
  const double qkv_bytes =
      2 * element_bytes *
      (tokens * heads * head_dim + 2 * double(layer.ex.peers) * tokens * double(layer.hk) * head_dim);
  const std::string peers = std::to_string(layer.ex.peers) + " peers";
  return {// Read and written once each, as the cost model counts them: Q and K rotated in place;
          // Q, K, V packed per peer (K and V replicated when the group has more ranks than KV heads).
          {"rotary", Phase::rotary, 0, "Q and K in place",
           2 * element_bytes * tokens * (heads + kv_heads) * head_dim},
          {"pack_qkv", Phase::pack_qkv, 0, "Q, K, V to " + peers, qkv_bytes},
          // The unpacks: tokens from peers (a copy, as the packs), and heads from peers, whose
          // kernel zero-fills its output and adds each peer's heads into it (replicated KV heads'
          // gradients are summed): counted as a copy, its extra traffic is in its efficiency.
          {"unpack_qkv", Phase::unpack_qkv, 0, "Q, K, V from " + peers, qkv_bytes},
          {"unpack_o", Phase::unpack_o, 0, "O's heads from " + peers + ", summed",
           2 * element_bytes * tokens * heads * head_dim}};
}

// Every operation `compute` times, in the table's order.
template <LayerOps Ops>
std::vector<TimedOp> timed_ops(const AttentionLayer<Ops>& layer, double element_bytes) {
  std::vector<TimedOp> ops = compute_bound_ops(layer);
  for (TimedOp& op : memory_bound_ops(layer, element_bytes)) ops.push_back(std::move(op));
  return ops;
}

// The GEMMs: the QKV projection, the output projection, and the backward GEMMs of both (dgrad and
// wgrad), timed together as the QKV projection's backward.
template <LayerOps Ops>
void run_gemms(Ops& ops, AttentionLayer<Ops>& layer) {
  const long tokens = layer.T, hidden = layer.D, q_width = layer.shape.q_width(),
             kv_width = layer.shape.kv_width();
  ops.begin(Phase::qkv_proj);
  ops.gemm(Trans::no, Trans::no, tokens, q_width, hidden, layer.x, layer.wq, layer.q, 0.0f);
  ops.gemm(Trans::no, Trans::no, tokens, kv_width, hidden, layer.x, layer.wk, layer.k, 0.0f);
  ops.gemm(Trans::no, Trans::no, tokens, kv_width, hidden, layer.x, layer.wv, layer.v, 0.0f);
  ops.end(Phase::qkv_proj);
  ops.begin(Phase::out_proj);
  ops.gemm(Trans::no, Trans::no, tokens, hidden, q_width, layer.o_local, layer.wo, layer.y, 0.0f);
  ops.end(Phase::out_proj);
  ops.begin(Phase::qkv_proj_bwd);
  ops.gemm(Trans::no, Trans::yes, tokens, q_width, hidden, layer.dy, layer.wo, layer.do_local, 0.0f);
  ops.gemm(Trans::yes, Trans::no, q_width, hidden, tokens, layer.o_local, layer.dy, layer.dwo, 0.0f);
  ops.gemm(Trans::no, Trans::yes, tokens, hidden, q_width, layer.dq, layer.wq, layer.dx, 0.0f);
  ops.gemm(Trans::no, Trans::yes, tokens, hidden, kv_width, layer.dk, layer.wk, layer.dx, 1.0f);
  ops.gemm(Trans::no, Trans::yes, tokens, hidden, kv_width, layer.dv, layer.wv, layer.dx, 1.0f);
  ops.gemm(Trans::yes, Trans::no, hidden, q_width, tokens, layer.x, layer.dq, layer.dwq, 0.0f);
  ops.gemm(Trans::yes, Trans::no, hidden, kv_width, tokens, layer.x, layer.dk, layer.dwk, 0.0f);
  ops.gemm(Trans::yes, Trans::no, hidden, kv_width, tokens, layer.x, layer.dv, layer.dwv, 0.0f);
  ops.end(Phase::qkv_proj_bwd);
}

// Causal attention forward, then backward from its outputs.
template <LayerOps Ops>
void run_attention(Ops& ops, AttentionLayer<Ops>& layer) {
  const kernels::AttentionShape attention = layer.attention_shape();
  ops.begin(Phase::attn_fwd);
  ops.attention_forward(layer.qa, layer.ka, layer.va, layer.oa, layer.lse, attention);
  ops.end(Phase::attn_fwd);
  ops.begin(Phase::attn_bwd);
  ops.attention_backward(layer.qa, layer.ka, layer.va, layer.oa, layer.doa, layer.lse, layer.dqa, layer.dka,
                         layer.dva, attention);
  ops.end(Phase::attn_bwd);
}

// Rotary, the QKV pack, the QKV token unpack and O's head unpack, as the layer's forward runs them.
template <LayerOps Ops>
void run_memory_bound(Ops& ops, AttentionLayer<Ops>& layer) {
  const long heads = layer.shape.heads, kv_heads = layer.shape.kv_heads;
  const long first_position = layer.plan.first_position;
  const double theta = layer.shape.rope_theta;
  ops.begin(Phase::rotary);
  ops.rotary(layer.q, layer.ex, heads, first_position, theta, false);
  ops.rotary(layer.k, layer.ex, kv_heads, first_position, theta, false);
  ops.end(Phase::rotary);
  ops.begin(Phase::pack_qkv);
  ops.scatter_heads_to_peers(layer.q, layer.send_q, layer.ex, heads);
  ops.scatter_heads_to_peers(layer.k, layer.send_k, layer.ex, kv_heads);
  ops.scatter_heads_to_peers(layer.v, layer.send_v, layer.ex, kv_heads);
  ops.end(Phase::pack_qkv);
  ops.begin(Phase::unpack_qkv);
  ops.gather_tokens_from_peers(layer.recv_q, layer.qa, layer.ex, layer.hq);
  ops.gather_tokens_from_peers(layer.recv_k, layer.ka, layer.ex, layer.hk);
  ops.gather_tokens_from_peers(layer.recv_v, layer.va, layer.ex, layer.hk);
  ops.end(Phase::unpack_qkv);
  ops.begin(Phase::unpack_o);
  ops.gather_heads_from_peers(layer.recv_q, layer.o_local, layer.ex, heads);
  ops.end(Phase::unpack_o);
}

// Warm-up, then timed iterations of every operation, all ranks starting each iteration together.
// Rank 0 gets every rank's timed iterations' phase times, rank by rank (the others get nothing).
template <LayerOps Ops>
std::vector<double> time_on_every_rank(Ops& ops, Control& ctl, AttentionLayer<Ops>& layer, int warmup,
                                       int iters) {
  std::vector<double> mine;
  for (int it = 0; it < warmup + iters; ++it) {
    ctl.barrier();
    ops.start_iteration();
    run_gemms(ops, layer);
    run_attention(ops, layer);
    run_memory_bound(ops, layer);
    const PhaseTimes times = ops.finish_iteration();
    if (it >= warmup) mine.insert(mine.end(), times.begin(), times.end());
  }
  return ctl.gather_vector(mine);
}

// One phase's samples out of every (rank, iteration)'s phase times.
inline std::vector<double> samples_of(const std::vector<double>& phase_times, Phase phase) {
  std::vector<double> samples;
  for (std::size_t i = 0; i < phase_times.size(); i += kPhases)
    samples.push_back(phase_times[i + std::size_t(phase)]);
  return samples;
}

// The table line of one operation: TFLOP/s, or for a memory-bound kernel its bytes and GB/s.
inline std::string table_line(const std::string& strategy, const TimedOp& op, const Stats& st) {
  char line[320];
  if (op.bytes > 0)  // memory-bound: the achieved rate is bandwidth
    std::snprintf(line, sizeof line, " %9s %9s %14.4e %10.1f %10.1f %10.1f %7.2f GB/s %s\n", strategy.c_str(),
                  op.name, op.bytes, st.min * 1e6, st.median * 1e6, st.max * 1e6, op.bytes / st.median / 1e9,
                  op.shape.c_str());
  else
    std::snprintf(line, sizeof line, " %9s %9s %14.4e %10.1f %10.1f %10.1f %10.3f   %s\n", strategy.c_str(),
                  op.name, op.flops, st.min * 1e6, st.median * 1e6, st.max * 1e6, op.flops / st.median / 1e12,
                  op.shape.c_str());
  return line;
}

// The JSON row of one operation (the measurements file's `results`).
inline nlohmann::json json_row(const std::string& strategy, const TimedOp& op,
                               const std::vector<double>& samples, const Stats& st) {
  nlohmann::json row = {{"strategy", strategy},  {"op", op.name},     {"shape", op.shape},
                        {"flops", op.flops},     {"bytes", op.bytes}, {"min_s", st.min},
                        {"median_s", st.median}, {"max_s", st.max},   {"times_s", samples}};
  if (op.bytes > 0)
    row["gbps"] = op.bytes / st.median / 1e9;
  else
    row["tflops"] = op.flops / st.median / 1e12;
  return row;
}

// The `#` lines above the rows: what ran, on what, and the columns with their units.
inline void print_compute_header(std::ostream& out, const ValidateOptions& o, const Hardware& hw, int ranks,
                                 const std::string& precision) {
  const LayerShape& shape = o.shape;
  out << "# basp-validate compute: one rank's GEMMs and attention, all ranks at once\n";
  for (const auto& line : header_lines(hw)) out << "#  " << line << "\n";
  out << "#  model " << o.model << ": heads " << shape.heads << ", kv heads " << shape.kv_heads
      << ", head dim " << shape.head_dim << ", hidden " << shape.hidden << ", seq " << shape.seq
      << ", micro-batch " << shape.batch << ", shapes of N = " << ranks << " ranks; precision " << precision
      << "\n";
  out << "#  attention FLOPs: causal pairs only; attn_bwd counts 2.5x forward (scores recomputed)\n"
      << "#  rotary, pack_qkv: memory-bound; the flops column holds their bytes (read + written)\n#\n";
  char line[320];
  std::snprintf(line, sizeof line, "#%9s %9s %14s %10s %10s %10s %10s   %s\n", "strategy", "op", "flops",
                "min", "median", "max", "achieved", "shape");
  out << line;
  std::snprintf(line, sizeof line, "#%9s %9s %14s %10s %10s %10s %10s\n", "", "", "(FLOP)", "(us)", "(us)",
                "(us)", "(TFLOP/s)");
  out << line;
}

// The measurements file's `config`: every option resolved.
inline nlohmann::json compute_config_json(const ValidateOptions& o, int ranks, const std::string& precision) {
  const LayerShape& shape = o.shape;
  return {{"model", o.model},           {"precision", precision},     {"heads", shape.heads},
          {"kv_heads", shape.kv_heads}, {"head_dim", shape.head_dim}, {"hidden", shape.hidden},
          {"seq", shape.seq},           {"batch", shape.batch},       {"ranks", ranks},
          {"warmup", o.warmup},         {"iters", o.iters},           {"attention_tile", o.attention_tile}};
}

template <LayerOps Ops>
int compute_command(const ValidateOptions& o, Control& ctl, Hardware hw, const std::string& precision,
                    Ops& ops) {
  const int ranks = o.compute_ranks > 0 ? o.compute_ranks : ctl.size();
  for (LayerStrategy s : o.strategies) check_layer_problem(s, o.shape, ranks);
  auto json = open_json_output(o.json_path, ctl);
  nlohmann::json results = nlohmann::json::array();
  std::ostringstream table;
  for (LayerStrategy strategy : o.strategies) {
    const RankPlan plan = plan_rank(strategy, o.shape, ranks, 0);  // every rank: rank 0's shapes
    AttentionLayer<Ops> layer(ops, o.shape, plan);
    ops.upload(layer.x, token_slice(o.seed, InputTensor::x, o.shape, plan));
    const std::vector<TimedOp> timed = timed_ops(layer, ops.element_bytes());
    const std::vector<double> phase_times = time_on_every_rank(ops, ctl, layer, o.warmup, o.iters);
    if (ctl.rank() != 0) continue;
    const std::string name = strategy_name(strategy);
    for (const TimedOp& op : timed) {
      const std::vector<double> samples = samples_of(phase_times, op.phase);
      const Stats st = stats_of(samples);
      table << table_line(name, op, st);
      results.push_back(json_row(name, op, samples, st));
    }
  }
  if (ctl.rank() == 0) {
    print_compute_header(std::cout, o, hw, ranks, precision);
    std::cout << table.str() << std::flush;
    write_json_output(json.get(), measurements_document("compute", compute_config_json(o, ranks, precision),
                                                        to_json(hw), results, true));
  }
  return 0;
}

}  // namespace basp::validate
