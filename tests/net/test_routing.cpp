// Routes as NCCL takes them: NVLink inside a node, the GPU's own NIC out of it, PXN across rails
// (or the spines when told), and equal-cost spine paths split evenly or hashed per flow.
#include "helpers.hpp"
#include "input_error.hpp"
#include "routing.hpp"
#include "splitmix64.hpp"
#include "topology_file.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <fstream>
#include <iterator>
#include <map>
#include <set>
#include <sstream>

using namespace basp;

namespace {
// A route copied out of its view (valid only until the router's next call), compared to the bit.
struct Route {
  std::vector<std::pair<int, float>> hops;
  double latency_s;
  bool operator==(const Route&) const = default;
};
Route copy(const RouteView& r) {
  Route out{{}, r.latency_s};
  for (const Hop& h : r.hops) out.hops.push_back({h.link, h.share});
  return out;
}

// A shipped template cut small.
struct FabricCase {
  const char* topology;
  TopologyOverrides overrides;
};

std::vector<std::string> path_names(const Topology& t, const RouteView& r) {
  std::vector<std::string> names;
  for (const Hop& h : r.hops) names.push_back(t.graph[t.link(h.link).to].name);
  return names;
}
}  // namespace

TEST_CASE("intra-node traffic stays on NVLink") {
  const Topology t = load_topology("dgx-h100", {.nodes = 2});
  Router router(t);
  const RouteView r = router.route(0, 5);
  CHECK(path_names(t, r) == std::vector<std::string>{"n0.nvswitch", "n0.gpu5"});
  CHECK(r.latency_s == Approx(2e-6));
}

TEST_CASE("PXN: cross-rail traffic first crosses NVLink to the GPU on the destination's rail") {
  const Topology t = load_topology("dgx-h100", {.nodes = 2});
  Router router(t);
  // rank 0 (n0.gpu0, rail 0) -> rank 13 (n1.gpu5, rail 5)
  CHECK(path_names(t, router.route(0, 13)) ==
        std::vector<std::string>{"n0.nvswitch", "n0.gpu5", "n0.pcie2", "n0.nic5", "rail5.leaf0", "n1.nic5",
                                 "n1.pcie2", "n1.gpu5"});
}

TEST_CASE("cross-rail via the spines when PXN is off") {
  const Topology t = load_topology("dgx-h100", {.nodes = 2, .ecmp = EcmpMode::hash, .cross_rail = CrossRail::spine});
  Router router(t);
  const auto names = path_names(t, router.route(0, 13));
  REQUIRE(names.size() == 8);
  CHECK(names[0] == "n0.pcie0");
  CHECK(names[2] == "rail0.leaf0");
  CHECK(names[3].rfind("spine", 0) == 0);
  CHECK(names[4] == "rail5.leaf0");
}

TEST_CASE("ECMP split: a spine-crossing flow puts 1/S of its bytes on each of S spines") {
  // Each node on its own leaf, so same-rail traffic must cross a spine (16 of them).
  const Topology t = load_topology("dgx-h100", {.nodes = 2, .nodes_per_leaf = 1});
  Router router(t);
  const RouteView r = router.route(0, 8);
  std::map<std::string, double> share_into;
  for (const Hop& h : r.hops) share_into[t.graph[t.link(h.link).to].name] += h.share;
  int spines = 0;
  for (const auto& [name, share] : share_into)
    if (name.rfind("spine", 0) == 0) {
      ++spines;
      CHECK(share == Approx(1.0 / 16));
    }
  CHECK(spines == 16);
  CHECK(share_into["rail0.leaf1"] == Approx(1.0));
}

TEST_CASE("ECMP hash: one path per flow - spread over the spines - stable across runs") {
  const Topology t = load_topology("dgx-h100", {.nodes = 4, .nodes_per_leaf = 1, .ecmp = EcmpMode::hash});
  Router router(t);
  std::set<std::string> used;
  std::vector<std::string> first;
  for (int dst = 8; dst < 32; ++dst)
    for (std::uint64_t salt = 0; salt < 4; ++salt) {
      const auto names = path_names(t, router.route(0, dst, salt));
      for (const Hop& h : router.route(0, dst, salt).hops) CHECK(h.share == 1.0f);
      for (const auto& n : names)
        if (n.rfind("spine", 0) == 0) used.insert(n);
      if (dst == 8 && salt == 0) first = names;
    }
  CHECK(used.size() >= 12);  // 96 flows over 16 spines
  Router again(t);
  CHECK(path_names(t, again.route(0, 8, 0)) == first);
}

TEST_CASE("PCIe-only nodes route GPU peers through switches and sockets") {
  const Topology t = load_topology("pcie-8gpu");
  Router router(t);
  CHECK(path_names(t, router.route(0, 1)) == std::vector<std::string>{"n0.pcie0", "n0.gpu1"});
  CHECK(path_names(t, router.route(0, 7)) ==
        std::vector<std::string>{"n0.pcie0", "n0.cpu0", "n0.cpu1", "n0.pcie3", "n0.gpu7"});
}

TEST_CASE("PXN only over NVLink: PCIe-only nodes send cross-rail traffic through their own NIC") {
  // System: pcie-8gpu nodes with one NIC per GPU on a rail fabric. Expectations: rank 0 (rail 0)
  // to rank 9 (rail 1) leaves through n0.nic0 and crosses a spine; it never hops to n0.gpu1.
  std::string text;
  {
    std::ifstream in(std::string(BASP_DATA_DIR) + "/topologies/pcie-8gpu.yaml");
    text.assign(std::istreambuf_iterator<char>(in), {});
  }
  auto swap_text = [&](const std::string& from, const std::string& to) {
    const auto at = text.find(from);
    REQUIRE(at != std::string::npos);
    text.replace(at, from.size(), to);
  };
  swap_text("count: 4", "count: 8");
  swap_text("kind: leaf-spine", "kind: rail");
  basp::test::TempFile file(text);
  const Topology t = load_topology(file.path);
  Router router(t);
  const auto names = path_names(t, router.route(0, 9));
  REQUIRE(names.size() >= 4);
  CHECK(names[0] == "n0.pcie0");
  CHECK(names[1] == "n0.nic0");
  CHECK(std::find(names.begin(), names.end(), "n0.gpu1") == names.end());
}

TEST_CASE("a one-way link that leaves no path is a clear input error, not a crash") {
  const Topology t = load_topology(basp::test::data("one-way-link.yaml"));
  Router router(t);
  CHECK_NOTHROW(router.route(1, 0));
  CHECK_THROWS_AS(router.route(0, 1), InputError);
}

// System: every ordered pair of ranks on small clusters of each kind of routing the router has
// (NVLink and PXN, spine cross-rail, PCIe-only nodes, NVL72 trays, three tiers, hashed ECMP),
// routed by one router in order, by one in reverse order, and each by a fresh router.
// Expectations: the same links, shares and latencies to the bit: a router's cached segments and
// the distance fields it resumes or starts again (an endpoint passed over) never change a route.
TEST_CASE("a router that routed other pairs first gives every route a fresh router gives") {
  const FabricCase cases[] = {
      {"dgx-h100", {.nodes = 4, .nodes_per_leaf = 2, .spines = 2}},
      {"dgx-h100", {.nodes = 3, .nodes_per_leaf = 2, .spines = 2, .cross_rail = CrossRail::spine}},
      {"dgx-h100", {.nodes = 4, .nodes_per_leaf = 2, .spines = 2, .ecmp = EcmpMode::hash}},
      {"pcie-8gpu", {.nodes = 3}},
      {"gb200-nvl72", {.nodes = 18}},
      {"dgx-h100-3tier", {.nodes = 4}},
  };
  for (const FabricCase& c : cases) {
    CAPTURE(c.topology);
    const Topology t = load_topology(c.topology, c.overrides);
    const int n = static_cast<int>(t.gpus.size());
    REQUIRE(n >= 8);
    std::vector<Route> forward, backward(std::size_t(n) * n);
    Router in_order(t), reversed(t);
    for (int s = 0; s < n; ++s)
      for (int d = 0; d < n; ++d) forward.push_back(copy(in_order.route(s, d, 7)));
    for (int s = n; s-- > 0;)
      for (int d = n; d-- > 0;) backward[std::size_t(s) * n + d] = copy(reversed.route(s, d, 7));
    int compared = 0;
    for (int s = 0; s < n; ++s)
      for (int d = 0; d < n; ++d) {
        Router fresh(t);
        const Route alone = copy(fresh.route(s, d, 7));
        CAPTURE(s, d);
        CHECK(forward[std::size_t(s) * n + d] == alone);
        CHECK(backward[std::size_t(s) * n + d] == alone);
        compared += !alone.hops.empty();
      }
    CHECK(compared == n * (n - 1));
  }
}

// System: the ring edges of strided groups (every rank to the rank `stride` later, wrapping), as
// a ZeRO replica ring crosses leaves, on fabrics with several leaves per rail and spines.
// Expectation: a router that prepared those routes first (switch segments built destination by
// destination) gives each the route, shares and latency to the bit, of a router that did not, and
// builds no segment the unprepared one does not.
TEST_CASE("routes prepared ahead, grouped by destination switch, are the routes routed one by one") {
  const FabricCase cases[] = {
      {"dgx-h100", {.nodes = 12, .nodes_per_leaf = 2, .spines = 3}},
      {"dgx-h100", {.nodes = 9, .nodes_per_leaf = 2, .spines = 2, .cross_rail = CrossRail::spine}},
      {"dgx-h100", {.nodes = 12, .nodes_per_leaf = 2, .spines = 3, .ecmp = EcmpMode::hash}},
      {"gb200-nvl72", {.nodes = 54, .nodes_per_leaf = 4, .spines = 2}},
      {"dgx-h100-3tier", {.nodes = 10}},
  };
  for (const FabricCase& c : cases) {
    CAPTURE(c.topology);
    const Topology t = load_topology(c.topology, c.overrides);
    const int n = static_cast<int>(t.gpus.size());
    std::vector<std::pair<int, int>> pairs;
    for (int stride : {1, 8, 13})
      for (int s = 0; s < n; ++s) pairs.push_back({s, (s + stride) % n});
    Router prepared(t), plain(t);
    prepared.prepare_routes(pairs);
    const std::size_t built = prepared.segments_built();
    CHECK(built > 0);
    int compared = 0;
    for (auto [s, d] : pairs) {
      const Route a = copy(prepared.route(s, d, 3)), b = copy(plain.route(s, d, 3));
      CAPTURE(s, d);
      CHECK(a == b);
      compared += !b.hops.empty();
    }
    CHECK(compared == static_cast<int>(pairs.size()));
    CHECK(prepared.segments_built() == built);  // routing after preparing built nothing new
    CHECK(prepared.segments_built() == plain.segments_built());
  }
}

// Unit: tests/data/fabric-detour.yaml. From switch a to switch c the direct cable costs about
// 42 us per MiB, each of the two detours a-d-f-c and a-e-g-c about 31 us, and a Dijkstra from c
// reaches a over the direct cable first. Expectation (by hand): g0 -> g2 takes both detours, half
// its bytes on each of their six cables, none on the direct one; the route from g1 (through b,
// then a) the same, both before and after the other, and a router that prepared the routes first.
TEST_CASE("a route takes the cheaper detour a search reaches later, whatever was routed before") {
  const Topology t = load_topology(basp::test::data("fabric-detour.yaml"));
  auto expected = [&](int src) {
    std::map<std::string, float> e;
    const std::string first = src == 0 ? "g0>n0" : "g1>n1";
    e[first] = 1.0f;
    e[src == 0 ? "n0>a" : "n1>b"] = 1.0f;
    if (src == 1) e["b>a"] = 1.0f;
    for (const char* half : {"a>d", "d>f", "f>c", "a>e", "e>g", "g>c"}) e[half] = 0.5f;
    e["c>n2"] = e["n2>g2"] = 1.0f;
    return e;
  };
  auto shares = [&](const RouteView& r) {
    std::map<std::string, float> s;
    for (const Hop& h : r.hops) s[t.graph[t.link(h.link).from].name + ">" + t.graph[t.link(h.link).to].name] += h.share;
    return s;
  };
  const std::vector<std::pair<int, int>> pairs{{0, 2}, {1, 2}};
  Router forward(t), backward(t), prepared(t);
  prepared.prepare_routes(pairs);
  CHECK(shares(forward.route(0, 2)) == expected(0));
  CHECK(shares(forward.route(1, 2)) == expected(1));
  CHECK(shares(backward.route(1, 2)) == expected(1));
  CHECK(shares(backward.route(0, 2)) == expected(0));
  CHECK(shares(prepared.route(0, 2)) == expected(0));
  CHECK(shares(prepared.route(1, 2)) == expected(1));
}

// System: every ordered pair of ranks, under two salts, on fabrics whose switches have many more
// links than the paths use (spines of many leaves, three tiers, rails, hashed ECMP, a cable down,
// an NVL72 pair of racks, fabric-detour.yaml, fabric-lazy.yaml, 30 seeded random fabrics), routed
// one by one and prepared.
// Expectation: a router that relaxes a vertex's links in only as far as the source needs and reads
// the settled vertices' links in for the path graph gives, to the bit, the routes of one that
// relaxes and reads every link.
TEST_CASE("lazily searched routes are the routes of a search that reads every link") {
  std::vector<Topology> fabrics;
  fabrics.push_back(load_topology("dgx-h100", {.nodes = 16, .nodes_per_leaf = 2, .spines = 4}));
  fabrics.push_back(load_topology("dgx-h100", {.nodes = 10, .nodes_per_leaf = 3, .spines = 3, .ecmp = EcmpMode::hash}));
  fabrics.push_back(load_topology("dgx-h100", {.nodes = 9, .nodes_per_leaf = 2, .spines = 2, .cross_rail = CrossRail::spine}));
  fabrics.push_back(load_topology("dgx-h100-3tier", {.nodes = 12}));
  TopologyOverrides down{.nodes = 8, .nodes_per_leaf = 2, .spines = 3};
  down.outages = {"", "2:5"};
  fabrics.push_back(load_topology("dgx-h100", down));
  fabrics.push_back(load_topology("gb200-nvl72", {.nodes = 36, .nodes_per_leaf = 6, .spines = 3}));
  fabrics.push_back(load_topology(basp::test::data("fabric-detour.yaml")));
  fabrics.push_back(load_topology(basp::test::data("fabric-lazy.yaml")));
  // Seeded random fabrics: switches on a ring, a hub joined to every other switch, extra cables
  // (some parallel, some one way) of mixed speeds and latencies, so that shortest paths are unique
  // or tied in every way, and nodes of one GPU and NIC hanging off random switches.
  std::uint64_t state = 20261208;
  auto draw = [&](std::uint64_t n) { return static_cast<int>(splitmix64(state) % n); };
  for (int trial = 0; trial < 30; ++trial) {
    const int switches = 4 + draw(12), nodes = 3 + draw(10);
    const char* speeds[] = {"25 GB/s", "50 GB/s", "100 GB/s"};
    const char* latencies[] = {"0 s", "0.5 us", "1 us"};
    std::string y = "name: random-fabric\ngpu: H100-SXM\nexplicit:\n  vertices:\n";
    for (int i = 0; i < switches; ++i) y += "    - {name: s" + std::to_string(i) + ", kind: switch}\n";
    for (int n = 0; n < nodes; ++n)
      y += "    - {name: g" + std::to_string(n) + ", kind: gpu, node: " + std::to_string(n) + ", nic: n" +
           std::to_string(n) + "}\n    - {name: n" + std::to_string(n) + ", kind: nic, node: " + std::to_string(n) +
           ", rail: 0}\n";
    y += "  links:\n";
    auto cable = [&](const std::string& a, const std::string& b, bool duplex, const char* cls) {
      y += "    - {from: " + a + ", to: " + b + ", bandwidth: " + speeds[draw(3)] + ", latency: " + latencies[draw(3)] +
           ", class: " + cls + (duplex ? ", duplex: true}\n" : "}\n");
    };
    auto sw = [](int i) { return "s" + std::to_string(i); };
    for (int i = 0; i < switches; ++i) cable(sw(i), sw((i + 1) % switches), true, "fabric");
    for (int i = 2; i < switches; ++i) cable(sw(0), sw(i), true, "fabric");
    for (int k = draw(2 * switches); k-- > 0;) cable(sw(draw(switches)), sw(draw(switches)), draw(3) > 0, "fabric");
    for (int n = 0; n < nodes; ++n) {
      const std::string g = "g" + std::to_string(n), nic = "n" + std::to_string(n);
      cable(g, nic, true, "pcie");
      cable(nic, sw(draw(switches)), true, "nic");
    }
    // A switch cabled to itself is not a cable: drop such lines.
    std::string kept;
    std::istringstream lines(y);
    for (std::string line; std::getline(lines, line);) {
      const auto from = line.find("from: "), to = line.find(", to: ");
      if (from != std::string::npos &&
          line.substr(from + 6, to - from - 6) == line.substr(to + 6, line.find(',', to + 6) - to - 6))
        continue;
      kept += line + "\n";
    }
    basp::test::TempFile file(kept);
    fabrics.push_back(load_topology(file.path));
  }
  for (const Topology& t : fabrics) {
    CAPTURE(t.name, t.gpus.size());
    const int n = static_cast<int>(t.gpus.size());
    std::vector<std::pair<int, int>> pairs;
    for (int s = 0; s < n; ++s)
      for (int d = 0; d < n; ++d) pairs.push_back({s, d});
    Router lazy(t), eager(t), prepared(t);
    eager.search_lazily(false);
    prepared.prepare_routes(pairs);
    std::size_t compared = 0;
    for (std::uint64_t salt : {0u, 5u})
      for (auto [s, d] : pairs) {
        const Route a = copy(lazy.route(s, d, salt)), b = copy(eager.route(s, d, salt)),
                    c = copy(prepared.route(s, d, salt));
        CAPTURE(s, d, salt);
        CHECK(a == b);
        CHECK(c == b);
        compared += !b.hops.empty();
      }
    CHECK(compared == 2 * pairs.size() - 2 * std::size_t(n));
  }
}
