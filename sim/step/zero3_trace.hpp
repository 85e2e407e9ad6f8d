// ZeRO-3's weight units and the step's uses of them in order (its trace), with the DeepSpeed
// module hooks at each use (docs/cost-model.md): what coordinate_fetches replays.
#pragma once

#include "model.hpp"
#include "step_costs.hpp"
#include "zero3_fetches.hpp"

#include <cstddef>
#include <cstdint>
#include <vector>

namespace basp {

enum class Zero3Use : std::uint8_t { embedding, head, attention_inputs, output_and_mlp };
std::size_t zero3_unit(const ModelSpec& model, Zero3Use what, int layer);  // layer: -1 for embedding and head
struct Zero3Trace {
  std::vector<WeightUse> uses;
  std::vector<double> unit_elements;  // gathered per unit (tensors under the persistence threshold stay whole)
};
Zero3Trace zero3_trace(const ModelSpec& model, const StepCosts& costs, bool checkpointing);
// Gather calls a layer makes, for estimates: one per use of its two units (forward, backward and
// recomputation), as when the live limit paces prefetching a layer ahead; the first uses make
// more (one per hook that prefetches: Llama-3.2-1B's first layer 9), which the estimate's slack covers.
int zero3_gathers_per_layer(bool checkpointing);

}  // namespace basp
