// Builds the step graph. The schedule follows DeepSpeed: exchanges block the compute stream (as
// DeepSpeed-Ulysses issues them), ZeRO-3 prefetches and keeps weights as its coordinator does,
// gradients are reduced in buckets (ZeRO-3) or per module on their own stream as backward ends.
#include "step_graph.hpp"

#include "collective_bounds.hpp"
#include "collectives.hpp"
#include "zero3_trace.hpp"

#include <algorithm>
#include <array>
#include <optional>
#include <stdexcept>

namespace basp {
namespace {

struct LabelInfo {
  std::string_view name;
  SpanKind kind;
};

constexpr std::array<LabelInfo, 20> labels = {{
    {"embedding", SpanKind::compute}, {"pre-attention", SpanKind::compute}, {"attention", SpanKind::compute},
    {"post-attention", SpanKind::compute}, {"lm head + loss", SpanKind::compute}, {"optimizer", SpanKind::compute},
    {"all-to-all q", SpanKind::sp_comm}, {"all-to-all k", SpanKind::sp_comm}, {"all-to-all v", SpanKind::sp_comm},
    {"all-to-all o", SpanKind::sp_comm}, {"all-to-all do", SpanKind::sp_comm}, {"all-to-all dq", SpanKind::sp_comm},
    {"all-to-all dk", SpanKind::sp_comm}, {"all-to-all dv", SpanKind::sp_comm}, {"ring kv", SpanKind::sp_comm},
    {"ring kv + dkv", SpanKind::sp_comm}, {"ring dkv", SpanKind::sp_comm},
    {"zero all-gather", SpanKind::zero_gather}, {"zero reduce-scatter", SpanKind::zero_reduce},
    {"zero all-reduce", SpanKind::zero_reduce},
}};

constexpr std::uint8_t forward = 0, recompute = 1, backward = 2;

class StepBuilder {
 public:
  StepBuilder(Engine& e, Router& r, const Topology& t, const RankFold& f, const Layout& l, const StepCosts& c,
              const ModelSpec& m, const ZeroPlan& z, const ZeroGroups& zg, CallBounds* bounds,
              const ComputeSpeed* speed)
      : engine_(e), router_(r), topo_(t), fold_(f), layout_(l), costs_(c), model_(m), zero_(z),
        ranks_(bounds ? 1 : f.classes()), bounds_(bounds), speed_(speed) {
    if (speed && (bounds || f.folded())) throw std::logic_error("build_step: stragglers need every rank built");
    out_.spans.resize(ranks_);
    last_call_.resize(ranks_);
    for (auto& s : out_.spans) s.reserve(32 * std::size_t(m.layers));
    for (auto* tail : {&compute_, &gather_, &reduce_})
      for (int r = 0; r < ranks_; ++r) tail->push_back(delay(r, 0.0));
    shard_.emplace(zg.shard, f);
    if (!zg.replica.empty()) replica_.emplace(zg.replica, f);
    if (l.a2a) a2a_.emplace(l.a2a_groups, f);
    if (l.ring_size > 1) ring_.emplace(l.ring_groups, f);
  }

  StepTasks build(bool checkpointing, int layers) {
    if (zero_.stage == 3) plan_fetches(checkpointing, layers);
    start_gradient_buckets(layers);
    use_weights(Zero3Use::embedding, -1, forward);
    compute(Label::embedding, -1, forward, costs_.embedding[0]);
    for (int layer = 0; layer < layers; ++layer) layer_forward(layer, forward);
    use_weights(Zero3Use::head, -1, forward);
    compute(Label::lm_head, -1, forward, costs_.lm_head[0]);
    before_backward(costs_.head_gradients);
    use_weights(Zero3Use::head, -1, backward);
    compute(Label::lm_head, -1, backward, costs_.lm_head[1]);
    gradients_ready(costs_.head_gradients, -1);
    for (int layer = layers - 1; layer >= 0; --layer) {
      if (alone(layer) && buckets_.elements > 0) {
        reduce_gradients(buckets_.elements, buckets_.layer);
        buckets_.elements = 0;
      }
      if (checkpointing) layer_forward(layer, recompute);
      before_backward(costs_.layer_parameters);
      layer_backward(layer);
      gradients_ready(costs_.layer_parameters, layer);
    }
    before_backward(costs_.embedding_parameters);
    use_weights(Zero3Use::embedding, -1, backward);
    compute(Label::embedding, -1, backward, costs_.embedding[1]);
    gradients_ready(costs_.embedding_parameters, -1);
    reduce_after_backward();
    optimizer_and_end();
    return std::move(out_);
  }

 private:
  // A task of rank class r; on a fold of cells it counts as the ranks of its cell (Engine::weigh).
  TaskId delay(int r, double duration_s) {
    const TaskId t = engine_.add_delay(duration_s);
    if (fold_.cells && !bounds_) engine_.weigh(t, fold_.class_members(r));
    return t;
  }

  // Gradients are reduced a bucket at a time (docs/cost-model.md, "Gradient reduction"). ZeRO-2
  // and 3, and ZeRO-1 with overlap_comm, reduce from backward hooks: a bucket (DeepSpeed's
  // reduce_bucket_size) once the module whose backward comes next would overflow it (DeepSpeed
  // flushes at that module's first gradient, early in its backward; here just before it, after
  // the previous module's); a module larger than the bucket is reduced right after its own
  // backward. ZeRO-0, and ZeRO-1 without overlap_comm, have no hooks: every module's gradients
  // wait for backward to end and are then reduced in the same buckets (ZeRO-0's fixed size).
  struct GradientBuckets {
    bool hooks = false;
    double size = 0;       // elements a bucket holds; 0: every module's reduced on its own
    double elements = 0;   // in the bucket now
    int layer = -1;        // the last module in the bucket, which its call is labelled with
    bool windowed = false;  // a window of the model's layers is built
    std::vector<std::pair<double, int>> after_backward;  // (parameters, layer) of each module, without hooks
  };

  void start_gradient_buckets(int layers) {
    buckets_.hooks = zero_.stage >= 2 || (zero_.stage == 1 && zero_.overlap_comm);
    buckets_.size = zero_.stage == 0 ? zero0_allreduce_bucket_elements : zero_.reduce_bucket_elements;
    buckets_.windowed = layers < model_.layers;
    window_middle_ = layers / 2;
  }

  void flush_before(double parameters) {
    if (buckets_.size > 0 && buckets_.elements > 0 && buckets_.elements + parameters > buckets_.size) {
      reduce_gradients(buckets_.elements, buckets_.layer);
      buckets_.elements = 0;
    }
  }

  void add_to_bucket(double parameters, int layer) {
    if (!(buckets_.size > 0)) return reduce_gradients(parameters, layer);
    buckets_.elements += parameters;
    buckets_.layer = layer;
    if (buckets_.elements >= buckets_.size) {
      reduce_gradients(buckets_.elements, layer);
      buckets_.elements = 0;
    }
  }

  void before_backward(double parameters) {
    if (zero_.reduce_gradients && buckets_.hooks) flush_before(parameters);
  }

  // A window's middle layer stands for the layers left out (step_figures.cpp): under ZeRO-1/2
  // its gradients are reduced on their own, the bucket before it flushed ahead of its backward,
  // so that its period holds one layer's reduction, as many bytes as a left-out layer's (the
  // calls of the whole graph are fewer and larger). ZeRO-3's buckets are as documented in
  // docs/cost-model.md ("Large jobs").
  bool alone(int layer) const {
    return buckets_.windowed && layer == window_middle_ && zero_.reduce_gradients && buckets_.hooks &&
           zero_.stage < 3;
  }

  void gradients_ready(double parameters, int layer) {
    if (!zero_.reduce_gradients) return;
    if (alone(layer))
      reduce_gradients(parameters, layer, false);
    else if (buckets_.hooks)
      add_to_bucket(parameters, layer);
    else
      buckets_.after_backward.push_back({parameters, layer});
  }

  // Without hooks, every module's gradients are reduced once backward is done, then what is left
  // in the bucket either way.
  void reduce_after_backward() {
    auto& after = buckets_.after_backward;
    if (buckets_.windowed && !after.empty()) {
      // What is reduced after backward is every module's, the left-out layers' included: the
      // whole graph's calls, outside the layers (-1), so that the extrapolation counts them once.
      after.assign(1, {costs_.head_gradients, -1});
      after.insert(after.end(), model_.layers, {costs_.layer_parameters, -1});
      after.push_back({costs_.embedding_parameters, -1});
    }
    for (auto [parameters, layer] : after) {
      flush_before(parameters);
      add_to_bucket(parameters, layer);
    }
    if (buckets_.elements > 0) reduce_gradients(buckets_.elements, -1);
  }

  // Optimizer once every gradient is reduced; ZeRO-1/2 then gather the updated weights. A
  // micro-step that only accumulates ends with its backward: its zero-time optimizer task marks
  // that moment. Then each rank's end, once all its streams are done.
  void optimizer_and_end() {
    join(reduce_);
    compute(Label::optimizer, -1, forward, zero_.reduce_gradients ? costs_.optimizer : Work{});
    out_.optimizer = compute_;
    if (zero_.reduce_gradients && (zero_.stage == 1 || zero_.stage == 2)) {
      gather_ = compute_;  // the gather stream picks up after the optimizer
      collective(Label::zero_allgather, -1, forward, *shard_, CollectiveOp::allgather,
                 2.0 * total_parameters(model_), gather_);
    }
    out_.end.resize(ranks_);
    for (int r = 0; r < ranks_; ++r) {
      out_.end[r] = delay(r, 0.0);
      for (auto* tail : {&compute_, &gather_, &reduce_}) engine_.depends(out_.end[r], (*tail)[r]);
    }
  }

  void compute(Label label, int layer, std::uint8_t pass, const Work& w) {
    for (int r = 0; r < ranks_; ++r) {
      const TaskId t = delay(r, speed_ ? w.time_s * speed_->factor(r, layer, pass) : w.time_s);
      engine_.depends(t, compute_[r]);
      compute_[r] = t;
      out_.spans[r].push_back({t, t, std::int16_t(layer), label, pass});
    }
  }

  // One call per group; each rank (class) enters after its stream's tail, which becomes the call's return.
  void collective(Label label, int layer, std::uint8_t pass, GroupSet& groups, CollectiveOp op, double bytes,
                  std::vector<TaskId>& tail) {
    GroupCalls t;
    if (bounds_) {  // one rank's chain: its call, then its least transfer time
      const CallBounds::Call b = bounds_->get(router_, topo_, fold_, op, groups, bytes);
      t.call = {engine_.add_delay(b.overhead_s)};
      engine_.depends(t.call[0], tail[0]);
      t.done = {engine_.add_delay(b.transfer_s)};
      engine_.depends(t.done[0], t.call[0]);
    } else {
      t = add_collectives(engine_, router_, topo_, fold_, op, groups, bytes, tail);
    }
    for (int r = 0; r < ranks_; ++r) {
      tail[r] = t.done[r];
      last_call_[r] = t.call[r];
      out_.spans[r].push_back({t.call[r], t.done[r], std::int16_t(layer), label, pass});
    }
  }

  void alltoall(Label label, int layer, std::uint8_t pass, double bytes) {
    collective(label, layer, pass, *a2a_, CollectiveOp::alltoall, bytes, compute_);
  }

  // ZeRO-3 fetches weights as DeepSpeed's parameter coordinator does (zero3_fetches.hpp,
  // docs/cost-model.md). The step's uses of weights, in order (its trace), are of units: a
  // layer's attention inputs (Q, K, V, gathered before its QKV projection), its output projection
  // and MLP, the embedding table and the head (one unit with the table when tied). Each use issues
  // the gathers the coordinator decides for it, on the gather stream once the compute before it
  // has finished (the host would issue them earlier: pessimistic), and its compute waits for the
  // call holding its unit. A window of layers stands
  // for the whole model: its layers are the model's first, middle and last (model_layer), and
  // each of their uses issues what that use issues in the whole model's trace, so the middle
  // layer sees what a middle layer of the model does (the uses of layers left out issue nothing:
  // the window's extrapolation counts the middle layer's for them).
  // The model layer a layer of the graph stands for: a window's first half, its middle layer
  // (the one extrapolated) in the model's middle, the rest at the model's end.
  int model_layer(int layer) const {
    const int window = window_layers_, half = window / 2;
    if (window >= model_.layers || layer < half) return layer;
    if (layer == half) return model_.layers / 2;
    return model_.layers - window + layer;
  }

  void plan_fetches(bool checkpointing, int layers) {
    window_layers_ = layers;
    Zero3Trace t = zero3_trace(model_, costs_, checkpointing);
    gathers_ = coordinate_fetches(t.uses, t.unit_elements,
                                  {zero_.prefetch_elements, zero_.max_live_elements, zero_.reuse_distance_elements})
                   .uses;
    trace_ = std::move(t.uses);
    unit_elements_ = std::move(t.unit_elements);
    unit_done_.assign(unit_elements_.size(), {});
  }

  // One all-gather for these units, on the gather stream, once the compute so far has finished.
  void gather_units(const std::vector<std::size_t>& which, int layer, std::uint8_t pass) {
    double elements = 0;
    for (std::size_t u : which) elements += unit_elements_[u];
    if (!(elements > 0)) return;  // nothing to gather: every tensor stays whole
    collective(Label::zero_allgather, layer, pass, *shard_, CollectiveOp::allgather, 2.0 * elements, gather_);
    for (int r = 0; r < ranks_; ++r) engine_.depends(last_call_[r], compute_[r]);
    for (std::size_t u : which)
      if (unit_elements_[u] > 0) unit_done_[u] = gather_;
  }

  // The compute about to start uses unit (what, layer of the graph): the next use of its unit in
  // the model's trace; the uses before it belong to layers a window leaves out.
  void use_weights(Zero3Use what, int layer, std::uint8_t pass) {
    if (trace_.empty()) return;
    const std::size_t unit = zero3_unit(model_, what, layer < 0 ? layer : model_layer(layer));
    while (next_use_ < trace_.size() && trace_[next_use_].unit != unit) ++next_use_;
    if (next_use_ == trace_.size()) throw std::logic_error("build_step: ZeRO-3 weights used out of their trace's order");
    const UseGathers& g = gathers_[next_use_++];
    if (g.own) gather_units({unit}, layer, pass);
    for (const std::vector<std::size_t>& hook : g.prefetches) gather_units(hook, layer, pass);
    if (!unit_done_[unit].empty()) join(unit_done_[unit]);
  }

  // Reduce-scatter within the shard group (all-reduce under ZeRO-0), then all-reduce each shard
  // across the replicas when shards span fewer than all ranks: with overlap_comm on the reduce
  // stream once the compute so far has finished, else on the compute stream itself, which waits.
  // `waits`: false for a window's middle layer reducing on its own, which stands for a steady
  // state where the previous bucket's reductions are long done (its period is extrapolated).
  void reduce_gradients(double parameters, int layer, bool waits = true) {
    const double bytes = 2.0 * parameters;
    std::vector<TaskId>& stream = zero_.overlap_comm ? reduce_ : compute_;
    // With overlap_comm DeepSpeed's ZeRO-1/2 make the compute stream wait, at each flush, for the
    // reductions queued before it (stage_1_and_2.py, average_tensor: the current stream waits for
    // the reduction stream, since DeepSpeed PR #5606): compute runs at most one bucket ahead.
    if (waits && zero_.overlap_comm && (zero_.stage == 1 || zero_.stage == 2)) join(reduce_);
    if (zero_.stage == 0) {
      collective(Label::zero_allreduce, layer, backward, *shard_, CollectiveOp::allreduce, bytes, stream);
    } else {
      collective(Label::zero_reducescatter, layer, backward, *shard_, CollectiveOp::reducescatter, bytes,
                 stream);
    }
    if (&stream == &reduce_)
      for (int r = 0; r < ranks_; ++r) engine_.depends(last_call_[r], compute_[r]);
    if (zero_.stage > 0 && replica_)
      collective(Label::zero_allreduce, layer, backward, *replica_, CollectiveOp::allreduce,
                 bytes / zero_.shard_ranks, stream);
  }

  // Ring attention over layout_.ring_groups: step j attends block j while block j+1 travels; with
  // double buffering, step j's send may start once step j−1's attention has released its buffer.
  // Backward passes K, V and the partial dK, dV together, and dK, dV one last hop home.
  void ring(int layer, std::uint8_t pass) {
    const bool bwd = pass == backward;
    const int steps = layout_.ring_size;
    std::vector<TaskId> sp = compute_;  // the ring starts once this rank's K and V exist
    std::vector<TaskId> released;       // the attention that last used the spare buffer
    for (int j = 0; j < steps; ++j) {
      const bool pass_on = j + 1 < steps;
      if (pass_on) {
        collective(bwd ? Label::ring_kv_dkv : Label::ring_kv, layer, pass, *ring_,
                   CollectiveOp::sendrecv, (bwd ? 2.0 : 1.0) * layout_.ring_kv_bytes, sp);
        for (std::size_t r = 0; r < released.size(); ++r) engine_.depends(last_call_[r], released[r]);
      }
      compute(Label::attention, layer, pass, costs_.attention_block[bwd ? 1 : 0]);
      released = compute_;
      if (pass_on) join(sp);  // the next block has arrived
    }
    if (bwd) {
      collective(Label::ring_dkv, layer, pass, *ring_, CollectiveOp::sendrecv, layout_.ring_kv_bytes, sp);
      for (int r = 0; r < ranks_; ++r) engine_.depends(last_call_[r], released[r]);
      join(sp);
    }
  }

  // The compute stream continues only after `other` (per rank) has finished too.
  void join(const std::vector<TaskId>& other) {
    for (int r = 0; r < ranks_; ++r) {
      const TaskId t = delay(r, 0.0);
      engine_.depends(t, compute_[r]);
      engine_.depends(t, other[r]);
      compute_[r] = t;
    }
  }

  void attention(int layer, std::uint8_t pass) {
    if (layout_.ring_size > 1)
      ring(layer, pass);
    else
      compute(Label::attention, layer, pass, costs_.attention_block[pass == backward ? 1 : 0]);
  }

  void layer_forward(int layer, std::uint8_t pass) {
    use_weights(Zero3Use::attention_inputs, layer, pass);
    compute(Label::pre_attention, layer, pass, costs_.pre_attention[0]);
    if (layout_.a2a) {
      alltoall(Label::a2a_q, layer, pass, layout_.q_bytes);
      alltoall(Label::a2a_k, layer, pass, layout_.kv_bytes);
      alltoall(Label::a2a_v, layer, pass, layout_.kv_bytes);
    }
    attention(layer, pass);
    if (layout_.a2a) alltoall(Label::a2a_o, layer, pass, layout_.q_bytes);
    use_weights(Zero3Use::output_and_mlp, layer, pass);
    compute(Label::post_attention, layer, pass, costs_.post_attention[0]);
  }

  void layer_backward(int layer) {
    use_weights(Zero3Use::output_and_mlp, layer, backward);
    compute(Label::post_attention, layer, backward, costs_.post_attention[1]);
    if (layout_.a2a) alltoall(Label::a2a_do, layer, backward, layout_.q_bytes);
    attention(layer, backward);
    if (layout_.a2a) {
      alltoall(Label::a2a_dq, layer, backward, layout_.q_bytes);
      alltoall(Label::a2a_dk, layer, backward, layout_.kv_bytes);
      alltoall(Label::a2a_dv, layer, backward, layout_.kv_bytes);
    }
    use_weights(Zero3Use::attention_inputs, layer, backward);
    compute(Label::pre_attention, layer, backward, costs_.pre_attention[1]);
  }

  Engine& engine_;
  Router& router_;
  const Topology& topo_;
  const RankFold& fold_;
  const Layout& layout_;
  const StepCosts& costs_;
  const ModelSpec& model_;
  const ZeroPlan& zero_;
  const int ranks_;  // rank classes: every per-rank vector below is indexed by class (one with bounds_)
  CallBounds* bounds_;  // set: each call is its least time over the ranks, and one rank is built
  const ComputeSpeed* speed_;  // set: stragglers and jitter
  std::vector<TaskId> compute_, gather_, reduce_;  // per rank: the last task of each stream
  std::vector<TaskId> last_call_;  // per rank: its latest call
  // ZeRO-3, over the whole model's trace of weight uses (plan_fetches):
  std::vector<WeightUse> trace_;
  std::vector<UseGathers> gathers_;              // per use: what it gathers
  std::vector<double> unit_elements_;
  std::vector<std::vector<TaskId>> unit_done_;   // per unit, per rank: its latest gather has returned
  std::size_t next_use_ = 0;                     // in trace_: the first use not reached yet
  int window_layers_ = 0;                        // layers built into the graph
  int window_middle_ = 0;                        // the layer a window's extrapolation repeats
  GradientBuckets buckets_;
  std::optional<GroupSet> shard_, replica_, a2a_, ring_;
  StepTasks out_;
};

}  // namespace

std::string_view span_name(Label label) { return labels[static_cast<int>(label)].name; }
SpanKind span_kind(Label label) { return labels[static_cast<int>(label)].kind; }

std::vector<TrafficGroups> step_traffic(const Layout& layout, const ZeroGroups& zero) {
  std::vector<TrafficGroups> t{{&zero.shard, GroupTraffic::nccl_rings}};
  if (!zero.replica.empty()) t.push_back({&zero.replica, GroupTraffic::nccl_rings});
  // Groups of one only copy within each rank: nothing a move of nodes could fail to keep.
  if (layout.a2a_size > 1) t.push_back({&layout.a2a_groups, GroupTraffic::all_pairs});
  if (layout.ring_size > 1) t.push_back({&layout.ring_groups, GroupTraffic::successor});
  return t;
}

StepTasks build_step(Engine& engine, Router& router, const Topology& topo, const RankFold& fold,
                     const Layout& layout, const StepCosts& costs, const ModelSpec& model, bool checkpointing,
                     const ZeroPlan& zero, const ZeroGroups& zero_groups, int layers, CallBounds* bounds,
                     const ComputeSpeed* speed) {
  return StepBuilder(engine, router, topo, fold, layout, costs, model, zero, zero_groups, bounds, speed)
      .build(checkpointing, layers);
}

double a2a_wait_s(const Engine& engine, const StepTasks& tasks, const Layout& layout, const RankFold& fold) {
  if (!layout.a2a || layout.a2a_size < 2 || layout.ranks < 1) return 0.0;
  // Every rank issues the same calls in the same order: its k-th all-to-all is its group's k-th.
  std::vector<std::vector<double>> entry(tasks.spans.size());
  for (std::size_t c = 0; c < tasks.spans.size(); ++c)
    for (const Span& s : tasks.spans[c])
      if (s.label >= Label::a2a_q && s.label <= Label::a2a_dv) entry[c].push_back(engine.ready_time(s.first));
  double total = 0.0;
  std::vector<const std::vector<double>*> member;  // each group member's class entries
  for (const auto& group : layout.a2a_groups) {
    member.clear();
    for (int r : group) member.push_back(&entry[fold.rank_class(r)]);
    for (std::size_t k = 0; k < entry[0].size(); ++k) {
      double latest = 0.0;
      for (const std::vector<double>* m : member) latest = std::max(latest, (*m)[k]);
      for (const std::vector<double>* m : member) total += latest - (*m)[k];
    }
  }
  return total / layout.ranks;
}

}  // namespace basp
