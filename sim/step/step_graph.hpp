// The training step as a task graph on the engine: per rank a compute stream (which also issues
// the strategy's exchanges, as DeepSpeed does), a ZeRO gather stream and a gradient-reduce stream.
#pragma once

#include "collective_bounds.hpp"
#include "engine.hpp"
#include "rank_fold.hpp"
#include "routing.hpp"
#include "step_costs.hpp"
#include "strategy.hpp"
#include "stragglers.hpp"
#include "topology.hpp"
#include "zero_plan.hpp"

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

struct StepTasks {
  std::vector<std::vector<Span>> spans;  // per rank class (rank r: spans[r % spans.size()]), in issue order
  std::vector<TaskId> end;               // per rank class: everything of its step has finished
  std::vector<TaskId> optimizer;         // per rank class: its optimizer step, the last compute
};

// What the step's calls exchange, for choose_fold (points into `layout` and `zero`).
std::vector<TrafficGroups> step_traffic(const Layout& layout, const ZeroGroups& zero);

// `layers` transformer layers are built (all of the model's, or a window of them whose middle
// layer stands for the others: layers_to_simulate); everything outside the layers is built once.
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

}  // namespace basp
