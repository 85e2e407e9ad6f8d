// Finds the translation: for each divisor d of the node count, derive the vertex map "node n -> node
// n+d" from the order in which links were added, verify it is an automorphism (links, capacities,
// latencies, kinds, rails, NIC affinity, ranks) acting freely on links, then check the traffic.
#include "rank_fold.hpp"

#include "input_error.hpp"
#include "nccl_rings.hpp"

#include <algorithm>
#include <deque>
#include <unordered_map>

namespace basp {
namespace {

constexpr VertexId unmapped = ~VertexId(0);

// Links by vertex in id order (the order builders added them), and devices by node.
struct Adjacency {
  std::vector<std::vector<int>> out, in;
  std::vector<std::vector<VertexId>> node_vertices;
};

Adjacency adjacency(const Topology& topo) {
  Adjacency a;
  const std::size_t n = boost::num_vertices(topo.graph);
  a.out.resize(n);
  a.in.resize(n);
  for (int id = 0; id < topo.link_count(); ++id) {
    a.out[topo.link(id).from].push_back(id);
    a.in[topo.link(id).to].push_back(id);
  }
  a.node_vertices.resize(topo.nodes);
  for (VertexId v = 0; v < n; ++v) {
    const int node = topo.graph[v].node;
    if (node >= 0 && node < topo.nodes) a.node_vertices[node].push_back(v);
  }
  return a;
}

// The link permutation of "every node moves d nodes on", or empty with the reason.
std::vector<int> node_shift(const Topology& topo, const Adjacency& adj, int d, std::string& why) {
  const Graph& g = topo.graph;
  const std::size_t n = boost::num_vertices(g);
  const int nodes = topo.nodes;
  std::vector<VertexId> image(n, unmapped);
  std::deque<VertexId> todo;
  for (int node = 0; node < nodes; ++node) {
    const auto& mine = adj.node_vertices[node];
    const auto& theirs = adj.node_vertices[(node + d) % nodes];
    if (mine.size() != theirs.size()) {
      why = "nodes " + std::to_string(node) + " and " + std::to_string((node + d) % nodes) + " differ in devices";
      return {};
    }
    for (std::size_t k = 0; k < mine.size(); ++k) {
      image[mine[k]] = theirs[k];
      todo.push_back(mine[k]);
    }
  }
  auto fail = [&](VertexId v) {
    why = "moving nodes by " + std::to_string(d) + " does not map " + g[v].name + "'s links onto a like device's";
    return std::vector<int>{};
  };
  // Each link of a mapped vertex u goes to a link of image[u]: to the image of its far end when
  // that is known (in order among parallel links), else to the link in the same position, which
  // then maps the far end. A far end reached twice with different images breaks the translation.
  std::vector<int> link_image(topo.link_count(), -1);
  std::vector<char> used;
  std::unordered_multimap<VertexId, std::size_t> by_end;
  while (!todo.empty()) {
    const VertexId u = todo.front();
    todo.pop_front();
    for (int dir = 0; dir < 2; ++dir) {
      const auto& mine = dir == 0 ? adj.out[u] : adj.in[u];
      const auto& theirs = dir == 0 ? adj.out[image[u]] : adj.in[image[u]];
      if (mine.size() != theirs.size()) return fail(u);
      auto far = [&](int link) { return dir == 0 ? topo.link(link).to : topo.link(link).from; };
      used.assign(theirs.size(), 0);
      std::vector<std::size_t> match(mine.size(), theirs.size());
      by_end.clear();
      for (std::size_t k = 0; k < mine.size(); ++k) {
        const VertexId w = far(mine[k]);
        if (image[w] == unmapped) continue;
        if (far(theirs[k]) == image[w] && !used[k]) {
          match[k] = k;
        } else {
          if (by_end.empty())
            for (std::size_t j = theirs.size(); j-- > 0;) by_end.emplace(far(theirs[j]), j);
          auto [it, end] = by_end.equal_range(image[w]);
          while (it != end && used[it->second]) ++it;
          if (it == end) return fail(u);
          match[k] = it->second;
        }
        used[match[k]] = 1;
      }
      for (std::size_t k = 0; k < mine.size(); ++k) {
        if (match[k] == theirs.size()) {
          if (used[k]) return fail(u);
          match[k] = k;
          used[k] = 1;
          const VertexId w = far(mine[k]);
          if (image[w] == unmapped) {
            image[w] = far(theirs[k]);
            todo.push_back(w);
          } else if (image[w] != far(theirs[k])) {
            return fail(w);
          }
        }
        int& li = link_image[mine[k]];
        if (li >= 0 && li != theirs[match[k]]) return fail(u);
        li = theirs[match[k]];
      }
    }
  }
  std::vector<char> hit(n, 0);
  for (VertexId v = 0; v < n; ++v) {
    const VertexId w = image[v];
    if (w == unmapped || hit[w]) return fail(v);
    hit[w] = 1;
    const Vertex &a = g[v], &b = g[w];
    if (a.kind != b.kind || a.rail != b.rail || (a.node < 0) != (b.node < 0)) return fail(v);
    if ((a.nic < 0) != (b.nic < 0) || (a.nic >= 0 && image[VertexId(a.nic)] != VertexId(b.nic))) return fail(v);
  }
  std::vector<char> link_hit(topo.link_count(), 0);
  for (int l = 0; l < topo.link_count(); ++l) {
    const int l2 = link_image[l];
    if (l2 < 0 || link_hit[l2]) return fail(topo.link(l).from);
    link_hit[l2] = 1;
    const Link &a = topo.link(l), &b = topo.link(l2);
    if (image[a.from] != b.from || image[a.to] != b.to || a.capacity_Bps != b.capacity_Bps ||
        a.latency_s != b.latency_s || a.cls != b.cls)
      return fail(a.from);
  }
  const int per_node = topo.gpus_per_node, ranks = static_cast<int>(topo.gpus.size());
  for (int r = 0; r < ranks; ++r)
    if (image[topo.gpus[r]] != topo.gpus[(r + d * per_node) % ranks]) return fail(topo.gpus[r]);
  return link_image;
}

// Representative (smallest id) of each link's orbit, and per link how many of the `members`
// translates of a flow cross it when the representative flow crosses its class once: members over
// the orbit's length (a link the translation fixes, such as a core link above fixed pods, carries
// every member's load).
void link_classes_of(const std::vector<int>& link_image, int members, RankFold& fold) {
  const std::size_t links = link_image.size();
  fold.link_rep.assign(links, -1);
  fold.link_load.assign(links, 0);
  fold.link_classes = 0;
  std::vector<int> orbit;
  for (std::size_t l = 0; l < links; ++l) {
    if (fold.link_rep[l] >= 0) continue;
    orbit.clear();
    for (int m = static_cast<int>(l); fold.link_rep[m] < 0; m = link_image[m]) {
      fold.link_rep[m] = static_cast<int>(l);
      orbit.push_back(m);
    }
    for (int m : orbit) fold.link_load[m] = static_cast<std::uint32_t>(members / static_cast<int>(orbit.size()));
    ++fold.link_classes;
  }
}

// Group index and position of every rank (-1: in no group).
struct Membership {
  std::vector<int> group, position;
};
Membership membership(const std::vector<std::vector<int>>& groups, int ranks) {
  Membership m{std::vector<int>(ranks, -1), std::vector<int>(ranks, -1)};
  for (std::size_t g = 0; g < groups.size(); ++g)
    for (std::size_t i = 0; i < groups[g].size(); ++i) {
      m.group[groups[g][i]] = static_cast<int>(g);
      m.position[groups[g][i]] = static_cast<int>(i);
    }
  return m;
}

// Does shifting ranks by `period` preserve what `t` needs?
bool traffic_kept(const Topology& topo, const TrafficGroups& t, int ranks, int period, std::string& why) {
  const auto& groups = *t.groups;
  const Membership m = membership(groups, ranks);
  auto shift = [&](int r) { return (r + period) % ranks; };
  for (int r = 0; r < ranks; ++r)
    if (m.group[r] < 0) {
      why = "rank " + std::to_string(r) + " is in no group";
      return false;
    }
  for (const auto& g : groups) {
    const int image = m.group[shift(g[0])];
    for (std::size_t i = 0; i < g.size(); ++i) {
      const int s = shift(g[i]);
      bool ok = m.group[s] == image && groups[image].size() == g.size();
      if (ok && t.traffic == GroupTraffic::successor) {
        const auto& h = groups[image];
        ok = h[(m.position[s] + 1) % h.size()] == shift(g[(i + 1) % g.size()]);
      }
      if (!ok) {
        why = "groups (" + std::to_string(g.size()) + " ranks) do not move onto groups when ranks move by " +
              std::to_string(period);
        return false;
      }
    }
  }
  if (t.traffic != GroupTraffic::nccl_rings) return true;
  std::vector<RingEdge> edges;
  for (const auto& g : groups) {
    const Rings rings = nccl_rings(topo, g);
    edges.insert(edges.end(), rings.edges.begin(), rings.edges.end());
  }
  std::sort(edges.begin(), edges.end());
  for (const RingEdge& e : edges) {
    const RingEdge moved{shift(e.from), shift(e.to), e.channels};
    const auto it = std::lower_bound(edges.begin(), edges.end(), moved);
    if (it == edges.end() || it->from != moved.from || it->to != moved.to || it->channels != e.channels) {
      why = "NCCL's rings do not move onto themselves when ranks move by " + std::to_string(period);
      return false;
    }
  }
  return true;
}

}  // namespace

std::optional<EngineMode> parse_engine_mode(std::string_view name) {
  if (name == "auto") return EngineMode::automatic;
  if (name == "classes") return EngineMode::classes;
  if (name == "full") return EngineMode::full;
  return std::nullopt;
}

std::string_view to_string(EngineMode mode) {
  switch (mode) {
    case EngineMode::automatic: return "auto";
    case EngineMode::classes: return "classes";
    case EngineMode::full: return "full";
  }
  return "?";
}

RankFold RankFold::identity(int ranks) {
  RankFold f;
  f.ranks = f.period = ranks;
  return f;
}

std::span<const Hop> RankFold::fold_hops(std::span<const Hop> hops, std::vector<Hop>& out) const {
  if (link_rep.empty()) return hops;
  out.assign(hops.begin(), hops.end());
  for (Hop& h : out) h.link = link_rep[h.link];
  return out;
}

std::vector<double> RankFold::expand_links(const std::vector<double>& per_link) const {
  if (link_rep.empty()) return per_link;
  std::vector<double> out(per_link.size());
  for (std::size_t l = 0; l < out.size(); ++l) out[l] = per_link[link_rep[l]] * link_load[l];
  return out;
}

std::vector<double> RankFold::quotient_capacities(std::vector<double> capacity_Bps) const {
  if (link_rep.empty()) return capacity_Bps;
  for (std::size_t l = 0; l < capacity_Bps.size(); ++l) capacity_Bps[l] /= link_load[l];
  return capacity_Bps;
}

RunStats RankFold::expand_stats(RunStats s) const {
  s.flows *= members();
  s.events *= members();
  s.refilled *= members();
  return s;
}

FoldChoice choose_fold(EngineMode mode, const Topology& topo, int ranks, std::span<const TrafficGroups> traffic) {
  FoldChoice c{RankFold::identity(ranks), {}};
  c.use.rank_classes = ranks;
  c.use.link_classes = topo.link_count();
  std::string why;
  const int gpus = static_cast<int>(topo.gpus.size());
  if (mode == EngineMode::full) {
    why = "--engine full";
  } else if (ranks != gpus) {
    why = "the job uses " + std::to_string(ranks) + " of the " + std::to_string(gpus) + " GPUs";
  } else if (topo.routing.ecmp == EcmpMode::hash) {
    why = "hashed ECMP picks each flow's path by its identity";
  } else if (topo.nodes < 2 || topo.gpus_per_node < 1) {
    why = "a single node has no translation";
  } else {
    const Adjacency adj = adjacency(topo);
    why = "no translation by whole nodes maps the cluster onto itself";
    for (int d = 1; d < topo.nodes; ++d) {
      if (topo.nodes % d != 0) continue;
      std::string broke;
      const std::vector<int> image = node_shift(topo, adj, d, broke);
      if (image.empty()) continue;
      const int period = d * topo.gpus_per_node, members = topo.nodes / d;
      bool kept = true;
      for (const TrafficGroups& t : traffic)
        if (!(kept = traffic_kept(topo, t, ranks, period, broke))) break;
      if (!kept) {
        why = "the cluster repeats every " + std::to_string(d) + " nodes, but " + broke;
        continue;
      }
      c.fold.period = period;
      link_classes_of(image, members, c.fold);
      c.use = {"classes",
               "the cluster and the traffic repeat every " + std::to_string(d) + (d == 1 ? " node" : " nodes"),
               period, c.fold.link_classes, members};
      return c;
    }
  }
  if (mode == EngineMode::classes)
    throw InputError("", 0, "--engine", "classes: this scenario has no exact symmetry (" + why +
                                            "); use --engine full or auto");
  c.use.why = why;
  return c;
}

}  // namespace basp
