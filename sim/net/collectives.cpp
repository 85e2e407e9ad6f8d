// Schedules of flows for each collective. Software overheads are delays before the flows (they hold
// no bandwidth); flows wait their path latency (rings: one step latency per pipeline step).
#include "collectives.hpp"

#include "cell_fold.hpp"

#include "input_error.hpp"

#include <algorithm>
#include <numeric>
#include <stdexcept>
#include <string>

namespace basp {
namespace {

double ring_factor(int n) { return n > 0 ? double(n - 1) / n : 0.0; }
double allreduce_factor(int n) { return n > 0 ? 2.0 * (n - 1) / n : 0.0; }
double one(int) { return 1.0; }

constexpr CollectiveInfo infos[collective_op_count] = {
    {"alltoall", ring_factor},      {"allgather", ring_factor}, {"reducescatter", ring_factor},
    {"allreduce", allreduce_factor}, {"sendrecv", one}};

// NCCL's send/recv rendezvous: a flow starts once both sides have entered the call, and each
// side's call returns once the flow is done.
void add_rendezvous(Engine& engine, const GroupCalls& out, TaskId flow, int from_class, int to_class) {
  engine.depends(flow, out.call[from_class]);
  engine.depends(flow, out.call[to_class]);
  engine.depends(out.done[from_class], flow);
  engine.depends(out.done[to_class], flow);
}

// A call's flows from rank a to rank b (a a representative), in build order, go to one of two
// sinks: a shape kept for the set's next calls of the op, or (its first call) the engine itself.
struct ShapeBuilder {
  Engine& engine;
  const RankFold& fold;
  CallShape& shape;
  std::vector<Hop> scratch;

  void add(int a, int b, double factor, double divisor, double wait_s, std::uint32_t count, const RouteView& r) {
    shape.flows.push_back({fold.rank_class(a), fold.rank_class(b), engine.store_path(fold.fold_hops(r.hops, scratch)),
                           factor, divisor, wait_s, count});
  }
};

struct FlowAdder {
  Engine& engine;
  const RankFold& fold;
  GroupCalls& out;
  double size;
  std::vector<Hop> scratch;

  void add(int a, int b, double factor, double divisor, double wait_s, std::uint32_t count, const RouteView& r) {
    const TaskId f = engine.add_flow(fold.fold_hops(r.hops, scratch), size * factor / divisor, wait_s, count);
    add_rendezvous(engine, out, f, fold.rank_class(a), fold.rank_class(b));
  }
};

// A call's flows from rank a to rank b, every one of them, with their routes.
struct TrafficRecorder {
  CallTraffic& traffic;

  void add(int a, int b, double factor, double divisor, double wait_s, std::uint32_t count, const RouteView& r) {
    const auto begin = static_cast<std::uint32_t>(traffic.hops.size());
    traffic.hops.insert(traffic.hops.end(), r.hops.begin(), r.hops.end());
    traffic.flows.push_back({a, b, begin, static_cast<std::uint32_t>(r.hops.size()), factor, divisor, wait_s, count});
  }
};

template <class Sink>
void alltoall_flows(Sink& add, Router& router, GroupSet& set) {
  const auto& groups = set.groups();
  for (std::size_t g = 0; g < groups.size(); ++g) {
    const auto& group = groups[g];
    const auto& reps = set.representatives(g);
    const int n = static_cast<int>(group.size());
    // Destination-major, so the router reuses each destination's distance field.
    for (int j = 0; j < n; ++j)
      for (int i : reps)
        if (i != j) {
          const RouteView r = router.route(group[i], group[j]);
          add.add(group[i], group[j], 1.0, n, r.latency_s, 1, r);
        }
  }
}

template <class Sink>
void ring_flows(Sink& add, Router& router, const Topology& topo, CollectiveOp op, GroupSet& set) {
  const auto& groups = set.groups();
  const GroupSet::RingPlan& plan = set.rings(topo, router);
  for (std::size_t g = 0; g < groups.size(); ++g) {
    const int n = static_cast<int>(groups[g].size());
    if (n < 2) continue;
    const double steps = op == CollectiveOp::allreduce ? 2.0 * (n - 1) : double(n - 1);
    const double factor = collective_info(op).busbw_factor(n);
    for (const RingEdge& e : plan.edges[g])
      add.add(e.from, e.to, factor, plan.channels[g], steps * plan.step_latency_s[g], e.channels,
              router.route(e.from, e.to));
  }
}

template <class Sink>
void sendrecv_flows(Sink& add, Router& router, GroupSet& set) {
  const auto& groups = set.groups();
  for (std::size_t g = 0; g < groups.size(); ++g) {
    const auto& group = groups[g];
    const int n = static_cast<int>(group.size());
    if (n < 2) continue;
    for (int i : set.representatives(g)) {
      const RouteView r = router.route(group[i], group[(i + 1) % n]);
      add.add(group[i], group[(i + 1) % n], 1.0, 1.0, r.latency_s, 1, r);
    }
  }
}

template <class Sink>
void call_flows(Sink& add, Router& router, const Topology& topo, CollectiveOp op, GroupSet& set) {
  switch (op) {
    case CollectiveOp::alltoall: alltoall_flows(add, router, set); break;
    case CollectiveOp::allgather:
    case CollectiveOp::reducescatter:
    case CollectiveOp::allreduce: ring_flows(add, router, topo, op, set); break;
    case CollectiveOp::sendrecv: sendrecv_flows(add, router, set); break;
  }
}

// Room for an all-to-all's flows before they are built (engine.reserve).
void reserve_alltoall(Engine& engine, Router& router, const GroupSet& set) {
  const auto& groups = set.groups();
  std::size_t pairs = 0;
  for (std::size_t g = 0; g < groups.size(); ++g) pairs += set.representatives(g).size() * (groups[g].size() - 1);
  if (pairs == 0) return;
  const auto& first = groups.front();
  const std::size_t far_hops = router.route(first.front(), first.back()).hops.size();
  engine.reserve(pairs, pairs, pairs * (far_hops + 2), 4 * pairs);
}

}  // namespace

const CollectiveInfo& collective_info(CollectiveOp op) { return infos[static_cast<int>(op)]; }

GroupTraffic group_traffic(CollectiveOp op) {
  return op == CollectiveOp::alltoall   ? GroupTraffic::all_pairs
         : op == CollectiveOp::sendrecv ? GroupTraffic::successor
                                        : GroupTraffic::nccl_rings;
}

std::optional<CollectiveOp> parse_collective_op(std::string_view name) {
  for (std::size_t i = 0; i < collective_op_count; ++i)
    if (infos[i].name == name) return static_cast<CollectiveOp>(i);
  return std::nullopt;
}

std::vector<std::vector<int>> make_groups(int ranks, int groups, Placement placement) {
  if (groups < 1 || ranks % groups != 0)
    throw InputError("", 0, "--groups", std::to_string(groups) + " groups do not divide " +
                                            std::to_string(ranks) + " ranks evenly");
  const int k = ranks / groups;
  std::vector<std::vector<int>> out(groups);
  for (int g = 0; g < groups; ++g) {
    out[g].reserve(k);
    for (int i = 0; i < k; ++i) out[g].push_back(placement == Placement::contiguous ? g * k + i : i * groups + g);
  }
  return out;
}

GroupSet::GroupSet(std::vector<std::vector<int>> groups, const RankFold& fold)
    : groups_(std::move(groups)), fold_(fold), group_of_(fold.ranks, -1),
      reps_(groups_.size()) {
  for (std::size_t g = 0; g < groups_.size(); ++g)
    for (std::size_t i = 0; i < groups_[g].size(); ++i) {
      const int r = groups_[g][i];
      group_of_[r] = static_cast<int>(g);
      if (fold.represents(r)) reps_[g].push_back(static_cast<int>(i));
    }
  for (int c = 0; c < fold.classes(); ++c)
    if (group_of_[c] < 0) throw std::logic_error("GroupSet: rank " + std::to_string(c) + " is in no group");
}

const GroupSet::RingPlan& GroupSet::rings(const Topology& topo, Router& router) {
  if (rings_) return *rings_;
  RingPlan& p = rings_.emplace();
  const std::size_t n = groups_.size();
  p.channels.assign(n, 1);
  p.edges.resize(n);
  p.into.resize(n);
  p.step_latency_s.assign(n, 0.0);
  // The represented groups' rings, their routes prepared together (Router::prepare_routes).
  std::vector<std::pair<std::size_t, Rings>> rings;
  std::vector<std::pair<int, int>> routed;
  for (std::size_t g = 0; g < n; ++g) {
    if (reps_[g].empty()) continue;
    rings.emplace_back(g, nccl_rings(topo, groups_[g]));
    for (const RingEdge& e : rings.back().second.edges)
      if (fold_.represents(e.from)) routed.push_back({e.from, e.to});
  }
  router.prepare_routes(routed);
  for (const auto& [g, r] : rings) {
    p.channels[g] = r.channels;
    for (const RingEdge& e : r.edges) {
      if (fold_.represents(e.to)) p.into[g].push_back(e);
      if (fold_.represents(e.from)) {
        p.edges[g].push_back(e);
        p.step_latency_s[g] = std::max(p.step_latency_s[g], router.route(e.from, e.to).latency_s);
      }
    }
  }
  // A group's edges are the images of its orbit's representative edges: the slowest is theirs.
  std::vector<char> seen(n, 0);
  std::vector<std::size_t> orbit;
  for (std::size_t g = 0; g < n; ++g) {
    if (seen[g]) continue;
    orbit.assign(1, g);
    seen[g] = 1;
    double slowest = 0.0;
    for (std::size_t k = 0; k < orbit.size(); ++k) {
      const std::size_t h = orbit[k];
      slowest = std::max(slowest, p.step_latency_s[h]);
      for (int gen = 0; gen < RankFold::generators; ++gen) {
        const auto next = static_cast<std::size_t>(group_of_[fold_.moved(groups_[h][0], gen)]);
        if (!seen[next]) {
          seen[next] = 1;
          orbit.push_back(next);
        }
      }
    }
    for (std::size_t h : orbit) p.step_latency_s[h] = slowest;
  }
  return *rings_;
}

const CallShape* GroupSet::call_shape(const Topology& topo, Router& router, CollectiveOp op, Engine& engine) {
  Shape& s = shapes_[static_cast<int>(op)];
  if (s.engine != engine.serial()) s = {engine.serial(), 0, std::nullopt};
  if (s.calls++ == 0) return nullptr;
  if (!s.shape) {
    ShapeBuilder add{engine, fold_, s.shape.emplace(), {}};
    call_flows(add, router, topo, op, *this);
  }
  return &*s.shape;
}

const CallShape& GroupSet::cell_shape(CollectiveOp op, Engine& engine) {
  Shape& s = shapes_[static_cast<int>(op)];
  if (s.engine == engine.serial() && s.shape) return *s.shape;
  s = {engine.serial(), 0, CallShape{}};
  const CellFold& cf = *fold_.cells;
  const CellFold::Pattern* pattern = cf.find(groups_, group_traffic(op));
  const auto [traffic, first] = pattern ? cf.call(*pattern, op) : std::pair<const CallTraffic*, std::uint32_t>{};
  if (!traffic) {
    // Groups of one move nothing (an exchange of one rank): the step leaves them out of its traffic.
    if (std::ranges::all_of(groups_, [](const std::vector<int>& g) { return g.size() < 2; })) return *s.shape;
    throw std::logic_error("GroupSet::cell_shape: a call whose traffic was not refined");
  }
  const CallTraffic& t = *traffic;
  if (t.flows.size() < first + std::size_t(pattern->flow_count))
    throw std::logic_error("GroupSet::cell_shape: an op's flows differ from the refined op's");
  const std::span<const CallFlow> flows(t.flows.data() + first, pattern->flow_count);
  const FlowCells& cells = cf.cells;
  CallShape& shape = *s.shape;
  // The cells' members' count·share on each relaxed link, by cell (dense over the engine's links).
  std::vector<std::vector<std::pair<int, double>>> relaxed_of(cells.flows.count());
  if (!cells.relaxed.empty()) {
    std::vector<double> sum(cf.links.capacity_Bps.size(), 0.0);
    std::vector<int> touched;
    for (std::uint32_t i = 0; i < flows.size(); ++i) {
      const CallFlow& f = flows[i];
      for (std::uint32_t h = f.hop_begin; h < f.hop_begin + f.hop_count; ++h)
        if (cells.relaxed[t.hops[h].link]) {
          auto& list = relaxed_of[cells.flows.of[pattern->flow_begin + i]];
          list.push_back({cf.links.engine_link[t.hops[h].link], double(f.count) * t.hops[h].share});
        }
    }
    for (auto& list : relaxed_of) {
      for (auto [l, w] : list) {
        if (sum[l] == 0.0) touched.push_back(l);
        sum[l] += w;
      }
      std::sort(touched.begin(), touched.end());
      list.clear();
      for (int l : touched) {
        list.push_back({l, sum[l]});
        sum[l] = 0.0;
      }
      touched.clear();
    }
  }
  std::vector<Hop> hops;
  for (std::uint32_t i = 0; i < flows.size(); ++i) {
    const int cell = cells.flows.of[pattern->flow_begin + i];
    if (cells.flows.representative[cell] != static_cast<int>(pattern->flow_begin + i)) continue;
    const CallFlow& f = flows[i];
    const std::uint32_t members = cells.flows.members[cell];
    hops.clear();
    for (std::uint32_t h = f.hop_begin; h < f.hop_begin + f.hop_count; ++h)
      if (cells.relaxed.empty() || !cells.relaxed[t.hops[h].link])
        hops.push_back({cf.links.engine_link[t.hops[h].link], t.hops[h].share});
    const auto relaxed_begin = static_cast<std::uint32_t>(shape.relaxed.size());
    for (auto [l, w] : relaxed_of[cell]) {
      // Engine load = multiplicity · share · rate: the share is the members' sum over the multiplicity.
      hops.push_back({l, float(w / (double(f.count) * members))});
      shape.relaxed.push_back({l, w});
    }
    shape.flows.push_back({fold_.rank_class(f.from), fold_.rank_class(f.to), engine.store_path(hops), f.factor,
                           f.divisor, f.wait_s, f.count * members, members, relaxed_begin,
                           static_cast<std::uint32_t>(shape.relaxed.size()) - relaxed_begin});
  }
  return shape;
}

namespace {

// One call on a fold of cells: a task per rank cell and a flow per flow cell, each weighed as the
// cluster's tasks it stands for; relaxed links get their bytes exactly (Engine::add_link_bytes).
GroupCalls add_cell_collectives(Engine& engine, const Topology& topo, const RankFold& fold, CollectiveOp op,
                                GroupSet& set, double size, std::span<const TaskId> entry) {
  GroupCalls out;
  const int classes = fold.classes();
  out.done.resize(classes);
  out.call.resize(classes);
  for (int c = 0; c < classes; ++c) {
    out.done[c] = engine.add_delay(0.0);
    engine.weigh(out.done[c], fold.class_members(c));
  }
  for (int c = 0; c < classes; ++c) {
    const int n = static_cast<int>(set.groups()[set.group_of(fold.rank_cells->representative[c])].size());
    out.call[c] = engine.add_delay(call_overhead_s(topo, op, n));
    engine.weigh(out.call[c], fold.class_members(c));
    if (!entry.empty()) engine.depends(out.call[c], entry[c]);
    if (op == CollectiveOp::alltoall && topo.software.local_copy_Bps > 0.0) {
      const TaskId copy = engine.add_delay(local_copy_s(topo, size, n));
      engine.weigh(copy, fold.class_members(c));
      engine.depends(copy, out.call[c]);
      engine.depends(out.done[c], copy);
    }
  }
  const CallShape& shape = set.cell_shape(op, engine);
  for (const CallShape::Flow& f : shape.flows) {
    const double bytes = size * f.factor / f.divisor;
    const TaskId t = engine.add_flow_on(f.path, bytes, f.wait_s, f.count);
    engine.weigh(t, f.members);
    add_rendezvous(engine, out, t, f.from_class, f.to_class);
    for (std::uint32_t k = f.relaxed_begin; k < f.relaxed_begin + f.relaxed_count; ++k)
      engine.add_link_bytes(shape.relaxed[k].first, bytes * shape.relaxed[k].second);
  }
  for (int c = 0; c < classes; ++c) engine.depends(out.done[c], out.call[c]);
  return out;
}

}  // namespace

GroupCalls add_collectives(Engine& engine, Router& router, const Topology& topo, const RankFold& fold,
                           CollectiveOp op, GroupSet& set, double size, std::span<const TaskId> entry) {
  if (fold.cells) return add_cell_collectives(engine, topo, fold, op, set, size, entry);
  GroupCalls out;
  const int classes = fold.classes();
  out.done.resize(classes);
  out.call.resize(classes);
  for (int c = 0; c < classes; ++c) out.done[c] = engine.add_delay(0.0);
  for (int c = 0; c < classes; ++c) {
    const int n = static_cast<int>(set.groups()[set.group_of(c)].size());
    out.call[c] = engine.add_delay(call_overhead_s(topo, op, n));
    if (!entry.empty()) engine.depends(out.call[c], entry[c]);
    // The rank's own slice, copied alongside its flows (in a group of one, all the call does).
    if (op == CollectiveOp::alltoall && topo.software.local_copy_Bps > 0.0) {
      const TaskId copy = engine.add_delay(local_copy_s(topo, size, n));
      engine.depends(copy, out.call[c]);
      engine.depends(out.done[c], copy);
    }
  }
  if (const CallShape* shape = set.call_shape(topo, router, op, engine)) {
    const std::size_t flows = shape->flows.size();
    engine.reserve(flows, flows, 0, 4 * flows);
    for (const CallShape::Flow& f : shape->flows) {
      const TaskId t = engine.add_flow_on(f.path, size * f.factor / f.divisor, f.wait_s, f.count);
      add_rendezvous(engine, out, t, f.from_class, f.to_class);
    }
  } else {  // the set's first call of op: its flows straight into the engine
    if (op == CollectiveOp::alltoall) reserve_alltoall(engine, router, set);
    FlowAdder add{engine, fold, out, size, {}};
    call_flows(add, router, topo, op, set);
  }
  for (int c = 0; c < classes; ++c) engine.depends(out.done[c], out.call[c]);
  return out;
}

CallTraffic call_traffic(const Topology& topo, Router& router, CollectiveOp op, GroupSet& set) {
  CallTraffic traffic;
  append_call_traffic(topo, router, op, set, traffic);
  return traffic;
}

void append_call_traffic(const Topology& topo, Router& router, CollectiveOp op, GroupSet& set, CallTraffic& into) {
  std::size_t flows = 0;  // room for them: an all-to-all's pairs, a ring's edges
  for (const auto& g : set.groups()) flows += op == CollectiveOp::alltoall ? g.size() * (g.size() - 1) : 2 * g.size();
  into.flows.reserve(into.flows.size() + flows);
  into.hops.reserve(into.hops.size() + 8 * flows);
  TrafficRecorder add{into};
  call_flows(add, router, topo, op, set);
}

double local_copy_s(const Topology& topo, double size_bytes, int n) {
  const double rate = topo.software.local_copy_Bps;
  return rate > 0.0 && n > 0 ? size_bytes / n / rate : 0.0;
}

double call_overhead_s(const Topology& topo, CollectiveOp op, int n) {
  const int peers = op == CollectiveOp::alltoall ? n - 1 : (n > 1 ? 1 : 0);
  return topo.software.launch_s + topo.software.per_peer_s * peers;
}

std::vector<double> link_capacities(const Topology& topo) {
  std::vector<double> cap(topo.link_count());
  for (int id = 0; id < topo.link_count(); ++id) cap[id] = topo.link(id).capacity_Bps;
  return cap;
}

}  // namespace basp
