// Summary figures for `basp topo`. Bisection uses Boost.Graph's push-relabel max-flow on a copy
// of the topology with a super-source on the first half of the ranks and a super-sink on the rest.
#include "topology_summary.hpp"

#include "routing.hpp"

#include <boost/graph/push_relabel_max_flow.hpp>

#include <set>

namespace basp {
namespace {

double bisection(const Topology& topo) {
  using Traits = boost::adjacency_list_traits<boost::vecS, boost::vecS, boost::directedS>;
  using FlowGraph = boost::adjacency_list<
      boost::vecS, boost::vecS, boost::directedS, boost::no_property,
      boost::property<boost::edge_capacity_t, double,
                      boost::property<boost::edge_residual_capacity_t, double,
                                      boost::property<boost::edge_reverse_t, Traits::edge_descriptor>>>>;
  const int gpus = static_cast<int>(topo.gpus.size());
  if (gpus < 2) return 0.0;
  const std::size_t n = boost::num_vertices(topo.graph);
  FlowGraph fg(n + 2);
  const auto source = n, sink = n + 1;
  auto cap = boost::get(boost::edge_capacity, fg);
  auto rev = boost::get(boost::edge_reverse, fg);
  auto add = [&](std::size_t a, std::size_t b, double c) {
    auto e = boost::add_edge(a, b, fg).first;
    auto r = boost::add_edge(b, a, fg).first;
    cap[e] = c;
    cap[r] = 0.0;
    rev[e] = r;
    rev[r] = e;
  };
  double total = 0.0;
  for (int id = 0; id < topo.link_count(); ++id) {
    add(topo.link(id).from, topo.link(id).to, topo.link(id).capacity_Bps);
    total += topo.link(id).capacity_Bps;
  }
  for (int r = 0; r < gpus; ++r) {
    if (r < gpus / 2) add(source, topo.gpus[r], total);
    else add(topo.gpus[r], sink, total);
  }
  return boost::push_relabel_max_flow(fg, source, sink);
}

ExampleRoute example(const Topology& topo, Router& router, std::string label, int a, int b) {
  ExampleRoute ex;
  ex.label = std::move(label);
  ex.src_rank = a;
  ex.dst_rank = b;
  const RouteView r = router.route(a, b);
  ex.latency_s = r.latency_s;
  ex.bottleneck_Bps = 1e300;
  const Graph& g = topo.graph;
  ex.path = g[topo.gpus[a]].name;
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

}  // namespace

TopologySummary summarize(const Topology& topo) {
  TopologySummary s;
  const Graph& g = topo.graph;
  s.gpus = static_cast<int>(topo.gpus.size());
  s.nodes = topo.nodes;
  s.gpus_per_node = topo.gpus_per_node;
  for (VertexId v = 0; v < boost::num_vertices(g); ++v) ++s.vertices_by_kind[std::string(to_string(g[v].kind))];
  for (int id = 0; id < topo.link_count(); ++id) {
    auto& [count, capacity] = s.links_by_class[std::string(to_string(topo.link(id).cls))];
    ++count;
    capacity += topo.link(id).capacity_Bps;
  }
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
  s.bisection_Bps = bisection(topo);

  Router router(topo);
  if (topo.gpus_per_node > 1) s.routes.push_back(example(topo, router, "intra-node", 0, 1));
  if (topo.nodes > 1) {
    const int k = topo.gpus_per_node;
    s.routes.push_back(example(topo, router, "inter-node, same rail", 0, k));
    if (k > 1) s.routes.push_back(example(topo, router, "inter-node, other rail", 0, k + 1));
    if (s.gpus - 1 != k + 1 && s.gpus - 1 != k)
      s.routes.push_back(example(topo, router, "farthest rank", 0, s.gpus - 1));
  }
  // One example for every link class no example has crossed yet, when some route crosses it.
  std::set<LinkClass> shown;
  for (const ExampleRoute& r : s.routes)
    for (const Hop& h : router.route(r.src_rank, r.dst_rank).hops) shown.insert(topo.link(h.link).cls);
  std::set<LinkClass> present;
  for (int id = 0; id < topo.link_count(); ++id) present.insert(topo.link(id).cls);
  // Every rank on clusters of up to 64 nodes; beyond, the ranks of nodes 0, 1, 2, 4, 8, ... and
  // the last (each tier of a template is reached by some of them; a route per rank would cost a
  // shortest-path search per rank).
  std::vector<int> targets;
  const int per_node = std::max(1, topo.gpus_per_node);
  if (topo.nodes <= 64) {
    for (int dst = s.gpus - 1; dst > 0; --dst) targets.push_back(dst);
  } else {
    s.unused_scope = "the ranks of nodes 0, 1, 2, 4, ..., " + std::to_string(topo.nodes - 1);
    std::vector<int> nodes{topo.nodes - 1};
    for (int n = 1 << 30; n >= 1; n >>= 1)
      if (n < topo.nodes - 1) nodes.push_back(n);
    nodes.push_back(0);
    for (int n : nodes)
      for (int k = per_node - 1; k >= 0; --k)
        if (n * per_node + k > 0) targets.push_back(n * per_node + k);
  }
  for (LinkClass cls : present) {
    if (shown.count(cls)) continue;
    for (int dst : targets) {
      bool uses = false;
      for (const Hop& h : router.route(0, dst).hops) uses = uses || topo.link(h.link).cls == cls;
      if (!uses) continue;
      s.routes.push_back(example(topo, router, "crosses " + std::string(to_string(cls)), 0, dst));
      for (const Hop& h : router.route(0, dst).hops) shown.insert(topo.link(h.link).cls);
      break;
    }
    if (!shown.count(cls)) s.unused_classes.push_back(std::string(to_string(cls)));
  }
  return s;
}

}  // namespace basp
