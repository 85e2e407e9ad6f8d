// Reduces per-rank timelines to the step's time figures by interval arithmetic (unions and
// overlaps of each rank's compute, exchange and ZeRO spans), and link counters to link figures.
#include "step_figures.hpp"

#include <algorithm>
#include <numeric>
#include <utility>

namespace basp {
namespace {

using Interval = std::pair<double, double>;

// Sorted, disjoint union of intervals.
std::vector<Interval> merged(std::vector<Interval> v) {
  // A stream's spans mostly come in time order already; equal intervals are equal values, so
  // skipping the sort then changes nothing.
  if (!std::is_sorted(v.begin(), v.end())) std::sort(v.begin(), v.end());
  std::vector<Interval> out;
  for (const Interval& i : v) {
    if (!out.empty() && i.first <= out.back().second)
      out.back().second = std::max(out.back().second, i.second);
    else
      out.push_back(i);
  }
  return out;
}

double length(const std::vector<Interval>& v) {
  double sum = 0;
  for (auto [a, b] : v) sum += b - a;
  return sum;
}

// Length of the intersection of two sorted, disjoint unions.
double overlap(const std::vector<Interval>& a, const std::vector<Interval>& b) {
  double sum = 0;
  for (std::size_t i = 0, j = 0; i < a.size() && j < b.size();) {
    sum += std::max(0.0, std::min(a[i].second, b[j].second) - std::max(a[i].first, b[j].first));
    if (a[i].second < b[j].second) ++i; else ++j;
  }
  return sum;
}

// Sums over the ranks: for the whole graph, and for the middle layer of a window (its spans, and
// the time from its start to the next layer's in forward and in backward).
struct Figures {
  double compute = 0, a2a = 0, a2a_exposed = 0, zero = 0, zero_exposed = 0, period = 0;
};

// ZeRO time is summed over calls (gathers and reductions run on two streams and may overlap), so
// that it adds up over layers; its exposed part is that of their union.
void add(Figures& f, const std::vector<Interval>& c, const std::vector<Interval>& cx, const std::vector<Interval>& x,
         const std::vector<Interval>& z, double compute_s, double zero_s) {
  f.compute += compute_s;
  f.a2a += length(x);
  f.a2a_exposed += length(x) - overlap(x, c);
  f.zero += zero_s;
  f.zero_exposed += length(z) - overlap(z, cx);
}

// One rank's intervals by kind; kept across ranks so their storage is reused.
struct RankIntervals {
  std::vector<Interval> compute, exchange, zero;
};

// Adds one rank's timeline to `total`, and when extrapolating its layer `mid` to `middle`.
void add_rank(const Engine& engine, const std::vector<Span>& spans, int mid, bool extrapolate, RankIntervals& r,
              Figures& total, Figures& middle) {
  auto& [compute, exchange, zero] = r;
  compute.clear();
  exchange.clear();
  zero.clear();
  std::vector<Interval> mid_exchange, mid_zero;
  double mid_compute = 0, zero_calls = 0, mid_zero_calls = 0;
  double first[2][3] = {{-1, -1, -1}, {-1, -1, -1}};  // [forward, later][layer mid-1, mid, mid+1]
  for (const Span& s : spans) {
    const Interval i{engine.ready_time(s.first), engine.finish_time(s.last)};
    const SpanKind kind = span_kind(s.label);
    switch (kind) {
      case SpanKind::compute: compute.push_back(i); break;
      case SpanKind::sp_comm: exchange.push_back(i); break;
      default:
        zero.push_back(i);
        zero_calls += i.second - i.first;
        break;
    }
    if (!extrapolate || s.layer < mid - 1 || s.layer > mid + 1) continue;
    double& start = first[s.pass == 0 ? 0 : 1][s.layer - mid + 1];
    if (start < 0 && kind != SpanKind::zero_gather) start = i.first;
    if (s.layer != mid) continue;
    if (kind == SpanKind::compute) mid_compute += i.second - i.first;
    else if (kind == SpanKind::sp_comm) mid_exchange.push_back(i);
    else {
      mid_zero.push_back(i);
      mid_zero_calls += i.second - i.first;
    }
  }
  const auto c = merged(compute), x = merged(exchange), z = merged(zero);
  // The union of compute and exchange from their unions: the same maximal intervals, already in order.
  std::vector<Interval> busy(c.size() + x.size());
  std::merge(c.begin(), c.end(), x.begin(), x.end(), busy.begin());
  const auto cx = merged(std::move(busy));
  add(total, c, cx, x, z, length(c), zero_calls);
  if (extrapolate) {
    add(middle, c, cx, merged(std::move(mid_exchange)), merged(std::move(mid_zero)), mid_compute, mid_zero_calls);
    middle.period += (first[0][2] - first[0][1]) + (first[1][0] - first[1][1]);
  }
}

}  // namespace

StepTimes step_times(const Engine& engine, const StepTasks& tasks, int layers, int window,
                     std::span<const std::uint32_t> members) {
  double ranks = 0;
  StepTimes t;
  for (TaskId e : tasks.end) t.step_s = std::max(t.step_s, engine.finish_time(e));
  for (TaskId o : tasks.optimizer) t.gradients_s = std::max(t.gradients_s, engine.ready_time(o));
  Figures total, middle;
  RankIntervals scratch;
  for (std::size_t c = 0; c < tasks.spans.size(); ++c) {
    if (members.empty()) {
      add_rank(engine, tasks.spans[c], window / 2, window < layers, scratch, total, middle);
      ranks += 1;
      continue;
    }
    Figures one_total, one_middle;
    add_rank(engine, tasks.spans[c], window / 2, window < layers, scratch, one_total, one_middle);
    const double m = members[c];
    for (auto [to, from] : {std::pair{&total, &one_total}, std::pair{&middle, &one_middle}}) {
      to->compute += m * from->compute;
      to->a2a += m * from->a2a;
      to->a2a_exposed += m * from->a2a_exposed;
      to->zero += m * from->zero;
      to->zero_exposed += m * from->zero_exposed;
      to->period += m * from->period;
    }
    ranks += m;
  }
  const double missing = layers - window;
  t.step_s += missing * middle.period / ranks;
  t.gradients_s += missing * middle.period / ranks;
  t.compute_s = (total.compute + missing * middle.compute) / ranks;
  t.a2a_s = (total.a2a + missing * middle.a2a) / ranks;
  t.a2a_exposed_s = (total.a2a_exposed + missing * middle.a2a_exposed) / ranks;
  t.zero_comm_s = (total.zero + missing * middle.zero) / ranks;
  t.zero_exposed_s = (total.zero_exposed + missing * middle.zero_exposed) / ranks;
  return t;
}

namespace {

LinkUse link_use(const Topology& topo, int id, double bytes, double step_s) {
  const Link& l = topo.link(id);
  return {id, topo.vertex(l.from).name + " -> " + topo.vertex(l.to).name, l.cls, l.capacity_Bps, bytes,
          step_s > 0 ? bytes / (l.capacity_Bps * step_s) : 0, 1};
}

// The indices of the `count` largest positive values, largest first (ties: lower index first).
std::vector<int> largest(const std::vector<double>& values, int count) {
  std::vector<int> ids(values.size());
  std::iota(ids.begin(), ids.end(), 0);
  const std::size_t n = std::min<std::size_t>(std::max(count, 0), ids.size());
  std::partial_sort(ids.begin(), ids.begin() + n, ids.end(), [&](int a, int b) {
    return values[a] != values[b] ? values[a] > values[b] : a < b;
  });
  ids.resize(n);
  while (!ids.empty() && !(values[ids.back()] > 0)) ids.pop_back();
  return ids;
}

}  // namespace

std::vector<LinkUse> busiest_links(const Topology& topo, const std::vector<double>& bytes, int count, double step_s) {
  std::vector<LinkUse> out;
  for (int id : largest(bytes, count)) out.push_back(link_use(topo, id, bytes[id], step_s));
  return out;
}

std::vector<LinkUse> busiest_link_classes(const Topology& part, const RankFold& fold,
                                          const std::vector<double>& per_class, int count, double step_s) {
  // A class's links each carry its engine bytes times their load (translates of a hop).
  std::vector<double> each(per_class.size());
  for (std::size_t c = 0; c < each.size(); ++c) each[c] = per_class[c] * fold.link_load[fold.topology_link(int(c))];
  std::vector<LinkUse> out;
  for (int c : largest(each, count)) {
    const int link = fold.topology_link(c);
    LinkUse u = link_use(part, link, each[c], step_s);
    u.link = -1;
    u.links = fold.members() / fold.link_load[link];
    out.push_back(std::move(u));
  }
  return out;
}

}  // namespace basp
