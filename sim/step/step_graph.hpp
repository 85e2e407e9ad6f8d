// The training step as a task graph on the engine: per rank a compute stream (which also issues
// the strategy's exchanges, as DeepSpeed does), a ZeRO gather stream and a gradient-reduce stream.
#pragma once

#include "collective_bounds.hpp"
#include "cost_model.hpp"
#include "engine.hpp"
#include "rank_fold.hpp"
#include "routing.hpp"
#include "strategy.hpp"
#include "stragglers.hpp"
#include "topology.hpp"
#include "zero3_fetches.hpp"

#include <cstdint>
#include <string_view>
#include <vector>

namespace basp {

enum class SpanKind : std::uint8_t { compute, sp_comm, zero_gather, zero_reduce };

// What a span of a rank's timeline is; names for reports and traces come from span_name().
enum class Label : std::uint8_t {
  embedding, pre_attention, attention, post_attention, lm_head, optimizer,
  a2a_q, a2a_k, a2a_v, a2a_o, a2a_do, a2a_dq, a2a_dk, a2a_dv, ring_kv, ring_kv_dkv, ring_dkv,
  zero_allgather, zero_reducescatter, zero_allreduce,
};
std::string_view span_name(Label label);
SpanKind span_kind(Label label);

// From the ready time of `first` to the finish of `last` (a compute task, or a call's entry and
// return). `layer` is -1 outside the layers; `backward` and `recompute` say which pass.
struct Span {
  TaskId first, last;
  std::int16_t layer;
  Label label;
  std::uint8_t pass;  // 0 forward, 1 recompute, 2 backward
};

struct ZeroPlan {
  int stage = 3;
  int shard_ranks = 1;  // M: ranks one shard group spans (contiguous); G/M replicas all-reduce
  // ZeRO-3 as DeepSpeed runs it, with DeepSpeed's defaults (docs/cost-model.md): gradients are
  // reduce-scattered a bucket of this many elements at a time, tensors of fewer elements than the
  // persistence threshold stay whole on every rank (never gathered), each module hook may prefetch
  // the prefetch bucket's elements while fewer than max_live are gathered, and gathered weights
  // used again within the reuse distance (in elements of the weights used in between) are kept.
  double reduce_bucket_elements = 5e8;
  double persistence_threshold = 1e5;
  double prefetch_elements = 5e7;
  double max_live_elements = 1e9;
  double reuse_distance_elements = 1e9;
  // DeepSpeed's overlap_comm: gradient reductions on a stream of their own, beside backward's
  // compute, or on the compute stream, which waits for them. Its default: on for ZeRO-3 only
  // (ZeRO-0 has no such setting: it reduces on the compute stream).
  bool overlap_comm = true;
  // False for a micro-step that only accumulates under ZeRO-0/1: DeepSpeed keeps those gradients
  // on each rank and reduces them at the accumulation boundary only (engine.allreduce_gradients),
  // so the micro-step makes no reduction, runs no optimizer step and gathers no weights.
  bool reduce_gradients = true;
};

// DeepSpeed's ZeRO-0 all-reduces gradients in buffers of this many elements (engine.py,
// allreduce_gradients' MEMORY_OPT_ALLREDUCE_SIZE), not of reduce_bucket_size.
inline constexpr double zero0_allreduce_bucket_elements = 5e8;

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

struct StepTasks {
  std::vector<std::vector<Span>> spans;  // per rank class (rank r: spans[r % spans.size()]), in issue order
  std::vector<TaskId> end;               // per rank class: everything of its step has finished
  std::vector<TaskId> optimizer;         // per rank class: its optimizer step, the last compute
};

// ZeRO's groups: shards of M contiguous ranks; replicas (rank i of every shard) when M < ranks.
struct ZeroGroups {
  std::vector<std::vector<int>> shard, replica;
};
ZeroGroups zero_groups(int ranks, const ZeroPlan& zero);
// What the step's calls exchange, for choose_fold (points into `layout` and `zero`).
std::vector<TrafficGroups> step_traffic(const Layout& layout, const ZeroGroups& zero);

// `layers` transformer layers are built (all of the model's, or a window of them whose middle
// layer stands for the others, see step_run.cpp); everything outside the layers is built once.
// With a fold, only the representative ranks' tasks are built (docs/symmetry.md). With `bounds`,
// one rank's streams are built, each call being its least time over the ranks
// (collective_bounds.hpp): the graph's length is then a lower bound on the step's, whichever rank
// finishes last (the planner's pruning, docs/plan.md). Its spans are that rank's.
StepTasks build_step(Engine& engine, Router& router, const Topology& topo, const RankFold& fold,
                     const Layout& layout, const StepCosts& costs, const ModelSpec& model, bool checkpointing,
                     const ZeroPlan& zero, const ZeroGroups& zero_groups, int layers,
                     CallBounds* bounds = nullptr, const ComputeSpeed* speed = nullptr);
// With `speed` (stragglers and jitter; the fold must be the identity: ranks differ), each rank's
// compute tasks take their time times speed->factor(rank, layer, pass).

// Per rank, averaged: time in all-to-all calls spent waiting for the group's last member to enter
// (the latest entry of the group less the rank's own, summed over calls), over the built layers.
double a2a_wait_s(const Engine& engine, const StepTasks& tasks, const Layout& layout, const RankFold& fold);

// ZeRO-3's weight units and the step's uses of them in order (its trace), with the DeepSpeed
// module hooks at each use (docs/cost-model.md): what coordinate_fetches replays.
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

// Flows one layer's exchanges add to the graph (forward, backward and recomputation): all-to-all
// pairs (4 tensors per pass) and ring sends.
struct ExchangeFlows {
  double a2a = 0, ring = 0;
};
ExchangeFlows exchange_flows_per_layer(const Layout& layout, bool checkpointing);
// Flows one layer adds to the graph, ZeRO's counted generously, to size windows.
double flows_per_layer(const Layout& layout, bool checkpointing, const Topology& topo);

}  // namespace basp
