// The `basp` command as users run it: exit codes (0 ok, 2 bad input), one clear message naming
// file, line and field, and JSON that parses and holds the documented keys.
#include "cli_helpers.hpp"

#include "calibration.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

using basp::test::basp_cli;
using basp::test::Run;

TEST_CASE("cli: help and a default run succeed") {
  CHECK(basp_cli("--help").code == 0);
  CHECK(basp_cli("collective --help").code == 0);
  const Run r = basp_cli("collective --size 1MiB --groups 1,2");
  CHECK(r.code == 0);
  CHECK_THAT(r.out, Catch::Contains("algbw"));
}

TEST_CASE("cli: --json prints one object with the documented keys") {
  const Run r = basp_cli("collective --topology dgx-h100 --nodes 2 --op alltoall --size 64MiB --groups 2 --json");
  REQUIRE(r.code == 0);
  const auto j = nlohmann::json::parse(r.out);
  for (const char* key : {"op", "ranks", "groups", "group_size", "placement", "size_bytes", "time_s", "algbw_Bps",
                          "busbw_Bps", "flows", "events", "wall_s"})
    CHECK(j.contains(key));
  CHECK(j["ranks"] == 16);
  CHECK(j["group_size"] == 8);
  const Run t = basp_cli("topo --topology gb200-nvl72 --json");
  REQUIRE(t.code == 0);
  CHECK(nlohmann::json::parse(t.out)["gpus"] == 72);
}

TEST_CASE("cli: a bad topology field exits 2 naming file - line and field") {
  basp::test::TempFile f(R"(name: bad
gpu: H100-SXM
nodes: 2
node:
  kind: nvswitch
  gpus: 8
  nvlink:
    bandwidth: 450 GBs
    latency: 1 us
  pcie: {bandwidth: 64 GB/s, latency: 1 us}
  nics: {count: 8, bandwidth: 400 Gb/s}
fabric: {kind: single-switch, latency: 1 us}
)");
  const Run r = basp_cli("topo --topology " + f.path);
  CHECK(r.code == 2);
  CHECK_THAT(r.out, Catch::Contains(f.path + ":8:"));
  CHECK_THAT(r.out, Catch::Contains("node.nvlink.bandwidth"));
  CHECK_THAT(r.out, Catch::Contains("450 GBs"));
}

TEST_CASE("cli: a topology naming an unknown GPU kind exits 2 listing the known kinds") {
  basp::test::TempFile f(R"(name: bad
gpu: H100-SXN
nodes: 1
node:
  kind: nvswitch
  gpus: 8
  nvlink: {bandwidth: 450 GB/s, latency: 1 us}
  pcie: {bandwidth: 64 GB/s, latency: 1 us}
fabric: {kind: none}
)");
  for (const char* command : {"topo", "collective --size 1MiB", "simulate"}) {
    INFO(command);
    const Run r = basp_cli(std::string(command) + " --topology " + f.path);
    CHECK(r.code == 2);
    CHECK_THAT(r.out, Catch::Contains(f.path + ":2:"));
    CHECK_THAT(r.out, Catch::Contains("unknown GPU kind 'H100-SXN' (known: A100-40GB, A100-80GB, H100-SXM"));
  }
}

TEST_CASE("cli: impossible requests exit 2 with one clear message") {
  const Run groups = basp_cli("collective --size 1MiB --groups 3");
  CHECK(groups.code == 2);
  CHECK_THAT(groups.out, Catch::Contains("--groups"));
  const Run unit = basp_cli("collective --size 64MiBs");
  CHECK(unit.code == 2);
  CHECK_THAT(unit.out, Catch::Contains("--size"));
  const Run name = basp_cli("topo --topology no-such-cluster");
  CHECK(name.code == 2);
  CHECK_THAT(name.out, Catch::Contains("dgx-h100"));  // lists what is shipped
  CHECK(basp_cli("collective --size 1MiB --op broadcast").code == 2);
  CHECK(basp_cli("collective --size 1MiB --nodes 0 --topology dgx-h100").code == 2);
  CHECK(basp_cli("frobnicate").code == 2);
  CHECK(basp_cli("collective -b 1 -e 1GB -f 1.0000001").code == 2);  // a million-row sweep
  CHECK(basp_cli("collective -t dgx-h100 --spines 100000000 --size 1MB").code == 2);
  // Buffers beyond 1 TiB per rank (or none) mean nothing: refused, not printed as figures.
  for (const char* size : {"--size 1e30", "--size 0", "--size 2TiB", "-b 1KiB -e 1e30"}) {
    const Run big = basp_cli(std::string("collective ") + size);
    CHECK(big.code == 2);
    CHECK_THAT(big.out, Catch::Contains("1 TiB"));
  }
  // A job its strategies cannot lay out is refused before the cluster is built (4M GPUs here).
  const Run huge = basp_cli("simulate --nodes 1048576");
  CHECK(huge.code == 2);
  CHECK_THAT(huge.out, Catch::Contains("--sp"));
}

TEST_CASE("cli: the same input gives the same output") {
  const std::string args = "collective --topology dgx-h100 --nodes 4 -b 1MiB -e 16MiB -f 4 --groups 1,4 --csv";
  auto strip_wall = [](std::string s) {  // the wall_s column is measured, not simulated
    std::string out;
    std::size_t start = 0;
    while (start < s.size()) {
      std::size_t end = s.find('\n', start);
      std::string line = s.substr(start, end - start);
      out += line.substr(0, line.rfind(',')) + "\n";
      start = end == std::string::npos ? s.size() : end + 1;
    }
    return out;
  };
  CHECK(strip_wall(basp_cli(args).out) == strip_wall(basp_cli(args).out));
}

TEST_CASE("cli: collective applies the topology's calibration unless told otherwise") {
  const Run cal = basp::test::basp_cli("collective --size 256MiB --json", false);
  const Run none = basp::test::basp_cli("collective --size 256MiB --json --calibration none", false);
  REQUIRE(cal.code == 0);
  REQUIRE(none.code == 0);
  const auto c = nlohmann::json::parse(cal.out), n = nlohmann::json::parse(none.out);
  CHECK(c["calibration"] == "paper-a100-2x4");
  CHECK(n["calibration"] == "none");
  // The 8-way all-to-all of 256 MiB is bound by the NICs, which the calibration slows by 1/efficiency.
  const double nic = *basp::load_calibration("paper-a100-2x4").links[basp::LinkClass::nic].efficiency;
  const double ratio = c["time_s"].get<double>() / n["time_s"].get<double>();
  CHECK(ratio > 0.94 / nic);
  CHECK(ratio < 1.05 / nic);
}
