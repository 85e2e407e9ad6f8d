// Per-rank transfer bounds: the rank's flows exactly as add_collectives builds them (bytes, waits,
// multiplicities, routes), reduced to the slowest single flow and the most loaded link, and for
// an all-to-all the copy of the rank's own slice, which runs alongside; linear in the call's size.
#include "collective_bounds.hpp"

#include "splitmix64.hpp"

#include <algorithm>
#include <limits>

namespace basp {
namespace {

// The flows of one rank, folded into the lines that bound its call. Each link's load is summed in
// a scratch indexed by link id (`sums`, as long as the topology has links, all zero between ranks),
// in the order the hops were added, whatever the links' ids: on two parts of a template (other
// ids for the same links) a rank's lines are then the same bits, and the planner's output does not
// depend on which thread's part worked them out.
struct RankFlows {
  const Topology& topo;
  using OnLink = TransferLineStore::LinkSum;
  std::vector<OnLink>& sums;
  std::vector<int> touched;  // links with a load, in the order first added
  std::vector<std::pair<double, double>> lines;

  // A flow of `per_size` bytes per byte of the call's size, `count` times over its route.
  void add(const RouteView& r, double per_size, double wait_s, std::uint32_t count) {
    double slowest = 0.0;  // seconds per byte of size this flow alone needs on its tightest link
    for (const Hop& h : r.hops) {
      const double on_link = per_size * count * h.share;
      slowest = std::max(slowest, on_link / topo.link(h.link).capacity_Bps);
      OnLink& sum = sums[h.link];
      // Waits are latencies, finite: an infinite first wait marks a link not yet touched.
      if (sum.first_wait_s == std::numeric_limits<double>::infinity()) touched.push_back(h.link);
      sum.load += on_link;
      sum.first_wait_s = std::min(sum.first_wait_s, wait_s);
    }
    lines.push_back({wait_s, slowest});
  }

  TransferLines finish() {
    for (int link : touched) {
      lines.push_back({sums[link].first_wait_s, sums[link].load / topo.link(link).capacity_Bps});
      sums[link] = OnLink{};
    }
    touched.clear();
    // Keep the lines no other is above at every size: by slope, steepest first, each with a
    // larger wait than all steeper ones (equal pairs are equal bits, so their order is moot).
    std::sort(lines.begin(), lines.end(), [](const auto& a, const auto& b) {
      return a.second != b.second ? a.second > b.second : a.first > b.first;
    });
    TransferLines out;
    for (const auto& l : lines)
      if (out.lines.empty() || l.first > out.lines.back().first) out.lines.push_back(l);
    lines.clear();
    return out;
  }
};

// Rank c's lines for a call of `op` on set's groups; c must represent its class in set's fold
// (`plan`: set's rings, for ring ops).
TransferLines rank_transfer_lines(RankFlows& flows, Router& router, CollectiveOp op, GroupSet& set,
                                  const GroupSet::RingPlan* plan, int c) {
  const std::size_t g = set.group_of(c);
  const auto& group = set.groups()[g];
  const int n = static_cast<int>(group.size());
  // An all-to-all copies its own slice alongside its flows (local_copy_s).
  const double copy_Bps = flows.topo.software.local_copy_Bps;
  if (op == CollectiveOp::alltoall && copy_Bps > 0.0 && n > 0) flows.lines.push_back({0.0, 1.0 / n / copy_Bps});
  if (n >= 2) {
    if (op == CollectiveOp::alltoall) {
      for (int peer : group)
        if (peer != c) {
          const RouteView to = router.route(c, peer);
          flows.add(to, 1.0 / n, to.latency_s, 1);
          const RouteView from = router.route(peer, c);
          flows.add(from, 1.0 / n, from.latency_s, 1);
        }
    } else if (op == CollectiveOp::sendrecv) {
      const int i = static_cast<int>(std::find(group.begin(), group.end(), c) - group.begin());
      const RouteView to = router.route(c, group[(i + 1) % n]);
      flows.add(to, 1.0, to.latency_s, 1);
      const RouteView from = router.route(group[(i + n - 1) % n], c);
      flows.add(from, 1.0, from.latency_s, 1);
    } else {
      const double steps = op == CollectiveOp::allreduce ? 2.0 * (n - 1) : double(n - 1);
      const double per_size = collective_info(op).busbw_factor(n) / plan->channels[g];
      const double wait = steps * plan->step_latency_s[g];
      for (const RingEdge& e : plan->edges[g])
        if (e.from == c) flows.add(router.route(e.from, e.to), per_size, wait, e.channels);
      for (const RingEdge& e : plan->into[g])
        if (e.to == c) flows.add(router.route(e.from, e.to), per_size, wait, e.channels);
    }
  }
  return flows.finish();
}

bool is_ring_op(CollectiveOp op) {
  return op == CollectiveOp::allgather || op == CollectiveOp::reducescatter || op == CollectiveOp::allreduce;
}

}  // namespace

double TransferLines::at(double size_bytes) const {
  double most = 0.0;
  for (const auto& [wait_s, per_byte_s] : lines) most = std::max(most, wait_s + size_bytes * per_byte_s);
  return most;
}

std::vector<TransferLines> call_transfer_lines(Router& router, const Topology& topo, const RankFold& fold,
                                               CollectiveOp op, GroupSet& set) {
  std::vector<RankFlows::OnLink> sums(topo.link_count());
  RankFlows flows{topo, sums, {}, {}};
  const GroupSet::RingPlan* plan = is_ring_op(op) ? &set.rings(topo, router) : nullptr;
  std::vector<TransferLines> out(fold.classes());
  for (int c = 0; c < fold.classes(); ++c) out[c] = rank_transfer_lines(flows, router, op, set, plan, c);
  return out;
}

std::vector<double> call_transfer_bounds(Router& router, const Topology& topo, const RankFold& fold,
                                         CollectiveOp op, GroupSet& set, double size) {
  std::vector<double> out;
  for (const TransferLines& l : call_transfer_lines(router, topo, fold, op, set)) out.push_back(l.at(size));
  return out;
}

int TransferLineStore::groups_id(const GroupSet& set) { return groups_id(set.groups()); }

int TransferLineStore::groups_id(const std::vector<std::vector<int>>& groups) {
  const std::uint64_t h = splitmix64_groups(splitmix64(groups.size()), groups);
  const std::lock_guard lock(mutex_);
  for (auto [it, end] = by_hash_.equal_range(h); it != end; ++it)
    if (groups_[it->second] == groups) return it->second;
  const int id = static_cast<int>(groups_.size());
  groups_.push_back(groups);
  by_hash_.insert({h, id});
  for (const auto& g : groups) bytes_ += sizeof(g) + g.size() * sizeof(int);
  return id;
}

std::size_t TransferLineStore::bytes() const {
  const std::lock_guard lock(mutex_);
  return bytes_;
}

std::shared_ptr<const TransferLineStore::Lines> TransferLineStore::lines(Router& router, const Topology& topo, int id,
                                                                         CollectiveOp op, GroupSet& set, int ranks,
                                                                         int period) {
  std::unique_lock lock(mutex_);
  Entry& e = lines_[{id, static_cast<int>(op), period}];
  // One thread at a time works on an entry; the others wait for what it hands out.
  worked_out_.wait(lock, [&] { return !e.working || (e.lines && static_cast<int>(e.lines->index.size()) >= ranks); });
  if (e.lines && static_cast<int>(e.lines->index.size()) >= ranks) return e.lines;
  e.working = true;
  lock.unlock();
  struct Done {  // the entry's work ends, and waiters wake, however it ends (no route: an input error)
    TransferLineStore& store;
    Entry& entry;
    ~Done() {
      {
        const std::lock_guard relock(store.mutex_);
        entry.working = false;
      }
      store.worked_out_.notify_all();
    }
  } done{*this, e};

  auto l = e.lines ? std::make_shared<Lines>(*e.lines) : std::make_shared<Lines>();
  l->period = period;
  std::size_t added = 0;
  std::vector<LinkSum> sums(topo.link_count());
  RankFlows flows{topo, sums, {}, {}};
  const GroupSet::RingPlan* plan = is_ring_op(op) ? &set.rings(topo, router) : nullptr;
  for (int c = static_cast<int>(l->index.size()); c < ranks; ++c) {
    // Beyond the call's period a rank's lines are those of c mod period, a translate of it (the
    // same routes' images over links alike, the same ring steps): worked out once. Always so, not
    // only when it saves time, so that a bound does not depend on which store worked it out.
    if (l->period > 0 && c >= l->period) {
      const int same = l->index[c % l->period];
      const double overhead_s = l->overhead_s[c % l->period];
      l->index.push_back(same);
      l->overhead_s.push_back(overhead_s);
      added += sizeof(int) + sizeof(double);
      continue;
    }
    l->index.push_back(static_cast<int>(l->transfer.size()));
    l->transfer.push_back(rank_transfer_lines(flows, router, op, set, plan, c));
    l->overhead_s.push_back(call_overhead_s(topo, op, static_cast<int>(set.groups()[set.group_of(c)].size())));
    added += sizeof(TransferLines) + sizeof(int) + sizeof(double) + l->transfer.back().lines.size() * 2 * sizeof(double);
  }
  const std::lock_guard relock(mutex_);
  e.lines = l;
  bytes_ += added;
  return l;
}

CallBounds::CallBounds(std::shared_ptr<TransferLineStore> store) : store_(std::move(store)) {}

void CallBounds::select(int rank_class) {
  selected_ = rank_class;
  matched_.clear();
}

CallBounds::Call CallBounds::get(Router& router, const Topology& topo, const RankFold& fold, CollectiveOp op,
                                 GroupSet& set, double size) {
  int id = -1;
  for (const auto& [seen, known] : matched_)
    if (seen == &set) id = known;
  if (id < 0) {
    id = store_->groups_id(set);
    matched_.push_back({&set, id});
  }
  classes_ = fold.classes();
  const auto p = periods_.find({id, static_cast<int>(group_traffic(op))});
  const std::shared_ptr<const TransferLineStore::Lines> l =
      store_->lines(router, topo, id, op, set, classes_, p == periods_.end() ? 0 : p->second);
  used_lines_[{id, static_cast<int>(op)}] = l;
  used_.insert({id, static_cast<int>(op), size});
  return {l->overhead_s[selected_], l->of(selected_).at(size)};
}

std::vector<int> CallBounds::distinct_classes() const {
  if (used_.empty()) return {0};
  std::map<std::vector<double>, int> first_with;  // a class's bounds over every call -> first such class
  std::vector<double> profile;
  for (int c = 0; c < classes_; ++c) {
    profile.clear();
    for (const auto& [groups, op, size] : used_) {
      const TransferLineStore::Lines& l = *used_lines_.at({groups, op});
      profile.insert(profile.end(), {l.overhead_s[c], l.of(c).at(size)});
    }
    first_with.try_emplace(profile, c);
  }
  std::vector<int> out;
  for (const auto& [profile_of, c] : first_with) out.push_back(c);
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace basp
