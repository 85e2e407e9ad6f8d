// The layouts of a job: every SP degree, micro-batch, grouping and placement, DP and gradient
// accumulation, ZeRO stage and shard group and checkpointing the strategies allow, listed once.
#include "plan.hpp"

#include "cost_model.hpp"
#include "input_error.hpp"
#include "memory_model.hpp"
#include "step_costs.hpp"
#include "zero_plan.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <set>
#include <sstream>

namespace basp {
namespace {

std::vector<long> divisors(long n) {  // ascending; up to sqrt(n) steps, as n may be a huge batch
  std::vector<long> low, high;
  for (long d = 1; d * d <= n; ++d)
    if (n % d == 0) {
      low.push_back(d);
      if (d != n / d) high.push_back(n / d);
    }
  low.insert(low.end(), high.rbegin(), high.rend());
  return low;
}

// A layout key (plan.hpp) is the layout's part (its groups hashed) and the config's (ZeRO,
// checkpointing): a strategy shape's layout, which ZeRO and checkpointing do not change, is keyed
// once for all of its configs.
std::string layout_shape_key(const Layout& l) {
  std::uint64_t h = 0xcbf29ce484222325ULL;
  auto mix = [&](long v) { h = (h ^ std::uint64_t(v)) * 0x100000001b3ULL; };
  for (const auto* groups : {&l.a2a_groups, &l.ring_groups}) {
    mix(-1);
    for (const auto& g : *groups) {
      mix(-2);
      for (int r : g) mix(r);
    }
  }
  std::ostringstream k;
  k.precision(17);
  k << l.sp << ' ' << l.a2a_size << ' ' << l.ring_size << ' ' << l.tokens_per_rank << ' ' << l.sequences << ' '
    << l.attention_heads << ' ' << l.attention_blocks << ' ' << l.block_queries << ' ' << l.block_keys << ' '
    << l.q_bytes << ' ' << l.kv_bytes << ' ' << l.ring_kv_bytes << ' ' << h;
  return k.str();
}

std::string layout_key(const std::string& shape_key, const StepConfig& c) {
  return shape_key + ' ' + std::to_string(c.zero) + ' ' + std::to_string(c.zero_group) + ' ' +
         std::to_string(int(c.checkpointing));
}

// Micro-batches beyond what `basp simulate --batch` accepts are not proposed.
constexpr long max_batch = 1L << 20;

// Whether a shape keeps each sequence on several ranks: not at N = 1, nor with BASP's groups of
// one rank (K = 1), whose calls only copy locally. Such shapes are all plain data parallelism,
// which the dp strategy lists once.
bool sequence_parallel_shape(Strategy s, const StepConfig& c) {
  return sequence_parallel(s, c.sp) && !(s == Strategy::basp && c.sp == c.batch);
}

// The configs of one strategy before the job-wide choices (ZeRO, checkpointing).
std::vector<StepConfig> strategy_shapes(const PlanQuestion& q, Strategy s, int gpus) {
  std::vector<StepConfig> out;
  StepConfig c = q.job;
  c.gpus = gpus;
  c.strategies = {s};
  for (long n : divisors(gpus)) {
    if (s == Strategy::dp && n > 1) break;  // dp is N = 1 only
    const long dp = gpus / n;
    c.sp = static_cast<int>(n);
    if (s == Strategy::sp_dp) {
      // Ulysses of degree K = N with B = 1; replicas hold replica_batch sequences each.
      if (q.global_batch % dp != 0) continue;
      for (long rb : divisors(q.global_batch / dp)) {
        if (rb > max_batch) break;
        c.batch = 1;
        c.replica_batch = static_cast<int>(rb);
        out.push_back(c);
      }
      continue;
    }
    c.replica_batch = 1;
    if (q.global_batch % dp != 0) continue;
    for (long b : divisors(q.global_batch / dp)) {
      if (b > max_batch) break;
      c.batch = static_cast<int>(b);
      if (s == Strategy::basp) {
        if (n % b != 0) continue;
        c.placement = Placement::contiguous;
        out.push_back(c);
        if (b > 1 && n / b > 1) {
          c.placement = Placement::strided;
          out.push_back(c);
        }
      } else if (s == Strategy::usp) {
        for (long u : divisors(n)) {
          if (u == 1 || u == n) continue;  // plain ring and plain Ulysses
          c.ulysses_degree = static_cast<int>(u);
          out.push_back(c);
        }
        c.ulysses_degree = 0;
      } else {
        out.push_back(c);
      }
    }
  }
  return out;
}

// What a micro-step cannot beat: the compute stream runs its compute tasks and its all-to-all
// calls one after another (build_step). A call takes at least its launch and per-peer overheads,
// then its flows start, and all that a rank sends, (K-1)/K of its buffer, leaves its GPU through
// links of `gpu_out_Bps` in all, while it copies its own 1/K. Ring sends overlap attention, but
// they run one after another, each at least its launch and per-peer overheads, and the last
// block's attention waits for the last send. ZeRO is counted as free (its calls, on their own
// streams or, without overlap_comm, on the compute stream, only add to the step). With
// gradient accumulation, the micro-steps before the last end before their optimizer, the last
// compute task.
double global_batch_bound_s(const CostModel& cost, const Layout& layout, const ZeroPlan& zero, bool checkpointing,
                            int layers, const SoftwareCosts& software, double gpu_out_Bps, long accumulation) {
  double a2a = 0.0;
  if (layout.a2a) {
    const double k = layout.a2a_size;
    auto call = [&](double bytes) {
      const double copy = software.local_copy_Bps > 0.0 ? bytes / k / software.local_copy_Bps : 0.0;
      return software.launch_s + software.per_peer_s * (k - 1) + std::max(bytes * (k - 1) / k / gpu_out_Bps, copy);
    };
    // Forward (and recomputation): Q, K, V, O; backward: dO, dQ, dK, dV.
    const double pass = 2 * call(layout.q_bytes) + 2 * call(layout.kv_bytes);
    a2a = layers * pass * (checkpointing ? 3 : 2);
  }
  const StepCosts c = step_costs(cost, layout, zero);
  const double steps = layout.ring_size > 1 ? layout.ring_size : 1;
  const double send = software.launch_s + software.per_peer_s;  // a send/recv call's overheads
  auto attention = [&](double block) { return std::max(steps * block, (steps - 1) * send + block); };
  const double forward =
      c.pre_attention[0].time_s + attention(c.attention_block[0].time_s) + c.post_attention[0].time_s;
  const double backward =
      c.post_attention[1].time_s + attention(c.attention_block[1].time_s) + c.pre_attention[1].time_s;
  const double gradients = c.embedding[0].time_s + layers * forward + c.lm_head[0].time_s + c.lm_head[1].time_s +
                           layers * ((checkpointing ? forward : 0.0) + backward) + c.embedding[1].time_s + a2a;
  return double(accumulation) * gradients + c.optimizer.time_s;
}

// The most a GPU of the topology can send at once: the sum of its outgoing links.
double max_gpu_out_Bps(const Topology& topo) {
  std::vector<double> out(boost::num_vertices(topo.graph), 0.0);
  for (int id = 0; id < topo.link_count(); ++id) out[topo.link(id).from] += topo.link(id).capacity_Bps;
  double most = 0.0;
  for (VertexId g : topo.gpus) most = std::max(most, out[g]);
  return most;
}

}  // namespace

std::string layout_key(const Layout& l, const StepConfig& c) { return layout_key(layout_shape_key(l), c); }

std::vector<PlanCandidate> enumerate_plans(const PlanQuestion& q, const StepSetup& setup, int gpus,
                                           double memory_limit_bytes, std::map<std::string, int>& pruned) {
  const StepReport& rep = setup.report;
  const int per_node = rep.topology().gpus_per_node;
  const CostModel cost{rep.model, *setup.gpu, rep.calibration.compute};
  const double gpu_out_Bps = max_gpu_out_Bps(rep.topology());
  std::vector<PlanCandidate> out;
  std::set<std::string> seen;
  for (Strategy s : q.strategies)
    for (StepConfig c : strategy_shapes(q, s, gpus)) {
      // ZeRO: no sharding, or stage 1-3 over the whole job, an SP group or a node.
      std::vector<std::pair<int, int>> zeros{{0, gpus}};
      std::set<int> shard_groups{gpus, c.sp, per_node};
      for (int stage = 1; stage <= 3; ++stage)
        for (auto it = shard_groups.rbegin(); it != shard_groups.rend(); ++it)
          if (*it >= 1 && gpus % *it == 0) zeros.push_back({stage, *it});
      if (s != Strategy::dp && !sequence_parallel_shape(s, c)) {
        pruned[without_sequence_parallelism] += 2 * int(zeros.size());
        continue;
      }
      // The layout depends on the shape alone (not on ZeRO or checkpointing): made and keyed once.
      Layout layout;
      try {
        layout = make_layout(c, rep.model, s, gpus, per_node);
      } catch (const InputError& e) {
        pruned["strategy constraint (" + e.field + ")"] += 2 * static_cast<int>(zeros.size());
        continue;
      }
      const std::string shape_key = layout_shape_key(layout);
      for (auto [stage, group] : zeros)
        for (bool checkpointing : {false, true}) {
          c.zero = stage;
          c.zero_group = group;
          c.zero_overlap_comm = stage == 0 ? OverlapComm::deepspeed_default : q.job.zero_overlap_comm;  // none at 0
          c.checkpointing = checkpointing;
          if (!seen.insert(layout_key(shape_key, c)).second) {
            ++pruned["same layout as one listed before"];
            continue;
          }
          const double memory = memory_per_gpu(rep.model, layout, zero_plan(c), checkpointing).total();
          if (memory > memory_limit_bytes) {
            ++pruned["does not fit in memory"];
            continue;
          }
          const long per_step = std::lround(layout.sequences);
          const long accumulation = q.global_batch / per_step;
          StepConfig with = c;
          with.accumulation = accumulation;
          out.push_back({s, with, memory,
                         global_batch_bound_s(cost, layout, zero_plan(c), checkpointing, rep.model.layers,
                                              rep.topology().software, gpu_out_Bps, accumulation)});
        }
    }
  return out;
}

}  // namespace basp
