// Per phase of validate/phases.hpp: its FLOPs and bytes from the layer's shapes (the same
// arithmetic basp-validate's layout uses: tokens B·S/N per rank, H/P query heads and
// max(Hkv/P, 1) KV heads after the exchange), then the cost model or the collective simulator.
#include "layer_prediction.hpp"

#include <map>

#include "collective_run.hpp"
#include "cost_model.hpp"
#include "input_error.hpp"
#include "layouts.hpp"

namespace basp::fitting {

namespace {
struct Shape {
  double T, D, H, Hk, dh, P, hq, hk, S, nseq, e;
};

double alltoall_s(const Topology& topo, const LayerRun& run, int group_size, double send_bytes) {
  CollectiveSpec spec;
  spec.op = CollectiveOp::alltoall;
  spec.size_bytes = send_bytes;
  spec.ranks = run.ranks;
  spec.groups = run.ranks / group_size;
  return simulate_collective(topo, spec).time_s;
}
}  // namespace

std::vector<StrategyComparison> predict_layer(const Topology& topo, const GpuKind& gpu,
                                              const ComputeEfficiency& eff, const LayerRun& run) {
  if (run.ranks > int(topo.gpus.size()))
    throw InputError("", 0, "--topology",
                     "the measured run has " + std::to_string(run.ranks) + " ranks but '" + topo.name +
                         "' has " + std::to_string(topo.gpus.size()) + " GPUs");
  ModelSpec model;
  model.name = "measured layer";
  model.heads = run.heads;
  model.kv_heads = run.kv_heads;
  model.head_dim = run.head_dim;
  model.hidden = run.hidden;
  const CostModel cm{model, gpu, eff, run.precision == "fp32" ? 4.0 : 2.0};
  std::vector<StrategyComparison> out;
  for (const LayerStrategyRun& s : run.strategies) {
    Shape x;
    x.P = s.group_size;
    x.T = double(run.batch) * double(run.seq) / run.ranks;
    x.D = double(run.hidden);
    x.H = run.heads;
    x.Hk = run.kv_heads;
    x.dh = double(run.head_dim);
    x.hq = x.H / x.P;
    x.hk = double(kernels::heads_per_peer(run.kv_heads, s.group_size));  // replicated when Hkv < P
    x.S = double(run.seq);
    x.nseq = x.T * x.P / x.S;
    x.e = cm.element_bytes;
    const double gemm_qkv = 2 * x.T * x.D * (x.H + 2 * x.Hk) * x.dh, gemm_out = 2 * x.T * x.H * x.dh * x.D;
    const double qkv_elems =
        x.T * x.H * x.dh + 2 * x.P * x.T * x.hk * x.dh;  // pack/unpack Q, K, V (replicas)
    const double o_elems = x.T * x.H * x.dh;
    const double causal = (x.S + 1) / (2 * x.S);
    const auto gemm = [&](double flops) { return cm.op(OpClass::gemm, flops, 0).time_s; };
    const auto memory = [&](double elements) { return cm.op(OpClass::memory, 0, 2 * x.e * elements).time_s; };
    const auto rotary = [&](double elements) { return cm.op(OpClass::rotary, 0, 2 * x.e * elements).time_s; };
    // The heads' unpack (zero-fill and sum): memory-bound at its own efficiency where the compute
    // runs measured it.
    CostModel heads_cm = cm;
    heads_cm.efficiency.memory = cm.efficiency.unpack_heads.value_or(cm.efficiency.memory);
    const auto unpack_heads = [&](double elements) {
      return heads_cm.op(OpClass::memory, 0, 2 * x.e * elements).time_s;
    };
    const double q_bytes = x.e * x.T * x.H * x.dh, kv_bytes = x.e * x.P * x.T * x.hk * x.dh;
    std::map<std::string, double> predicted = {
        {"qkv_proj", gemm(gemm_qkv)},
        {"rotary", rotary(x.T * (x.H + x.Hk) * x.dh)},
        {"pack_qkv", memory(qkv_elems)},
        {"unpack_qkv", memory(qkv_elems)},
        {"attn_fwd", cm.attention(x.nseq * x.hq, x.S, x.S, causal, false).time_s},
        {"pack_o", memory(o_elems)},
        {"unpack_o", unpack_heads(o_elems)},
        {"out_proj", gemm(gemm_out)},
        {"out_proj_bwd", gemm(2 * gemm_out)},
        {"pack_do", memory(o_elems)},
        {"unpack_do", memory(o_elems)},
        {"attn_bwd", cm.attention(x.nseq * x.hq, x.S, x.S, causal, true).time_s},
        {"pack_dqkv", memory(qkv_elems)},
        {"unpack_dqkv", unpack_heads(qkv_elems)},
        {"rotary_bwd", rotary(x.T * (x.H + x.Hk) * x.dh)},
        {"qkv_proj_bwd", gemm(2 * gemm_qkv)}};
    const double a2a_q = alltoall_s(topo, run, s.group_size, q_bytes);
    const double a2a_kv = alltoall_s(topo, run, s.group_size, kv_bytes);
    for (const char* n : {"a2a_q", "a2a_o", "a2a_do", "a2a_dq"}) predicted[n] = a2a_q;
    for (const char* n : {"a2a_k", "a2a_v", "a2a_dk", "a2a_dv"}) predicted[n] = a2a_kv;
    StrategyComparison c{s.strategy, s.group_size, {}, 0, 0, 0, 0};
    for (const LayerPhase& ph : s.phases) {
      const auto it = predicted.find(ph.name);
      if (it == predicted.end())
        throw InputError("", 0, "--measurements", "phase '" + ph.name + "' is not one this basp can predict");
      c.phases.push_back({ph.name, ph.median_s, it->second, ph.min_s, ph.max_s, ph.isolated_median_s});
      c.measured_total_s += ph.median_s;
      c.predicted_total_s += it->second;
      if (ph.name.rfind("a2a_", 0) == 0) c.measured_a2a_s += ph.median_s, c.predicted_a2a_s += it->second;
    }
    out.push_back(c);
  }
  return out;
}

}  // namespace basp::fitting
