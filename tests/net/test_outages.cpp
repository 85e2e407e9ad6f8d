// --exclude-nodes and --down-links on a built cluster: the forms parsed (lists, ranges, seeded draws
// that depend on the seed alone), ranks on the remaining nodes in order, routes that never use a
// cable taken down, and every refusal naming its flag.
#include "input_error.hpp"
#include "outages.hpp"
#include "routing.hpp"
#include "topology_file.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>

using namespace basp;

namespace {

Topology with_outages(std::string excluded, std::string down, int nodes = 6) {
  TopologyOverrides o{.nodes = nodes, .nodes_per_leaf = 4, .spines = 2};
  o.outages = {std::move(excluded), std::move(down)};
  return load_topology("dgx-h100", o);
}

std::string refusal(const std::string& excluded, const std::string& down, const std::string& flag) {
  try {
    with_outages(excluded, down);
  } catch (const InputError& e) {
    CHECK(e.field == flag);
    return e.what();
  }
  FAIL("accepted: '" << excluded << "' / '" << down << "'");
  return "";
}

}  // namespace

TEST_CASE("outages: node lists, ranges and seeded draws") {
  CHECK(excluded_nodes("", 10).empty());
  CHECK(excluded_nodes("7", 10) == std::vector<int>{7});
  CHECK(excluded_nodes("3,1-2,9,2", 10) == std::vector<int>{1, 2, 3, 9});
  const std::vector<int> drawn = excluded_nodes("4:17", 100);
  CHECK(drawn.size() == 4);
  CHECK(std::is_sorted(drawn.begin(), drawn.end()));
  CHECK(excluded_nodes("4:17", 100) == drawn);                       // the seed alone decides
  CHECK(excluded_nodes("4:18", 100) != drawn);
  CHECK(excluded_nodes("2%:1", 2048).size() == 41);                  // 2 % of 2,048, rounded
  CHECK(excluded_nodes("0.1%:1", 100).size() == 1);                  // at least one
  const std::vector<int> five = excluded_nodes("5:3", 100), three = excluded_nodes("3:3", 100);
  CHECK(std::includes(five.begin(), five.end(), three.begin(), three.end()));  // a larger draw keeps the smaller
  for (const char* bad : {"10", "0-10", "10:1", "a", "3-1", "1,,2", "3:", ":1", "0:1", "100%:1", "-1"}) {
    INFO(bad);
    CHECK_THROWS_AS(excluded_nodes(bad, 10), InputError);
  }
}

TEST_CASE("outages: ranks run on the remaining nodes in order, and routes avoid the cables down") {
  const Topology plain = with_outages("", "");
  const Topology t = with_outages("0,3", "rail0.leaf0--spine0,rail1.leaf1--spine1");
  CHECK(t.excluded_nodes == std::vector<int>{0, 3});
  REQUIRE(t.gpus.size() == 32);
  const int node[] = {1, 2, 4, 5};
  for (int r = 0; r < 32; ++r) {
    CHECK(t.node_of_rank(r) == node[r / 8]);
    CHECK(t.vertex(t.gpus[r]).name == plain.vertex(plain.gpus[node[r / 8] * 8 + r % 8]).name);
  }
  REQUIRE(t.down_links.size() == 4);
  CHECK(down_cable_names(t) == std::vector<std::string>{"rail0.leaf0--spine0", "rail1.leaf1--spine1"});
  CHECK(describe_outages(t) == "nodes 0, 3 excluded; 2 cables down: rail0.leaf0--spine0, rail1.leaf1--spine1");
  const std::set<int> down(t.down_links.begin(), t.down_links.end());
  Router router(t);
  int crossing = 0;  // routes that leave a leaf, some of which would take a cable now down
  for (int s = 0; s < 32; ++s)
    for (int d = 0; d < 32; ++d) {
      const RouteView route = router.route(s, d);
      for (const Hop& h : route.hops) {
        CHECK(down.count(h.link) == 0);
        crossing += t.link(h.link).cls == LinkClass::fabric && t.vertex(t.link(h.link).to).name.starts_with("spine");
      }
    }
  CHECK(crossing > 0);
  // The same cables drawn by a seed are the same cables every time, and only switch-to-switch ones.
  const Topology a = with_outages("", "5:2"), b = with_outages("", "5:2");
  CHECK(down_cable_names(a) == down_cable_names(b));
  CHECK(down_cable_names(a).size() == 5);
  for (int l : a.down_links) {
    CHECK(a.vertex(a.link(l).from).kind == VertexKind::fabric_switch);
    CHECK(a.vertex(a.link(l).to).kind == VertexKind::fabric_switch);
  }
}

TEST_CASE("outages: refusals name the flag and say what to do") {
  CHECK_THAT(refusal("6", "", "--exclude-nodes"), Catch::Contains("nodes are 0 to 5"));
  CHECK_THAT(refusal("0-5", "", "--exclude-nodes"), Catch::Contains("every one of the 6 nodes"));
  CHECK_THAT(refusal("", "spine0", "--down-links"), Catch::Contains("basp topo --explicit"));
  CHECK_THAT(refusal("", "n1.nic2--rail2.leaf0", "--down-links"),
             Catch::Contains("n1.nic2 has no fabric link left") && Catch::Contains("--exclude-nodes 1"));
  CHECK_THAT(refusal("", "rail7.leaf0--spine0,rail7.leaf0--spine1", "--down-links"),
             Catch::Contains("--exclude-nodes 0,1,2,3"));
  CHECK_THAT(refusal("", "n0.gpu0--n0.nvswitch", "--down-links"), Catch::Contains("fabric cables"));
  CHECK_THAT(refusal("", "33:1", "--down-links"), Catch::Contains("only 32 switch-to-switch cables"));
  // A node cut off but excluded is no error.
  CHECK(with_outages("1", "n1.nic2--rail2.leaf0").gpus.size() == 40);
}

TEST_CASE("outages: an explicit topology takes them as its template does") {
  const Topology plain = with_outages("", "");
  const std::string path = std::filesystem::temp_directory_path() / "basp_outages_explicit.yaml";
  {
    std::ofstream out(path);
    write_explicit_topology(plain, out);
  }
  TopologyOverrides o;
  o.outages = {"0,3", "rail0.leaf0--spine0"};
  const Topology from_file = load_topology(path, o);
  const Topology from_template = with_outages("0,3", "rail0.leaf0--spine0");
  std::filesystem::remove(path);
  CHECK(from_file.excluded_nodes == from_template.excluded_nodes);
  CHECK(down_cable_names(from_file) == down_cable_names(from_template));
  REQUIRE(from_file.gpus.size() == from_template.gpus.size());
  for (std::size_t r = 0; r < from_file.gpus.size(); ++r)
    CHECK(from_file.vertex(from_file.gpus[r]).name == from_template.vertex(from_template.gpus[r]).name);
}
