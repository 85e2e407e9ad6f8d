// One bad field at a time, in a valid template and a valid explicit topology: each must throw
// InputError naming the field (and, where the file says it, the line), never crash or default.
#include "helpers.hpp"
#include "input_error.hpp"
#include "topology_file.hpp"

#include <catch2/catch.hpp>

using namespace basp;
using basp::test::replaced;
using basp::test::TempFile;

namespace {

const std::string valid_template = R"(name: t
gpu: H100-SXM
nodes: 2
node:
  kind: nvswitch
  gpus: 4
  nvlink:
    bandwidth: 450 GB/s
    latency: 1 us
  pcie:
    bandwidth: 64 GB/s
    latency: 0.5 us
    switches: 2
  nics:
    count: 4
    bandwidth: 400 Gb/s
fabric:
  kind: rail
  latency: 0.5 us
  nodes_per_leaf: 2
  oversubscription: 1
  spines: 2
)";

// Loads `text`; returns the InputError's message (fails the test when nothing is thrown).
std::string error_of(const std::string& text) {
  TempFile f(text);
  try {
    load_topology(f.path);
  } catch (const InputError& e) {
    return e.what();
  }
  FAIL("no InputError for:\n" << text);
  return {};
}

}  // namespace

TEST_CASE("the valid base files load") {
  TempFile f(valid_template);
  CHECK(load_topology(f.path).gpus.size() == 8);
}

TEST_CASE("each bad template field is refused with its name") {
  struct Case { const char* from; const char* to; const char* field; };
  const Case cases[] = {
      {"nodes: 2", "nodes: 0", "'nodes'"},
      {"kind: nvswitch", "kind: crossbar", "node.kind"},
      {"gpus: 4", "gpus: 0", "node.gpus"},
      {"gpus: 4", "gpus: four", "node.gpus"},
      {"bandwidth: 450 GB/s", "bandwidth: 450 GBs", "node.nvlink.bandwidth"},
      {"    latency: 1 us\n", "", "node.nvlink.latency"},
      {"bandwidth: 64 GB/s", "bandwidth: 64", "node.pcie.bandwidth"},
      {"switches: 2", "switches: -1", "node.pcie.switches"},
      {"count: 4", "count: 4\n    affinity: [0, 1, 2, 9]", "node.nics.affinity"},
      {"count: 4", "count: 4\n    affinity: [0, 1]", "node.nics.affinity"},
      {"bandwidth: 400 Gb/s", "bandwidth: lots", "node.nics.bandwidth"},
      {"bandwidth: 400 Gb/s", "bandwidth: 0 Gb/s", "node.nics.bandwidth"},
      {"bandwidth: 64 GB/s", "bandwidth: 1e300 TB/s", "node.pcie.bandwidth"},
      {"kind: rail", "kind: torus", "fabric.kind"},
      {"kind: rail\n  latency: 0.5 us\n  nodes_per_leaf: 2\n  oversubscription: 1\n  spines: 2", "kind: none",
       "fabric.kind"},
      {"nodes_per_leaf: 2", "nodes_per_leaf: 0", "fabric.nodes_per_leaf"},
      {"oversubscription: 1", "oversubscription: -4", "fabric.oversubscription"},
      {"spines: 2", "spines: 0", "fabric.spines"},
      {"latency: 0.5 us\n  nodes", "latency: 5 furlongs\n  nodes", "fabric.latency"},
      {"    latency: 1 us\n", "    latency: 1 us\n    domain_nodes: 3\n", "node.nvlink.domain_nodes"},
      {"gpu: H100-SXM\n", "", "'gpu'"},
      {"fabric:", "colour: blue\nfabric:", "'colour'"},
      {"  gpus: 4", "  gpus: 4\n  gpu_count: 4", "node.gpu_count"},
      {"  gpus: 4", "  gpus: 4\n  gpus: 8", "node.gpus"},  // given twice
  };
  for (const Case& c : cases) {
    INFO(c.from << " -> " << c.to);
    const std::string message = error_of(replaced(valid_template, c.from, c.to));
    CHECK_THAT(message, Catch::Contains(c.field));
  }
}

// System: the valid template, its `gpu` field set to a name the caller's list lacks.
// Expectations: without a list the network takes the name as a label; with one, an InputError at
// the field's line lists the allowed names in the list's order.
TEST_CASE("a topology's GPU kind is checked against the names it may use") {
  TempFile f(replaced(valid_template, "gpu: H100-SXM", "gpu: Z9000"));
  CHECK(load_topology(f.path).gpu_kind == "Z9000");
  const std::string_view allowed[] = {"B200", "Z9000"};
  CHECK(load_topology(f.path, {}, allowed).gpus.size() == 8);
  const std::string_view others[] = {"A100-40GB", "B200"};
  try {
    load_topology(f.path, {}, others);
    FAIL("accepted a GPU kind outside the list");
  } catch (const InputError& e) {
    CHECK(e.file == f.path);
    CHECK(e.line == 2);
    CHECK(e.field == "gpu");
    CHECK_THAT(std::string(e.what()), Catch::Contains("unknown GPU kind 'Z9000' (known: A100-40GB, B200)"));
  }
}

TEST_CASE("errors name the file and the line") {
  TempFile f(replaced(valid_template, "kind: rail", "kind: torus"));
  try {
    load_topology(f.path);
    FAIL("accepted a bad fabric kind");
  } catch (const InputError& e) {
    CHECK(e.file == f.path);
    CHECK(e.line == 18);
    CHECK(e.field == "fabric.kind");
    CHECK_THAT(std::string(e.what()), Catch::Contains("single-switch, leaf-spine, rail"));
  }
}

TEST_CASE("YAML syntax errors and missing files are input errors") {
  CHECK_THROWS_AS(load_topology("/nonexistent/x.yaml"), InputError);
  CHECK_THROWS_AS(load_topology("no-such-topology"), InputError);
  CHECK_THROWS_AS(load_topology(std::string(BASP_TEST_DATA) + "/"), InputError);  // a folder
  TempFile f("name: [unclosed\n");
  CHECK_THROWS_AS(load_topology(f.path), InputError);
}

namespace {
const std::string valid_explicit = R"(name: e
gpu: H100-SXM
explicit:
  vertices:
    - {name: a, kind: gpu, node: 0}
    - {name: b, kind: gpu, node: 0}
    - {name: s, kind: nvswitch, node: 0}
  links:
    - {from: a, to: s, bandwidth: 10 GB/s, latency: 1 us, class: nvlink, duplex: true}
    - {from: b, to: s, bandwidth: 10 GB/s, latency: 1 us, class: nvlink, duplex: true}
)";
}  // namespace

TEST_CASE("each bad explicit field is refused with its name") {
  struct Case { const char* from; const char* to; const char* field; };
  const Case cases[] = {
      {"{from: b, to: s", "{from: c, to: s", "links[1].from"},
      {"kind: nvswitch", "kind: router", "vertices[2].kind"},
      {"{name: b, kind: gpu", "{name: a, kind: gpu", "vertices[1].name"},
      {"class: nvlink, duplex: true}\n    - {from: b", "class: copper, duplex: true}\n    - {from: b", "links[0].class"},
      {"bandwidth: 10 GB/s, latency: 1 us, class: nvlink, duplex: true}\n    - {from: b",
       "bandwidth: 0 GB/s, latency: 1 us, class: nvlink, duplex: true}\n    - {from: b", "links[0].bandwidth"},
      {"{name: b, kind: gpu, node: 0}", "{name: b, kind: gpu, node: 0, colour: red}", "vertices[1].colour"},
      {"{name: b, kind: gpu, node: 0}", "{name: b, kind: gpu, node: 0, nic: nowhere}", "vertices[1].nic"},
  };
  for (const Case& c : cases) {
    INFO(c.from << " -> " << c.to);
    CHECK_THAT(error_of(replaced(valid_explicit, c.from, c.to)), Catch::Contains(c.field));
  }
}

TEST_CASE("impossible explicit topologies are refused") {
  // A vertex no link reaches.
  CHECK_THAT(error_of(replaced(valid_explicit, "    - {name: s", "    - {name: lonely, kind: switch}\n    - {name: s")),
             Catch::Contains("disconnected"));
  // Two GPUs in node 0, one in node 1.
  CHECK_THAT(error_of(replaced(valid_explicit, "    - {name: s", "    - {name: c, kind: gpu, node: 1}\n    - {name: s")),
             Catch::Contains("same number of GPUs"));
  // CLI size overrides do not apply to explicit files.
  TempFile f(valid_explicit);
  CHECK_THROWS_AS(load_topology(f.path, {.nodes = 4}), InputError);
}

TEST_CASE("command-line overrides are held to the ranges of the fields they replace") {
  TempFile f(valid_template);
  CHECK_THROWS_AS(load_topology(f.path, {.spines = 100000000}), InputError);
  CHECK_THROWS_AS(load_topology(f.path, {.nodes_per_leaf = 2147483647}), InputError);
  CHECK_THROWS_AS(load_topology(f.path, {.oversubscription = 1e-320}), InputError);
  CHECK_THROWS_AS(load_topology(f.path, {.nodes = 2000000}), InputError);
  try {
    load_topology(f.path, {.spines = 0});
    FAIL("accepted --spines 0");
  } catch (const InputError& e) {
    CHECK(e.field == "--spines");
  }
}
