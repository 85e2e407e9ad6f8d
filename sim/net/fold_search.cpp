// Finds the symmetry: for node steps a (smallest first) and blocks of D nodes (a divides D, D the
// node count), the group that moves blocks on by one block and rotates nodes by a within every
// block. Each generator must keep the traffic, and be an automorphism of the topology: its vertex
// map is derived from the links' order and far ends and verified link by link (capacity, latency,
// class, kinds, rails, NIC affinity, ranks). Ranks then fall into classes of nodes equal mod a.
#include "rank_fold.hpp"

#include "input_error.hpp"
#include "nccl_rings.hpp"

#include <algorithm>
#include <stdexcept>
#include <deque>
#include <map>
#include <numeric>

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

// The link permutation induced by moving node n to node_map[n]; empty when that is no automorphism.
// `ports_in_order` (a skeleton's stubs): a node vertex's k-th link goes to the image's k-th, as
// the node's k-th NIC goes to the image's k-th on the whole topology.
std::vector<int> node_permutation_links(const Topology& topo, const Adjacency& adj, const std::vector<int>& node_map,
                                        bool ports_in_order) {
  const Graph& g = topo.graph;
  const std::size_t n = boost::num_vertices(g);
  const int nodes = topo.nodes;
  std::vector<VertexId> image(n, unmapped);
  std::deque<VertexId> todo;
  for (int node = 0; node < nodes; ++node) {
    const auto& mine = adj.node_vertices[node];
    const auto& theirs = adj.node_vertices[node_map[node]];
    if (mine.size() != theirs.size()) return {};
    for (std::size_t k = 0; k < mine.size(); ++k) {
      image[mine[k]] = theirs[k];
      todo.push_back(mine[k]);
    }
  }
  // Each link of a mapped vertex u goes to a link of image[u]: to the image of its far end when
  // that is known (the first unused such link, in id order, so parallel links keep their order),
  // else to the next unused link in id order, which then maps the far end. A far end reached
  // twice with different images breaks the move; the checks below verify what was derived.
  std::vector<int> link_image(topo.link_count(), -1);
  std::vector<char> used;
  std::vector<std::pair<VertexId, std::size_t>> by_end;  // (far end, index in theirs), sorted
  std::vector<std::size_t> match;
  while (!todo.empty()) {
    const VertexId u = todo.front();
    todo.pop_front();
    for (int dir = 0; dir < 2; ++dir) {
      const auto& mine = dir == 0 ? adj.out[u] : adj.in[u];
      const auto& theirs = dir == 0 ? adj.out[image[u]] : adj.in[image[u]];
      if (mine.size() != theirs.size()) return {};
      auto far = [&](int link) { return dir == 0 ? topo.link(link).to : topo.link(link).from; };
      used.assign(theirs.size(), 0);
      match.assign(mine.size(), theirs.size());
      by_end.clear();
      const bool in_order = ports_in_order && g[u].node >= 0;
      for (std::size_t k = 0; k < mine.size() && !in_order; ++k) {
        const VertexId w = far(mine[k]);
        if (image[w] == unmapped) continue;
        if (far(theirs[k]) == image[w] && !used[k]) {
          match[k] = k;
        } else {
          if (by_end.empty()) {
            for (std::size_t j = 0; j < theirs.size(); ++j) by_end.push_back({far(theirs[j]), j});
            std::sort(by_end.begin(), by_end.end());
          }
          auto it = std::lower_bound(by_end.begin(), by_end.end(), std::pair{image[w], std::size_t(0)});
          while (it != by_end.end() && it->first == image[w] && used[it->second]) ++it;
          if (it == by_end.end() || it->first != image[w]) return {};
          match[k] = it->second;
        }
        used[match[k]] = 1;
      }
      std::size_t next = 0;  // the next unused link of image[u]
      for (std::size_t k = 0; k < mine.size(); ++k) {
        if (match[k] == theirs.size()) {
          while (next < theirs.size() && used[next]) ++next;
          if (next == theirs.size()) return {};
          match[k] = next;
          used[next] = 1;
          const VertexId w = far(mine[k]), w2 = far(theirs[next]);
          if (image[w] == unmapped) {
            image[w] = w2;
            todo.push_back(w);
          } else if (image[w] != w2) {
            return {};
          }
        }
        int& li = link_image[mine[k]];
        if (li >= 0 && li != theirs[match[k]]) return {};
        li = theirs[match[k]];
      }
    }
  }
  std::vector<char> hit(n, 0);
  for (VertexId v = 0; v < n; ++v) {
    const VertexId w = image[v];
    if (w == unmapped || hit[w]) return {};
    hit[w] = 1;
    const Vertex &a = g[v], &b = g[w];
    if (a.kind != b.kind || a.rail != b.rail || (a.node < 0) != (b.node < 0)) return {};
    if ((a.nic < 0) != (b.nic < 0) || (a.nic >= 0 && image[VertexId(a.nic)] != VertexId(b.nic))) return {};
  }
  std::vector<char> link_hit(topo.link_count(), 0);
  for (int l = 0; l < topo.link_count(); ++l) {
    const int l2 = link_image[l];
    if (l2 < 0 || link_hit[l2]) return {};
    link_hit[l2] = 1;
    const Link &a = topo.link(l), &b = topo.link(l2);
    if (image[a.from] != b.from || image[a.to] != b.to || a.capacity_Bps != b.capacity_Bps ||
        a.latency_s != b.latency_s || a.cls != b.cls)
      return {};
  }
  const int per_node = topo.gpus_per_node, ranks = static_cast<int>(topo.gpus.size());
  for (int r = 0; r < ranks; ++r)
    if (image[topo.gpus[r]] != topo.gpus[node_map[r / per_node] * per_node + r % per_node]) return {};
  return link_image;
}

// Every cycle of the permutation `image` has a length dividing `order`.
bool cycles_divide(const std::vector<int>& image, int order) {
  std::vector<char> seen(image.size(), 0);
  for (std::size_t l = 0; l < image.size(); ++l) {
    if (seen[l]) continue;
    int length = 0;
    for (int m = static_cast<int>(l); !seen[m]; m = image[m], ++length) seen[m] = 1;
    if (order % length != 0) return false;
  }
  return true;
}

// Classes of links: orbits under the generators' link permutations, each named by its smallest id,
// and per link how many of the `members` translates of a flow cross it when the representative
// flow crosses its class once: members over the orbit's size (a link the group fixes, such as a
// core link above fixed pods, carries every member's load).
void link_classes_of(const std::vector<std::vector<int>>& link_images, int members, RankFold& fold) {
  const std::size_t links = link_images.front().size();
  std::vector<int> parent(links);
  for (std::size_t l = 0; l < links; ++l) parent[l] = static_cast<int>(l);
  auto find = [&](int l) {
    while (parent[l] != l) l = parent[l] = parent[parent[l]];
    return l;
  };
  for (const auto& image : link_images)
    for (std::size_t l = 0; l < links; ++l) {
      const int a = find(static_cast<int>(l)), b = find(image[l]);
      if (a != b) parent[std::max(a, b)] = std::min(a, b);  // roots stay the smallest ids
    }
  fold.link_class.assign(links, -1);
  fold.class_link.clear();
  std::vector<int> size;
  for (std::size_t l = 0; l < links; ++l) {
    const int root = find(static_cast<int>(l));
    if (root == static_cast<int>(l)) {  // roots come first in id order
      fold.link_class[l] = static_cast<int>(fold.class_link.size());
      fold.class_link.push_back(root);
      size.push_back(0);
    } else {
      fold.link_class[l] = fold.link_class[root];
    }
    ++size[fold.link_class[l]];
  }
  fold.link_load.resize(links);
  for (std::size_t l = 0; l < links; ++l) {
    const int orbit = size[fold.link_class[l]];
    if (members % orbit != 0) throw std::logic_error("link_classes_of: an orbit does not divide the group");
    fold.link_load[l] = static_cast<std::uint32_t>(members / orbit);
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

// What checking a traffic set against many candidate moves reuses: membership, NCCL's ring edges.
struct TrafficIndex {
  Membership m;
  std::vector<RingEdge> ring_edges;  // sorted; nccl_rings traffic only
  std::vector<std::uint32_t> edges_from;  // ring_edges[edges_from[r] .. edges_from[r + 1]) leave rank r
};

template <class RingsOf>
TrafficIndex index_traffic(const RingsOf& rings_of, const TrafficGroups& t, int ranks) {
  TrafficIndex x{membership(*t.groups, ranks), {}, {}};
  for (std::size_t r = 0; r < x.m.group.size(); ++r)
    if (x.m.group[r] < 0) throw std::logic_error("choose_fold: rank " + std::to_string(r) + " is in no group");
  if (t.traffic == GroupTraffic::nccl_rings) {
    for (const auto& g : *t.groups) {
      const Rings rings = rings_of(g);
      x.ring_edges.insert(x.ring_edges.end(), rings.edges.begin(), rings.edges.end());
    }
    std::sort(x.ring_edges.begin(), x.ring_edges.end());
    x.edges_from.assign(ranks + 1, 0);
    for (const RingEdge& e : x.ring_edges) ++x.edges_from[e.from + 1];
    for (int r = 0; r < ranks; ++r) x.edges_from[r + 1] += x.edges_from[r];
  }
  return x;
}

// Does moving ranks by `moved` keep what `t` needs?
bool traffic_kept(const TrafficGroups& t, const TrafficIndex& x, const std::vector<int>& moved, std::string& why) {
  const auto& groups = *t.groups;
  const Membership& m = x.m;
  for (const auto& g : groups) {
    const int image = m.group[moved[g[0]]];
    for (std::size_t i = 0; i < g.size(); ++i) {
      const int s = moved[g[i]];
      bool ok = m.group[s] == image && groups[image].size() == g.size();
      if (ok && t.traffic == GroupTraffic::successor) {
        const auto& h = groups[image];
        ok = h[(m.position[s] + 1) % h.size()] == moved[g[(i + 1) % g.size()]];
      }
      if (!ok) {
        why = "groups (" + std::to_string(g.size()) + " ranks) do not move onto groups";
        return false;
      }
    }
  }
  for (const RingEdge& e : x.ring_edges) {
    const int from = moved[e.from], to = moved[e.to];
    bool found = false;  // a rank has an edge or two per channel: a short scan
    for (std::uint32_t k = x.edges_from[from]; k < x.edges_from[from + 1] && !found; ++k)
      found = x.ring_edges[k].to == to && x.ring_edges[k].channels == e.channels;
    if (!found) {
      why = "NCCL's rings do not move onto themselves";
      return false;
    }
  }
  return true;
}

std::string count(int nodes) { return std::to_string(nodes) + (nodes == 1 ? " node" : " nodes"); }

std::string describe(int step, int block) {
  if (step == block) return "the cluster and the traffic repeat every " + count(step);
  return "the cluster and the traffic repeat every " + count(block) + ", and rotating the nodes of each block by " +
         count(step) + " keeps them";
}

}  // namespace

struct MoveCache::State {
  const Topology* topo = nullptr;
  std::size_t links = 0;  // with topo: the identity of the topology cached
  Adjacency adj;
  std::map<std::pair<int, int>, std::vector<int>> verified;  // (step, block) -> link image ({}: none)
};

MoveCache::MoveCache() = default;
MoveCache::~MoveCache() = default;

namespace {

// One search: candidate moves are checked against the traffic (moved ranks against the groups and
// NCCL's ring edges) and derived and verified on the topology (kept per move in the MoveCache).
class FoldSearch {
 public:
  template <class RingsOf>
  FoldSearch(const Topology& topo, bool ports_in_order, const RingsOf& rings_of, int ranks,
             std::span<const TrafficGroups> traffic, MoveCache& moves)
      : topo_(topo), ports_in_order_(ports_in_order), ranks_(ranks), nodes_(topo.nodes),
        per_node_(topo.gpus_per_node), traffic_(traffic), moved_(ranks) {
    if (!moves.state || moves.state->topo != &topo || moves.state->links != topo.links.size()) {
      moves.state = std::make_unique<MoveCache::State>();
      moves.state->topo = &topo;
      moves.state->links = topo.links.size();
      moves.state->adj = adjacency(topo);
    }
    state_ = moves.state.get();
    for (const TrafficGroups& t : traffic) indexed_.push_back(index_traffic(rings_of, t, ranks));
    // Sets of the widest groups first: they are the likeliest to break a move, and a check that
    // passes costs a pass over every group and ring edge.
    order_.resize(traffic.size());
    std::iota(order_.begin(), order_.end(), std::size_t(0));
    std::stable_sort(order_.begin(), order_.end(), [&](std::size_t a, std::size_t b) {
      auto width = [&](std::size_t t) { return traffic[t].groups->empty() ? 0 : traffic[t].groups->front().size(); };
      return width(a) > width(b);
    });
  }

  // The finest group of moves verified on topology and traffic; none, with `why` saying what
  // stopped it.
  std::optional<RankFold> finest(std::string& why) {
    const int period = smallest_period(why);
    // Finer: rotate nodes by `step` within blocks of D nodes that shift (D a multiple of the period).
    // Rings usually forbid it; an all-to-all seldom does. Traffic first: it fails fast here.
    if (period < nodes_)  // kept unless a candidate below is verified
      why = "the cluster and the traffic repeat every " + count(period) +
            ", but no move of that kind was verified as a group (docs/symmetry.md, \"Which group\")";
    for (int step = 1; step < nodes_ && period < nodes_; ++step) {
      if (nodes_ % step != 0) continue;
      std::optional<RankFold> found;
      if (step % period == 0) found = group(step, step);
      for (int d = period; !found && d < nodes_; d += period)
        if (nodes_ % d == 0 && d % step == 0 && d > step) found = group(step, d);
      if (found) return found;
    }
    return std::nullopt;
  }

 private:
  RankFold fold_for(int step, int block) const {
    RankFold f;
    f.ranks = ranks_;
    f.period = step * per_node_;
    f.gpus_per_node = per_node_;
    f.step_nodes = step;
    f.block_nodes = block;
    return f;
  }

  bool traffic_ok(const RankFold& f, int generator) {
    for (int r = 0; r < ranks_; ++r) moved_[r] = f.moved(r, generator);
    for (std::size_t t : order_)
      if (!traffic_kept(traffic_[t], indexed_[t], moved_, broke_)) return false;
    return true;
  }

  // The link permutation a generator induces, derived and verified on the topology ({}: none).
  const std::vector<int>& topology_image(const RankFold& f, int generator) {
    const std::pair key = generator == 0 ? std::pair{f.block_nodes, f.block_nodes} : std::pair{f.step_nodes, f.block_nodes};
    auto [it, fresh] = state_->verified.try_emplace(key);
    if (fresh) {
      std::vector<int> node_map(nodes_);
      for (int n = 0; n < nodes_; ++n) node_map[n] = f.moved(n * per_node_, generator) / per_node_;
      it->second = node_permutation_links(topo_, state_->adj, node_map, ports_in_order_);
    }
    return it->second;
  }

  // The shifts of whole nodes that keep the topology, and those that keep the traffic, are each
  // the multiples of their smallest (a subgroup of the cyclic shifts), so the smallest shift
  // keeping both is the least common multiple of the two smallest. Misaligned shifts fail fast
  // on the topology, so that is tried first. The subgroup argument only proposes candidates:
  // each one used is derived and verified itself (the derivation may miss automorphisms).
  int smallest_period(std::string& why) {
    int topology_shift = 0, traffic_shift = 0;
    for (int b = 1; b < nodes_ && !topology_shift; ++b)
      if (nodes_ % b == 0 && !topology_image(fold_for(b, b), 0).empty()) topology_shift = b;
    for (int b = 1; b < nodes_ && !traffic_shift; ++b)
      if (nodes_ % b == 0 && traffic_ok(fold_for(b, b), 0)) traffic_shift = b;
    if (!topology_shift)
      why = "no shift of whole nodes maps the cluster onto itself";
    else if (!traffic_shift)
      why = "the cluster repeats every " + count(topology_shift) + ", but no shift of whole nodes keeps the traffic (" +
            broke_ + ")";
    else
      why = "the cluster repeats every " + count(topology_shift) + " and the traffic every " + count(traffic_shift) +
            ": only a shift by the whole cluster keeps both";  // their lcm is the node count
    return topology_shift && traffic_shift ? std::lcm(topology_shift, traffic_shift) : nodes_;
  }

  // The group of a candidate, when its generators are verified automorphisms that keep the
  // traffic and, on the links, satisfy the relations of the intended group (each generator's
  // order, and commuting): then it has `members` elements, as on the nodes, and every link
  // orbit's size divides it.
  std::optional<RankFold> group(int step, int block) {
    RankFold f = fold_for(step, block);
    const int generators = step < block ? 2 : 1;
    // The rotation first: it usually fails fast, the block shift passes (slowly) for every block.
    for (int k = generators - 1; k >= 0; --k) {
      if (k == 0) {
        auto [kept, fresh] = block_traffic_.try_emplace(block);
        if (fresh) kept->second = traffic_ok(f, 0);
        if (!kept->second) return std::nullopt;
      } else if (!traffic_ok(f, k)) {
        return std::nullopt;
      }
    }
    std::vector<std::vector<int>> images;
    for (int k = 0; k < generators; ++k) {
      images.push_back(topology_image(f, k));
      if (images.back().empty()) return std::nullopt;
    }
    const int orders[2] = {nodes_ / block, block / step};
    for (int k = 0; k < generators; ++k)
      if (!cycles_divide(images[k], orders[k])) return std::nullopt;
    if (generators == 2)
      for (std::size_t l = 0; l < images[0].size(); ++l)
        if (images[0][images[1][l]] != images[1][images[0][l]]) return std::nullopt;
    link_classes_of(images, nodes_ / step, f);
    return f;
  }

  const Topology& topo_;
  const bool ports_in_order_;
  const int ranks_, nodes_, per_node_;
  std::span<const TrafficGroups> traffic_;
  std::vector<TrafficIndex> indexed_;  // per traffic set
  std::vector<std::size_t> order_;     // of the traffic sets, widest groups first
  MoveCache::State* state_ = nullptr;  // the topology's adjacency and verified moves
  std::vector<int> moved_;             // per rank: where the move being checked takes it
  std::string broke_;                  // what the last traffic check that failed found
  std::map<int, bool> block_traffic_;  // block -> its shift keeps the traffic
};

// choose_fold on `topo`, the whole topology or a skeleton (`ports_in_order`) of `gpus` GPUs.
template <class RingsOf>
FoldChoice choose_fold_on(EngineMode mode, const Topology& topo, int gpus, bool ports_in_order,
                          const RingsOf& rings_of, int ranks, std::span<const TrafficGroups> traffic,
                          MoveCache* cache) {
  FoldChoice c{RankFold::identity(ranks), {}};
  c.use.rank_classes = ranks;
  c.use.link_classes = topo.link_count();
  std::string why;
  if (mode == EngineMode::full) {
    why = "--engine full";
  } else if (!topo.excluded_nodes.empty() || !topo.down_links.empty()) {
    why = !topo.excluded_nodes.empty() ? "nodes are excluded" : "cables are down";
  } else if (ranks != gpus) {
    why = "the job uses " + std::to_string(ranks) + " of the " + std::to_string(gpus) + " GPUs";
  } else if (topo.routing.ecmp == EcmpMode::hash) {
    why = "hashed ECMP picks each flow's path by its identity";
  } else if (topo.nodes < 2 || topo.gpus_per_node < 1) {
    why = "a single node has no translation";
  } else {
    MoveCache local;
    FoldSearch search(topo, ports_in_order, rings_of, ranks, traffic, cache ? *cache : local);
    if (std::optional<RankFold> found = search.finest(why)) {
      c.use = {"classes", describe(found->step_nodes, found->block_nodes), found->period, found->link_classes(),
               topo.nodes / found->step_nodes};
      c.fold = std::move(*found);
      return c;
    }
  }
  if (mode == EngineMode::classes)
    throw InputError("", 0, "--engine", "classes: this scenario has no exact symmetry (" + why +
                                            "); use --engine full or auto");
  c.use.why = why;
  return c;
}

}  // namespace

FoldChoice choose_fold(EngineMode mode, const Topology& topo, int ranks, std::span<const TrafficGroups> traffic,
                       MoveCache* cache) {
  return choose_fold_on(
      mode, topo, static_cast<int>(topo.gpus.size()), false,
      [&](std::span<const int> group) { return nccl_rings(topo, group); }, ranks, traffic, cache);
}

FoldChoice choose_fold_on_skeleton(EngineMode mode, const Topology& skeleton, const RankPlaces& places, int ranks,
                                   std::span<const TrafficGroups> traffic, MoveCache* cache) {
  return choose_fold_on(
      mode, skeleton, skeleton.nodes * skeleton.gpus_per_node, true,
      [&](std::span<const int> group) { return nccl_rings(places, group); }, ranks, traffic, cache);
}

}  // namespace basp
