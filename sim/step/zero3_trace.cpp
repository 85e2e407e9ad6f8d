// The step's trace of ZeRO-3 weight uses: units per layer (attention inputs; output projection
// and MLP), the embedding and the head, in the order forward, backward and recomputation use them.
#include "zero3_trace.hpp"

#include <algorithm>

namespace basp {
namespace {

// Module hooks DeepSpeed runs at each use (Hugging Face Llama; each may prefetch a bucket).
// Forward: the embedding: the model's root, its decoder stack, embed_tokens and rotary_emb;
// pre-attention: the decoder layer, input_layernorm, self_attn, q_proj, k_proj, v_proj (and
// q_norm, k_norm where the model has them); post-attention: o_proj, post_attention_layernorm,
// mlp, gate_proj, up_proj, act_fn, down_proj; the head: the final norm and lm_head. Backward
// hooks fire in reverse, and the decoder layer's and self_attn's before the MLP's: 9 at the
// output and MLP, 4 (6) at the attention inputs; the head 2, the embedding 1.
int deepspeed_hooks(const ModelSpec& m, Zero3Use what, bool backward) {
  const int qk_norms = m.qk_norm ? 2 : 0;
  switch (what) {
    case Zero3Use::embedding: return backward ? 1 : 4;
    case Zero3Use::head: return 2;
    case Zero3Use::attention_inputs: return (backward ? 4 : 6) + qk_norms;
    default: return backward ? 9 : 7;
  }
}

}  // namespace

std::size_t zero3_unit(const ModelSpec& m, Zero3Use what, int layer) {
  switch (what) {
    case Zero3Use::embedding: return 0;
    case Zero3Use::head: return m.tied_embeddings ? 0 : 1;
    case Zero3Use::attention_inputs: return 2 + 2 * std::size_t(layer);
    default: return 3 + 2 * std::size_t(layer);
  }
}

int zero3_gathers_per_layer(bool checkpointing) { return checkpointing ? 6 : 4; }

Zero3Trace zero3_trace(const ModelSpec& m, const StepCosts& costs, bool checkpointing) {
  Zero3Trace t;
  const int all = m.layers;
  t.unit_elements.assign(2 + 2 * std::size_t(all), 0.0);
  t.unit_elements[0] = costs.embedding_gathered;
  double& head = t.unit_elements[zero3_unit(m, Zero3Use::head, -1)];
  head = std::max(head, costs.head_gathered);
  for (int l = 0; l < all; ++l) {
    t.unit_elements[zero3_unit(m, Zero3Use::attention_inputs, l)] = costs.attention_inputs_gathered;
    t.unit_elements[zero3_unit(m, Zero3Use::output_and_mlp, l)] = costs.layer_gathered - costs.attention_inputs_gathered;
  }
  const auto use = [&](Zero3Use what, int layer, bool backward) {
    t.uses.push_back({zero3_unit(m, what, layer), deepspeed_hooks(m, what, backward)});
  };
  use(Zero3Use::embedding, -1, false);
  for (int l = 0; l < all; ++l) {
    use(Zero3Use::attention_inputs, l, false);
    use(Zero3Use::output_and_mlp, l, false);
  }
  use(Zero3Use::head, -1, false);
  use(Zero3Use::head, -1, true);
  for (int l = all - 1; l >= 0; --l) {
    if (checkpointing) {  // the recomputation runs the layer's forward, with its hooks
      use(Zero3Use::attention_inputs, l, false);
      use(Zero3Use::output_and_mlp, l, false);
    }
    use(Zero3Use::output_and_mlp, l, true);
    use(Zero3Use::attention_inputs, l, true);
  }
  use(Zero3Use::embedding, -1, true);  // its scatter-add needs no weights, but DeepSpeed's hook fetches them
  return t;
}

}  // namespace basp
