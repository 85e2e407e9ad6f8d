// Outages parsed against the cluster they apply to and applied to it: a cable down is off the
// graph (so every route avoids it), an excluded node's GPUs are no rank's.
#include "outages.hpp"

#include "input_error.hpp"
#include "seeded_choice.hpp"

#include <algorithm>
#include <cstdlib>
#include <set>
#include <unordered_map>

namespace basp {
namespace {

constexpr std::uint64_t salt_nodes = 11, salt_cables = 12;

std::vector<std::string> split(const std::string& text, char sep) {
  std::vector<std::string> out;
  std::size_t from = 0;
  for (;;) {
    const std::size_t at = text.find(sep, from);
    out.push_back(text.substr(from, at - from));
    if (at == std::string::npos) return out;
    from = at + 1;
  }
}

// A whole number >= 0 written in full, else -1.
long whole_number(const std::string& text) {
  const auto digit = [](unsigned char c) { return c >= '0' && c <= '9'; };
  if (text.empty() || text.size() > 12 || !std::all_of(text.begin(), text.end(), digit)) return -1;
  return std::strtol(text.c_str(), nullptr, 10);
}

// COUNT:SEED (COUNT or COUNT%) for a draw among `total`: the count, or -1 where `spec` is no draw.
// `what` names the things drawn in messages.
int drawn_count(const std::string& flag, const std::string& spec, int total, const std::string& what,
                std::uint64_t& seed) {
  const std::size_t colon = spec.find(':');
  if (colon == std::string::npos) return -1;
  const std::string count = spec.substr(0, colon), seed_text = spec.substr(colon + 1);
  const std::string form = "COUNT:SEED (e.g. 41:1, or 2%:1 for a share of the " + what + ")";
  const long s = whole_number(seed_text);
  if (s < 0) throw InputError("", 0, flag, "'" + spec + "': the seed after ':' must be a whole number; " + form);
  seed = static_cast<std::uint64_t>(s);
  int n = 0;
  if (!count.empty() && count.back() == '%') {
    char* end = nullptr;
    const double percent = std::strtod(count.c_str(), &end);
    if (end != count.c_str() + count.size() - 1 || !(percent > 0.0) || !(percent < 100.0))
      throw InputError("", 0, flag, "'" + spec + "': a share is written as a percentage above 0 and below 100; " + form);
    n = fraction_count(percent / 100.0, total);
  } else {
    const long c = whole_number(count);
    if (c < 1) throw InputError("", 0, flag, "'" + spec + "': COUNT must be a whole number of at least 1; " + form);
    n = c > total ? total + 1 : static_cast<int>(c);
  }
  if (n > total)
    throw InputError("", 0, flag, "'" + spec + "': there are only " + std::to_string(total) + " " + what);
  return n;
}

}  // namespace

namespace {

// Node numbers and ranges ("3,17,40-47"), each within 0..nodes-1.
std::set<int> listed_nodes(const std::string& flag, const std::string& spec, int nodes) {
  std::set<int> out;
  for (const std::string& item : split(spec, ',')) {
    const std::size_t dash = item.find('-');
    const long first = whole_number(item.substr(0, dash));
    const long last = dash == std::string::npos ? first : whole_number(item.substr(dash + 1));
    if (first < 0 || last < first)
      throw InputError("", 0, flag, "'" + item + "' is not a node number or a range of them (e.g. 3,17,40-47), "
                                    "nor COUNT:SEED (e.g. 41:1)");
    if (last >= nodes)
      throw InputError("", 0, flag, "node " + std::to_string(last) + " does not exist: the cluster's nodes are 0 to " +
                                        std::to_string(nodes - 1));
    for (long n = first; n <= last; ++n) out.insert(static_cast<int>(n));
  }
  return out;
}

}  // namespace

std::vector<int> excluded_nodes(const std::string& spec, int nodes) {
  const std::string flag = "--exclude-nodes";
  if (spec.empty()) return {};
  std::uint64_t seed = 0;
  const int count = drawn_count(flag, spec, nodes, "nodes", seed);
  const std::vector<int> out = count >= 0 ? seeded_choice(nodes, count, seed, salt_nodes) : [&] {
    const std::set<int> listed = listed_nodes(flag, spec, nodes);
    return std::vector<int>(listed.begin(), listed.end());
  }();
  if (static_cast<int>(out.size()) >= nodes)
    throw InputError("", 0, flag, "'" + spec + "' excludes every one of the " + std::to_string(nodes) + " nodes");
  return out;
}

std::string cable_name(const Topology& topo, int link) {
  const Link& l = topo.link(link);
  return topo.vertex(l.from).name + "--" + topo.vertex(l.to).name;
}

std::vector<std::string> down_cable_names(const Topology& topo) {
  std::vector<std::string> out;
  for (int l : topo.down_links)
    if (topo.link(l).from < topo.link(l).to) out.push_back(cable_name(topo, l));
  return out;
}

std::string describe_outages(const Topology& topo) {
  constexpr std::size_t shown = 8;
  auto listed = [&](const auto& items, auto text) {
    std::string out;
    for (std::size_t i = 0; i < std::min(items.size(), shown); ++i) out += (i ? ", " : "") + text(items[i]);
    if (items.size() > shown) out += " and " + std::to_string(items.size() - shown) + " more";
    return out;
  };
  std::string out;
  const auto& nodes = topo.excluded_nodes;
  if (!nodes.empty())
    out = std::string(nodes.size() == 1 ? "node " : "nodes ") +
          listed(nodes, [](int n) { return std::to_string(n); }) + " excluded";
  const std::vector<std::string> cables = down_cable_names(topo);
  if (!cables.empty())
    out += (out.empty() ? "" : "; ") + std::to_string(cables.size()) + (cables.size() == 1 ? " cable" : " cables") +
           " down: " + listed(cables, [](const std::string& c) { return c; });
  return out;
}

namespace {

// The cables `spec` names or draws, as (a, b) vertex pairs.
std::vector<std::pair<VertexId, VertexId>> down_cables(const Topology& topo, const std::string& spec) {
  const std::string flag = "--down-links";
  const Graph& g = topo.graph;
  std::vector<std::pair<VertexId, VertexId>> out;
  // Switch-to-switch cables, each once (by its direction from the lower vertex id), in link order.
  std::vector<std::pair<VertexId, VertexId>> trunks;
  for (const Link& l : topo.links)
    if (l.from < l.to && g[l.from].kind == VertexKind::fabric_switch && g[l.to].kind == VertexKind::fabric_switch)
      trunks.push_back({l.from, l.to});
  std::uint64_t seed = 0;
  if (const int count = drawn_count(flag, spec, static_cast<int>(trunks.size()), "switch-to-switch cables", seed);
      count >= 0) {
    for (int k : seeded_choice(static_cast<int>(trunks.size()), count, seed, salt_cables)) out.push_back(trunks[k]);
    return out;
  }
  std::unordered_map<std::string, VertexId> named;
  for (VertexId v = 0; v < boost::num_vertices(g); ++v) named.emplace(g[v].name, v);
  const std::string example = trunks.empty() ? std::string("a--b")
                                             : g[trunks.front().first].name + "--" + g[trunks.front().second].name;
  for (const std::string& item : split(spec, ',')) {
    const std::size_t dashes = item.find("--");
    if (dashes == std::string::npos)
      throw InputError("", 0, flag, "'" + item + "' is not a cable: name its two ends as `basp topo --explicit` "
                                    "prints them (e.g. " + example + "), or draw COUNT:SEED of them (e.g. 4:1)");
    VertexId ends[2];
    const std::string names[2] = {item.substr(0, dashes), item.substr(dashes + 2)};
    for (int i = 0; i < 2; ++i) {
      const auto it = named.find(names[i]);
      if (it == named.end())
        throw InputError("", 0, flag, "'" + item + "': " + topo.name + " has no device named '" + names[i] +
                                          "' (names as `basp topo --explicit` prints them, e.g. " + example + ")");
      ends[i] = it->second;
    }
    bool linked = false;
    for (auto [e, end] = boost::out_edges(ends[0], g); e != end; ++e)
      if (boost::target(*e, g) == ends[1]) {
        linked = true;
        const LinkClass cls = topo.link(g[*e].id).cls;
        if (cls != LinkClass::nic && cls != LinkClass::fabric)
          throw InputError("", 0, flag, "'" + item + "' is a " + std::string(to_string(cls)) +
                                            " link inside a node; --down-links takes fabric cables (NIC to switch, "
                                            "switch to switch)");
      }
    if (!linked) throw InputError("", 0, flag, "'" + item + "': no link joins " + names[0] + " and " + names[1]);
    out.push_back({ends[0], ends[1]});
  }
  return out;
}

// The fabric component of each NIC (-1: not a NIC): routes over the fabric pass through switches only.
std::vector<int> fabric_components(const Graph& g) {
  std::vector<int> component(boost::num_vertices(g), -1);
  int count = 0;
  for (VertexId v = 0; v < boost::num_vertices(g); ++v) {
    if (g[v].kind != VertexKind::nic || component[v] >= 0) continue;
    const std::vector<char> seen = reachable(g, v, [&](VertexId u) { return g[u].kind == VertexKind::fabric_switch; });
    for (VertexId u = 0; u < seen.size(); ++u)
      if (seen[u] && g[u].kind == VertexKind::nic) component[u] = count;
    ++count;
  }
  return component;
}

// Takes the cables `spec` names or draws off the graph, both directions; their link ids, ascending.
std::vector<int> take_down(Topology& topo, const std::string& spec) {
  Graph& g = topo.graph;
  std::set<int> down;
  for (auto [a, b] : down_cables(topo, spec))
    for (auto [from, to] : {std::pair{a, b}, std::pair{b, a}}) {
      for (auto [e, end] = boost::out_edges(from, g); e != end; ++e)
        if (boost::target(*e, g) == to) down.insert(g[*e].id);
      boost::remove_edge(from, to, g);
    }
  return {down.begin(), down.end()};
}

// Two NICs of the job that the fabric joined `before` must stay joined, a route between them
// having existed: within each former component, the part now holding most of the job's NICs
// stays, and a NIC outside it is cut off (one that lost its last fabric link is said so).
void refuse_cut_off_nodes(const Topology& topo, const std::vector<int>& before) {
  const Graph& g = topo.graph;
  const std::vector<int> after = fabric_components(g);
  std::vector<int> held(boost::num_vertices(g), 0), main(boost::num_vertices(g), -1);
  for (VertexId v : topo.gpus)
    if (const int nic = g[v].nic; nic >= 0 && before[nic] >= 0) ++held[after[nic]];
  for (VertexId v : topo.gpus)
    if (const int nic = g[v].nic; nic >= 0 && before[nic] >= 0) {
      int& m = main[before[nic]];
      if (m < 0 || held[after[nic]] > held[m]) m = after[nic];
    }
  std::set<int> cut_nodes;
  int first_cut = -1;
  for (VertexId v : topo.gpus) {
    const int nic = g[v].nic;
    if (nic < 0 || before[nic] < 0 || after[nic] == main[before[nic]]) continue;
    cut_nodes.insert(g[v].node);
    if (first_cut < 0) first_cut = nic;
  }
  if (first_cut < 0) return;
  bool out = false;
  for (auto [e, end] = boost::out_edges(VertexId(first_cut), g); e != end && !out; ++e)
    out = g[boost::target(*e, g)].kind == VertexKind::fabric_switch;
  std::string list;
  for (int n : cut_nodes) list += (list.empty() ? "" : ",") + std::to_string(n);
  throw InputError("", 0, "--down-links",
                   (out ? "the cables taken down cut " + g[first_cut].name + " off from the rest of the fabric"
                        : g[first_cut].name + " has no fabric link left") +
                       (cut_nodes.size() == 1 ? ", so node " + list + " cannot" : ", so nodes " + list + " cannot") +
                       " reach the job's other nodes as before; take " + (cut_nodes.size() == 1 ? "it" : "them") +
                       " out with --exclude-nodes " + list + " or keep a cable up");
}

}  // namespace

void apply_outages(Topology& topo, const OutageSpec& spec) {
  if (spec.empty()) return;
  const Graph& g = topo.graph;
  // Nodes as the GPUs name them (explicit topologies may number them with gaps).
  std::set<int> node_ids;
  for (VertexId v : topo.gpus) node_ids.insert(g[v].node);
  const int nodes = node_ids.empty() ? 0 : *node_ids.rbegin() + 1;
  topo.excluded_nodes = excluded_nodes(spec.exclude_nodes, nodes);
  for (int n : topo.excluded_nodes)
    if (!node_ids.count(n))
      throw InputError("", 0, "--exclude-nodes", "node " + std::to_string(n) + " does not exist in " + topo.name);
  std::erase_if(topo.gpus, [&](VertexId v) {
    return std::binary_search(topo.excluded_nodes.begin(), topo.excluded_nodes.end(), g[v].node);
  });
  if (spec.down_links.empty()) return;  // excluding nodes takes no route away
  const std::vector<int> before = fabric_components(g);
  topo.down_links = take_down(topo, spec.down_links);
  refuse_cut_off_nodes(topo, before);
}

}  // namespace basp
