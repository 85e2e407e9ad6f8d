// Runs the measured layer for one strategy on every rank: inputs made per rank, warm-up and timed
// iterations, per-phase times and (when checking) the outputs and gradients gathered to rank 0.
#pragma once

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

template <LayerOps Ops>
StrategyMeasurement run_layer(Ops& ops, Control& ctl, LayerStrategy strategy, const LayerRunOptions& o) {
  const LayerShape& sh = o.shape;
  const RankPlan plan = plan_rank(strategy, sh, ctl.size(), ctl.rank());
  AttentionLayer<Ops> layer(ops, sh, plan);
  ops.upload(layer.x, token_slice(o.seed, InputTensor::x, sh, plan));
  ops.upload(layer.dy, token_slice(o.seed, InputTensor::dy, sh, plan));
  ops.upload(layer.wq, weight(o.seed, InputTensor::wq, sh));
  ops.upload(layer.wk, weight(o.seed, InputTensor::wk, sh));
  ops.upload(layer.wv, weight(o.seed, InputTensor::wv, sh));
  ops.upload(layer.wo, weight(o.seed, InputTensor::wo, sh));

  StrategyMeasurement m;
  m.strategy = strategy;
  m.group_size = plan.exchange.peers;
  m.ranks = ctl.size();
  m.iters = o.iters;
  const double e = ops.element_bytes(), P = plan.exchange.peers;
  const double q_bytes = e * double(layer.elements_per_peer_q()) * P;
  const double kv_bytes = e * double(layer.elements_per_peer_kv()) * P;
  for (Phase p : {Phase::a2a_q, Phase::a2a_o, Phase::a2a_do, Phase::a2a_dq}) m.send_bytes[int(p)] = q_bytes;
  for (Phase p : {Phase::a2a_k, Phase::a2a_v, Phase::a2a_dk, Phase::a2a_dv}) m.send_bytes[int(p)] = kv_bytes;

  std::vector<double> mine, mine_waits;
  for (int it = 0; it < o.warmup + o.iters; ++it) {
    ctl.barrier();  // every iteration starts together, so exchange times are not skewed by stragglers
    ops.start_iteration();
    layer.forward();
    layer.backward();
    const PhaseTimes t = ops.finish_iteration();
    const PhaseTimes w = ops.peer_waits();
    if (it >= o.warmup) {
      mine.insert(mine.end(), t.begin(), t.end());
      mine_waits.insert(mine_waits.end(), w.begin(), w.end());
    }
  }
  const auto rows_of = [](const std::vector<double>& all) {
    std::vector<PhaseTimes> rows;
    for (std::size_t i = 0; i + kPhases <= all.size(); i += kPhases) {
      PhaseTimes t;
      std::copy(all.begin() + long(i), all.begin() + long(i + kPhases), t.begin());
      rows.push_back(t);
    }
    return rows;
  };
  m.samples = rows_of(ctl.gather_vector(mine));
  m.waits = rows_of(ctl.gather_vector(mine_waits));
  // Then each exchange isolated, as nccl-tests would time it: the same buffers and sizes, its group
  // aligned first, nothing else running, the same warm-up and repeats. Outputs are already made.
  std::vector<double> mine_alone;
  for (int it = 0; it < o.warmup + o.iters; ++it) {
    ctl.barrier();
    ops.start_iteration();
    layer.exchanges_alone();
    const PhaseTimes t = ops.finish_iteration();
    if (it >= o.warmup) mine_alone.insert(mine_alone.end(), t.begin(), t.end());
  }
  m.isolated = rows_of(ctl.gather_vector(mine_alone));
  if (!o.check) return m;

  // Outputs: each rank's token rows go back to their global place; weight gradients are summed.
  std::vector<float> my_y = ops.download(layer.y);
  corrupt_output_if_asked(ctl.rank(), my_y);
  const auto y = ctl.gather_vector(my_y);
  const auto dx = ctl.gather_vector(ops.download(layer.dx));
  const auto sum_over_ranks = [&](const typename Ops::Buffer& b) {
    const std::vector<float> local = ops.download(b);
    const std::vector<float> every = ctl.gather_vector(local);
    std::vector<double> total(ctl.rank() == 0 ? local.size() : 0, 0.0);
    for (std::size_t i = 0; i < every.size(); ++i) total[i % local.size()] += every[i];
    return total;
  };
  m.gathered.dwq = sum_over_ranks(layer.dwq);
  m.gathered.dwk = sum_over_ranks(layer.dwk);
  m.gathered.dwv = sum_over_ranks(layer.dwv);
  m.gathered.dwo = sum_over_ranks(layer.dwo);
  if (ctl.rank() != 0) return m;
  const long D = sh.hidden, rows = long(sh.batch) * sh.seq;
  m.gathered.y.assign(rows * D, 0.0);
  m.gathered.dx.assign(rows * D, 0.0);
  m.gathered.row_rank.assign(rows, -1);
  const long per_rank = plan.exchange.tokens() * D;
  for (int r = 0; r < ctl.size(); ++r) {
    const RankPlan pr = plan_rank(strategy, sh, ctl.size(), r);
    for (int q = 0; q < pr.exchange.nseq; ++q)
      for (long i = 0; i < pr.exchange.chunk; ++i) {
        const long global = (long(pr.first_sequence + q) * sh.seq + pr.first_position + i) * D;
        const long local = r * per_rank + (q * pr.exchange.chunk + i) * D;
        m.gathered.row_rank[global / D] = r;
        for (long c = 0; c < D; ++c) {
          m.gathered.y[global + c] = y[local + c];
          m.gathered.dx[global + c] = dx[local + c];
        }
      }
  }
  return m;
}

}  // namespace basp::validate
