// Summary figures for `basp topo`. Bisection uses Boost.Graph's push-relabel max-flow with a
// super-source on the first half of the ranks and a super-sink on the rest; templates are summed
// up from parts (the fabric, a few nodes, a quotient of twin nodes), never built whole.
#include "topology_summary.hpp"

#include "routing.hpp"
#include "topology_template.hpp"

#include <boost/graph/push_relabel_max_flow.hpp>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <set>
#include <tuple>

namespace basp {
namespace {

// Max-flow from the GPUs `in_first_half` says yes to, to all the others (one direction). In whole
// bytes per second: push-relabel on doubles can end a hair off conservation, which Boost asserts.
double bisection(const Topology& topo, const std::vector<char>& in_first_half) {
  using Traits = boost::adjacency_list_traits<boost::vecS, boost::vecS, boost::directedS>;
  using FlowGraph = boost::adjacency_list<
      boost::vecS, boost::vecS, boost::directedS, boost::no_property,
      boost::property<boost::edge_capacity_t, long long,
                      boost::property<boost::edge_residual_capacity_t, long long,
                                      boost::property<boost::edge_reverse_t, Traits::edge_descriptor>>>>;
  const std::size_t n = boost::num_vertices(topo.graph);
  FlowGraph fg(n + 2);
  const auto source = n, sink = n + 1;
  auto cap = boost::get(boost::edge_capacity, fg);
  auto rev = boost::get(boost::edge_reverse, fg);
  auto add = [&](std::size_t a, std::size_t b, long long c) {
    auto e = boost::add_edge(a, b, fg).first;
    auto r = boost::add_edge(b, a, fg).first;
    cap[e] = c;
    cap[r] = 0;
    rev[e] = r;
    rev[r] = e;
  };
  // A GPU's edge from the source (to the sink) carries what its links can send (receive), so it
  // never limits the flow, and the sums stay far from overflow.
  std::vector<long long> out(n, 0), in(n, 0);
  for (int id = 0; id < topo.link_count(); ++id) {
    const Link& l = topo.link(id);
    const long long c = std::max(1LL, std::llround(l.capacity_Bps));
    add(l.from, l.to, c);
    out[l.from] += c;
    in[l.to] += c;
  }
  for (std::size_t i = 0; i < topo.gpus.size(); ++i) {
    const VertexId g = topo.gpus[i];
    if (in_first_half[i]) add(source, g, out[g]);
    else add(g, sink, in[g]);
  }
  return double(boost::push_relabel_max_flow(fg, source, sink));
}

// `shown` holds the routes' ranks; `local` maps a rank of the cluster to shown's rank.
struct RankMap {
  const Topology& shown;
  std::function<int(int)> local;
};

ExampleRoute example(const RankMap& m, Router& router, std::string label, int a, int b) {
  const Topology& topo = m.shown;
  ExampleRoute ex;
  ex.label = std::move(label);
  ex.src_rank = a;
  ex.dst_rank = b;
  const RouteView r = router.route(m.local(a), m.local(b));
  ex.latency_s = r.latency_s;
  ex.bottleneck_Bps = 1e300;
  const Graph& g = topo.graph;
  ex.path = g[topo.gpus[m.local(a)]].name;
  // Consecutive hops with share < 1 are the equal-cost alternatives of one stage.
  std::size_t i = 0;
  while (i < r.hops.size()) {
    const Hop& h = r.hops[i];
    ex.bottleneck_Bps = std::min(ex.bottleneck_Bps, topo.link(h.link).capacity_Bps / h.share);
    if (h.share >= 0.999f) {
      ex.path += " > " + g[topo.link(h.link).to].name;
      ++i;
      continue;
    }
    std::set<std::string> alternatives;
    std::size_t j = i;
    float sum = 0.0f;
    while (j < r.hops.size() && r.hops[j].share < 0.999f && sum < 0.999f) {
      alternatives.insert(g[topo.link(r.hops[j].link).to].name);
      ex.bottleneck_Bps = std::min(ex.bottleneck_Bps, topo.link(r.hops[j].link).capacity_Bps / r.hops[j].share);
      sum += r.hops[j].share;
      ++j;
    }
    std::string alt;
    for (const auto& s : alternatives) alt += (alt.empty() ? "" : "|") + s;
    ex.path += " > {" + alt + "}";
    i = j;
  }
  return ex;
}

// Every node on clusters of up to 64 nodes; beyond, nodes 0, 1, 2, 4, 8, ... and the last (each
// tier of a template is reached by some of them; a route per rank would cost a shortest-path
// search per rank). Descending: the farthest first.
std::vector<int> route_target_nodes(int nodes) {
  std::vector<int> targets;
  if (nodes <= 64) {
    for (int n = nodes - 1; n >= 0; --n) targets.push_back(n);
    return targets;
  }
  targets.push_back(nodes - 1);
  for (int n = 1 << 30; n >= 1; n >>= 1)
    if (n < nodes - 1) targets.push_back(n);
  targets.push_back(0);
  return targets;
}

// Per-GPU bandwidths out of rank 0's GPU and node, read off any topology holding node 0.
void fill_injection(const Topology& topo, TopologySummary& s) {
  const Graph& g = topo.graph;
  const VertexId gpu0 = topo.gpus.front();
  for (auto [e, end] = boost::out_edges(gpu0, g); e != end; ++e)
    if (topo.link(g[*e].id).cls == LinkClass::nvlink) s.scale_up_Bps_per_gpu += topo.link(g[*e].id).capacity_Bps;
  if (s.scale_up_Bps_per_gpu == 0.0)
    for (auto [e, end] = boost::out_edges(gpu0, g); e != end; ++e) s.scale_up_Bps_per_gpu += topo.link(g[*e].id).capacity_Bps;
  const int node0 = g[gpu0].node;
  for (VertexId v = 0; v < boost::num_vertices(g); ++v) {
    if (g[v].kind != VertexKind::nic || g[v].node != node0) continue;
    for (auto [e, end] = boost::out_edges(v, g); e != end; ++e)
      if (topo.link(g[*e].id).cls == LinkClass::nic) s.scale_out_Bps_per_gpu += topo.link(g[*e].id).capacity_Bps;
  }
  s.scale_out_Bps_per_gpu /= topo.gpus_per_node;
}

void fill_routes(const RankMap& m, const std::set<LinkClass>& present, TopologySummary& s) {
  Router router(m.shown);
  const int k = s.gpus_per_node;
  if (k > 1) s.routes.push_back(example(m, router, "intra-node", 0, 1));
  if (s.nodes > 1) {
    s.routes.push_back(example(m, router, "inter-node, same rail", 0, k));
    if (k > 1) s.routes.push_back(example(m, router, "inter-node, other rail", 0, k + 1));
    if (s.gpus - 1 != k + 1 && s.gpus - 1 != k)
      s.routes.push_back(example(m, router, "farthest rank", 0, s.gpus - 1));
  }
  // One example for every link class no example has crossed yet, when some route crosses it.
  std::set<LinkClass> shown;
  auto crossed = [&](int dst) {
    std::set<LinkClass> classes;
    for (const Hop& h : router.route(m.local(0), m.local(dst)).hops) classes.insert(m.shown.link(h.link).cls);
    return classes;
  };
  for (const ExampleRoute& r : s.routes)
    for (LinkClass c : crossed(r.dst_rank)) shown.insert(c);
  std::vector<int> targets;
  if (s.nodes > 64) s.unused_scope = "the ranks of nodes 0, 1, 2, 4, ..., " + std::to_string(s.nodes - 1);
  for (int n : route_target_nodes(s.nodes))
    for (int i = k - 1; i >= 0; --i)
      if (n * k + i > 0) targets.push_back(n * k + i);
  for (LinkClass cls : present) {
    if (shown.count(cls)) continue;
    for (int dst : targets) {
      if (!crossed(dst).count(cls)) continue;
      s.routes.push_back(example(m, router, "crosses " + std::string(to_string(cls)), 0, dst));
      for (LinkClass c : crossed(dst)) shown.insert(c);
      break;
    }
    if (!shown.count(cls)) s.unused_classes.push_back(std::string(to_string(cls)));
  }
}

// Devices and links; with `fabric_only`, fabric switches and the links between them alone.
void count_devices(const Topology& topo, TopologySummary& s, bool fabric_only = false) {
  const Graph& g = topo.graph;
  auto counted = [&](VertexId v) { return !fabric_only || g[v].kind == VertexKind::fabric_switch; };
  for (VertexId v = 0; v < boost::num_vertices(g); ++v)
    if (counted(v)) ++s.vertices_by_kind[std::string(to_string(g[v].kind))];
  for (int id = 0; id < topo.link_count(); ++id) {
    if (!counted(topo.link(id).from) || !counted(topo.link(id).to)) continue;
    auto& [count, capacity] = s.links_by_class[std::string(to_string(topo.link(id).cls))];
    ++count;
    capacity += topo.link(id).capacity_Bps;
  }
}

std::set<LinkClass> present_classes(const TopologySummary& s) {
  std::set<LinkClass> present;
  for (LinkClass c : link_classes)
    if (s.links_by_class.count(std::string(to_string(c)))) present.insert(c);
  return present;
}

void fill_header(const Topology& topo, TopologySummary& s) {
  s.name = topo.name;
  s.source = topo.source;
  s.gpu_kind = topo.gpu_kind;
  s.routing = topo.routing;
  s.software = topo.software;
  s.rail_optimized = topo.rail_optimized;
}

// The quotient by twins: nodes interchangeable by a swap that fixes everything else, on the same
// side of the bisection (same leaf per rail, same NVLink domain, all their ranks on one side).
// Each class is its first node, weighed by the class's size; ascending, as NodeSubset asks.
NodeSubset twin_quotient(const TopologyTemplate& t) {
  const int k = t.node.gpus;
  const long half = long(t.nodes) * k / 2;
  const bool leaves = t.fabric.kind == FabricKind::leaf_spine || t.fabric.kind == FabricKind::rail ||
                      t.fabric.kind == FabricKind::three_tier;
  const bool shared_domains = t.node.kind == NodeKind::nvswitch && t.node.domain_nodes > 1;
  std::map<std::tuple<int, int, int>, std::pair<int, int>> classes;  // key -> (first node, size)
  for (int n = 0; n < t.nodes; ++n) {
    const long first = long(n) * k, last = first + k - 1;
    const int side = last < half ? 0 : first >= half ? 1 : 2 + n;  // a straddling node stays alone
    const int leaf = leaves ? n / t.fabric.nodes_per_leaf : 0;
    ++classes.try_emplace({leaf, shared_domains ? nvlink_domain_of(t, n) : 0, side}, n, 0).first->second.second;
  }
  std::vector<std::pair<int, int>> members;
  for (const auto& [key, c] : classes) members.push_back(c);
  std::sort(members.begin(), members.end());
  NodeSubset q;
  for (auto [node, size] : members) {
    q.nodes.push_back(node);
    q.weights.push_back(size);
  }
  return q;
}

}  // namespace

TopologySummary summarize(const Topology& topo) {
  TopologySummary s;
  fill_header(topo, s);
  s.gpus = static_cast<int>(topo.gpus.size());
  s.nodes = topo.nodes;
  s.gpus_per_node = topo.gpus_per_node;
  count_devices(topo, s);
  fill_injection(topo, s);
  if (s.gpus >= 2) {
    std::vector<char> first(topo.gpus.size(), 0);
    for (int r = 0; r < s.gpus / 2; ++r) first[r] = 1;
    s.bisection_Bps = bisection(topo, first);
  }
  fill_routes({topo, [](int rank) { return rank; }}, present_classes(s), s);
  return s;
}

TopologySummary summarize(const TopologyFile& file) {
  if (!file.templ) return summarize(file.explicit_topology);
  const TopologyTemplate& t = *file.templ;
  TopologySummary s;
  s.gpus = t.nodes * t.node.gpus;
  s.nodes = t.nodes;
  s.gpus_per_node = t.node.gpus;

  // The nodes routes are shown to, with whole NVLink domains: routes between them are the
  // cluster's (build_topology's NodeSubset).
  std::set<int> domains;
  for (int n : route_target_nodes(t.nodes)) domains.insert(nvlink_domain_of(t, n));
  NodeSubset shown_nodes;
  for (int n = 0; n < t.nodes; ++n)
    if (domains.count(nvlink_domain_of(t, n))) shown_nodes.nodes.push_back(n);
  const Topology shown = build_topology(t, shown_nodes);
  fill_header(shown, s);

  // Counts: the fabric is all there; every NVLink domain adds what each shown domain adds.
  TopologySummary fabric, part;
  count_devices(shown, part);
  count_devices(shown, fabric, true);
  const int all_domains = nvlink_domain_of(t, t.nodes - 1) + 1;
  const int shown_domains = static_cast<int>(domains.size());
  for (const auto& [kind, count] : part.vertices_by_kind) {
    const int f = fabric.vertices_by_kind.count(kind) ? fabric.vertices_by_kind.at(kind) : 0;
    s.vertices_by_kind[kind] = f + (count - f) / shown_domains * all_domains;
  }
  for (const auto& [cls, v] : part.links_by_class) {
    const auto f = fabric.links_by_class.count(cls) ? fabric.links_by_class.at(cls) : std::pair<int, double>{0, 0.0};
    s.links_by_class[cls] = {f.first + (v.first - f.first) / shown_domains * all_domains,
                             f.second + (v.second - f.second) / shown_domains * all_domains};
  }
  fill_injection(shown, s);

  // Bisection on the quotient by swaps of twin nodes (exact: docs/symmetry.md, "basp topo").
  if (s.gpus >= 2) {
    const Topology q = build_topology(t, twin_quotient(t));
    std::vector<char> first(q.gpus.size(), 0);
    for (std::size_t i = 0; i < q.gpus.size(); ++i) first[i] = q.cluster_rank(int(i)) < s.gpus / 2;
    s.bisection_Bps = bisection(q, first);
  }

  std::vector<int> position(t.nodes, -1);
  for (std::size_t i = 0; i < shown_nodes.nodes.size(); ++i) position[shown_nodes.nodes[i]] = static_cast<int>(i);
  const int k = s.gpus_per_node;
  fill_routes({shown, [&](int rank) { return position[rank / k] * k + rank % k; }}, present_classes(s), s);
  return s;
}

}  // namespace basp
