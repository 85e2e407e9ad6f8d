// The fits against measurements generated from known parameters (all-to-alls by the simulator
// itself): exact recovery without noise, recovery within its own uncertainty with fixed-seed ±3% noise.
#include <catch2/catch.hpp>
#include <cmath>
#include <fstream>
#include <iterator>
#include <map>
#include <nlohmann/json.hpp>
#include <random>

#include "compute_fit.hpp"
#include "cli_helpers.hpp"
#include "link_fit.hpp"
#include "topology_file.hpp"

using namespace basp;
using namespace basp::fitting;

namespace {
// The paper cluster's shape with a known truth: what the hand-derived file says.
Calibration truth() {
  Calibration c;
  c.links[LinkClass::nvlink].efficiency = 0.35;
  c.links[LinkClass::nic].efficiency = 0.75;
  c.launch_s = 25e-6;
  c.per_peer_s = 7e-6;
  return c;
}

std::vector<CommSample> synthetic(const Topology& topo, const Calibration& c, double noise, unsigned seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<double> u(-noise, noise);
  std::vector<CommSample> out;
  for (int groups : {1, 2})
    for (double size = 4096; size <= 256.0 * 1048576; size *= 2) {  // 17 sizes, as -f 2 gives
      CommSample s{8, groups, size, 0, 0};
      s.time_s = predict_collective(topo, c, s) * (1 + u(gen));
      out.push_back(s);
    }
  return out;
}

std::map<std::string, FittedParameter> by_name(const LinkFit& f) {
  std::map<std::string, FittedParameter> m;
  for (const auto& p : f.parameters) m[p.name] = p;
  return m;
}

const std::map<std::string, double> kTruth = {{"links.nvlink.efficiency", 0.35},
                                              {"links.nic.efficiency", 0.75},
                                              {"software.launch_overhead", 25e-6},
                                              {"software.per_peer_overhead", 7e-6}};
}  // namespace

TEST_CASE("fit: noiseless simulated all-to-alls give back the parameters within 1%") {
  const Topology topo = load_topology(std::string(BASP_DATA_DIR) + "/topologies/paper-a100-2x4.yaml");
  const LinkFit fit = fit_links(topo, Calibration{}, synthetic(topo, truth(), 0.0, 1));
  const auto p = by_name(fit);
  for (const auto& [name, value] : kTruth) {
    INFO(name);
    REQUIRE(p.count(name));
    CHECK(p.at(name).free);
    CHECK(p.at(name).value == Approx(value).epsilon(0.01));
  }
  CHECK(fit.quality.max_relative_residual < 1e-3);
  CHECK(fit.quality.r2 > 0.999999);
}

TEST_CASE("fit: with fixed-seed 3% noise the parameters are within 2 sigma and 5%") {
  const Topology topo = load_topology(std::string(BASP_DATA_DIR) + "/topologies/paper-a100-2x4.yaml");
  const LinkFit fit = fit_links(topo, Calibration{}, synthetic(topo, truth(), 0.03, 7));
  const auto p = by_name(fit);
  for (const auto& [name, value] : kTruth) {
    INFO(name << ": " << p.at(name).value << " +- " << p.at(name).sigma << ", truth " << value);
    CHECK(std::abs(p.at(name).value - value) <= 2 * p.at(name).sigma);
    CHECK(p.at(name).value == Approx(value).epsilon(0.05));
  }
  CHECK(fit.quality.max_relative_residual < 0.06);
}

TEST_CASE("fit: too few sizes or runs beyond the topology are refused") {
  const Topology topo = load_topology(std::string(BASP_DATA_DIR) + "/topologies/paper-a100-2x4.yaml");
  std::vector<CommSample> two = {{8, 1, 4096, 1e-4, 0}, {8, 1, 8192, 2e-4, 0}};
  CHECK_THROWS_WITH(fit_links(topo, Calibration{}, two), Catch::Contains("3 or more sizes"));
  std::vector<CommSample> big = {{16, 1, 4096, 1e-4, 0}, {16, 1, 8192, 2e-4, 0}, {16, 1, 16384, 3e-4, 0}};
  CHECK_THROWS_WITH(fit_links(topo, Calibration{}, big), Catch::Contains("has 8 GPUs"));
}

TEST_CASE("calibrate cli: fits a measurements file and writes a calibration that loads back") {
  // A comm measurements file as basp-validate writes it, with times simulated from the known truth.
  const Topology topo = load_topology(std::string(BASP_DATA_DIR) + "/topologies/paper-a100-2x4.yaml");
  nlohmann::json rows = nlohmann::json::array();
  for (const CommSample& s : synthetic(topo, truth(), 0.0, 1))
    rows.push_back({{"mode", s.groups == 1 ? "global" : "grouped"},
                    {"groups", s.groups},
                    {"group_size", 8 / s.groups},
                    {"size_bytes", s.size_bytes},
                    {"median_s", s.time_s}});
  const nlohmann::json file = {{"schema", "basp-measurements"},
                               {"schema_version", 1},
                               {"command", "comm"},
                               {"config", {{"ranks", 8}}},
                               {"hardware", {{"backend", "synthetic"}}},
                               {"results", rows}};
  basp::test::TempFile measurements(file.dump(), ".json");
  basp::test::TempFile out("", ".yaml");
  const auto r = basp::test::basp_cli("calibrate --topology paper-a100-2x4 -m " + measurements.path +
                                      " --out " + out.path);
  INFO(r.out);
  REQUIRE(r.code == 0);
  CHECK_THAT(r.out,
             Catch::Contains("links.nic.efficiency") && Catch::Contains("fitted") && Catch::Contains("R^2"));
  const Calibration c = load_calibration(out.path);
  // The file names its measurements: path, hash, hardware and configuration.
  std::ifstream written(out.path);
  const std::string text((std::istreambuf_iterator<char>(written)), std::istreambuf_iterator<char>());
  CHECK_THAT(text,
             Catch::Contains(measurements.path + " (fnv1a64 ") && Catch::Contains("config: {\"ranks\":8}"));
  CHECK(*c.links[LinkClass::nic].efficiency == Approx(0.75).epsilon(0.01));
  CHECK(*c.links[LinkClass::nvlink].efficiency == Approx(0.35).epsilon(0.01));
  CHECK(*c.launch_s == Approx(25e-6).epsilon(0.01));
  // The written file reproduces the measurements through `basp collective`.
  const auto sim = basp::test::basp_cli("collective --topology paper-a100-2x4 --calibration " + out.path +
                                        " --op alltoall --size 64MiB --groups 2 --json");
  REQUIRE(sim.code == 0);
  const auto j = nlohmann::json::parse(sim.out);
  CommSample probe{8, 2, 64.0 * 1048576, 0, 0};
  CHECK(j.at("time_s").get<double>() == Approx(predict_collective(topo, truth(), probe)).epsilon(0.01));
}

TEST_CASE("calibrate cli: files without all-to-all runs or of another kind are refused") {
  basp::test::TempFile compute_only(R"({"schema":"basp-measurements","schema_version":1,"command":"compute",)"
                                    R"("config":{},"hardware":{},"results":[]})",
                                    ".json");
  basp::test::TempFile out("", ".yaml");
  auto r = basp::test::basp_cli("calibrate --topology paper-a100-2x4 -m " + compute_only.path + " --out " +
                                out.path);
  CHECK(r.code == 2);
  CHECK_THAT(r.out, Catch::Contains("no collective or compute runs"));
  basp::test::TempFile other(R"({"schema":"something-else"})", ".json");
  r = basp::test::basp_cli("calibrate --topology paper-a100-2x4 -m " + other.path + " --out " + out.path);
  CHECK(r.code == 2);
  CHECK_THAT(r.out, Catch::Contains("schema") && Catch::Contains(other.path));
}

TEST_CASE("fit: compute efficiencies and their size dependence come back from noiseless runs") {
  const GpuKind& gpu = *lookup_gpu_kind("A100-40GB");
  std::vector<ComputeSample> samples;
  for (double f = 1e9; f <= 1e13; f *= 10) {
    samples.push_back({"gemm_qkv", f, (f + 2e10) / (gpu.peak_bf16_flops * 0.65), 0});  // e 0.65, F½ 20 GFLOP
    samples.push_back({"attn_fwd", f, f / (gpu.peak_bf16_flops * 0.40), 0});           // constant 0.40
  }
  samples.push_back({"attn_bwd", 1e12, 1e12 / (gpu.peak_bf16_flops * 0.30), 0});  // one size: constant
  const ComputeFit fit = fit_compute(gpu, ComputeEfficiency{}, samples);
  CHECK(fit.efficiency.gemm == Approx(0.65).epsilon(0.01));
  CHECK(fit.efficiency.gemm_half_flops == Approx(2e10).epsilon(0.01));
  CHECK(fit.efficiency.attention_forward == Approx(0.40).epsilon(0.01));
  CHECK(fit.efficiency.attention_forward_half_flops == Approx(0).margin(1e6));
  CHECK(fit.efficiency.attention_backward == Approx(0.30).epsilon(0.01));
  CHECK(fit.efficiency.memory == ComputeEfficiency{}.memory);  // not measured: untouched
  CHECK(fit.quality.max_relative_residual < 1e-6);
  std::vector<ComputeSample> impossible = {{"gemm_out", 1e12, 1e12 / (gpu.peak_bf16_flops * 1.5), 0}};
  CHECK_THROWS_WITH(fit_compute(gpu, ComputeEfficiency{}, impossible), Catch::Contains("peak is too low"));
  CHECK_THROWS_WITH(compute_class_of("conv"), Catch::Contains("unknown compute operation"));
}

TEST_CASE("fit: the memory-bound efficiencies come back from pack and rotary runs, each its own") {
  const GpuKind& gpu = *lookup_gpu_kind("A100-40GB");
  std::vector<ComputeSample> samples;
  for (double bytes = 1e6; bytes <= 1e9; bytes *= 10) {
    samples.push_back({"rotary", 0, bytes / (gpu.hbm_Bps * 0.12), 0, bytes});  // compute-bound on CPUs
    samples.push_back({"pack_qkv", 0, bytes / (gpu.hbm_Bps * 0.55), 0, bytes});
  }
  samples.push_back({"gemm_out", 1e12, 1e12 / (gpu.peak_bf16_flops * 0.7), 0});
  const ComputeFit fit = fit_compute(gpu, ComputeEfficiency{}, samples);
  CHECK(fit.memory_fitted);
  CHECK(fit.efficiency.memory == Approx(0.55).epsilon(1e-6));
  REQUIRE(fit.efficiency.rotary);
  CHECK(*fit.efficiency.rotary == Approx(0.12).epsilon(1e-6));
  // Without rotary runs it is left unset, and the cost model then gives rotary memory's rate.
  std::vector<ComputeSample> packs;
  for (const ComputeSample& s : samples)
    if (s.op != "rotary") packs.push_back(s);
  const ComputeFit without = fit_compute(gpu, ComputeEfficiency{}, packs);
  CHECK_FALSE(without.efficiency.rotary);
  CHECK(without.efficiency.rotary_or_memory() == Approx(0.55).epsilon(1e-6));
  // The copying unpack joins the packs' class; the heads' unpack (zero-fill and sum) has its own.
  std::vector<ComputeSample> unpacks = packs;
  for (double bytes = 1e6; bytes <= 1e9; bytes *= 10) {
    unpacks.push_back({"unpack_qkv", 0, bytes / (gpu.hbm_Bps * 0.55), 0, bytes});
    unpacks.push_back({"unpack_o", 0, bytes / (gpu.hbm_Bps * 0.2), 0, bytes});
  }
  const ComputeFit with_unpacks = fit_compute(gpu, ComputeEfficiency{}, unpacks);
  CHECK(with_unpacks.efficiency.memory == Approx(0.55).epsilon(1e-6));
  REQUIRE(with_unpacks.efficiency.unpack_heads);
  CHECK(*with_unpacks.efficiency.unpack_heads == Approx(0.2).epsilon(1e-6));
  CHECK(with_unpacks.quality.max_relative_residual < 1e-6);
  CHECK(fit.efficiency.gemm == Approx(0.7).epsilon(1e-6));
  CHECK(fit.quality.max_relative_residual < 1e-6);
  // Faster than the GPU kind's memory bandwidth: that figure is wrong, not the run.
  std::vector<ComputeSample> impossible = {{"pack_qkv", 0, 1e9 / (gpu.hbm_Bps * 2), 0, 1e9}};
  CHECK_THROWS_WITH(fit_compute(gpu, ComputeEfficiency{}, impossible),
                    Catch::Contains("memory bandwidth") && Catch::Contains("too low"));
}
