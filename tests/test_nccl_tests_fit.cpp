// Link fits on published nccl-tests tables: the file format, recovery of known parameters from
// simulated all-gathers, reduce-scatters and all-to-alls, and the shipped DGX H100 calibration.
#include <catch2/catch.hpp>
#include <cmath>
#include <fstream>
#include <iterator>
#include <map>
#include <nlohmann/json.hpp>

#include "cli_helpers.hpp"
#include "input_error.hpp"
#include "least_squares.hpp"
#include "link_fit.hpp"
#include "topology_file.hpp"

using namespace basp;
using namespace basp::fitting;

namespace {
const std::string kH100 = std::string(BASP_DATA_DIR) + "/calibrations/dgx-h100.yaml";
const std::vector<std::string> kH100Tables = {
    std::string(BASP_DATA_DIR) + "/calibrations/measurements/dgx-h100-1node-nccl-tests.json",
    std::string(BASP_DATA_DIR) + "/calibrations/measurements/dgx-h100-2node-nccl-tests.json",
    std::string(BASP_DATA_DIR) + "/calibrations/measurements/dgx-h100-10node-nccl-tests.json"};

Topology dgx_h100(int nodes) {
  TopologyOverrides o;
  o.nodes = nodes;
  return build_topology(read_topology_file("dgx-h100", o));
}

nlohmann::json table(const nlohmann::json& rows, int ranks = 16) {
  return {{"schema", "basp-measurements"}, {"schema_version", 1},     {"command", "nccl-tests"},
          {"provenance", "a test"},        {"hardware", {{"description", "none"}}},
          {"config", {{"ranks", ranks}}},  {"results", rows}};
}

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}
}  // namespace

TEST_CASE("nccl-tests files: each row is read with its collective, bad rows are refused by field") {
  basp::test::TempFile good(
      table({{{"op", "all_gather"}, {"size_bytes", 1048576}, {"time_s", 1e-4}},
             {{"op", "reduce_scatter"}, {"size_bytes", 2097152}, {"time_s", 2e-4}},
             {{"op", "alltoall"}, {"size_bytes", 4194304}, {"time_s", 3e-4}, {"busbw_GBps", 12.5}}})
          .dump(),
      ".json");
  const Measurements m = read_measurements({good.path});
  REQUIRE(m.comm.size() == 3);
  CHECK(m.comm[0].op == CollectiveOp::allgather);
  CHECK(m.comm[1].op == CollectiveOp::reducescatter);
  CHECK(m.comm[2].op == CollectiveOp::alltoall);
  for (const CommSample& s : m.comm) CHECK((s.ranks == 16 && s.groups == 1));
  CHECK(m.comm[1].size_bytes == 2097152);
  CHECK(m.comm[2].time_s == 3e-4);
  CHECK(m.sources[0].provenance == "a test");

  const auto refused = [](const nlohmann::json& j, const std::string& field) {
    basp::test::TempFile f(j.dump(), ".json");
    try {
      read_measurements({f.path});
      FAIL("accepted: " << j.dump());
    } catch (const InputError& e) {
      CHECK_THAT(std::string(e.what()), Catch::Contains(field));
    }
  };
  refused(table({{{"op", "sendrecv"}, {"size_bytes", 1}, {"time_s", 1}}}), "results[0].op");
  refused(table({{{"op", "alltoall"}, {"size_bytes", 1}, {"time_s", 0}}}), "results[0]");
  refused(table({{{"op", "alltoall"}, {"time_s", 1}}}), "results[0].size_bytes");
  refused(table(nlohmann::json::array()), "results");
  nlohmann::json no_source = table({{{"op", "alltoall"}, {"size_bytes", 1}, {"time_s", 1}}});
  no_source["provenance"] = "";
  refused(no_source, "provenance");
  refused(table({{{"op", "alltoall"}, {"size_bytes", 1}, {"time_s", 1}}}, 0), "config.ranks");
}

TEST_CASE("fit: noiseless simulated nccl-tests tables on 1 and 2 DGX H100 nodes give back the parameters") {
  const Topology topo = dgx_h100(2);
  Calibration truth;
  truth.links[LinkClass::nvlink].efficiency = 0.7;
  truth.links[LinkClass::nic].efficiency = 0.9;
  truth.launch_s = 12e-6;
  truth.per_peer_s = 3e-6;
  std::vector<CommSample> samples;
  for (int ranks : {8, 16})
    for (CollectiveOp op : {CollectiveOp::allgather, CollectiveOp::reducescatter, CollectiveOp::alltoall})
      for (double size = 65536; size <= 4.0 * 1073741824; size *= 4) {
        CommSample s;
        s.ranks = ranks;
        s.op = op;
        s.size_bytes = size;
        s.time_s = predict_collective(topo, truth, s);
        samples.push_back(s);
      }
  // Hand-derived: a large all-gather on one node is a ring through the NVSwitch; each GPU sends
  // 7/8 of the size through its own NVLink port (450 GB/s at efficiency 0.7), after the call's launch
  // and one peer's overhead.
  CommSample big{8, 1, 4.0 * 1073741824, 0, 0, CollectiveOp::allgather};
  const double hand = 12e-6 + 3e-6 + 7.0 / 8 * big.size_bytes / (0.7 * 450e9);
  CHECK(predict_collective(topo, truth, big) == Approx(hand).epsilon(0.002));

  const LinkFit fit = fit_links(topo, Calibration{}, samples);
  std::map<std::string, FittedParameter> p;
  for (const auto& q : fit.parameters) p[q.name] = q;
  for (const auto& [name, value] : std::map<std::string, double>{{"links.nvlink.efficiency", 0.7},
                                                                  {"links.nic.efficiency", 0.9},
                                                                  {"software.launch_overhead", 12e-6},
                                                                  {"software.per_peer_overhead", 3e-6}}) {
    INFO(name);
    REQUIRE(p.count(name));
    CHECK(p.at(name).free);
    CHECK(p.at(name).value == Approx(value).epsilon(0.01));
  }
  CHECK(fit.quality.max_relative_residual < 1e-3);
}

namespace {
// A shipped calibration sits at the least-squares minimum of the relative errors over its tables:
// 1% either way in any of `moved` is worse (a whole refit would take minutes under the sanitizers).
// It names its files by content hash and predicts them far better than the datasheet rates do.
void check_shipped_fit(const std::string& path, const std::vector<std::string>& tables, const Topology& topo,
                       const std::vector<LinkClass>& moved_links, bool per_peer_fitted, double median_below) {
  const Measurements m = read_measurements(tables);
  const Calibration shipped = load_calibration(path);
  const std::string text = read_text(path);
  for (const std::string& file : tables) CHECK_THAT(text, Catch::Contains("fnv1a64 " + fnv1a_hex(read_text(file))));
  const auto rss = [&](const Calibration& c) {
    double sum = 0;
    for (const CommSample& s : m.comm) sum += std::pow((predict_collective(topo, c, s) - s.time_s) / s.time_s, 2);
    return sum;
  };
  const double at_shipped = rss(shipped);
  for (double factor : {0.99, 1.01}) {
    for (LinkClass cls : moved_links) {
      Calibration moved = shipped;
      moved.links[cls].efficiency = *shipped.links[cls].efficiency * factor;
      INFO(to_string(cls) << " x " << factor);
      CHECK(rss(moved) > at_shipped);
    }
    if (per_peer_fitted) {
      Calibration moved = shipped;
      moved.per_peer_s = *shipped.per_peer_s * factor;
      CHECK(rss(moved) > at_shipped);
    }
  }
  CHECK(at_shipped < 0.25 * rss(Calibration{}));
  std::vector<double> rel;
  for (const CommSample& s : m.comm) rel.push_back(std::abs(predict_collective(topo, shipped, s) - s.time_s) / s.time_s);
  CHECK(median(rel) < median_below);
}
}  // namespace

TEST_CASE("the shipped DGX H100 calibration is the fit of its published nccl-tests tables") {
  REQUIRE(read_measurements(kH100Tables).comm.size() == 63);
  CHECK(load_calibration(kH100).name == "dgx-h100");
  check_shipped_fit(kH100, kH100Tables, dgx_h100(10), {LinkClass::nvlink, LinkClass::nic}, true, 0.05);
  // dgx-h100 uses it by default: the published one-node all-to-all busbw at 16 GiB, 348.03 GB/s,
  // within 5% (the fit's residual there is 2.6%).
  const auto r = basp::test::basp_cli("collective --topology dgx-h100 --nodes 1 --op alltoall --size 16GiB --json");
  REQUIRE(r.code == 0);
  CHECK(nlohmann::json::parse(r.out).at("busbw_Bps").get<double>() == Approx(348.03e9).epsilon(0.05));
}

TEST_CASE("the shipped DGX A100 calibration is the fit of its published nccl-tests figures") {
  const std::string dir = std::string(BASP_DATA_DIR) + "/calibrations/";
  const std::vector<std::string> tables = {dir + "measurements/dgx-a100-1node-all_gather-superbench.json",
                                           dir + "measurements/dgx-a100-1node-reduce_scatter-superbench.json",
                                           dir + "measurements/dgx-a100-1node-alltoall-superbench.json",
                                           dir + "measurements/dgx-a100-1node-mscclpp-ndmv4.json",
                                           dir + "measurements/dgx-a100-2node-mscclpp-ndmv4.json"};
  REQUIRE(read_measurements(tables).comm.size() == 18);
  const Calibration shipped = load_calibration(dir + "dgx-a100-superpod.yaml");
  CHECK(shipped.name == "dgx-a100-superpod");
  // Only the two bandwidths were fitted (--fit): the overheads and latencies stay unset.
  CHECK(!shipped.launch_s);
  CHECK(!shipped.per_peer_s);
  CHECK(!shipped.links[LinkClass::nvlink].latency_s);
  TopologyOverrides o;
  o.nodes = 2;
  check_shipped_fit(dir + "dgx-a100-superpod.yaml", tables, build_topology(read_topology_file("dgx-a100-superpod", o)),
                    {LinkClass::nvlink, LinkClass::nic}, false, 0.05);
  // dgx-a100-superpod uses it by default: the published 2-node all-to-all busbw at 4 GiB,
  // 37.81 GB/s, within 10% (the fit's residual there is 6.7%).
  const auto r = basp::test::basp_cli(
      "collective --topology dgx-a100-superpod --nodes 2 --op alltoall --size 4GiB --json");
  REQUIRE(r.code == 0);
  CHECK(nlohmann::json::parse(r.out).at("busbw_Bps").get<double>() == Approx(37.81e9).epsilon(0.10));
}

TEST_CASE("fit: --fit leaves the parameters it does not name at the start's values, and refuses unknown names") {
  const Topology topo = dgx_h100(2);
  Calibration truth;
  // NIC-bound across nodes (8 NICs at 0.6 x 50 GB/s against 0.95 x 450 GB/s of NVLink per GPU).
  truth.links[LinkClass::nvlink].efficiency = 0.95;
  truth.links[LinkClass::nic].efficiency = 0.6;
  std::vector<CommSample> samples;
  for (int ranks : {8, 16})
    for (double size = 1048576; size <= 4.0 * 1073741824; size *= 4) {
      CommSample s{ranks, 1, size, 0, 0, CollectiveOp::allgather};
      s.time_s = predict_collective(topo, truth, s);
      samples.push_back(s);
    }
  Calibration start;
  start.links[LinkClass::nvlink].efficiency = 0.95;
  const LinkFit fit = fit_links(topo, start, samples, {"links.nic"});
  std::map<std::string, FittedParameter> p;
  for (const auto& q : fit.parameters) p[q.name] = q;
  CHECK(p.at("links.nic.efficiency").free);
  CHECK(p.at("links.nic.efficiency").value == Approx(0.6).epsilon(0.01));
  for (const char* held : {"links.nvlink.efficiency", "software.launch_overhead", "software.per_peer_overhead"}) {
    INFO(held);
    CHECK(!p.at(held).free);
  }
  CHECK(p.at("links.nvlink.efficiency").value == 0.95);
  CHECK(*fit.calibration.links[LinkClass::nvlink].efficiency == 0.95);
  CHECK(!fit.calibration.launch_s);
  CHECK_THROWS_WITH(fit_links(topo, start, samples, {"links.nvswitch"}),
                    Catch::Contains("links.nvswitch") && Catch::Contains("links.nic.efficiency"));
}

TEST_CASE("scripts/nccl-tests-json.sh turns an nccl-tests log into rows the fit reads") {
  const std::string script = std::string(BASP_DATA_DIR) + "/scripts/nccl-tests-json.sh";
  basp::test::TempFile out("", ".json");
  // The log holds all_reduce_perf, then all_gather_perf: the default keeps the all-gather only.
  const auto r = basp::test::run_command(script + " " + BASP_TEST_DATA + "/nccl-tests-10node.log 80 " +
                                         "'a \"quoted\" source' '10 x 8 H100' > " + out.path + " 2>&1");
  REQUIRE(r.code == 0);
  const Measurements m = read_measurements({out.path});
  REQUIRE(m.comm.size() == 10);
  for (const CommSample& s : m.comm) CHECK((s.op == CollectiveOp::allgather && s.ranks == 80));
  // The log's first and last rows: 33553920 B in 682.20 us, 17179868160 B in 52314.1 us.
  CHECK(m.comm.front().size_bytes == 33553920);
  CHECK(m.comm.front().time_s == Approx(682.20e-6).epsilon(1e-9));
  CHECK(m.comm.back().size_bytes == 17179868160.0);
  CHECK(m.comm.back().time_s == Approx(52314.1e-6).epsilon(1e-9));
  CHECK_THAT(m.sources[0].provenance, Catch::Contains("a \"quoted\" source") && Catch::Contains("nccl-tests version 2.17.8"));
  // Asked for a test the log lacks, or a bad rank count: exit 2 and a message.
  CHECK(basp::test::run_command(script + " " + BASP_TEST_DATA + "/nccl-tests-10node.log 80 s h alltoall 2>&1").code == 2);
  const auto bad = basp::test::run_command(script + " " + BASP_TEST_DATA + "/nccl-tests-10node.log x s h 2>&1");
  CHECK(bad.code == 2);
  CHECK_THAT(bad.out, Catch::Contains("RANKS"));
  // An older log (no test lines, no root column) names its one test; its rank lines must agree
  // with RANKS; a row of other columns is refused with its line.
  basp::test::TempFile old_log("# nThread 1 nGpus 2 minBytes 1 maxBytes 8 step: 2(factor)\n"
                               "#   Rank  0 Pid 1 on host device  0 [0x00] A100-SXM4-40GB\n"
                               "#   Rank  1 Pid 1 on host device  1 [0x00] A100-SXM4-40GB\n"
                               "     1048576   32768   float   72.95   14.37   12.58    N/A    73.07   14.35   12.56    N/A\n",
                               ".log");
  const auto ok_old = basp::test::run_command(script + " " + old_log.path + " 2 s h all_gather 2>&1");
  REQUIRE(ok_old.code == 0);
  CHECK_THAT(ok_old.out, Catch::Contains("\"time_s\": 7.295e-05"));
  const auto wrong_ranks = basp::test::run_command(script + " " + old_log.path + " 8 s h all_gather 2>&1");
  CHECK(wrong_ranks.code == 2);
  CHECK_THAT(wrong_ranks.out, Catch::Contains("lists 2 ranks, RANKS says 8"));
  basp::test::TempFile odd("# Collective test starting: alltoall_perf\n"
                           "  1048576 262144 float none -1 10.0 1.0 1.0 0 10.0 1.0 1.0 0 extra\n",
                           ".log");
  const auto odd_row = basp::test::run_command(script + " " + odd.path + " 8 s h 2>&1");
  CHECK(odd_row.code == 2);
  CHECK_THAT(odd_row.out, Catch::Contains("line 2 is not a row"));
}

TEST_CASE("calibrate cli: --fit restricts a link fit to link and software parameters") {
  const std::string tables = kH100Tables[0];  // one node: all-gather, reduce-scatter, all-to-all
  basp::test::TempFile out("", ".yaml");
  auto r = basp::test::basp_cli("calibrate --topology dgx-h100 --nodes 1 -m " + tables +
                                " --fit links.nvlink.efficiency --out " + out.path);
  INFO(r.out);
  REQUIRE(r.code == 0);
  const Calibration c = load_calibration(out.path);
  CHECK(c.links[LinkClass::nvlink].efficiency);
  CHECK(!c.launch_s);  // not named: left to the topology
  for (const char* bad : {"--fit compute", "--fit compute.gemm", "--fit links.nvswitch"}) {
    INFO(bad);
    r = basp::test::basp_cli("calibrate --topology dgx-h100 --nodes 1 -m " + tables + " " + bad + " --out " + out.path);
    CHECK(r.code == 2);
    CHECK_THAT(r.out, Catch::Contains("--fit"));
  }
  basp::test::TempFile compute_only(R"({"schema":"basp-measurements","schema_version":1,"command":"compute",)"
                                    R"("config":{},"hardware":{},"results":[{"op":"gemm_qkv","flops":1e12,"median_s":0.01}]})",
                                    ".json");
  r = basp::test::basp_cli("calibrate --topology dgx-h100 --nodes 1 -m " + compute_only.path +
                           " --fit links.nic --out " + out.path);
  CHECK(r.code == 2);
  CHECK_THAT(r.out, Catch::Contains("compute runs always fit"));
}
