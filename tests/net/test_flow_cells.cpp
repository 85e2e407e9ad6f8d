// Equitable cells against the full engine on clusters no translation maps onto themselves (uneven
// leaves, pods and racks, part of the GPUs, hashed ECMP): every figure and the bytes of every link
// to 1e-9; the cells themselves checked to be equitable by a count that does not use the refinement.
#include "collective_run.hpp"
#include "flow_cells.hpp"
#include "helpers.hpp"
#include "input_error.hpp"
#include "routing.hpp"
#include "splitmix64.hpp"
#include "topology_file.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <map>

using namespace basp;

namespace {

bool close(double a, double b) { return std::abs(a - b) <= 1e-9 * std::max({std::abs(a), std::abs(b), 1e-300}); }

// The cells of `spec`'s call, refined directly.
FlowCells cells_of(const Topology& t, const CollectiveSpec& spec) {
  const int ranks = spec.ranks > 0 ? spec.ranks : static_cast<int>(t.gpus.size());
  Router router(t, true);
  const RankFold identity = RankFold::identity(ranks);
  GroupSet set(make_groups(ranks, spec.groups, spec.placement), identity);
  const CallTraffic traffic = call_traffic(t, router, spec.op, set);
  return equitable_cells(t, ranks, traffic);
}

// Runs `spec` on the full engine and with classes demanded; the latter must run on a translation or
// cells unless nothing merges (then the refusal must be right), and every figure must agree.
// Returns whether it ran on cells.
bool check_cells(const Topology& t, CollectiveSpec spec, std::string* why = nullptr) {
  INFO(t.name << " (" << t.gpus.size() << " GPUs) op " << collective_info(spec.op).name << ", ranks " << spec.ranks
              << ", " << spec.groups << " groups, " << (spec.placement == Placement::strided ? "strided" : "contiguous"));
  spec.engine = EngineMode::full;
  const CollectiveResult full = simulate_collective(t, spec);
  spec.engine = EngineMode::classes;
  CollectiveResult cells;
  try {
    cells = simulate_collective(t, spec);
  } catch (const InputError&) {
    const FlowCells c = cells_of(t, spec);
    CHECK(c.flows.count() == static_cast<int>(full.stats.flows));  // refused only where nothing merges
    CHECK(c.ranks.count() == full.ranks);
    return false;
  }
  INFO(cells.engine.why);
  if (why) *why = cells.engine.why;
  REQUIRE(cells.engine.engine == "classes");
  CHECK(close(cells.time_s, full.time_s));
  CHECK(close(cells.busbw_Bps, full.busbw_Bps));
  CHECK(cells.stats.flows == full.stats.flows);
  CHECK(cells.stats.events == full.stats.events);
  CHECK(cells.stats.batches == full.stats.batches);
  CHECK(cells.stats.solves == full.stats.solves);
  CHECK(cells.stats.refilled == full.stats.refilled);
  for (LinkClass c : link_classes) CHECK(close(cells.class_bytes[c], full.class_bytes[c]));
  REQUIRE(cells.link_bytes.size() == full.link_bytes.size());
  std::size_t differ = 0;
  for (std::size_t l = 0; l < full.link_bytes.size(); ++l) differ += !close(cells.link_bytes[l], full.link_bytes[l]);
  CHECK(differ == 0);
  return cells.engine.why.find("equitable cells") != std::string::npos;
}

// Every op, group count and placement; more than `share` of the cases must run on cells (the
// others merge nothing, which check_cells verifies).
void check_matrix(const Topology& t, int ranks = 0, double share = 0.5) {
  const int n = ranks > 0 ? ranks : static_cast<int>(t.gpus.size());
  int cases = 0, on_cells = 0;
  for (CollectiveOp op : {CollectiveOp::alltoall, CollectiveOp::allgather, CollectiveOp::reducescatter,
                          CollectiveOp::allreduce, CollectiveOp::sendrecv})
    for (int groups : {1, 2, 3, 4})
      for (Placement placement : {Placement::contiguous, Placement::strided}) {
        if (n % groups != 0 || (groups == 1 && placement == Placement::strided)) continue;
        ++cases;
        on_cells += check_cells(t, {.op = op, .size_bytes = 16.0 * 1048576, .ranks = ranks, .groups = groups,
                                    .placement = placement});
      }
  INFO(t.name << ", " << n << " ranks: " << on_cells << " of " << cases << " cases on cells");
  CHECK(on_cells > share * cases);
}

// Equitable, counted plainly: the members of each cell see the same multisets of the other cells.
void check_equitable(const Topology& t, int ranks, const CallTraffic& traffic, const FlowCells& c) {
  using Multiset = std::map<std::pair<int, float>, int>;
  std::vector<Multiset> on_link(t.link_count()), of_flow(traffic.flows.size());
  std::vector<std::map<int, int>> sent(ranks), received(ranks);
  for (std::size_t f = 0; f < traffic.flows.size(); ++f) {
    const CallFlow& flow = traffic.flows[f];
    for (std::uint32_t h = flow.hop_begin; h < flow.hop_begin + flow.hop_count; ++h) {
      ++on_link[traffic.hops[h].link][{c.flows.of[f], traffic.hops[h].share}];
      ++of_flow[f][{c.links.of[traffic.hops[h].link], traffic.hops[h].share}];
    }
    ++sent[flow.from][c.flows.of[f]];
    ++received[flow.to][c.flows.of[f]];
  }
  for (int l = 0; l < t.link_count(); ++l) {
    const int rep = c.links.representative[c.links.of[l]];
    CHECK(on_link[l] == on_link[rep]);
    CHECK(t.link(l).capacity_Bps == t.link(rep).capacity_Bps);
  }
  for (std::size_t f = 0; f < traffic.flows.size(); ++f) {
    const auto& a = traffic.flows[f];
    const auto& b = traffic.flows[c.flows.representative[c.flows.of[f]]];
    CHECK(of_flow[f] == of_flow[&b - traffic.flows.data()]);
    CHECK(c.ranks.of[a.from] == c.ranks.of[b.from]);
    CHECK(c.ranks.of[a.to] == c.ranks.of[b.to]);
    CHECK((a.factor == b.factor && a.divisor == b.divisor && a.wait_s == b.wait_s && a.count == b.count));
  }
  for (int r = 0; r < ranks; ++r) {
    const int rep = c.ranks.representative[c.ranks.of[r]];
    CHECK(sent[r] == sent[rep]);
    CHECK(received[r] == received[rep]);
  }
}

// The coarsest equitable cells as the definition gives them, slowly: every round, every link, then
// every flow, then every rank takes a new cell by (its cell, the sorted (cell, share) it touches),
// cells numbered by their first element, until a round splits nothing. Returns the rounds too.
std::pair<FlowCells, int> every_element_every_round(const Topology& t, int ranks, const CallTraffic& traffic,
                                                    std::span<const std::uint64_t> rank_colour,
                                                    const std::vector<char>& relaxed,
                                                    std::span<const std::uint64_t> flow_colour) {
  using Signature = std::vector<std::pair<std::uint64_t, double>>;
  auto renumber = [](const std::vector<Signature>& sig) {
    Cells c;
    std::map<Signature, int> number;
    for (const Signature& s : sig) {
      const auto [it, fresh] = number.try_emplace(s, c.count());
      if (fresh) {
        c.representative.push_back(static_cast<int>(c.of.size()));
        c.members.push_back(0);
      }
      c.of.push_back(it->second);
      ++c.members[it->second];
    }
    return c;
  };
  const std::size_t links = t.link_count(), flows = traffic.flows.size();
  auto kept = [&](std::size_t l) { return relaxed.empty() || !relaxed[l]; };
  FlowCells c;
  std::vector<Signature> ls(links), fs(flows), rs(ranks);
  for (std::size_t l = 0; l < links; ++l)
    ls[l] = {{std::uint64_t(t.link(int(l)).cls), t.link(int(l)).capacity_Bps}, {!kept(l), 0.0}};
  for (std::size_t f = 0; f < flows; ++f) {
    const CallFlow& x = traffic.flows[f];
    fs[f] = {{x.count, x.factor}, {flow_colour.empty() ? 0 : flow_colour[f], x.divisor}, {0, x.wait_s}};
  }
  for (int r = 0; r < ranks; ++r) rs[r] = {{rank_colour.empty() ? 0 : rank_colour[r], 0.0}};
  c.links = renumber(ls);
  c.flows = renumber(fs);
  c.ranks = renumber(rs);
  for (int rounds = 1;; ++rounds) {
    const int before = c.links.count() + c.flows.count() + c.ranks.count();
    for (std::size_t l = 0; l < links; ++l) ls[l] = {{std::uint64_t(c.links.of[l]), 0.0}};
    for (std::size_t f = 0; f < flows; ++f) {
      const CallFlow& x = traffic.flows[f];
      for (std::uint32_t h = x.hop_begin; h < x.hop_begin + x.hop_count; ++h)
        if (kept(traffic.hops[h].link)) ls[traffic.hops[h].link].push_back({std::uint64_t(c.flows.of[f]), traffic.hops[h].share});
    }
    for (Signature& s : ls) std::sort(s.begin() + 1, s.end());
    c.links = renumber(ls);
    for (std::size_t f = 0; f < flows; ++f) {
      const CallFlow& x = traffic.flows[f];
      fs[f] = {{std::uint64_t(c.flows.of[f]), 0.0}, {std::uint64_t(c.ranks.of[x.from]), 0.0}, {std::uint64_t(c.ranks.of[x.to]), 0.0}};
      for (std::uint32_t h = x.hop_begin; h < x.hop_begin + x.hop_count; ++h)
        if (kept(traffic.hops[h].link)) fs[f].push_back({std::uint64_t(c.links.of[traffic.hops[h].link]), traffic.hops[h].share});
      std::sort(fs[f].begin() + 3, fs[f].end());
    }
    c.flows = renumber(fs);
    std::vector<Signature> sent(ranks), received(ranks);
    for (std::size_t f = 0; f < flows; ++f) {
      sent[traffic.flows[f].from].push_back({std::uint64_t(c.flows.of[f]), 0.0});
      received[traffic.flows[f].to].push_back({std::uint64_t(c.flows.of[f]), 0.0});
    }
    for (int r = 0; r < ranks; ++r) {
      std::sort(sent[r].begin(), sent[r].end());
      std::sort(received[r].begin(), received[r].end());
      rs[r] = {{std::uint64_t(c.ranks.of[r]), double(sent[r].size())}};
      rs[r].insert(rs[r].end(), sent[r].begin(), sent[r].end());
      rs[r].insert(rs[r].end(), received[r].begin(), received[r].end());
    }
    c.ranks = renumber(rs);
    if (c.links.count() + c.flows.count() + c.ranks.count() == before) return {c, rounds};
  }
}

}  // namespace

TEST_CASE("cells equal the full engine: an uneven last leaf on rail DGX H100, PXN and spine cross-rail, 1:1 and 2:1") {
  for (CrossRail rail : {CrossRail::pxn, CrossRail::spine})
    for (double over : {1.0, 2.0})
      check_matrix(load_topology(
          "dgx-h100", {.nodes = 6, .oversubscription = over, .nodes_per_leaf = 4, .spines = 2, .cross_rail = rail}));
}

TEST_CASE("cells equal the full engine: PCIe leaf-spine, SuperPOD, NVL72 racks and three tiers, cut unevenly") {
  check_matrix(load_topology("pcie-8gpu", {.nodes = 3, .nodes_per_leaf = 2}));
  check_matrix(load_topology("dgx-a100-superpod", {.nodes = 7, .nodes_per_leaf = 4, .spines = 2}));
  check_matrix(load_topology("gb200-nvl72", {.nodes = 36, .nodes_per_leaf = 32, .spines = 2}));
  check_matrix(load_topology("dgx-h100-3tier", {.nodes = 9, .nodes_per_leaf = 2, .spines = 2}));
}

TEST_CASE("cells equal the full engine: part of the GPUs, and hashed ECMP") {
  const Topology t = load_topology("dgx-h100", {.nodes = 8, .nodes_per_leaf = 2, .spines = 2});
  check_matrix(t, 24);
  check_matrix(t, 60, 0.4);  // half a node left out: rings and successors then see every rank apart
  check_matrix(load_topology("dgx-h100", {.nodes = 4, .nodes_per_leaf = 2, .spines = 2, .ecmp = EcmpMode::hash}));
}

TEST_CASE("cells equal the full engine: seeded random clusters, jobs and calls") {
  std::uint64_t state = 20261207;
  const char* templates[] = {"dgx-h100", "dgx-h100-3tier", "pcie-8gpu", "dgx-a100-superpod"};
  for (int trial = 0; trial < 24; ++trial) {
    const char* name = templates[splitmix64(state) % 4];
    const int per_leaf = 1 + static_cast<int>(splitmix64(state) % 4);
    const int nodes = 2 + static_cast<int>(splitmix64(state) % 9);
    const Topology t = load_topology(name, {.nodes = nodes, .nodes_per_leaf = per_leaf, .spines = 2});
    const int gpus = static_cast<int>(t.gpus.size());
    const int ranks = splitmix64(state) % 2 ? gpus : 1 + static_cast<int>(splitmix64(state) % gpus);
    std::vector<int> divisors;
    for (int g = 1; g <= std::min(ranks, 8); ++g)
      if (ranks % g == 0) divisors.push_back(g);
    const int groups = divisors[splitmix64(state) % divisors.size()];
    const auto op = static_cast<CollectiveOp>(splitmix64(state) % collective_op_count);
    const Placement placement = groups > 1 && splitmix64(state) % 2 ? Placement::strided : Placement::contiguous;
    INFO("trial " << trial << ": " << name << ", " << nodes << " nodes, " << per_leaf << " per leaf");
    const CollectiveSpec spec{.op = op, .size_bytes = 4.0 * 1048576, .ranks = ranks == gpus ? 0 : ranks,
                              .groups = groups, .placement = placement};
    CollectiveSpec full = spec;
    full.engine = EngineMode::full;
    CollectiveSpec any = spec;
    any.engine = EngineMode::classes;
    const CollectiveResult a = simulate_collective(t, full);
    const CollectiveResult b = simulate_collective(t, any);  // a translation or cells, never refused here
    INFO(b.engine.why);
    CHECK(close(a.time_s, b.time_s));
    CHECK(a.stats.events == b.stats.events);
    CHECK(a.stats.refilled == b.stats.refilled);
    REQUIRE(a.link_bytes.size() == b.link_bytes.size());
    for (std::size_t l = 0; l < a.link_bytes.size(); ++l) CHECK(close(a.link_bytes[l], b.link_bytes[l]));
  }
}

TEST_CASE("cells: equitable by a plain count, coarser than the translation where there is one") {
  for (const Topology& t : {load_topology("dgx-h100", {.nodes = 6, .nodes_per_leaf = 4, .spines = 2}),
                            load_topology("dgx-h100", {.nodes = 8, .nodes_per_leaf = 2, .spines = 2})}) {
    const int ranks = static_cast<int>(t.gpus.size());
    for (CollectiveOp op : {CollectiveOp::alltoall, CollectiveOp::allreduce, CollectiveOp::sendrecv}) {
      Router router(t, true);
      const RankFold identity = RankFold::identity(ranks);
      GroupSet set(make_groups(ranks, 2, Placement::strided), identity);
      const CallTraffic traffic = call_traffic(t, router, op, set);
      const FlowCells c = equitable_cells(t, ranks, traffic);
      INFO(t.gpus.size() << " GPUs, op " << collective_info(op).name);
      check_equitable(t, ranks, traffic, c);
      CHECK(c.flows.count() < static_cast<int>(traffic.flows.size()));
      if (t.gpus.size() == 64) {  // a translation exists: its classes are cells, so cells are no finer
        const CollectiveResult folded = simulate_collective(
            t, {.op = op, .size_bytes = 1048576, .groups = 2, .placement = Placement::strided});
        REQUIRE(folded.engine.engine == "classes");
        CHECK(c.ranks.count() <= folded.engine.rank_classes);
      }
    }
  }
}

TEST_CASE("cells: fabric trunks are left out of the cells while they stay below capacity, else kept in") {
  // An all-reduce's rings cross the uneven leaf boundary: with the trunks out, every rank is alike.
  Topology t = load_topology("dgx-h100", {.nodes = 6, .nodes_per_leaf = 4, .spines = 2});
  std::string why;
  REQUIRE(check_cells(t, {.op = CollectiveOp::allreduce, .size_bytes = 16.0 * 1048576}, &why));
  CHECK_THAT(why, Catch::Contains("1 rank,") && Catch::Contains("trunks left out of the cells, below capacity"));
  // Trunks at 1/64 of their speed bind under a global all-to-all: the check sees it, and the run is
  // repeated with them in the cells, still equal to the full engine.
  for (Link& l : t.links)
    if (t.vertex(l.from).kind == VertexKind::fabric_switch && t.vertex(l.to).kind == VertexKind::fabric_switch)
      l.capacity_Bps /= 64;
  REQUIRE(check_cells(t, {.op = CollectiveOp::alltoall, .size_bytes = 16.0 * 1048576}, &why));
  CHECK_THAT(why, Catch::Contains("with the fabric trunks in the cells"));
  check_matrix(t);
}

TEST_CASE("cells: auto keeps the full engine for one call, classes demanded runs on cells and says so") {
  const Topology uneven = load_topology("dgx-h100", {.nodes = 6, .nodes_per_leaf = 4, .spines = 2});
  CollectiveSpec a2a{.op = CollectiveOp::alltoall, .size_bytes = 1048576};
  const CollectiveResult automatic = simulate_collective(uneven, a2a);
  CHECK(automatic.engine.engine == "full");
  CHECK_THAT(automatic.engine.why, Catch::Contains("no shift of whole nodes"));
  a2a.engine = EngineMode::classes;
  std::string why;
  CHECK(check_cells(uneven, a2a, &why));
  CHECK_THAT(why, Catch::Contains("no shift of whole nodes") && Catch::Contains("equitable cells instead: 2 rank,"));
}

TEST_CASE("cells equal the full engine with nodes excluded and cables down: every op, per-link bytes") {
  // Link bytes compared link by link, down links (carrying nothing) included.
  for (const auto& [excluded, down] : {std::pair<std::string, std::string>{"1,4", ""}, {"", "rail3.leaf0--spine1"},
                                        {"2:9", "3:4"}}) {
    INFO("excluded '" << excluded << "', down '" << down << "'");
    TopologyOverrides o{.nodes = 6, .nodes_per_leaf = 4, .spines = 2};
    o.outages = {excluded, down};
    const Topology t = load_topology("dgx-h100", o);
    check_matrix(t, 0, 0.3);
  }
  TopologyOverrides tiers{.nodes = 9, .nodes_per_leaf = 2, .spines = 2};
  tiers.outages = {"0,5", "2:3"};
  check_matrix(load_topology("dgx-h100-3tier", tiers), 0, 0.3);
}

// System: the traffic of seeded random clusters, calls and jobs (uneven leaves and pods, excluded
// nodes, cables down, hashed ECMP, part of the GPUs), with and without the trunks left out, some
// with the calls of two group sets coloured apart and ranks coloured by a draw.
// Expectation: the refinement that looks again only at elements touching one that changed gives
// the very cells (numbering included) and round count of the definition applied to every element.
TEST_CASE("cells: refining only what touches a change gives the cells of refining everything every round") {
  std::uint64_t state = 20261208;
  const char* templates[] = {"dgx-h100", "dgx-h100-3tier", "pcie-8gpu", "dgx-a100-superpod", "gb200-nvl72"};
  int rounds_seen = 0;
  auto compare = [&](const Topology& t, int ranks, const CallTraffic& traffic, std::span<const std::uint64_t> rank_colour,
                     const std::vector<char>& relaxed, std::span<const std::uint64_t> flow_colour) {
    const FlowCells fast = equitable_cells(t, ranks, traffic, rank_colour, relaxed, flow_colour);
    const auto [slow, rounds] = every_element_every_round(t, ranks, traffic, rank_colour, relaxed, flow_colour);
    CHECK(fast.rounds == rounds);
    for (auto [a, b] : {std::pair{&fast.links, &slow.links}, {&fast.flows, &slow.flows}, {&fast.ranks, &slow.ranks}}) {
      CHECK(a->of == b->of);
      CHECK(a->representative == b->representative);
      CHECK(a->members == b->members);
    }
    if (relaxed.empty()) check_equitable(t, ranks, traffic, fast);
    rounds_seen = std::max(rounds_seen, rounds);
  };
  // A ring through every node of uneven leaves, trunks in the cells: refinement carries the leaf
  // boundary around the ring, round after round.
  for (const Topology& t : {load_topology("dgx-h100", {.nodes = 13, .nodes_per_leaf = 4, .spines = 2}),
                            load_topology("dgx-h100-3tier", {.nodes = 11})}) {
    const int ranks = static_cast<int>(t.gpus.size());
    Router router(t, true);
    const RankFold identity = RankFold::identity(ranks);  // the set keeps a reference to it
    GroupSet set(make_groups(ranks, 1, Placement::contiguous), identity);
    const CallTraffic ring = call_traffic(t, router, CollectiveOp::allreduce, set);
    compare(t, ranks, ring, {}, {}, {});
    compare(t, ranks, ring, {}, fabric_trunks(t), {});
  }
  for (int trial = 0; trial < 40; ++trial) {
    const char* name = templates[splitmix64(state) % 5];
    const bool nvl72 = std::string(name) == "gb200-nvl72";
    TopologyOverrides o{.nodes = nvl72 ? 18 + static_cast<int>(splitmix64(state) % 3) * 9
                                       : 3 + static_cast<int>(splitmix64(state) % 22),
                        .nodes_per_leaf = 1 + static_cast<int>(splitmix64(state) % 5),
                        .spines = 2};
    if (splitmix64(state) % 3 == 0) o.ecmp = EcmpMode::hash;
    if (!nvl72 && splitmix64(state) % 3 == 0) o.outages = {"1:" + std::to_string(trial), ""};
    const Topology t = load_topology(name, o);
    const int gpus = static_cast<int>(t.gpus.size());
    const int ranks = splitmix64(state) % 2 ? gpus : gpus - static_cast<int>(splitmix64(state) % (gpus / 2));
    Router router(t, true);
    const RankFold identity = RankFold::identity(ranks);
    CallTraffic traffic;
    std::vector<std::uint64_t> flow_colour;
    const int sets = 1 + static_cast<int>(splitmix64(state) % 2);
    for (int s = 0; s < sets; ++s) {
      std::vector<int> divisors;
      for (int g = 1; g <= std::min(ranks, 8); ++g)
        if (ranks % g == 0) divisors.push_back(g);
      const int groups = divisors[splitmix64(state) % divisors.size()];
      const auto op = static_cast<CollectiveOp>(splitmix64(state) % collective_op_count);
      GroupSet set(make_groups(ranks, groups, splitmix64(state) % 2 ? Placement::strided : Placement::contiguous),
                   identity);
      append_call_traffic(t, router, op, set, traffic);
      flow_colour.resize(traffic.flows.size(), s);
    }
    std::vector<std::uint64_t> rank_colour;
    if (splitmix64(state) % 2)
      for (int r = 0; r < ranks; ++r) rank_colour.push_back(splitmix64(state) % 7 == 0);
    const std::vector<char> relaxed = splitmix64(state) % 2 ? fabric_trunks(t) : std::vector<char>{};
    INFO("trial " << trial << ": " << name << ", " << o.nodes.value_or(0) << " nodes, " << ranks << " ranks, "
                  << sets << " sets, " << traffic.flows.size() << " flows");
    compare(t, ranks, traffic, rank_colour, relaxed, flow_colour);
  }
  CHECK(rounds_seen >= 4);  // some trials refine over several rounds, where looking again matters
}
