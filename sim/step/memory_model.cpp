// Peak memory per GPU, by the usual accounting of mixed-precision Adam (16 bytes per parameter)
// and of a decoder layer's saved activations with FlashAttention (docs/cost-model.md).
#include "memory_model.hpp"

#include <algorithm>

namespace basp {

MemoryBreakdown memory_per_gpu(const ModelSpec& m, const Layout& l, const ZeroPlan& zero, bool checkpointing) {
  constexpr double e = 2.0;  // bf16
  MemoryBreakdown b;
  const double p = total_parameters(m);
  const double shard = zero.stage == 0 ? 1.0 : zero.shard_ranks;
  const double weights = e * p, gradients = e * p, optimizer = 12.0 * p;  // master, m, v in fp32
  switch (zero.stage) {
    case 0: b.states = weights + gradients + optimizer; break;
    case 1: b.states = weights + gradients + optimizer / shard; break;
    case 2: b.states = weights + (gradients + optimizer) / shard; break;
    default: b.states = (weights + gradients + optimizer) / shard; break;
  }
  if (zero.stage == 3) {
    const double table = double(m.vocab) * m.hidden;
    const double largest = std::max(layer_parameters(m), table);
    // DeepSpeed holds its reduce bucket (reduce_bucket_size elements, at most the model) as one
    // flat buffer; a module larger than the bucket needs its own gradients whole.
    const double bucket = zero.reduce_bucket_elements > 0 ? std::min(zero.reduce_bucket_elements, p) : 0.0;
    // Prefetching stops once max_live elements are gathered (a hook's last unit and the unit in
    // use may pass it); weights kept for reuse lie within the reuse distance ahead and are not
    // bounded by max_live (zero3_fetches.cpp).
    const double kept = std::max(std::max(zero.max_live_elements, zero.reuse_distance_elements), 0.0);
    // Besides, each hook's last prefetched unit, and the unit in use, gathered regardless.
    const double live = std::min(p, kept + 3 * largest);
    b.prefetch = e * (std::max(live, 2 * largest) + std::max(largest, bucket));
  } else if (zero.stage > 0) {
    // DeepSpeed's ZeRO-1/2 backward allocates its reduce bucket whole (reduce_bucket_size bf16
    // elements, whatever the model's size), and a second one to alternate with under overlap_comm
    // (stage_1_and_2.py, backward: "double buffers").
    b.prefetch = e * std::max(zero.reduce_bucket_elements, 0.0) * (zero.overlap_comm ? 2 : 1);
  }
  const double t = l.tokens_per_rank, d = m.hidden, f = m.ffn;
  const double qkv = m.q_width() + 2.0 * m.kv_width();
  const double exchanged_kv = l.a2a_size > 1 ? l.kv_bytes / e / t : m.kv_width();
  // Saved per token and layer: norm input and output, Q K V before and after the exchange,
  // attention output before and after its exchange, residual, second norm in and out, MLP
  // intermediates (gate, up, activation; GELU: up, activation).
  const double per_token = 2 * d + qkv + (m.q_width() + 2 * exchanged_kv) + 2.0 * m.q_width() + 3 * d +
                           (m.ffn_kind == FfnKind::swiglu ? 3 : 2) * f;
  const double layer = e * t * per_token;
  b.activations = checkpointing ? m.layers * e * t * d + layer : m.layers * layer;
  b.logits = (e + 4.0) * t * m.vocab;
  b.buffers = l.a2a ? 2.0 * (l.q_bytes + 2 * l.kv_bytes) : 0.0;
  if (l.ring_size > 1) b.buffers += 4.0 * l.ring_kv_bytes;  // two KV blocks, two dK dV blocks
  b.runtime = 2e9;
  return b;
}

}  // namespace basp
