// Schedules of flows for each collective. Software overheads are delays before the flows (they hold
// no bandwidth); flows wait their path latency (rings: one step latency per pipeline step).
#include "collectives.hpp"

#include "input_error.hpp"

#include <algorithm>
#include <map>
#include <set>

namespace basp {
namespace {

double ring_factor(int n) { return n > 0 ? double(n - 1) / n : 0.0; }
double allreduce_factor(int n) { return n > 0 ? 2.0 * (n - 1) / n : 0.0; }
double one(int) { return 1.0; }

constexpr CollectiveInfo infos[] = {
    {"alltoall", ring_factor},      {"allgather", ring_factor}, {"reducescatter", ring_factor},
    {"allreduce", allreduce_factor}, {"sendrecv", one}};

// A member's call: launch overhead plus per-peer overhead, after its entry task.
TaskId add_call(Engine& engine, const Topology& topo, int peers, std::span<const TaskId> entry, std::size_t i) {
  const TaskId call = engine.add_delay(topo.software.launch_s + topo.software.per_peer_s * peers);
  if (!entry.empty()) engine.depends(call, entry[i]);
  return call;
}

void add_alltoall(Engine& engine, Router& router, const Topology& topo, std::span<const int> group,
                  double size, std::span<const TaskId> entry, CollectiveTasks& out) {
  std::vector<TaskId>& done = out.member_done;
  const int n = static_cast<int>(group.size());
  const std::size_t pairs = std::size_t(n) * (n - 1);
  if (n > 1) {
    const std::size_t far_hops = router.route(group[0], group[n - 1]).hops.size();
    engine.reserve(n + pairs, pairs, pairs * (far_hops + 2), 4 * pairs + 2 * n);
  }
  std::vector<TaskId> call(n);
  for (int i = 0; i < n; ++i) call[i] = add_call(engine, topo, n - 1, entry, i);
  const double chunk = size / n;
  // Destination-major, so the router reuses each destination's distance field.
  for (int j = 0; j < n; ++j)
    for (int i = 0; i < n; ++i) {
      if (i == j) continue;
      const RouteView r = router.route(group[i], group[j]);
      const TaskId f = engine.add_flow(r.hops, chunk, r.latency_s);
      engine.depends(f, call[i]);  // NCCL's send/recv rendezvous: both sides must have entered
      engine.depends(f, call[j]);
      engine.depends(done[i], f);
      engine.depends(done[j], f);
    }
  for (int i = 0; i < n; ++i) engine.depends(done[i], call[i]);
  out.member_call = std::move(call);
}

// Rings ordered as NCCL orders them: node-major, one ring per NIC the group uses in a node. Ring c
// enters every node at the first member whose NIC is the node's c-th NIC, and visits the others in
// rank order from there, so each channel's inter-node traffic lands on a NIC of its own.
std::vector<std::vector<int>> rings(const Topology& topo, std::span<const int> group) {
  std::vector<int> members(group.begin(), group.end());
  std::sort(members.begin(), members.end());
  std::map<int, std::vector<int>> by_node;
  for (int r : members) by_node[topo.node_of_rank(r)].push_back(r);
  auto rail_of = [&](int rank) {
    const int nic = topo.graph[topo.gpus[rank]].nic;
    return nic < 0 ? -1 : topo.graph[nic].rail;
  };
  std::set<int> rails;
  if (by_node.size() > 1)
    for (int r : by_node.begin()->second) rails.insert(rail_of(r));
  const std::vector<int> channel_rail(rails.begin(), rails.end());
  const std::size_t channels = std::max<std::size_t>(1, channel_rail.size());
  std::vector<std::vector<int>> out(channels);
  for (std::size_t c = 0; c < channels; ++c)
    for (auto& [node, ranks] : by_node) {
      std::size_t start = 0;
      if (c < channel_rail.size())
        while (start + 1 < ranks.size() && rail_of(ranks[start]) != channel_rail[c]) ++start;
      for (std::size_t k = 0; k < ranks.size(); ++k) out[c].push_back(ranks[(start + k) % ranks.size()]);
    }
  return out;
}

void add_ring(Engine& engine, Router& router, const Topology& topo, CollectiveOp op,
              std::span<const int> group, double size, std::span<const TaskId> entry,
              CollectiveTasks& out) {
  std::vector<TaskId>& done = out.member_done;
  const int n = static_cast<int>(group.size());
  std::map<int, std::size_t> member;
  for (int i = 0; i < n; ++i) member[group[i]] = i;
  std::vector<TaskId> call(n);
  for (int i = 0; i < n; ++i) call[i] = add_call(engine, topo, n > 1 ? 1 : 0, entry, i);
  if (n > 1) {
    const auto ch = rings(topo, group);
    const double steps = op == CollectiveOp::allreduce ? 2.0 * (n - 1) : double(n - 1);
    const double bytes = collective_info(op).busbw_factor(n) * size / ch.size();
    // Identical edges of different channels share one flow task (same path, same start).
    std::map<std::pair<int, int>, std::uint32_t> edges;
    std::vector<double> step_latency(ch.size(), 0.0);
    for (std::size_t c = 0; c < ch.size(); ++c)
      for (int k = 0; k < n; ++k) {
        const int a = ch[c][k], b = ch[c][(k + 1) % n];
        ++edges[{a, b}];
        step_latency[c] = std::max(step_latency[c], router.route(a, b).latency_s);
      }
    const double latency = *std::max_element(step_latency.begin(), step_latency.end());
    for (auto [edge, count] : edges) {
      const RouteView r = router.route(edge.first, edge.second);
      const TaskId f = engine.add_flow(r.hops, bytes, steps * latency, count);
      const std::size_t i = member[edge.first], j = member[edge.second];
      engine.depends(f, call[i]);
      engine.depends(f, call[j]);
      engine.depends(done[i], f);
      engine.depends(done[j], f);
    }
  }
  for (int i = 0; i < n; ++i) engine.depends(done[i], call[i]);
  out.member_call = std::move(call);
}

void add_sendrecv(Engine& engine, Router& router, const Topology& topo, std::span<const int> group,
                  double size, std::span<const TaskId> entry, CollectiveTasks& out) {
  std::vector<TaskId>& done = out.member_done;
  const int n = static_cast<int>(group.size());
  std::vector<TaskId> call(n);
  for (int i = 0; i < n; ++i) call[i] = add_call(engine, topo, n > 1 ? 1 : 0, entry, i);
  for (int i = 0; n > 1 && i < n; ++i) {
    const int j = (i + 1) % n;
    const RouteView r = router.route(group[i], group[j]);
    const TaskId f = engine.add_flow(r.hops, size, r.latency_s);
    engine.depends(f, call[i]);
    engine.depends(f, call[j]);
    engine.depends(done[i], f);
    engine.depends(done[j], f);
  }
  for (int i = 0; i < n; ++i) engine.depends(done[i], call[i]);
  out.member_call = std::move(call);
}

}  // namespace

const CollectiveInfo& collective_info(CollectiveOp op) { return infos[static_cast<int>(op)]; }

std::optional<CollectiveOp> parse_collective_op(std::string_view name) {
  for (int i = 0; i < 5; ++i)
    if (infos[i].name == name) return static_cast<CollectiveOp>(i);
  return std::nullopt;
}

std::vector<std::vector<int>> make_groups(int ranks, int groups, Placement placement) {
  if (groups < 1 || ranks % groups != 0)
    throw InputError("", 0, "--groups", std::to_string(groups) + " groups do not divide " +
                                            std::to_string(ranks) + " ranks evenly");
  const int k = ranks / groups;
  std::vector<std::vector<int>> out(groups);
  for (int g = 0; g < groups; ++g)
    for (int i = 0; i < k; ++i) out[g].push_back(placement == Placement::contiguous ? g * k + i : i * groups + g);
  return out;
}

CollectiveTasks add_collective(Engine& engine, Router& router, const Topology& topo, CollectiveOp op,
                               std::span<const int> group, double size, std::span<const TaskId> entry) {
  CollectiveTasks out;
  for (std::size_t i = 0; i < group.size(); ++i) out.member_done.push_back(engine.add_delay(0.0));
  switch (op) {
    case CollectiveOp::alltoall: add_alltoall(engine, router, topo, group, size, entry, out); break;
    case CollectiveOp::allgather:
    case CollectiveOp::reducescatter:
    case CollectiveOp::allreduce: add_ring(engine, router, topo, op, group, size, entry, out); break;
    case CollectiveOp::sendrecv: add_sendrecv(engine, router, topo, group, size, entry, out); break;
  }
  return out;
}

std::vector<double> link_capacities(const Topology& topo) {
  std::vector<double> cap(topo.link_count());
  for (int id = 0; id < topo.link_count(); ++id) cap[id] = topo.link(id).capacity_Bps;
  return cap;
}

}  // namespace basp
