// Carries a fold found on a template's skeleton to a part of the template: which nodes the part
// needs, and each of its links' class and load.
#include "cluster_part.hpp"

#include <algorithm>
#include <set>
#include <stdexcept>
#include <string>

namespace basp {
namespace {

// Links by the node whose devices they touch (NIC ports included), fabric links apart; id order.
struct LinksByNode {
  std::vector<std::pair<int, std::vector<int>>> nodes;  // ascending node
  std::vector<int> fabric;
};

LinksByNode links_by_node(const Topology& topo) {
  std::vector<int> index;  // node -> position in `nodes`
  LinksByNode out;
  for (int l = 0; l < topo.link_count(); ++l) {
    const int a = topo.vertex(topo.link(l).from).node, b = topo.vertex(topo.link(l).to).node;
    const int node = a >= 0 ? a : b;
    if (node < 0) {
      out.fabric.push_back(l);
      continue;
    }
    if (node >= static_cast<int>(index.size())) index.resize(node + 1, -1);
    if (index[node] < 0) {
      index[node] = static_cast<int>(out.nodes.size());
      out.nodes.push_back({node, {}});
    }
    out.nodes[index[node]].second.push_back(l);
  }
  std::sort(out.nodes.begin(), out.nodes.end());
  return out;
}

}  // namespace

int stand_in_node(const TopologyTemplate& t, const RankFold& fold, int node) {
  const FabricKind kind = t.fabric.kind;
  const int per_leaf = kind == FabricKind::single_switch ? t.nodes
                       : kind == FabricKind::none        ? 1
                                                         : t.fabric.nodes_per_leaf;
  // Never in a representative node's NVLink domain: the sources are there, and a destination in
  // a source's domain routes over its NVLink instead.
  const int per_domain = nodes_per_nvlink_domain(t);
  const int step = std::max(fold.step_nodes, 1);
  const int first = std::max(node - node % per_leaf, (step + per_domain - 1) / per_domain * per_domain);
  for (int m = first; m < node; ++m)
    if (m % step == node % step) return m;
  return node;
}

std::vector<int> part_ranks(const Topology& part, const TopologyTemplate& t, const RankFold& fold, int ranks) {
  const int per_node = t.node.gpus;
  std::vector<int> index(t.nodes, -1);  // cluster node -> its position in the part
  for (std::size_t r = 0; r < part.cluster_ranks.size(); r += per_node) index[part.cluster_ranks[r] / per_node] = int(r) / per_node;
  std::vector<int> out(ranks, -1);
  for (int node = 0; node * per_node < ranks; ++node) {
    int at = index[node];
    if (at < 0) at = index[stand_in_node(t, fold, node)];
    for (int i = 0; i < per_node && at >= 0; ++i) out[node * per_node + i] = at * per_node + i;
  }
  return out;
}

std::vector<int> part_nodes(const RankFold& fold, const RankPlaces& places, std::span<const TrafficGroups> traffic,
                            const std::function<int(int)>& stand_in) {
  std::set<int> nodes;
  for (int r = 0; r < fold.period; ++r) nodes.insert(places.node_of(r));
  for (const TrafficGroups& t : traffic) {
    const auto& groups = *t.groups;
    for (std::size_t g = 0; g < groups.size(); ++g) {
      const auto& group = groups[g];
      bool any = false;
      for (int r : group) any = any || fold.represents(r);
      if (t.traffic == GroupTraffic::all_pairs && (any || g == 0)) {
        for (int r : group) nodes.insert(stand_in ? stand_in(places.node_of(r)) : places.node_of(r));
      } else if (any && t.traffic == GroupTraffic::successor) {
        const std::size_t n = group.size();
        for (std::size_t i = 0; i < n; ++i)
          if (fold.represents(group[i])) {
            nodes.insert(places.node_of(group[(i + 1) % n]));
            nodes.insert(places.node_of(group[(i + n - 1) % n]));
          }
      } else if (any && t.traffic == GroupTraffic::nccl_rings) {
        for (const RingEdge& e : nccl_rings(places, group).edges)
          if (fold.represents(e.from) || fold.represents(e.to)) {
            nodes.insert(places.node_of(e.from));
            nodes.insert(places.node_of(e.to));
          }
      }
    }
  }
  return {nodes.begin(), nodes.end()};
}

namespace {

RankFold fold_links_on_part(const RankFold& on_skeleton, const Topology& skeleton, const Topology& part) {
  auto bug = [](const std::string& what) { throw std::logic_error("fold_on_part: " + what); };
  RankFold f = on_skeleton;
  f.link_class.assign(part.link_count(), -1);
  f.link_load.assign(part.link_count(), 1);
  f.class_link.clear();
  const LinksByNode mine = links_by_node(part), theirs = links_by_node(skeleton);
  // A node's stub ports move freely with it: one translate of a hop each, as its other links.
  for (const auto& [node, links] : theirs.nodes)
    for (int l : links)
      if (on_skeleton.link_load[l] != 1) bug("a NIC port of node " + std::to_string(node) + " is not moved freely");
  const int step = on_skeleton.step_nodes;
  if (static_cast<int>(mine.nodes.size()) < step) bug("the part lacks representative nodes");
  for (int n = 0; n < step; ++n) {
    if (mine.nodes[n].first != n) bug("the part lacks representative node " + std::to_string(n));
    for (int l : mine.nodes[n].second) {
      f.link_class[l] = static_cast<int>(f.class_link.size());
      f.class_link.push_back(l);
    }
  }
  // Both are built by the same fabric builder: its links come in the same order.
  if (mine.fabric.size() != theirs.fabric.size()) bug("the part's fabric differs from the skeleton's");
  std::vector<int> of_skeleton_class(on_skeleton.link_classes(), -1);
  for (std::size_t i = 0; i < mine.fabric.size(); ++i) {
    const int l = mine.fabric[i], s = theirs.fabric[i];
    const Link &a = part.link(l), &b = skeleton.link(s);
    if (part.vertex(a.from).name != skeleton.vertex(b.from).name || part.vertex(a.to).name != skeleton.vertex(b.to).name)
      bug("fabric link " + std::to_string(l) + " is not the skeleton's");
    int& c = of_skeleton_class[on_skeleton.link_class[s]];
    if (c < 0) {
      c = static_cast<int>(f.class_link.size());
      f.class_link.push_back(l);
    }
    f.link_class[l] = c;
    f.link_load[l] = on_skeleton.link_load[s];
  }
  for (std::size_t k = step; k < mine.nodes.size(); ++k) {
    const auto& [node, links] = mine.nodes[k];
    const std::vector<int>& rep = mine.nodes[node % step].second;
    if (links.size() != rep.size()) bug("node " + std::to_string(node) + " is not built like its representative");
    for (std::size_t i = 0; i < links.size(); ++i) {
      const Link &a = part.link(links[i]), &b = part.link(rep[i]);
      if (a.capacity_Bps != b.capacity_Bps || a.latency_s != b.latency_s || a.cls != b.cls)
        bug("node " + std::to_string(node) + " is not built like its representative");
      f.link_class[links[i]] = f.link_class[rep[i]];
    }
  }
  return f;
}

}  // namespace

FoldChoice fold_on_part(FoldChoice on_skeleton, const Topology& skeleton, const Topology& part) {
  on_skeleton.fold = fold_links_on_part(on_skeleton.fold, skeleton, part);
  on_skeleton.use.link_classes = on_skeleton.fold.link_classes();
  return on_skeleton;
}

ClusterBuilds::ClusterBuilds(TopologyFile file, std::function<void(Topology&)> adjust)
    : file_(std::move(file)), adjust_(std::move(adjust)) {
  if (!file_.templ) {  // already built: adjusted once, not copied
    whole_ = std::make_unique<Topology>(std::move(file_.explicit_topology));
    if (adjust_) adjust_(*whole_);
    apply_outages(*whole_, file_.outages);
    return;
  }
  // Outages break the template's likeness of nodes: no skeleton, no parts; the whole is built at
  // once, so that a bad outage is refused before anything runs.
  if (!file_.outages.empty()) {
    whole();
    return;
  }
  const TopologyTemplate& t = *file_.templ;
  skeleton_ = build_skeleton(t);
  if (t.nodes < 2) return;
  NodeSubset first_domain;
  for (int n = 0; n < nodes_per_nvlink_domain(t); ++n) first_domain.nodes.push_back(n);
  sample_ = build_topology(t, first_domain);
  if (adjust_) adjust_(*sample_);
}

int ClusterBuilds::gpus() const {
  return file_.templ && file_.outages.empty() ? file_.templ->nodes * file_.templ->node.gpus
                                              : static_cast<int>(whole_->gpus.size());
}

int ClusterBuilds::nodes() const { return file_.templ ? file_.templ->nodes : whole_->nodes; }

const Topology& ClusterBuilds::whole() const {
  if (!file_.templ) return *whole_;
  std::call_once(whole_once_, [&] {
    whole_.reset(new Topology(build_topology(*file_.templ)));  // initialized from the prvalue: no copy
    if (adjust_) adjust_(*whole_);
    apply_outages(*whole_, file_.outages);
  });
  return *whole_;
}

const Topology& ClusterBuilds::sample() const { return sample_ ? *sample_ : whole(); }

std::vector<int> whole_domains(const TopologyTemplate& t, const std::vector<int>& nodes) {
  const int per_domain = nodes_per_nvlink_domain(t);
  if (per_domain == 1) return nodes;
  std::vector<int> out;
  for (int n : nodes) {
    const int first = n - n % per_domain;
    if (!out.empty() && out.back() >= first) continue;  // ascending: its domain is in already
    for (int m = first; m < first + per_domain; ++m) out.push_back(m);
  }
  return out;
}

std::optional<PartPlan> plan_part(EngineMode mode, const TopologyTemplate& t, const Topology& skeleton, int ranks,
                                  std::span<const TrafficGroups> traffic, MoveCache* cache, bool stand_ins) {
  const RankPlaces places = rank_places(t);
  FoldChoice found = choose_fold_on_skeleton(mode, skeleton, places, ranks, traffic, cache);
  if (found.use.engine != "classes") return std::nullopt;
  const RankFold& fold = found.fold;
  std::function<int(int)> stand_in;
  if (stand_ins) stand_in = [&](int node) { return stand_in_node(t, fold, node); };
  std::vector<int> nodes = whole_domains(t, part_nodes(fold, places, traffic, stand_in));
  if (static_cast<int>(nodes.size()) == t.nodes) return std::nullopt;
  return PartPlan{std::move(found), std::move(nodes)};
}

Topology build_part(const TopologyTemplate& t, std::vector<int> nodes, const std::function<void(Topology&)>& adjust) {
  Topology part = build_topology(t, NodeSubset{std::move(nodes), {}});
  if (adjust) adjust(part);
  return part;
}

std::optional<FoldedPart> fold_template(EngineMode mode, const TopologyTemplate& t, const Topology& skeleton,
                                        int ranks, std::span<const TrafficGroups> traffic,
                                        const std::function<void(Topology&)>& adjust, MoveCache* cache,
                                        bool stand_ins) {
  std::optional<PartPlan> plan = plan_part(mode, t, skeleton, ranks, traffic, cache, stand_ins);
  if (!plan) return std::nullopt;
  FoldedPart p{build_part(t, std::move(plan->nodes), adjust), {}, {}};
  p.choice = fold_on_part(std::move(plan->on_skeleton), skeleton, p.part);
  if (stand_ins) p.part_rank = part_ranks(p.part, t, p.choice.fold, ranks);
  return p;
}

}  // namespace basp
