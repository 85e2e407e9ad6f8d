// A step's cells from its group sets' traffic: every set's flows routed once per op of its kind,
// refined together (each set's flows kept apart), and the fold that indexes the step by them.
#include "cell_fold.hpp"

#include <algorithm>
#include <map>

namespace basp {
namespace {

// The ops a kind of traffic is called with in a step; the first is the one refined.
std::vector<CollectiveOp> ops_of(GroupTraffic traffic) {
  switch (traffic) {
    case GroupTraffic::all_pairs: return {CollectiveOp::alltoall};
    case GroupTraffic::nccl_rings:
      return {CollectiveOp::allreduce, CollectiveOp::allgather, CollectiveOp::reducescatter};
    case GroupTraffic::successor: return {CollectiveOp::sendrecv};
  }
  return {};
}

}  // namespace

std::size_t CellFold::bytes() const {
  auto of = [](const auto& v) { return v.capacity() * sizeof(v[0]); };
  std::size_t b = sizeof(CellFold);
  for (const Pattern& p : patterns) {
    for (const auto& g : p.groups) b += of(g);
    for (const auto& call : p.calls)
      if (call) b += of(call->flows) + of(call->hops);
  }
  for (const Cells* c : {&cells.ranks, &cells.flows, &cells.links})
    b += of(c->of) + of(c->representative) + of(c->members);
  b += of(refined.flows) + of(refined.hops);
  return b + of(cells.relaxed) + of(links.engine_link) + of(links.capacity_Bps) + of(links.never_binding) +
         of(links.relaxed_link);
}

const CellFold::Pattern* CellFold::find(const std::vector<std::vector<int>>& groups, GroupTraffic traffic) const {
  for (const Pattern& p : patterns)
    if (p.traffic == traffic && p.groups == groups) return &p;
  return nullptr;
}

std::pair<const CallTraffic*, std::uint32_t> CellFold::call(const Pattern& p, CollectiveOp op) const {
  if (op == ops_of(p.traffic).front()) return {&refined, p.flow_begin};
  const auto& c = p.calls[static_cast<int>(op)];
  return {c ? &*c : nullptr, 0};
}

std::optional<FoldChoice> cell_choice(const Topology& topo, Router& router, int ranks,
                                      std::span<const TrafficGroups> traffic, bool relax, const std::string& why) {
  auto fold = std::make_shared<CellFold>();
  std::vector<std::uint64_t> flow_colour, rank_colour(ranks, 0);
  std::vector<std::vector<std::size_t>> group_sizes(ranks);  // per rank, its group's size in each set
  const RankFold identity = RankFold::identity(ranks);
  // Every set's refined flows are routed straight into one traffic (millions of flows on large
  // clusters: room made once, never copied), each set's other ops into their own.
  CallTraffic& all = fold->refined;
  std::size_t room = 0;
  for (const TrafficGroups& t : traffic)
    for (const auto& g : *t.groups) room += t.traffic == GroupTraffic::all_pairs ? g.size() * (g.size() - 1) : 2 * g.size();
  all.flows.reserve(room);
  all.hops.reserve(8 * room);
  for (std::size_t p = 0; p < traffic.size(); ++p) {
    CellFold::Pattern pattern{traffic[p].traffic, *traffic[p].groups, static_cast<std::uint32_t>(all.flows.size()),
                              0, {}};
    GroupSet set(pattern.groups, identity);
    const std::vector<CollectiveOp> ops = ops_of(pattern.traffic);
    append_call_traffic(topo, router, ops.front(), set, all);
    pattern.flow_count = static_cast<std::uint32_t>(all.flows.size()) - pattern.flow_begin;
    for (std::size_t i = 1; i < ops.size(); ++i) pattern.calls[static_cast<int>(ops[i])] = call_traffic(topo, router, ops[i], set);
    flow_colour.insert(flow_colour.end(), pattern.flow_count, p);
    for (int r = 0; r < ranks; ++r) group_sizes[r].push_back(set.groups()[set.group_of(r)].size());
    fold->patterns.push_back(std::move(pattern));
  }
  // A rank's call overheads go with its groups' sizes: ranks start in one cell per list of sizes.
  std::map<std::vector<std::size_t>, std::uint64_t> colour_of;
  for (int r = 0; r < ranks; ++r)
    rank_colour[r] = colour_of.try_emplace(group_sizes[r], colour_of.size()).first->second;
  FlowCells cells = equitable_cells(topo, ranks, all, rank_colour, relax ? fabric_trunks(topo) : std::vector<char>{},
                                    flow_colour);
  if (cells.ranks.count() == ranks && cells.flows.count() == static_cast<int>(all.flows.size())) return std::nullopt;
  fold->links = quotient_links(topo, cells, all);
  fold->cells = std::move(cells);
  const FlowCells& c = fold->cells;
  const QuotientLinks& q = fold->links;

  FoldChoice choice;
  RankFold& f = choice.fold;
  f.ranks = f.period = ranks;
  f.gpus_per_node = topo.gpus_per_node;
  f.rank_cells = &c.ranks;
  f.link_class = q.engine_link;
  f.class_link = c.links.representative;
  f.class_link.insert(f.class_link.end(), q.relaxed_link.begin(), q.relaxed_link.end());
  const bool even = std::ranges::all_of(c.ranks.members, [&](std::uint32_t m) { return m == c.ranks.members[0]; });
  choice.use = {"classes",
                "no translation (" + why + "); equitable cells instead: " + std::to_string(c.ranks.count()) + " rank, " +
                    std::to_string(c.flows.count()) + " flow and " + std::to_string(c.links.count()) +
                    " link cells, refined in " + std::to_string(c.rounds) + " rounds" +
                    (!relax ? " (with the fabric trunks in the cells: left out, one would have bound)"
                     : q.relaxed_link.empty() ? ""
                                              : "; fabric trunks left out of the cells, below capacity at every solve"),
                c.ranks.count(), f.link_classes(), even ? static_cast<int>(c.ranks.members[0]) : 0};
  f.cells = std::move(fold);
  return choice;
}

}  // namespace basp
