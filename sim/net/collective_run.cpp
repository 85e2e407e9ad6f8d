// Builds the flows of every group's call into one engine (they share the network), runs it and
// derives nccl-tests figures from the slowest group.
#include "collective_run.hpp"

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

// Figures of a run on the quotient of `cells` (links: `links`), back on the whole cluster. Bytes
// of a relaxed link are summed from the traffic as the full engine sums them, flow by flow.
CollectiveResult cell_figures(const Topology& topo, const CollectiveSpec& spec, const Call& call, const Engine& engine,
                              const GroupCalls& calls, const FlowCells& cells, const QuotientLinks& links,
                              const CallTraffic& traffic) {
  CollectiveResult r;
  r.ranks = call.ranks;
  r.groups = spec.groups;
  r.group_size = call.ranks / spec.groups;
  for (TaskId t : calls.done) r.time_s = std::max(r.time_s, engine.finish_time(t));
  r.algbw_Bps = r.time_s > 0.0 ? spec.size_bytes / r.time_s : 0.0;
  r.busbw_Bps = r.algbw_Bps * collective_info(spec.op).busbw_factor(r.group_size);
  const std::vector<double>& per_cell = engine.link_bytes();
  r.link_bytes.resize(topo.link_count());
  for (int l = 0; l < topo.link_count(); ++l) {
    const int c = cells.links.of[l];
    if (cells.relaxed.empty() || !cells.relaxed[l]) r.link_bytes[l] = per_cell[c] / cells.links.members[c];
  }
  if (!cells.relaxed.empty())
    for (const CallFlow& f : traffic.flows) {
      const double bytes = spec.size_bytes * f.factor / f.divisor;
      for (std::uint32_t h = f.hop_begin; h < f.hop_begin + f.hop_count; ++h)
        if (cells.relaxed[traffic.hops[h].link]) r.link_bytes[traffic.hops[h].link] += bytes * traffic.hops[h].share * f.count;
    }
  for (int c = 0; c < cells.links.count(); ++c) {
    const int rep = cells.links.representative[c];
    if (cells.relaxed.empty() || !cells.relaxed[rep]) r.class_bytes[topo.link(rep).cls] += per_cell[c];
  }
  for (int l : links.relaxed_link) r.class_bytes[topo.link(l).cls] += r.link_bytes[l];
  return r;
}

// The call on the quotient of its equitable cells, where they merge any flows (flow_cells.hpp):
// for clusters and jobs no translation maps onto themselves. First with the fabric trunks left out
// of the cells (coarser cells), checked never to bind; where one did, again with them in. `why`
// says why no translation did.
std::optional<CollectiveResult> run_on_cells(const Topology& topo, const CollectiveSpec& spec, Call& call,
                                             const std::string& why, std::chrono::steady_clock::time_point t0) {
  Router router(topo, true);
  const RankFold identity = RankFold::identity(call.ranks);
  GroupSet set(call.groups, identity);
  const CallTraffic traffic = call_traffic(topo, router, spec.op, set);
  std::vector<std::uint64_t> group_size(call.ranks);  // what sets a call's overheads
  for (int r = 0; r < call.ranks; ++r) group_size[r] = set.groups()[set.group_of(r)].size();
  std::vector<char> trunks = fabric_trunks(topo);
  const bool any_trunk = std::ranges::any_of(traffic.hops, [&](const Hop& h) { return trunks[h.link] != 0; });
  std::string trunks_note = any_trunk ? "; fabric trunks left out of the cells, below capacity at every solve"
                                      : "";
  for (bool relax : {any_trunk, false}) {
    const FlowCells cells = equitable_cells(topo, call.ranks, traffic, group_size, relax ? trunks : std::vector<char>{});
    if (cells.flows.count() == static_cast<int>(traffic.flows.size()) && cells.ranks.count() == call.ranks)
      return std::nullopt;
    const QuotientLinks links = quotient_links(topo, cells, traffic);
    Engine engine(links.capacity_Bps);
    if (!links.never_binding.empty()) engine.never_binding(links.never_binding);
    const GroupCalls calls = add_collectives_on_cells(engine, topo, cells, links, traffic, spec.op, set, spec.size_bytes);
    const RunStats stats = engine.run();
    if (!engine.unbinding_held()) {
      trunks_note = "; with the fabric trunks in the cells (left out, one would have bound)";
      continue;
    }
    CollectiveResult r = cell_figures(topo, spec, call, engine, calls, cells, links, traffic);
    r.stats = stats;
    const bool even = std::ranges::all_of(cells.ranks.members, [&](std::uint32_t m) { return m == cells.ranks.members[0]; });
    r.engine = {"classes",
                "no translation (" + why + "); equitable cells instead: " + std::to_string(cells.ranks.count()) +
                    " rank, " + std::to_string(cells.flows.count()) + " flow and " +
                    std::to_string(cells.links.count()) + " link cells, refined in " + std::to_string(cells.rounds) +
                    " rounds" + trunks_note,
                cells.ranks.count(), static_cast<int>(links.capacity_Bps.size()),
                even ? static_cast<int>(cells.ranks.members[0]) : 0};
    r.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return r;
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
  // than the full engine's run of it (a global all-to-all on 130 DGX H100 nodes: 5.3 s against
  // 3.0 s). Demanded, they show the cells a cluster has and check them against the full engine.
  if (!choice.fold.folded() && spec.engine == EngineMode::classes) {
    if (std::optional<CollectiveResult> r = run_on_cells(topo, spec, call, choice.use.why, t0)) return *r;
    throw InputError("", 0, "--engine", "classes: this scenario has no exact symmetry and no cells that merge "
                                          "anything (" + choice.use.why + "); use --engine full or auto");
  }
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
      // Classes demanded and no translation found: cells may still apply, on the whole topology.
      const EngineMode mode = spec.engine == EngineMode::classes ? EngineMode::automatic : spec.engine;
      std::optional<FoldedPart> p = fold_template(mode, *cluster.file().templ, *skeleton, call.ranks,
                                                  described, cluster.adjust(), moves, true);
      if (p) return run_call(p->part, spec, std::move(call), p->choice, false, t0, std::move(p->part_rank));
    }
  }
  return simulate_collective(cluster.whole(), spec);
}

}  // namespace basp
