// Builds the flows of every group's call into one engine (they share the network), runs it and
// derives nccl-tests figures from the slowest group.
#include "collective_run.hpp"

#include "cluster_part.hpp"

#include "input_error.hpp"
#include "routing.hpp"

#include <algorithm>
#include <chrono>

namespace basp {

namespace {

struct Call {
  int ranks = 0;
  std::vector<std::vector<int>> groups;
  GroupTraffic traffic = GroupTraffic::all_pairs;
};

Call describe(const CollectiveSpec& spec, int gpus) {
  const int ranks = spec.ranks == 0 ? gpus : spec.ranks;
  if (ranks < 1 || ranks > gpus)
    throw InputError("", 0, "--ranks", std::to_string(ranks) + " ranks asked for, the topology has " +
                                           std::to_string(gpus) + " GPUs");
  if (!(spec.size_bytes >= 0.0)) throw InputError("", 0, "--size", "must be >= 0");
  return {ranks, make_groups(ranks, spec.groups, spec.placement), group_traffic(spec.op)};
}

// Runs the call on `topo` (the whole topology, or a part routing the cluster's ranks) under `choice`.
// `part_rank`: the part's rank of each cluster rank, with stand-ins (empty: the part's own ranks).
CollectiveResult run_call(const Topology& topo, const CollectiveSpec& spec, Call call, const FoldChoice& choice,
                          bool whole, std::chrono::steady_clock::time_point t0, std::vector<int> part_rank = {}) {
  const RankFold& fold = choice.fold;
  Engine engine(fold.quotient_capacities(link_capacities(topo)));
  Router router = part_rank.empty() ? Router(topo, true) : Router(topo, std::move(part_rank));
  GroupSet set(std::move(call.groups), fold);
  const GroupCalls calls = add_collectives(engine, router, topo, fold, spec.op, set, spec.size_bytes);
  CollectiveResult r;
  r.stats = fold.expand_stats(engine.run());
  r.engine = choice.use;
  r.ranks = call.ranks;
  r.groups = spec.groups;
  r.group_size = call.ranks / spec.groups;
  for (TaskId t : calls.done) r.time_s = std::max(r.time_s, engine.finish_time(t));
  r.algbw_Bps = r.time_s > 0.0 ? spec.size_bytes / r.time_s : 0.0;
  r.busbw_Bps = r.algbw_Bps * collective_info(spec.op).busbw_factor(r.group_size);
  r.class_bytes = fold.bytes_by_class(topo, engine.link_bytes());
  if (whole) r.link_bytes = fold.expand_links(engine.link_bytes());
  r.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

}  // namespace

CollectiveResult simulate_collective(const Topology& topo, const CollectiveSpec& spec) {
  const auto t0 = std::chrono::steady_clock::now();
  Call call = describe(spec, static_cast<int>(topo.gpus.size()));
  const TrafficGroups described[] = {{&call.groups, call.traffic}};
  const FoldChoice choice = choose_fold(spec.engine, topo, call.ranks, described);
  return run_call(topo, spec, std::move(call), choice, true, t0);
}

CollectiveResult simulate_collective(const ClusterBuilds& cluster, const CollectiveSpec& spec, MoveCache* moves) {
  const Topology* skeleton = spec.engine == EngineMode::full ? nullptr : cluster.skeleton();
  if (skeleton) {
    const auto t0 = std::chrono::steady_clock::now();
    const int gpus = cluster.gpus();
    Call call = describe(spec, gpus);
    if (call.ranks == gpus) {
      const TrafficGroups described[] = {{&call.groups, call.traffic}};
      // Stand-ins: a global all-to-all then needs a node per leaf group, not every node.
      std::optional<FoldedPart> p = fold_template(spec.engine, *cluster.file().templ, *skeleton, call.ranks,
                                                  described, cluster.adjust(), moves, true);
      if (p) return run_call(p->part, spec, std::move(call), p->choice, false, t0, std::move(p->part_rank));
    }
  }
  return simulate_collective(cluster.whole(), spec);
}

}  // namespace basp
