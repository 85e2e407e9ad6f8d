// Shortest-path routing with equal-cost multipath (split evenly, or hashed per flow and hop) and
// NCCL's cross-rail rule (PXN). Per-destination distance fields are reused while the destination stays.
#include "routing.hpp"

#include "input_error.hpp"

#include <algorithm>
#include <cmath>
#include <deque>
#include <limits>
#include <stdexcept>
#include <string>

namespace basp {
namespace {

constexpr double unreached = std::numeric_limits<double>::infinity();
constexpr double reference_bytes = 1048576.0;

bool tight(double du, double w, double dv) {
  return std::abs(du - (w + dv)) <= 1e-12 * std::max(1.0, std::abs(du));
}

std::uint64_t mix(std::uint64_t x) {  // splitmix64 finalizer: a stable, well-spread hash
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

}  // namespace

Router::Router(const Topology& topo) : topo_(topo) {
  const Graph& g = topo.graph;
  const std::size_t n = boost::num_vertices(g);
  cost_.resize(topo.link_count());
  for (int id = 0; id < topo.link_count(); ++id) {
    const Link& l = topo.link(id);
    cost_[id] = l.latency_s + reference_bytes / l.capacity_Bps;
  }
  for (Field& f : fields_) f.dist.assign(n, unreached);
  in_begin_.assign(n + 1, 0);
  in_links_.reserve(topo.link_count());
  for (VertexId v = 0; v < n; ++v) {
    const std::size_t first = in_links_.size();
    for (auto [e, end] = boost::in_edges(v, g); e != end; ++e)
      in_links_.push_back({static_cast<std::uint32_t>(boost::source(*e, g)), g[*e].id});
    std::sort(in_links_.begin() + first, in_links_.end(), [&](auto a, auto b) {
      return std::pair{cost_[a.second], a.second} < std::pair{cost_[b.second], b.second};
    });
    in_begin_[v + 1] = static_cast<std::uint32_t>(in_links_.size());
    int last = -1;
    for (auto [e, end] = boost::out_edges(v, g); e != end; ++e) {
      out_by_id_ = out_by_id_ && g[*e].id > last;
      last = g[*e].id;
    }
  }
  transit_.resize(n);
  for (VertexId v = 0; v < n; ++v) transit_[v] = transit_mask(g[v].kind);
  sole_up_.assign(n, unknown_link);
  sole_down_.assign(n, unknown_link);
  mark_.assign(n, 0);
  to_nic_.assign(n, nullptr);
  for (VertexId v = 0; v < n; ++v)
    if (g[v].kind == VertexKind::nic) rails_ = std::max<std::size_t>(rails_, g[v].rail + 1);
  to_proxy_.assign(n * rails_, nullptr);
  no_pxn_.assign(n * rails_, 0);
  from_nic_.assign(n, nullptr);
  paths_to_.assign(n, 0.0);
  paths_from_.assign(n, 0.0);
  latency_to_.assign(n, 0.0);
  // FNV-1a of the name: stable across builds, and the same in a part of a template as in the whole.
  // Only hashed ECMP reads it.
  if (topo.routing.ecmp == EcmpMode::hash) vertex_key_.resize(n);
  for (VertexId v = 0; v < vertex_key_.size(); ++v) {
    std::uint64_t h = 0xcbf29ce484222325ULL;
    for (unsigned char c : g[v].name) h = (h ^ c) * 0x100000001b3ULL;
    vertex_key_[v] = h;
  }

  // Scale-up domains: GPUs joined through NVSwitches, PCIe switches and host bridges.
  domain_.assign(n, -1);
  int domains = 0;
  for (VertexId start : topo.gpus) {
    if (domain_[start] >= 0) continue;
    std::deque<VertexId> todo{start};
    domain_[start] = domains;
    while (!todo.empty()) {
      VertexId u = todo.front();
      todo.pop_front();
      if (u != start && !may_transit(u, Transit::scale_up)) continue;
      // Either direction, as finalize_topology checks connectivity; a one-way link that leaves
      // no directed path then gives a clear "no route" error rather than a NIC-less scale-out route.
      auto visit = [&](VertexId v) {
        const VertexKind k = g[v].kind;
        if (domain_[v] >= 0 || k == VertexKind::nic || k == VertexKind::fabric_switch) return;
        domain_[v] = domains;
        todo.push_back(v);
      };
      for (auto [e, end] = boost::out_edges(u, g); e != end; ++e) visit(boost::target(*e, g));
      for (auto [e, end] = boost::in_edges(u, g); e != end; ++e) visit(boost::source(*e, g));
    }
    ++domains;
  }

  // PXN proxies: for each node and rail, the first GPU of the node whose NIC sits on that rail.
  proxy_.assign(topo.nodes > 0 ? g[topo.gpus.back()].node + 1 : 0, {});
  for (VertexId gpu : topo.gpus) {
    const int nic = g[gpu].nic;
    if (nic < 0) continue;
    auto& rails = proxy_[g[gpu].node];
    const int rail = g[nic].rail;
    if (static_cast<int>(rails.size()) <= rail) rails.resize(rail + 1, ~VertexId(0));
    if (rails[rail] == ~VertexId(0)) rails[rail] = gpu;
  }
}

std::uint8_t Router::transit_mask(VertexKind k) {
  auto bit = [](Transit t) { return std::uint8_t(1u << static_cast<int>(t)); };
  std::uint8_t m = 0;
  if (k == VertexKind::nvswitch) m |= bit(Transit::nvlink);
  if (k == VertexKind::nvswitch || k == VertexKind::pcie || k == VertexKind::host) m |= bit(Transit::scale_up);
  if (k == VertexKind::pcie || k == VertexKind::host) m |= bit(Transit::local);
  if (k == VertexKind::fabric_switch) m |= bit(Transit::fabric);
  return m;
}

void Router::distances_to(VertexId to, VertexId from, Transit transit) {
  Field& f = fields_[static_cast<int>(transit)];
  std::vector<Pending>& heap = f.heap;
  // An endpoint (a vertex no path passes through: a NIC on the fabric, a GPU) is reached only when
  // it is the source asked for; the others would only fill the heap (a leaf switch's NICs, each
  // time a switch-to-switch segment starts). Distances through the rest are the same, so a source
  // that is an endpoint passed over before starts the field again.
  const bool endpoint = from != to && !may_transit(from, transit);
  if (f.to != to || (endpoint && f.passed_over && f.dist[from] == unreached)) {
    for (VertexId v : f.touched) f.dist[v] = unreached;
    f.touched.clear();
    f.settled.clear();
    heap.clear();
    f.passed_over = false;
    f.to = to;
    f.dist[to] = 0.0;
    f.touched.push_back(to);
    heap.push_back({0.0, to, Pending::npos});
  }
  // Vertices settle in order of distance. Once the heap's minimum is no closer to `to` than `from`,
  // `from` is settled and so is every vertex a shortest path from it passes through (closer by at
  // least one link); vertices as far as `from` (a leaf's every peer leaf) are left for later
  // sources, and so are the links that could only bring a vertex that far (relax_links_into). Every
  // distance worked out is the one a field grown to the end gives: a vertex's distance is the least
  // over the links relaxed into it, and a link that would give less than the vertex's settled
  // distance is keyed lower, so relaxed before the vertex settles.
  while (!heap.empty() && heap.front().key < f.dist[from]) {
    std::pop_heap(heap.begin(), heap.end(), std::greater<>());
    const Pending p = heap.back();
    heap.pop_back();
    if (p.next != Pending::npos) {
      relax_links_into(f, p.v, p.next, from, to, transit);
      continue;
    }
    if (p.key > f.dist[p.v]) continue;
    f.settled.push_back(p.v);
    if (p.v != to && !may_transit(p.v, transit)) continue;  // endpoints are reached, never passed through
    relax_links_into(f, p.v, in_begin_[p.v], from, to, transit);
  }
}

void Router::relax_links_into(Field& f, VertexId v, std::uint32_t i, VertexId from, VertexId to, Transit transit) {
  const double d = f.dist[v];
  for (const std::uint32_t end = in_begin_[v + 1]; i < end; ++i) {
    const auto [u, link] = in_links_[i];
    const double du = d + cost_[link];
    if (lazy_ && !(du < f.dist[from])) {
      f.heap.push_back({du, v, i});
      std::push_heap(f.heap.begin(), f.heap.end(), std::greater<>());
      return;
    }
    if (transit == Transit::nvlink && topo_.link(link).cls != LinkClass::nvlink) continue;
    if (u != from && u != to && !may_transit(u, transit)) {
      f.passed_over = true;
      continue;
    }
    if (du < f.dist[u]) {
      if (f.dist[u] == unreached) f.touched.push_back(u);
      f.dist[u] = du;
      f.heap.push_back({du, u, Pending::npos});
      std::push_heap(f.heap.begin(), f.heap.end(), std::greater<>());
    }
  }
}

void Router::tight_links_out(const Field& f, VertexId u, VertexId to, Transit transit) {
  const Graph& g = topo_.graph;
  auto consider = [&](VertexId v, int link) {
    if (f.dist[v] == unreached || !(v == to || may_transit(v, transit))) return;
    if (transit == Transit::nvlink && topo_.link(link).cls != LinkClass::nvlink) return;
    if (tight(f.dist[u], cost_[link], f.dist[v])) dag_scratch_.push_back({u, v, link});
  };
  // A link on a shortest path leads to a vertex closer to `to`, so settled, and vertices settle in
  // order of distance: the closer ones are a prefix of `settled`. Where they have fewer links in
  // than u has out (a spine's thousands of leaves), those are read instead.
  std::size_t closer = 0, reads = 0;
  const std::size_t out = boost::out_degree(u, g);
  while (lazy_ && out_by_id_ && reads < out && closer < f.settled.size() && f.dist[f.settled[closer]] < f.dist[u]) {
    const VertexId v = f.settled[closer++];
    reads += 1 + in_begin_[v + 1] - in_begin_[v];
  }
  if (!lazy_ || !out_by_id_ || reads >= out) {
    for (auto [e, end] = boost::out_edges(u, g); e != end; ++e) consider(boost::target(*e, g), g[*e].id);
    return;
  }
  const std::size_t first = dag_scratch_.size();
  for (std::size_t k = 0; k < closer; ++k) {
    const VertexId v = f.settled[k];
    for (std::uint32_t i = in_begin_[v]; i < in_begin_[v + 1]; ++i)
      if (in_links_[i].first == u) consider(v, in_links_[i].second);
  }
  std::sort(dag_scratch_.begin() + first, dag_scratch_.end(),
            [](const DagEdge& a, const DagEdge& b) { return a.link < b.link; });
}

void Router::share_twin_nodes(bool share) {
  if (!segments_.empty()) throw std::logic_error("Router::share_twin_nodes after routing");
  share_twins_ = share;
}

int Router::twin_node(VertexId v, Transit transit) {
  if (!share_twins_) return -1;
  if (!twins_) twins_ = node_twins(topo_, transit_);
  const int k = twins_->unit[v];
  if (k < 0) return -1;
  return twins_->representative[k] != k && (twins_->closed[k] >> static_cast<int>(transit) & 1u) ? k : -1;
}

// A segment inside a unit (node_twins.hpp) whose twin came first is the twin's, carried over when appended.
Router::SegmentRef Router::segment(VertexId from, VertexId to, Transit transit) {
  if (const int k = twin_node(from, transit); k >= 0 && twins_->unit[to] == k) {
    const int twin = twins_->representative[k];
    return {&cached_segment(twins_->vertex_in(twin, from), twins_->vertex_in(twin, to), transit), k};
  }
  return {&cached_segment(from, to, transit), -1};
}

const Router::Segment& Router::cached_segment(VertexId from, VertexId to, Transit transit) {
  const std::uint64_t key = (std::uint64_t(from) << 34) ^ (std::uint64_t(to) << 2) ^ std::uint64_t(transit);
  // Consecutive routes often share a segment (PXN: every GPU of a node reaches a destination
  // through the same NIC pair), so the last segment of each class is checked before the map.
  Memo& memo = memo_[static_cast<int>(transit)];
  if (memo.segment && memo.key == key) return *memo.segment;
  if (auto it = segments_.find(key); it != segments_.end()) {
    memo = {key, &it->second};
    return it->second;
  }
  distances_to(to, from, transit);
  const Field& f = fields_[static_cast<int>(transit)];
  const Graph& g = topo_.graph;
  if (f.dist[from] == unreached) {
    const char* how = transit == Transit::fabric  ? "over the fabric"
                      : transit == Transit::local ? "over PCIe"
                      : transit == Transit::nvlink ? "over NVLink"
                                                   : "over NVLink/PCIe";
    throw InputError(topo_.source, 0, "", "no route from " + g[from].name + " to " + g[to].name + " " + how);
  }

  // The shortest-path DAG from `from`: vertices in order of discovery, edges sorted by decreasing
  // distance of their tail (a topological order). Scratch arrays are indexed by vertex and reset
  // through `order`, so building a segment allocates only what it keeps.
  std::vector<DagEdge>& dag = dag_scratch_;
  std::vector<Hop>& split = split_scratch_;
  dag.clear();
  split.clear();
  order_.assign(1, from);
  mark_[from] = 1;
  for (std::size_t i = 0; i < order_.size(); ++i) {
    const VertexId u = order_[i];
    if (u == to) continue;
    const std::size_t first = dag.size();
    tight_links_out(f, u, to, transit);
    for (std::size_t k = first; k < dag.size(); ++k)
      if (const VertexId v = dag[k].to; !mark_[v]) {
        mark_[v] = 1;
        order_.push_back(v);
      }
  }
  // A single path (|E| = |V| - 1) is already in order; only true multipaths need sorting.
  if (dag.size() + 1 != order_.size())
    std::stable_sort(dag.begin(), dag.end(),
                     [&](const DagEdge& a, const DagEdge& b) { return f.dist[a.from] > f.dist[b.from]; });
  // Paths from `from` to each vertex and from each vertex to `to`: share(u→v) = to[u]·from[v]/total.
  for (VertexId v : order_) paths_to_[v] = paths_from_[v] = latency_to_[v] = 0.0;
  paths_to_[from] = 1.0;
  paths_from_[to] = 1.0;
  for (const DagEdge& e : dag) {
    paths_to_[e.to] += paths_to_[e.from];
    latency_to_[e.to] = std::max(latency_to_[e.to], latency_to_[e.from] + topo_.link(e.link).latency_s);
  }
  for (auto it = dag.rbegin(); it != dag.rend(); ++it) paths_from_[it->from] += paths_from_[it->to];
  const double total = paths_to_[to];
  for (const DagEdge& e : dag) {
    const double share = paths_to_[e.from] * paths_from_[e.to] / total;
    if (share > 0.0) split.push_back({e.link, static_cast<float>(share)});
  }
  for (VertexId v : order_) mark_[v] = 0;
  // Copied out at their exact size: a segment is built once and kept.
  Segment s;
  s.latency_s = latency_to_[to];
  s.single = total == 1.0;
  if (!s.single) s.dag.assign(dag.begin(), dag.end());  // a single path needs no hashing
  s.split.assign(split.begin(), split.end());
  const Segment& stored = segments_.emplace(key, std::move(s)).first->second;
  memo = {key, &stored};
  return stored;
}

// GPU <-> own-NIC segments are on every scale-out route: a per-GPU array spares a hash lookup.
Router::SegmentRef Router::nic_segment(VertexId gpu, bool outbound) {
  std::vector<const Segment*>& cache = outbound ? to_nic_ : from_nic_;
  const Segment*& s = cache[gpu];
  const auto nic = static_cast<VertexId>(topo_.graph[gpu].nic);
  if (s) return {s, twin_node(gpu, Transit::local)};
  const SegmentRef r = outbound ? segment(gpu, nic, Transit::local) : segment(nic, gpu, Transit::local);
  s = r.segment;
  return r;
}

Router::SegmentRef Router::proxy_segment(VertexId gpu, VertexId proxy, int rail) {
  const std::size_t slot = std::size_t(gpu) * rails_ + rail;
  const int k = twin_node(gpu, Transit::nvlink);
  if (to_proxy_[slot] || no_pxn_[slot]) return {to_proxy_[slot], k};
  if (k >= 0) {
    // The twin's GPU in the same place reaches the twin's proxy of that rail (the signature holds
    // every device's rail), unless the rank order picked another proxy there: then work it out here.
    const int twin = twins_->representative[k];
    const VertexId twin_gpu = twins_->vertex_in(twin, gpu), twin_proxy = twins_->vertex_in(twin, proxy);
    const int at_node = topo_.graph[twin_gpu].node;
    if (at_node >= 0 && std::size_t(at_node) < proxy_.size() && rail < static_cast<int>(proxy_[at_node].size()) &&
        proxy_[at_node][rail] == twin_proxy) {
      const SegmentRef r = proxy_segment(twin_gpu, twin_proxy, rail);
      to_proxy_[slot] = r.segment;
      no_pxn_[slot] = r.segment == nullptr;
      return {r.segment, k};
    }
  }
  distances_to(proxy, gpu, Transit::nvlink);
  if (fields_[static_cast<int>(Transit::nvlink)].dist[gpu] == unreached) {
    no_pxn_[slot] = 1;
    return {nullptr, -1};
  }
  const SegmentRef r = segment(gpu, proxy, Transit::nvlink);
  to_proxy_[slot] = r.segment;
  return r;
}

void Router::append(SegmentRef r, std::uint64_t salt, double& latency_s) {
  const Segment& s = *r.segment;
  const int k = r.node;
  if (s.single || topo_.routing.ecmp == EcmpMode::split) {
    if (k < 0)
      hops_.insert(hops_.end(), s.split.begin(), s.split.end());
    else
      for (const Hop& h : s.split) hops_.push_back({twins_->link_in(k, h.link), h.share});
    latency_s += s.latency_s;
    return;
  }
  // Hashed ECMP: each hop picks one of its equal-cost next links from the flow's hash, as switches
  // do; in a twin's segment the hash sees this node's devices.
  VertexId u = s.dag.front().from;
  std::size_t i = 0;
  while (i < s.dag.size()) {
    while (i < s.dag.size() && s.dag[i].from != u) ++i;
    std::size_t j = i;
    while (j < s.dag.size() && s.dag[j].from == u) ++j;
    if (i == j) break;
    const std::uint64_t key = vertex_key_[k < 0 ? u : twins_->vertex_in(k, u)];
    const DagEdge& e = s.dag[i + mix(salt ^ (key * 0x100000001b3ULL)) % (j - i)];
    hops_.push_back({k < 0 ? e.link : twins_->link_in(k, e.link), 1.0f});
    latency_s += topo_.link(e.link).latency_s;
    u = e.to;
    i = 0;
  }
}

int Router::sole_fabric_link(VertexId nic, bool outbound) {
  std::vector<int>& cache = outbound ? sole_up_ : sole_down_;
  if (cache[nic] != unknown_link) return cache[nic];
  const Graph& g = topo_.graph;
  int link = -1, count = 0;
  auto consider = [&](VertexId other, int id) {
    const VertexKind k = g[other].kind;
    if (k != VertexKind::fabric_switch && k != VertexKind::nic) return;
    ++count;
    link = k == VertexKind::fabric_switch ? id : -1;
  };
  if (outbound)
    for (auto [e, end] = boost::out_edges(nic, g); e != end; ++e) consider(boost::target(*e, g), g[*e].id);
  else
    for (auto [e, end] = boost::in_edges(nic, g); e != end; ++e) consider(boost::source(*e, g), g[*e].id);
  return cache[nic] = count == 1 ? link : -1;
}

void Router::append_fabric(VertexId nic_s, VertexId nic_d, std::uint64_t salt, double& latency_s) {
  const int up = sole_fabric_link(nic_s, true), down = sole_fabric_link(nic_d, false);
  if (up < 0 || down < 0 || nic_s == nic_d) {
    append(segment(nic_s, nic_d, Transit::fabric), salt, latency_s);
    return;
  }
  const VertexId a = topo_.link(up).to, b = topo_.link(down).from;
  if (wanted_) {
    wanted_->push_back({a, b});
    return;
  }
  hops_.push_back({up, 1.0f});
  latency_s += topo_.link(up).latency_s;
  if (a != b) append(segment(a, b, Transit::fabric), salt, latency_s);
  hops_.push_back({down, 1.0f});
  latency_s += topo_.link(down).latency_s;
}

void Router::prepare_routes(std::span<const std::pair<int, int>> rank_pairs) {
  std::vector<std::pair<VertexId, VertexId>> wanted;
  wanted_ = &wanted;
  try {
    for (auto [s, d] : rank_pairs) route(s, d);
  } catch (...) {
    wanted_ = nullptr;
    throw;
  }
  wanted_ = nullptr;
  // By destination, then source: a segment depends only on its ends, not on the order built.
  std::ranges::sort(wanted, [](auto x, auto y) { return std::pair{x.second, x.first} < std::pair{y.second, y.first}; });
  wanted.erase(std::unique(wanted.begin(), wanted.end()), wanted.end());
  for (auto [a, b] : wanted)
    if (a != b) segment(a, b, Transit::fabric);
}

Router::Router(const Topology& topo, bool cluster_ranks) : Router(topo) {
  if (!cluster_ranks || topo.cluster_ranks.empty()) return;
  const int most = *std::max_element(topo.cluster_ranks.begin(), topo.cluster_ranks.end());
  part_rank_.assign(std::size_t(most) + 1, -1);
  for (std::size_t r = 0; r < topo.cluster_ranks.size(); ++r) part_rank_[topo.cluster_ranks[r]] = static_cast<int>(r);
}

Router::Router(const Topology& topo, std::vector<int> part_rank) : Router(topo) { part_rank_ = std::move(part_rank); }

RouteView Router::route(int src_rank, int dst_rank, std::uint64_t salt) {
  if (!part_rank_.empty()) {
    auto local = [&](int rank) {
      const int r = rank >= 0 && std::size_t(rank) < part_rank_.size() ? part_rank_[rank] : -1;
      if (r < 0) throw std::logic_error("Router: rank " + std::to_string(rank) + " is not in the part");
      return r;
    };
    src_rank = local(src_rank);
    dst_rank = local(dst_rank);
  }
  hops_.clear();
  double latency = 0.0;
  const Graph& g = topo_.graph;
  const VertexId s = topo_.gpus[src_rank], d = topo_.gpus[dst_rank];
  if (s == d) return {hops_, 0.0};
  salt = mix(salt ^ mix((std::uint64_t(topo_.cluster_rank(src_rank)) << 32) |
                        std::uint32_t(topo_.cluster_rank(dst_rank))));
  if (domain_[s] == domain_[d]) {
    append(segment(s, d, Transit::scale_up), salt, latency);
    return {hops_, latency};
  }
  if (g[s].nic < 0 || g[d].nic < 0)
    throw InputError(topo_.source, 0, "", "no route from " + g[s].name + " to " + g[d].name +
                                              ": they share no NVLink/PCIe domain and " +
                                              g[g[s].nic < 0 ? s : d].name + " has no NIC");
  const VertexId nic_d = g[d].nic;
  VertexId proxy = s;
  if (topo_.rail_optimized && topo_.routing.cross_rail == CrossRail::pxn &&
      g[g[s].nic].rail != g[nic_d].rail) {
    const auto& rails = proxy_[g[s].node];
    const int rail = g[nic_d].rail;
    if (rail < static_cast<int>(rails.size()) && rails[rail] != ~VertexId(0)) proxy = rails[rail];
  }
  if (proxy != s) {
    // Each GPU has one PXN hop per rail: cache it by (GPU, rail) rather than in the map. NCCL
    // uses PXN over NVLink only; without an NVLink path the GPU sends through its own NIC.
    if (const SegmentRef hop = proxy_segment(s, proxy, g[nic_d].rail); hop.segment)
      append(hop, salt, latency);
    else
      proxy = s;
  }
  const VertexId nic_s = g[proxy].nic;
  append(nic_segment(proxy, true), salt, latency);
  append_fabric(nic_s, nic_d, salt, latency);
  append(nic_segment(d, false), salt, latency);
  return {hops_, latency};
}

}  // namespace basp
