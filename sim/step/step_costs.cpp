// A layout's per-rank work per module and pass from the cost model (attention in its blocks, the
// optimizer on its shard), and the step's flows per layer counted from its groups.
#include "step_costs.hpp"

#include "zero3_trace.hpp"

#include <algorithm>

namespace basp {
namespace {

Work times(Work w, double k) {
  w.time_s *= k;
  w.flops *= k;
  w.model_flops *= k;
  return w;
}

}  // namespace

StepCosts step_costs(const CostModel& cost, const Layout& l, const ZeroPlan& zero) {
  const ModelSpec& m = cost.model;
  StepCosts c;
  const double t = l.tokens_per_rank;
  for (int pass = 0; pass < 2; ++pass) {
    const bool bwd = pass == 1;
    c.embedding[pass] = cost.embedding(t, bwd);
    c.pre_attention[pass] = cost.pre_attention(t, bwd);
    c.post_attention[pass] = cost.post_attention(t, bwd);
    c.attention_block[pass] =
        times(cost.attention(l.attention_heads, l.block_queries, l.block_keys, 0.5, bwd), l.attention_blocks);
    c.lm_head[pass] = cost.lm_head_and_loss(t, bwd);
  }
  c.layer_parameters = layer_parameters(m);
  const double table = double(m.vocab) * m.hidden;
  const double final_norm = embedding_parameters(m) - table * (m.tied_embeddings ? 1 : 2);
  c.embedding_parameters = table;
  c.head_parameters = table + final_norm;  // tied: the shared table is gathered again for the head
  c.head_gradients = (m.tied_embeddings ? 0.0 : table) + final_norm;
  // Tensors under the persistence threshold stay whole on every rank: only the others are gathered.
  const auto gathered = [&](double elements) { return elements >= zero.persistence_threshold ? elements : 0.0; };
  c.layer_gathered = layer_parameters_at_least(m, zero.persistence_threshold);
  c.attention_inputs_gathered = attention_input_parameters_at_least(m, zero.persistence_threshold);
  c.embedding_gathered = gathered(table);
  c.head_gathered = gathered(table) + gathered(final_norm);
  const double shard = zero.stage == 0 ? 1.0 : zero.shard_ranks;
  c.optimizer = cost.optimizer(total_parameters(m) / shard);
  for (int pass = 0; pass < 2; ++pass)
    c.model_flops += m.layers * (c.pre_attention[pass].model_flops + c.post_attention[pass].model_flops +
                                 l.ring_size * c.attention_block[pass].model_flops) +
                     c.lm_head[pass].model_flops + c.embedding[pass].model_flops;
  return c;
}

ExchangeFlows exchange_flows_per_layer(const Layout& l, bool checkpointing) {
  const double passes = checkpointing ? 3 : 2;
  return {double(l.a2a_groups.size()) * l.a2a_size * (l.a2a_size - 1) * 4 * passes,
          double(l.ring_groups.size()) * l.ring_size * l.ring_size * passes};
}

double flows_per_layer(const Layout& l, bool checkpointing, const Topology& topo) {
  const auto [a2a, ring] = exchange_flows_per_layer(l, checkpointing);
  // ZeRO-3 gathers and a reduction: ring edges, one channel per NIC at most.
  const double zero = (zero3_gathers_per_layer(checkpointing) + 1.0) * l.ranks * std::max(1, topo.gpus_per_node);
  return a2a + ring + zero;
}

}  // namespace basp
