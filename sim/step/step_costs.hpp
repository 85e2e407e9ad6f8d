// What one rank of a layout computes in each piece of the step (the cost model's work per module
// and pass), and how many flows the step's exchanges add per layer (for sizing windows and engines).
#pragma once

#include "cost_model.hpp"
#include "strategy.hpp"
#include "topology.hpp"
#include "zero_plan.hpp"

namespace basp {

// Per-rank compute costs of the step's pieces (ranks of one layout all do the same work).
struct StepCosts {
  Work embedding[2], pre_attention[2], post_attention[2], attention_block[2], lm_head[2];  // [forward, backward]
  Work optimizer;
  double layer_parameters = 0, embedding_parameters = 0, head_parameters = 0;  // per module
  double layer_gathered = 0, embedding_gathered = 0, head_gathered = 0;  // of them, what ZeRO-3 gathers
  double attention_inputs_gathered = 0;  // of a layer's: Q, K and V's (gathered before its QKV projection)
  double head_gradients = 0;  // parameters whose gradients the LM head module reduces
  double model_flops = 0;     // per rank per step, without recomputation (what MFU counts)
};
StepCosts step_costs(const CostModel& cost, const Layout& layout, const ZeroPlan& zero);

// Flows one layer's exchanges add to the graph (forward, backward and recomputation): all-to-all
// pairs (4 tensors per pass) and ring sends.
struct ExchangeFlows {
  double a2a = 0, ring = 0;
};
ExchangeFlows exchange_flows_per_layer(const Layout& layout, bool checkpointing);
// Flows one layer adds to the graph, ZeRO's counted generously, to size windows.
double flows_per_layer(const Layout& layout, bool checkpointing, const Topology& topo);

}  // namespace basp
