// Per-operation FLOPs and bytes of a decoder layer, the embedding, the LM head with its loss and
// the optimizer. Constants that are modelling choices say why next to them (docs/cost-model.md).
#include "cost_model.hpp"

#include <algorithm>

namespace basp {

Work CostModel::op(OpClass cls, double flops, double bytes) const {
  double eff = efficiency.memory, half = 0;
  switch (cls) {
    case OpClass::gemm: eff = efficiency.gemm, half = efficiency.gemm_half_flops; break;
    case OpClass::attention_forward: eff = efficiency.attention_forward, half = efficiency.attention_forward_half_flops; break;
    case OpClass::attention_backward:
      eff = efficiency.attention_backward, half = efficiency.attention_backward_half_flops;
      break;
    case OpClass::memory: break;
    case OpClass::rotary: break;
  }
  // e·F/(F + F½) of peak: the time is (F + F½) / (peak·e), a fixed cost plus a rate.
  const bool memory_bound = cls == OpClass::memory || cls == OpClass::rotary;
  const double math_s = memory_bound ? 0.0 : (flops + half) / (gpu.peak_bf16_flops * eff);
  const double memory_s =
      bytes / (gpu.hbm_Bps * (cls == OpClass::rotary ? efficiency.rotary_or_memory() : efficiency.memory));
  return {std::max(math_s, memory_s), flops, flops};
}

Work CostModel::gemm(double m, double n, double k) const {
  return op(OpClass::gemm, 2.0 * m * n * k, element_bytes * (m * k + k * n + m * n));
}

Work CostModel::pre_attention(double t, bool backward) const {
  const double d = model.hidden, qkv = model.q_width() + 2.0 * model.kv_width();
  const double e = element_bytes;
  Work w;
  // RMSNorm reads and writes the hidden state; rotary (and QK-norm) read and write Q and K.
  const double norm_bytes = 2 * e * t * d;
  const double rotary_bytes = 2 * e * t * (model.q_width() + model.kv_width()) * (model.qk_norm ? 2 : 1);
  const double passes = backward ? 2.0 : 1.0;
  w += op(OpClass::memory, 0, passes * norm_bytes);
  w += op(OpClass::rotary, 0, passes * rotary_bytes);
  w += gemm(t, qkv, d);
  if (backward) w += gemm(d, qkv, t);  // weight gradient; the first GEMM stands for the input gradient
  return w;
}

Work CostModel::post_attention(double t, bool backward) const {
  const double d = model.hidden, f = model.ffn, e = element_bytes;
  const bool swiglu = model.ffn_kind == FfnKind::swiglu;
  const double passes = backward ? 2.0 : 1.0;
  Work w;
  auto both = [&](double m, double n, double k) {  // forward GEMM, and its two backward GEMMs
    w += gemm(m, n, k);
    if (backward) w += gemm(k, n, m);
  };
  both(t, d, model.q_width());                      // output projection
  both(t, (swiglu ? 2 : 1) * f, d);                 // gate and up (or up)
  both(t, d, f);                                    // down
  // Two residual adds (read 2, write 1), a norm (read, write), the activation (SwiGLU reads gate
  // and up, writes one; GELU reads and writes one).
  const double bytes = e * t * (2 * 3 * d + 2 * d + (swiglu ? 3 : 2) * f);
  w += op(OpClass::memory, 0, passes * bytes);
  return w;
}

Work CostModel::attention(double heads, double queries, double keys, double causal, bool backward) const {
  const double dh = model.head_dim, e = element_bytes;
  // Forward: S = QKᵀ and O = PV, 2 FLOPs per multiply-add each. Backward: dV, dP, dQ, dK (twice
  // the forward, what MFU counts) plus FlashAttention's recomputation of S (2.5× executed).
  const double forward = 4.0 * heads * queries * keys * dh * causal;
  const double io = e * heads * dh * (2 * queries + 2 * keys);  // Q, O and K, V once each
  if (!backward) return op(OpClass::attention_forward, forward, io);
  Work w = op(OpClass::attention_backward, 2.5 * forward, 2 * io);
  w.model_flops = 2.0 * forward;
  return w;
}

Work CostModel::embedding(double t, bool backward) const {
  // Gather rows forward; scatter-add of gradients into the table backward (in bf16).
  return op(OpClass::memory, 0, (backward ? 3 : 2) * element_bytes * t * model.hidden);
}

Work CostModel::lm_head_and_loss(double t, bool backward) const {
  const double d = model.hidden, v = model.vocab, e = element_bytes;
  Work w;
  w += gemm(t, v, d);
  if (backward) w += gemm(d, v, t);
  // Final norm; softmax cross-entropy reads the logits and writes fp32 log-probabilities forward,
  // reads them and writes the logits' gradient backward.
  w += op(OpClass::memory, 0, 2 * e * t * d + (backward ? e + 4 : e + 4) * t * v);
  return w;
}

Work CostModel::optimizer(double parameters) const {
  // Reads fp32 master, m, v and the bf16 gradient, writes master, m, v and the bf16 weight.
  constexpr double bytes_per_parameter = 4 * 3 + 2 + 4 * 3 + 2;
  return op(OpClass::memory, 0, bytes_per_parameter * parameters);
}

}  // namespace basp
