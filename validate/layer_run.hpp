// Runs the measured layer for one strategy on every rank: inputs made per rank, warm-up and timed
// iterations, per-phase times and (when checking) the outputs and gradients gathered to rank 0.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <vector>

#include "attention_layer.hpp"
#include "control.hpp"
#include "fault_injection.hpp"
#include "inputs.hpp"
#include "reference.hpp"

namespace basp::validate {

struct LayerRunOptions {
  LayerShape shape;
  std::uint64_t seed = 1;
  int warmup = 2;
  int iters = 5;
  bool check = true;
};

struct StrategyMeasurement {
  LayerStrategy strategy = LayerStrategy::ulysses;
  int group_size = 0;
  int ranks = 0;
  int iters = 0;
  std::vector<PhaseTimes> samples;           // rank 0 only: [rank][iteration], rank-major
  std::vector<PhaseTimes> waits;             // the same: each exchange's wait for its group (0: not measured)
  std::vector<PhaseTimes> isolated;          // the same: each exchange alone, outside the step (others 0)
  std::array<double, kPhases> send_bytes{};  // per rank, for the all-to-all phases
  LayerResult gathered;                      // rank 0 only, when checking: global y, dx, weight gradients
};

// Every input of this rank's share, made from the seed as the reference makes the whole of it.
template <LayerOps Ops>
void upload_inputs(Ops& ops, AttentionLayer<Ops>& layer, std::uint64_t seed) {
  const LayerShape& shape = layer.shape;
  ops.upload(layer.x, token_slice(seed, InputTensor::x, shape, layer.plan));
  ops.upload(layer.dy, token_slice(seed, InputTensor::dy, shape, layer.plan));
  ops.upload(layer.wq, weight(seed, InputTensor::wq, shape));
  ops.upload(layer.wk, weight(seed, InputTensor::wk, shape));
  ops.upload(layer.wv, weight(seed, InputTensor::wv, shape));
  ops.upload(layer.wo, weight(seed, InputTensor::wo, shape));
}

// One rank's send buffer in bytes per all-to-all phase (0 for the other phases).
template <LayerOps Ops>
std::array<double, kPhases> exchange_send_bytes(const AttentionLayer<Ops>& layer, double element_bytes) {
  const double peers = layer.ex.peers;
  const double q_bytes = element_bytes * double(layer.elements_per_peer_q()) * peers;
  const double kv_bytes = element_bytes * double(layer.elements_per_peer_kv()) * peers;
  std::array<double, kPhases> bytes{};
  for (Phase p : {Phase::a2a_q, Phase::a2a_o, Phase::a2a_do, Phase::a2a_dq}) bytes[int(p)] = q_bytes;
  for (Phase p : {Phase::a2a_k, Phase::a2a_v, Phase::a2a_dk, Phase::a2a_dv}) bytes[int(p)] = kv_bytes;
  return bytes;
}

// `warmup` untimed then `iters` timed runs of `iteration`, every one starting on all ranks together
// (so exchange times are not skewed by stragglers). Returns this rank's phase times of the timed
// runs one after another; `waits`, when given, gets their waits for the groups the same way.
template <LayerOps Ops, class Iteration>
std::vector<double> time_iterations(Ops& ops, Control& ctl, int warmup, int iters, Iteration iteration,
                                    std::vector<double>* waits = nullptr) {
  std::vector<double> times;
  for (int it = 0; it < warmup + iters; ++it) {
    ctl.barrier();
    ops.start_iteration();
    iteration();
    const PhaseTimes t = ops.finish_iteration();
    if (it < warmup) continue;
    times.insert(times.end(), t.begin(), t.end());
    if (waits) {
      const PhaseTimes w = ops.peer_waits();
      waits->insert(waits->end(), w.begin(), w.end());
    }
  }
  return times;
}

// Phase times laid one after another (as gathered: rank by rank, iteration by iteration), as rows.
inline std::vector<PhaseTimes> phase_rows(const std::vector<double>& all) {
  std::vector<PhaseTimes> rows;
  for (std::size_t i = 0; i + kPhases <= all.size(); i += kPhases) {
    PhaseTimes t;
    std::copy(all.begin() + long(i), all.begin() + long(i + kPhases), t.begin());
    rows.push_back(t);
  }
  return rows;
}

// A weight gradient summed over the ranks, on rank 0 (the others get an empty vector).
template <LayerOps Ops>
std::vector<double> sum_over_ranks(Ops& ops, Control& ctl, const typename Ops::Buffer& gradient) {
  const std::vector<float> local = ops.download(gradient);
  const std::vector<float> every = ctl.gather_vector(local);
  std::vector<double> total(ctl.rank() == 0 ? local.size() : 0, 0.0);
  for (std::size_t i = 0; i < every.size(); ++i) total[i % local.size()] += every[i];
  return total;
}

// On rank 0: every rank's rows of y and dx (gathered rank by rank, `tokens` rows each) put back at
// their global place [B][S][hidden], and which rank made each row.
inline void place_token_rows(LayerStrategy strategy, const LayerShape& shape, int ranks, long tokens,
                             const std::vector<float>& y, const std::vector<float>& dx, LayerResult& out) {
  const long hidden = shape.hidden, rows = long(shape.batch) * shape.seq;
  out.y.assign(rows * hidden, 0.0);
  out.dx.assign(rows * hidden, 0.0);
  out.row_rank.assign(rows, -1);
  const long per_rank = tokens * hidden;
  for (int r = 0; r < ranks; ++r) {
    const RankPlan plan = plan_rank(strategy, shape, ranks, r);
    for (int q = 0; q < plan.exchange.nseq; ++q)
      for (long i = 0; i < plan.exchange.chunk; ++i) {
        const long global = (long(plan.first_sequence + q) * shape.seq + plan.first_position + i) * hidden;
        const long local = r * per_rank + (q * plan.exchange.chunk + i) * hidden;
        out.row_rank[global / hidden] = r;
        for (long c = 0; c < hidden; ++c) {
          out.y[global + c] = y[local + c];
          out.dx[global + c] = dx[local + c];
        }
      }
  }
}

// The outputs for the check, on rank 0: each rank's token rows back at their global place, the
// weight gradients summed over ranks.
template <LayerOps Ops>
LayerResult gather_outputs(Ops& ops, Control& ctl, AttentionLayer<Ops>& layer, LayerStrategy strategy) {
  LayerResult gathered;
  std::vector<float> my_y = ops.download(layer.y);
  corrupt_output_if_asked(ctl.rank(), my_y);
  const auto y = ctl.gather_vector(my_y);
  const auto dx = ctl.gather_vector(ops.download(layer.dx));
  gathered.dwq = sum_over_ranks(ops, ctl, layer.dwq);
  gathered.dwk = sum_over_ranks(ops, ctl, layer.dwk);
  gathered.dwv = sum_over_ranks(ops, ctl, layer.dwv);
  gathered.dwo = sum_over_ranks(ops, ctl, layer.dwo);
  if (ctl.rank() == 0) place_token_rows(strategy, layer.shape, ctl.size(), layer.T, y, dx, gathered);
  return gathered;
}

template <LayerOps Ops>
StrategyMeasurement run_layer(Ops& ops, Control& ctl, LayerStrategy strategy, const LayerRunOptions& o) {
  const RankPlan plan = plan_rank(strategy, o.shape, ctl.size(), ctl.rank());
  AttentionLayer<Ops> layer(ops, o.shape, plan);
  upload_inputs(ops, layer, o.seed);

  StrategyMeasurement m;
  m.strategy = strategy;
  m.group_size = plan.exchange.peers;
  m.ranks = ctl.size();
  m.iters = o.iters;
  m.send_bytes = exchange_send_bytes(layer, ops.element_bytes());

  const auto step = [&] {
    layer.forward();
    layer.backward();
  };
  std::vector<double> my_waits;
  const std::vector<double> my_times = time_iterations(ops, ctl, o.warmup, o.iters, step, &my_waits);
  m.samples = phase_rows(ctl.gather_vector(my_times));
  m.waits = phase_rows(ctl.gather_vector(my_waits));
  // Then each exchange isolated, as nccl-tests would time it: the same buffers and sizes, its group
  // aligned first, nothing else running, the same warm-up and repeats. Outputs are already made.
  const std::vector<double> my_alone =
      time_iterations(ops, ctl, o.warmup, o.iters, [&] { layer.exchanges_alone(); });
  m.isolated = phase_rows(ctl.gather_vector(my_alone));
  if (o.check) m.gathered = gather_outputs(ops, ctl, layer, strategy);
  return m;
}

}  // namespace basp::validate
