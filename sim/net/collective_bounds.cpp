// Per-rank transfer bounds: the rank's flows exactly as add_collectives builds them (bytes, waits,
// multiplicities, routes), reduced to the slowest single flow and the most loaded link, and for
// an all-to-all the copy of the rank's own slice, which runs alongside.
#include "collective_bounds.hpp"

#include <algorithm>
#include <limits>

namespace basp {
namespace {

// The flows of one rank, folded into what bounds its call. Its links are few: they are collected
// and sorted rather than indexed by link id (a cluster has up to millions of links).
struct RankFlows {
  const Topology& topo;
  struct OnLink {
    int link;
    double bytes, wait_s;
  };
  std::vector<OnLink> hops;  // scratch
  double bound = 0.0;

  void add(const RouteView& r, double bytes, double wait_s, std::uint32_t count) {
    double slowest = 0.0;  // time this flow alone needs on its tightest link
    for (const Hop& h : r.hops) {
      const double on_link = bytes * count * h.share;
      slowest = std::max(slowest, on_link / topo.link(h.link).capacity_Bps);
      hops.push_back({h.link, on_link, wait_s});
    }
    bound = std::max(bound, wait_s + slowest);
  }

  double finish() {
    std::sort(hops.begin(), hops.end(), [](const OnLink& a, const OnLink& b) { return a.link < b.link; });
    for (std::size_t k = 0; k < hops.size();) {
      double load = 0.0, first_wait = std::numeric_limits<double>::infinity();
      const int link = hops[k].link;
      for (; k < hops.size() && hops[k].link == link; ++k) {
        load += hops[k].bytes;
        first_wait = std::min(first_wait, hops[k].wait_s);
      }
      bound = std::max(bound, first_wait + load / topo.link(link).capacity_Bps);
    }
    hops.clear();
    const double b = bound;
    bound = 0.0;
    return b;
  }
};

}  // namespace

std::vector<double> call_transfer_bounds(Router& router, const Topology& topo, const RankFold& fold,
                                         CollectiveOp op, GroupSet& set, double size) {
  RankFlows flows{topo, {}};
  std::vector<double> out(fold.classes(), 0.0);
  const auto& groups = set.groups();
  const bool ring = op == CollectiveOp::allgather || op == CollectiveOp::reducescatter || op == CollectiveOp::allreduce;
  const GroupSet::RingPlan* plan = ring ? &set.rings(topo, router) : nullptr;
  for (int c = 0; c < fold.classes(); ++c) {
    const std::size_t g = set.group_of(c);
    const auto& group = groups[g];
    const int n = static_cast<int>(group.size());
    if (op == CollectiveOp::alltoall) out[c] = local_copy_s(topo, size, n);  // alongside its flows
    if (n < 2) continue;
    if (op == CollectiveOp::alltoall) {
      const double chunk = size / n;
      for (int peer : group)
        if (peer != c) {
          const RouteView to = router.route(c, peer);
          flows.add(to, chunk, to.latency_s, 1);
          const RouteView from = router.route(peer, c);
          flows.add(from, chunk, from.latency_s, 1);
        }
    } else if (op == CollectiveOp::sendrecv) {
      const int i = static_cast<int>(std::find(group.begin(), group.end(), c) - group.begin());
      const RouteView to = router.route(c, group[(i + 1) % n]);
      flows.add(to, size, to.latency_s, 1);
      const RouteView from = router.route(group[(i + n - 1) % n], c);
      flows.add(from, size, from.latency_s, 1);
    } else {
      const double steps = op == CollectiveOp::allreduce ? 2.0 * (n - 1) : double(n - 1);
      const double bytes = collective_info(op).busbw_factor(n) * size / plan->channels[g];
      const double wait = steps * plan->step_latency_s[g];
      for (const RingEdge& e : plan->edges[g])
        if (e.from == c) flows.add(router.route(e.from, e.to), bytes, wait, e.channels);
      for (const RingEdge& e : plan->into[g])
        if (e.to == c) flows.add(router.route(e.from, e.to), bytes, wait, e.channels);
    }
    out[c] = std::max(out[c], flows.finish());
  }
  return out;
}

CallBounds::Call CallBounds::get(Router& router, const Topology& topo, const RankFold& fold, CollectiveOp op,
                                 GroupSet& set, double size) {
  const auto key = std::tuple(static_cast<const GroupSet*>(&set), static_cast<int>(op), size);
  auto it = known_.find(key);
  if (it == known_.end()) {
    Known k{{}, call_transfer_bounds(router, topo, fold, op, set, size)};
    for (int c = 0; c < fold.classes(); ++c)
      k.overhead_s.push_back(call_overhead_s(topo, op, static_cast<int>(set.groups()[set.group_of(c)].size())));
    it = known_.emplace(key, std::move(k)).first;
  }
  return {it->second.overhead_s[selected_], it->second.transfer_s[selected_]};
}

std::vector<int> CallBounds::distinct_classes() const {
  if (known_.empty()) return {0};
  const int classes = static_cast<int>(known_.begin()->second.transfer_s.size());
  std::map<std::vector<double>, int> first_with;  // a class's bounds over every call -> first such class
  std::vector<double> profile;
  for (int c = 0; c < classes; ++c) {
    profile.clear();
    for (const auto& [key, k] : known_) profile.insert(profile.end(), {k.overhead_s[c], k.transfer_s[c]});
    first_with.try_emplace(profile, c);
  }
  std::vector<int> out;
  for (const auto& [profile_of, c] : first_with) out.push_back(c);
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace basp
