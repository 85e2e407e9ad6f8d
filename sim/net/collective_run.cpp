// Builds the flows of every group's call into one engine (they share the network), runs it and
// derives nccl-tests figures from the slowest group.
#include "collective_run.hpp"

#include "cell_fold.hpp"
#include "cluster_part.hpp"

#include "input_error.hpp"
#include "routing.hpp"

#include <algorithm>
#include <chrono>
#include <optional>
#include <string>

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

// Runs the call on `topo` (the whole topology, or a part whose router takes the cluster's ranks,
// with stand-ins) under `choice`.
// `trunks_held`, when given: whether the never-binding trunks of a fold of cells stayed below
// capacity (where not, the figures are not the cluster's).
CollectiveResult run_call(const Topology& topo, Router& router, const CollectiveSpec& spec, Call call,
                          const FoldChoice& choice, bool whole, std::chrono::steady_clock::time_point t0,
                          bool* trunks_held = nullptr) {
  const RankFold& fold = choice.fold;
  Engine engine = fold.quotient_engine(link_capacities(topo));
  GroupSet set(std::move(call.groups), fold);
  const GroupCalls calls = add_collectives(engine, router, topo, fold, spec.op, set, spec.size_bytes);
  CollectiveResult r;
  r.stats = fold.expand_stats(engine.run());
  if (trunks_held) *trunks_held = engine.unbinding_held();
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

// The call on the quotient of its equitable cells (cell_fold.hpp), for clusters and jobs no
// translation maps onto themselves: first with the fabric trunks left out of the cells, checked
// never to bind; where one did, again with them in. Empty where the cells merge nothing. `why`
// says why no translation did.
std::optional<CollectiveResult> run_on_cells(const Topology& topo, const CollectiveSpec& spec, const Call& call,
                                             const std::string& why, std::chrono::steady_clock::time_point t0) {
  Router router(topo, true);
  const TrafficGroups described[] = {{&call.groups, call.traffic}};
  for (bool relax : {true, false}) {
    std::optional<FoldChoice> cells = cell_choice(topo, router, call.ranks, described, relax, why);
    if (!cells) return std::nullopt;
    bool held = true;
    CollectiveResult r = run_call(topo, router, spec, call, *cells, true, t0, &held);
    if (held) return r;
  }
  return std::nullopt;
}

}  // namespace

CollectiveResult simulate_collective(const Topology& topo, const CollectiveSpec& spec) {
  const auto t0 = std::chrono::steady_clock::now();
  Call call = describe(spec, static_cast<int>(topo.gpus.size()));
  const TrafficGroups described[] = {{&call.groups, call.traffic}};
  const EngineMode search = spec.engine == EngineMode::classes ? EngineMode::automatic : spec.engine;
  const FoldChoice choice = choose_fold(search, topo, call.ranks, described);
  // Cells only where classes are demanded: for one call, routing and refining every flow costs more
  // than the full engine's run of it (a global all-to-all on 130 DGX H100 nodes: 3.7 s against
  // 3.1 s). Demanded, they show the cells a cluster has and check them against the full engine.
  if (!choice.fold.folded() && spec.engine == EngineMode::classes) {
    if (std::optional<CollectiveResult> r = run_on_cells(topo, spec, call, choice.use.why, t0)) return *r;
    throw InputError("", 0, "--engine", "classes: this scenario has no exact symmetry and no cells that merge "
                                          "anything (" + choice.use.why + "); use --engine full or auto");
  }
  Router router(topo, true);
  return run_call(topo, router, spec, std::move(call), choice, true, t0);
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
      // Classes demanded and no translation found: cells may still apply, on the whole topology.
      const EngineMode mode = spec.engine == EngineMode::classes ? EngineMode::automatic : spec.engine;
      std::optional<FoldedPart> p = fold_template(mode, *cluster.file().templ, *skeleton, call.ranks,
                                                  described, cluster.adjust(), moves, true);
      if (p) {
        Router router(p->part, std::move(p->part_rank));
        return run_call(p->part, router, spec, std::move(call), p->choice, false, t0);
      }
    }
  }
  return simulate_collective(cluster.whole(), spec);
}

}  // namespace basp
