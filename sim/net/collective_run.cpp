// Builds the flows of every group's call into one engine (they share the network), runs it and
// derives nccl-tests figures from the slowest group.
#include "collective_run.hpp"

#include "input_error.hpp"
#include "routing.hpp"

#include <algorithm>
#include <chrono>

namespace basp {

CollectiveResult simulate_collective(const Topology& topo, const CollectiveSpec& spec) {
  const auto t0 = std::chrono::steady_clock::now();
  const int gpus = static_cast<int>(topo.gpus.size());
  const int ranks = spec.ranks == 0 ? gpus : spec.ranks;
  if (ranks < 1 || ranks > gpus)
    throw InputError("", 0, "--ranks", std::to_string(ranks) + " ranks asked for, the topology has " +
                                           std::to_string(gpus) + " GPUs");
  if (!(spec.size_bytes >= 0.0)) throw InputError("", 0, "--size", "must be >= 0");
  const auto groups = make_groups(ranks, spec.groups, spec.placement);
  const GroupTraffic traffic = spec.op == CollectiveOp::alltoall   ? GroupTraffic::all_pairs
                               : spec.op == CollectiveOp::sendrecv ? GroupTraffic::successor
                                                                   : GroupTraffic::nccl_rings;
  const TrafficGroups described[] = {{&groups, traffic}};
  const FoldChoice choice = choose_fold(spec.engine, topo, ranks, described);
  const RankFold& fold = choice.fold;

  Engine engine(fold.quotient_capacities(link_capacities(topo)));
  Router router(topo);
  GroupSet set(groups, fold);
  const GroupCalls calls = add_collectives(engine, router, topo, fold, spec.op, set, spec.size_bytes);
  CollectiveResult r;
  r.stats = fold.expand_stats(engine.run());
  r.engine = choice.use;
  r.ranks = ranks;
  r.groups = spec.groups;
  r.group_size = ranks / spec.groups;
  for (TaskId t : calls.done) r.time_s = std::max(r.time_s, engine.finish_time(t));
  r.algbw_Bps = r.time_s > 0.0 ? spec.size_bytes / r.time_s : 0.0;
  r.busbw_Bps = r.algbw_Bps * collective_info(spec.op).busbw_factor(r.group_size);
  r.link_bytes = fold.expand_links(engine.link_bytes());
  r.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

}  // namespace basp
