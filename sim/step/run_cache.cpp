// RunCache: parts of a template built once for the patterns that need them, folds matched by
// traffic pattern (most recent first), call periods, and a router per topology routed on.
#include "run_cache.hpp"

#include "cell_fold.hpp"

#include <algorithm>
#include <iterator>
#include <optional>
#include <string>

namespace basp {

Router& RunCache::router(const Topology& topo) {
  for (Part& p : parts_)
    if (p.topo.get() == &topo) {
      if (!p.router) p.router = std::make_unique<Router>(topo, true);
      return *p.router;
    }
  if (routed_ != &topo || !router_) {
    router_ = std::make_unique<Router>(topo, true);
    routed_ = &topo;
    routed_part_.reset();
    for (const Pattern& p : patterns_)
      if (p.part.get() == &topo) routed_part_ = p.part;
  }
  return *router_;
}

std::shared_ptr<const Topology> RunCache::part_holding(const ClusterBuilds& cluster, const std::vector<int>& nodes) {
  constexpr std::size_t kept = 2;
  for (const Part& p : parts_)
    if (std::includes(p.nodes.begin(), p.nodes.end(), nodes.begin(), nodes.end())) return p.topo;
  // Grow the latest part while it stays within an eighth of the cluster (or twice what this
  // pattern needs), so that layouts touching nearly the same nodes share one part and its routes.
  std::vector<int> with = nodes;
  if (!parts_.empty()) {
    std::vector<int> both;
    std::set_union(parts_.front().nodes.begin(), parts_.front().nodes.end(), nodes.begin(), nodes.end(),
                   std::back_inserter(both));
    const std::size_t most = std::max<std::size_t>(2 * nodes.size() + 16, cluster.nodes() / 8);
    if (both.size() <= most && static_cast<int>(both.size()) < cluster.nodes()) with = std::move(both);
  }
  // Initialized from the prvalue, not moved: Boost's graph has no move, a moved Topology is copied.
  std::shared_ptr<const Topology> topo(new Topology(build_part(*cluster.file().templ, with, cluster.adjust())));
  parts_.push_front({topo, std::move(with), nullptr});
  if (parts_.size() > kept) parts_.pop_back();
  return topo;
}

RunCache::Network RunCache::network(EngineMode mode, const ClusterBuilds& cluster, int ranks,
                                    std::span<const TrafficGroups> traffic, bool parts) {
  // Folds hold a class per link: patterns are kept while they hold at most this much (at least 4
  // of them). The planner meets a few hundred patterns, in the order of their layouts' bounds.
  constexpr std::size_t kept = 4, kept_bytes = std::size_t(256) << 20;
  if (cluster_ != &cluster) {
    patterns_.clear();
    parts_.clear();
    cluster_ = &cluster;
  }
  auto found = [&](Pattern& p) { return Network{p.part ? *p.part : cluster.whole(), p.choice, *p.bounds, *p.cells}; };
  auto same = [&](const Pattern& p) {
    if (p.mode != mode || p.ranks != ranks || p.parts != parts || p.traffic.size() != traffic.size()) return false;
    for (std::size_t t = 0; t < traffic.size(); ++t)
      if (p.traffic[t].first != traffic[t].traffic || p.traffic[t].second != *traffic[t].groups) return false;
    return true;
  };
  for (auto it = patterns_.begin(); it != patterns_.end(); ++it)
    if (same(*it)) {
      if (it != patterns_.begin()) std::rotate(patterns_.begin(), it, std::next(it));
      return found(patterns_.front());
    }
  // A topology's call lines are kept for all its patterns while they hold at most kept_bytes;
  // past that, new patterns start a fresh store (the older patterns keep theirs while they last).
  auto store = [&](std::shared_ptr<TransferLineStore>& lines) {
    if (lines->bytes() > kept_bytes) lines = std::make_shared<TransferLineStore>();
    return std::make_unique<CallBounds>(lines);
  };
  Pattern p{mode, ranks, parts, {}, nullptr, {}, nullptr, std::make_unique<PatternCells>()};
  std::optional<PartPlan> plan;
  if (parts && mode != EngineMode::full && cluster.skeleton() && ranks == cluster.gpus())
    plan = plan_part(mode, *cluster.file().templ, *cluster.skeleton(), ranks, traffic, &skeleton_moves);
  if (plan) {
    p.part = part_holding(cluster, plan->nodes);
    p.choice = fold_on_part(std::move(plan->on_skeleton), *cluster.skeleton(), *p.part);
    for (Part& part : parts_)
      if (part.topo == p.part) p.bounds = store(part.lines);
  } else {
    // Classes demanded and no translation: the step may still run on cells (run_strategy decides).
    p.choice = choose_fold(mode == EngineMode::classes ? EngineMode::automatic : mode, cluster.whole(), ranks, traffic,
                           &moves);
    WholeLines& whole = *whole_lines_;
    const std::lock_guard lock(whole.mutex);
    if (whole.cluster != &cluster || !whole.store) {
      whole.store = std::make_shared<TransferLineStore>();
      whole.cluster = &cluster;
    }
    p.bounds = store(whole.store);
  }
  for (const TrafficGroups& t : traffic) p.traffic.push_back({t.traffic, *t.groups});
  patterns_.push_front(std::move(p));
  std::size_t held = 0, count = 0;
  for (auto it = patterns_.begin(); it != patterns_.end(); ++it, ++count) {
    held += it->bytes();
    if (count >= kept && held > kept_bytes) {
      patterns_.erase(it, patterns_.end());
      break;
    }
  }
  return found(patterns_.front());
}

int RunCache::call_period(EngineMode mode, const ClusterBuilds& cluster, int ranks, const TrafficGroups& traffic,
                          bool parts) {
  if (mode == EngineMode::full) return ranks;
  if (periods_cluster_ != &cluster) {
    call_periods_.clear();
    periods_cluster_ = &cluster;
  }
  for (auto it = call_periods_.begin(); it != call_periods_.end(); ++it)
    if (it->mode == mode && it->ranks == ranks && it->parts == parts && it->traffic == traffic.traffic &&
        it->groups == *traffic.groups) {
      if (it != call_periods_.begin()) std::rotate(call_periods_.begin(), it, std::next(it));
      return call_periods_.front().period;
    }
  // Classes where the call has a symmetry; the full engine (its period the job's ranks) is no
  // error here, as a faster way to the same bound is only missed.
  const std::vector<TrafficGroups> one{traffic};
  const FoldChoice found =
      parts && cluster.skeleton() && ranks == cluster.gpus()
          ? choose_fold_on_skeleton(EngineMode::automatic, *cluster.skeleton(), rank_places(*cluster.file().templ),
                                    ranks, one, &skeleton_moves)
          : choose_fold(EngineMode::automatic, cluster.whole(), ranks, one, &moves);
  const int period = found.use.engine == "classes" ? found.fold.period : ranks;
  // Each keeps a copy of its groups (a few MB at 131,072 ranks); a layout asks for at most 4,
  // but the planner's calls recur over many layouts: with 16 kept, the 131,072-GPU question
  // took 15 % more CPU (bench/README.md).
  constexpr std::size_t kept = 64;
  call_periods_.push_front({mode, ranks, parts, traffic.traffic, *traffic.groups, period});
  if (call_periods_.size() > kept) call_periods_.pop_back();
  return period;
}

std::size_t RunCache::Pattern::bytes() const {
  std::size_t b = sizeof(Pattern) + bounds->bytes();
  for (const auto& [kind, groups] : traffic)
    for (const auto& g : groups) b += sizeof(g) + g.size() * sizeof(int);
  auto fold_bytes = [](const RankFold& f) {
    return f.link_class.size() * sizeof(int) + f.class_link.size() * sizeof(int) +
           f.link_load.size() * sizeof(std::uint32_t) + (f.cells ? f.cells->bytes() : 0);
  };
  b += fold_bytes(choice.fold);
  for (const std::optional<FoldChoice>& c : cells->found)
    if (c) b += fold_bytes(c->fold);
  return b;
}

}  // namespace basp
