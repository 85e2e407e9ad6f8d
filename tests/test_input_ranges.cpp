// Physical ranges of the values people give basp (sim/common/input_ranges.hpp): each value beyond
// its range (1e308, 1e-320, 2^64, inf, nan, -1, 0, 1e12, 1e30) is refused with exit 2 and a message
// naming the field and what is allowed, wherever it enters (a measurement file, a calibration file,
// a topology file, a flag); a value at either end of its range is still accepted.
#include <catch2/catch.hpp>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "calibration.hpp"
#include "cli_helpers.hpp"
#include "input_error.hpp"
#include "input_ranges.hpp"
#include "measurements.hpp"
#include "units.hpp"

using namespace basp;
using basp::test::basp_cli;
using basp::test::replaced;
using basp::test::TempFile;

namespace {

// `basp ARGS` must exit 2 with one message naming `field` and saying what is allowed.
void refused(const std::string& args, const std::string& field, const std::string& allowed = "") {
  const basp::test::Run r = basp_cli(args);
  INFO("basp " << args << "\n" << r.out);
  CHECK(r.code == 2);
  CHECK_THAT(r.out, Catch::Contains(field));
  if (!allowed.empty()) CHECK_THAT(r.out, Catch::Contains(allowed));
  // One message, not a 300-digit bound or a figure.
  CHECK(r.out.size() < 1000);
}

void accepted(const std::string& args) {
  const basp::test::Run r = basp_cli(args, false);
  INFO("basp " << args << "\n" << r.out);
  CHECK(r.code == 0);
}

// An nccl-tests table of one row (`row` is its JSON object's inside).
std::string nccl_table(const std::string& row, const std::string& ranks = "8") {
  return R"({"schema":"basp-measurements","schema_version":1,"command":"nccl-tests","provenance":"a test",)"
         R"("hardware":{"description":"none"},"config":{"ranks":)" +
         ranks + R"(},"results":[{"op":"alltoall",)" + row + "}]}";
}
const std::string kRow = R"("size_bytes":1048576,"time_s":0.0001,"algbw_GBps":10.5,"busbw_GBps":9.2)";

std::string calibrate_args(const std::string& measurements, const TempFile& out) {
  return "calibrate --topology paper-a100-2x4 -m " + measurements + " --out " + out.path;
}

// A layer run of 2 ranks with one phase (`phase` is its JSON object's inside).
std::string layer_file(const std::string& phase, const std::string& config = "") {
  return R"({"schema":"basp-measurements","schema_version":1,"command":"layer","hardware":{},)"
         R"("config":{"precision":"fp32","heads":4,"kv_heads":2,"head_dim":8,"hidden":32,"seq":64,"batch":2,)"
         R"("ranks":2)" +
         config + R"(},"results":[{"strategy":"ulysses","group_size":2,"phases":[{"name":"a2a_q",)" + phase +
         "}]}]}";
}
const std::string kPhase = R"("median_s":0.001,"min_s":0.0009,"max_s":0.002,"send_bytes":4096)";

std::string step_file(const std::string& figure, const std::string& seq = "16384") {
  return R"({"schema":"basp-measurements","schema_version":1,"command":"step","provenance":"a test",)"
         R"("hardware":{"description":"none"},"config":{"topology":"paper-a100-2x4","seq":)" +
         seq + R"(,"batch":2,"sp":8,"zero":3,"checkpointing":true},"results":[)" + figure + "]}";
}
std::string figure(const std::string& quantity, const std::string& value) {
  const bool per_strategy = quantity == "step_s" || quantity == "a2a_s" || quantity == "a2a_share";
  return R"({"quantity":")" + quantity + "\"," + (per_strategy ? R"("strategy":"basp",)" : "") +
         R"("statistic":"value","models":["llama-3.2-1b"],"value":)" + value + "}";
}

const std::string kCalibration = R"(name: t
links:
  nic:
    efficiency: 0.7
    latency: 2 us
software:
  launch_overhead: 10 us
  per_peer_overhead: 1 us
compute:
  gemm: 0.7
  gemm_half_flops: 1e9
fit:
  parameters:
    - name: links.nic.efficiency
      value: 0.7
      sigma: "0.01"
      free: true
)";
std::string collective_with(const TempFile& calibration) {
  return "collective --topology paper-a100-2x4 --size 1MiB --calibration " + calibration.path;
}

const std::string kTopology = R"(name: t
gpu: H100-SXM
nodes: 2
software:
  launch_overhead: 10 us
  per_peer_overhead: 1 us
node:
  kind: nvswitch
  gpus: 4
  nvlink:
    bandwidth: 450 GB/s
    latency: 1 us
  pcie:
    bandwidth: 64 GB/s
    latency: 0.5 us
  nics:
    count: 4
    bandwidth: 400 Gb/s
fabric:
  kind: single-switch
  latency: 0.5 us
)";

}  // namespace

TEST_CASE("input ranges: the ends of each range are in it, and its message says what is allowed") {
  for (const PhysicalRange* r :
       {&ranges::bandwidth, &ranges::latency, &ranges::duration, &ranges::buffer_bytes, &ranges::send_bytes,
        &ranges::kernel_bytes, &ranges::flops, &ranges::efficiency, &ranges::time_ratio, &ranges::step_share,
        &ranges::sequence_tokens, &ranges::gpu_memory, &ranges::host_memory, &ranges::gpu_count,
        &ranges::micro_batch, &ranges::attention_heads, &ranges::head_dim, &ranges::hidden_size}) {
    INFO(r->allowed());
    CHECK(r->contains(r->min));
    CHECK(r->contains(r->max));
    CHECK_FALSE(r->contains(std::nextafter(r->min, -1e300)));
    CHECK_FALSE(r->contains(std::nextafter(r->max, 1e300)));
    const double inf = std::numeric_limits<double>::infinity();
    for (double nonsense : {std::numeric_limits<double>::quiet_NaN(), inf, -inf, -1.0, 1e308})
      CHECK_FALSE(r->contains(nonsense));
    CHECK(r->min >= 0);
    CHECK(std::isfinite(r->max));
  }
  // Denormals are no efficiency, and no bandwidth or time of a machine.
  for (const PhysicalRange* r : {&ranges::efficiency, &ranges::bandwidth, &ranges::duration})
    CHECK_FALSE(r->contains(1e-320));
  CHECK(ranges::bandwidth.allowed() == "a bandwidth must be at least 1 B/s and at most 1e15 B/s");
  CHECK(ranges::latency.allowed() == "a latency or overhead must be at least 0 s and at most 1 s");
  CHECK(ranges::duration.allowed() == "a measured time must be at least 1e-9 s and at most 1e6 s");
  CHECK(ranges::buffer_bytes.allowed() == "a rank's buffer must be at least 1 B and at most 1 TiB");
  CHECK(ranges::gpu_memory.bounds() == "[1 B, 4 TiB]");
  CHECK(ranges::sequence_tokens.allowed() ==
        "a sequence length (tokens) must be at least 1 and at most 16777216 (2^24)");
  CHECK(out_of_range(1e308, ranges::duration) == "'1e308 s' is out of range: " + ranges::duration.allowed());
  try {
    require_in_range(2.0, ranges::efficiency, "f.yaml", 3, "compute.gemm");
    FAIL("an efficiency of 2 passed");
  } catch (const InputError& e) {
    CHECK(e.file == "f.yaml");
    CHECK(e.line == 3);
    CHECK(e.field == "compute.gemm");
  }
}

TEST_CASE("input ranges: basp calibrate refuses sizes, times and bandwidths no machine has") {
  TempFile out("", ".yaml");
  struct Case { std::string from, to, field, allowed; };
  const Case cases[] = {
      {"\"size_bytes\":1048576", "\"size_bytes\":-1", "results[0].size_bytes", "at most 1 TiB"},
      {"\"size_bytes\":1048576", "\"size_bytes\":0", "results[0].size_bytes", "at most 1 TiB"},
      {"\"size_bytes\":1048576", "\"size_bytes\":1e-320", "results[0].size_bytes", "at most 1 TiB"},
      {"\"size_bytes\":1048576", "\"size_bytes\":18446744073709551616", "results[0].size_bytes", "at most 1 TiB"},
      {"\"time_s\":0.0001", "\"time_s\":1e308", "results[0].time_s", "at most 1e6 s"},
      {"\"time_s\":0.0001", "\"time_s\":1e-320", "results[0].time_s", "at least 1e-9 s"},
      {"\"time_s\":0.0001", "\"time_s\":-1", "results[0].time_s", "at least 1e-9 s"},
      {"\"algbw_GBps\":10.5", "\"algbw_GBps\":-1", "results[0].algbw_GBps", "a bandwidth must be"},
      {"\"algbw_GBps\":10.5", "\"algbw_GBps\":0", "results[0].algbw_GBps", "a bandwidth must be"},
      {"\"algbw_GBps\":10.5", "\"algbw_GBps\":1e-320", "results[0].algbw_GBps", "a bandwidth must be"},
      {"\"busbw_GBps\":9.2", "\"busbw_GBps\":1e308", "results[0].busbw_GBps", "a bandwidth must be"},
      {"\"busbw_GBps\":9.2", "\"busbw_GBps\":1e-320", "results[0].busbw_GBps", "or 0 for a group of one rank"},
      // 1 TiB in a nanosecond: 1e21 B/s, faster than any link.
      {"\"size_bytes\":1048576,\"time_s\":0.0001", "\"size_bytes\":1099511627776,\"time_s\":1e-9", "results[0]",
       "faster than any link"},
  };
  for (const Case& c : cases) {
    TempFile f(replaced(nccl_table(kRow), c.from, c.to), ".json");
    refused(calibrate_args(f.path, out), "field '" + c.field + "'", c.allowed);
  }
  // Counts: the table's ranks, a comm run's groups.
  TempFile ranks(nccl_table(kRow, "1e12"), ".json");
  refused(calibrate_args(ranks.path, out), "config.ranks", "at most 16777216");
  TempFile groups(R"({"schema":"basp-measurements","schema_version":1,"command":"comm","hardware":{},)"
                  R"("config":{"ranks":2},"results":[{"groups":1e308,"size_bytes":8,"median_s":1}]})",
                  ".json");
  refused(calibrate_args(groups.path, out), "results[0].groups", "at most 16777216");
  TempFile comm_time(R"({"schema":"basp-measurements","schema_version":1,"command":"comm","hardware":{},)"
                     R"("config":{"ranks":2},"results":[{"groups":1,"size_bytes":8,"median_s":1e308}]})",
                     ".json");
  refused(calibrate_args(comm_time.path, out), "results[0].median_s", "at most 1e6 s");
  // Compute runs: FLOPs, bytes, times and their GB/s.
  const std::string compute_head = R"({"schema":"basp-measurements","schema_version":1,"command":"compute",)"
                                   R"("config":{},"hardware":{},"results":[)";
  for (const auto& [row, field] : std::vector<std::pair<std::string, std::string>>{
           {R"({"op":"gemm_qkv","flops":1e308,"median_s":0.01})", "results[0].flops"},
           {R"({"op":"gemm_qkv","flops":1e12,"median_s":1e308})", "results[0].median_s"},
           {R"({"op":"rotary","flops":0,"bytes":18446744073709551616e3,"median_s":0.01})", "results[0].bytes"},
           {R"({"op":"rotary","flops":0,"bytes":1e6,"median_s":0.01,"gbps":-1})", "results[0].gbps"}}) {
    TempFile f(compute_head + row + "]}", ".json");
    refused(calibrate_args(f.path, out), field);
  }
}

TEST_CASE("input ranges: measured values at the ends of their ranges are read") {
  // Sizes 1 B and 1 TiB, times 1 ns (1 B) and 1e6 s, bandwidths 1 B/s and 1e15 B/s.
  TempFile low(replaced(nccl_table(kRow), kRow,
                        R"("size_bytes":1,"time_s":1e-9,"algbw_GBps":1e-9,"busbw_GBps":1e6)"),
               ".json");
  // A bus bandwidth of 0: a group of one rank (busbw = algbw (P-1)/P), as basp-validate writes it.
  TempFile high(replaced(nccl_table(kRow, "16777216"), kRow,
                         R"("size_bytes":1099511627776,"time_s":1e6,"algbw_GBps":1e6,"busbw_GBps":0)"),
                ".json");
  const fitting::Measurements m = fitting::read_measurements({low.path, high.path});
  REQUIRE(m.comm.size() == 2);
  CHECK(m.comm[0].size_bytes == 1);
  CHECK(m.comm[0].time_s == 1e-9);
  CHECK(m.comm[1].size_bytes == 1099511627776.0);
  CHECK(m.comm[1].time_s == 1e6);
  CHECK(m.comm[1].ranks == 16777216);
  // A phase of 1 ns sending nothing, a sequence of 2^24 tokens; step figures at their ends.
  TempFile layer(layer_file(R"("median_s":1e-9,"min_s":1e-9,"max_s":1e6,"send_bytes":0)", ""), ".json");
  const fitting::Measurements l = fitting::read_measurements({layer.path});
  REQUIRE(l.layers.size() == 1);
  CHECK(l.layers[0].strategies[0].phases[0].max_s == 1e6);
  TempFile long_seq(replaced(layer_file(kPhase), "\"seq\":64", "\"seq\":16777216"), ".json");
  CHECK(fitting::read_measurements({long_seq.path}).layers[0].seq == 16777216);
  TempFile steps(step_file(figure("step_s", "1e6") + "," + figure("a2a_s", "1e-9") + "," + figure("speedup", "1e3") +
                               "," + figure("a2a_reduction", "1e-3") + "," + figure("a2a_share", "1e-6"),
                           "16777216"),
                 ".json");
  CHECK(fitting::read_measurements({steps.path}).steps.size() == 5);
}

TEST_CASE("input ranges: basp check refuses a 1e308 time, figure or sequence") {
  for (const auto& [phase, field] : std::vector<std::pair<std::string, std::string>>{
           {R"("median_s":1e308,"min_s":1,"max_s":1e308,"send_bytes":4096)", ".median_s"},
           {R"("median_s":0.001,"min_s":0.0009,"max_s":1e308,"send_bytes":4096)", ".max_s"},
           {R"("median_s":0.001,"min_s":1e-320,"max_s":0.002,"send_bytes":4096)", ".min_s"},
           {R"("median_s":0.001,"min_s":0.0009,"max_s":0.002,"send_bytes":-1)", ".send_bytes"},
           {R"("median_s":0.001,"min_s":0.0009,"max_s":0.002,"send_bytes":18446744073709551616)", ".send_bytes"},
           {R"("median_s":0.001,"min_s":0.0009,"max_s":0.002,"send_bytes":4096,"isolated_median_s":1e308)",
            ".isolated_median_s"}}) {
    TempFile f(layer_file(phase), ".json");
    refused("check --topology localhost-cpu -m " + f.path, "results[0].phases[0]" + field);
  }
  // The layer's shape: a sequence of 1e12 tokens, a million heads.
  TempFile seq(replaced(layer_file(kPhase), "\"seq\":64", "\"seq\":1e12"), ".json");
  refused("check --topology localhost-cpu -m " + seq.path, "config.seq", "at most 16777216");
  TempFile heads(replaced(layer_file(kPhase), "\"heads\":4", "\"heads\":1048576"), ".json");
  refused("check --topology localhost-cpu -m " + heads.path, "config.heads", "at most 4096");
  // Step figures: times, ratios and shares; the setting's sequence.
  for (const auto& [quantity, value] : std::vector<std::pair<std::string, std::string>>{
           {"step_s", "1e308"}, {"a2a_s", "1e-320"}, {"speedup", "1e308"}, {"a2a_reduction", "1e30"},
           {"a2a_share", "1e-320"}}) {
    TempFile f(step_file(figure(quantity, value)), ".json");
    refused("check --topology paper-a100-2x4 -m " + f.path, "results[0].value");
  }
  TempFile step_seq(step_file(figure("speedup", "1.2"), "1e12"), ".json");
  refused("check --topology paper-a100-2x4 -m " + step_seq.path, "config.seq", "at most 16777216");
}

TEST_CASE("input ranges: a calibration file's link, software and compute values are in range") {
  struct Case { std::string from, to, field; };
  const Case cases[] = {
      {"efficiency: 0.7", "efficiency: 18446744073709551616", "links.nic.efficiency"},
      {"efficiency: 0.7", "efficiency: 1e-320", "links.nic.efficiency"},
      {"efficiency: 0.7", "efficiency: 0", "links.nic.efficiency"},
      {"latency: 2 us", "latency: 18446744073709551616 s", "links.nic.latency"},
      {"latency: 2 us", "latency: 1e308 s", "links.nic.latency"},
      {"latency: 2 us", "latency: -1 s", "links.nic.latency"},
      {"launch_overhead: 10 us", "launch_overhead: 1e308 s", "software.launch_overhead"},
      {"per_peer_overhead: 1 us", "per_peer_overhead: 2 s", "software.per_peer_overhead"},
      {"gemm: 0.7", "gemm: 0", "compute.gemm"},
      {"gemm: 0.7", "gemm: 1e-320", "compute.gemm"},
      {"gemm: 0.7", "gemm: nan", "compute.gemm"},
      {"gemm: 0.7", "gemm: 0.7\n  memory: 1e-7", "compute.memory"},
      {"gemm: 0.7", "gemm: 0.7\n  rotary: 1e-320", "compute.rotary"},
      {"gemm_half_flops: 1e9", "gemm_half_flops: 1e30", "compute.gemm_half_flops"},
      // fit.parameters: a value in its parameter's range, a name that is a parameter.
      {"      value: 0.7", "      value: 18446744073709551616", "fit.parameters[0].value"},
      {"    - name: links.nic.efficiency\n      value: 0.7",
       "    - name: software.launch_overhead\n      value: 1e308", "fit.parameters[0].value"},
      {"    - name: links.nic.efficiency\n      value: 0.7", "    - name: compute.gemm\n      value: 1e-320",
       "fit.parameters[0].value"},
      {"    - name: links.nic.efficiency", "    - name: links.nic.bogus", "fit.parameters[0].name"},
  };
  for (const Case& c : cases) {
    TempFile cal(replaced(kCalibration, c.from, c.to));
    INFO(c.from << " -> " << c.to);
    refused(collective_with(cal), "field '" + c.field + "'");
    try {
      load_calibration(cal.path);
      FAIL("accepted");
    } catch (const InputError& e) {
      CHECK(e.file == cal.path);
      CHECK(e.line > 0);
      CHECK(e.field == c.field);
    }
  }
}

TEST_CASE("input ranges: calibration values at the ends of their ranges are used") {
  std::string low = replaced(kCalibration, "efficiency: 0.7", "efficiency: 1e-6");
  low = replaced(low, "latency: 2 us", "latency: 0 s");
  low = replaced(low, "launch_overhead: 10 us", "launch_overhead: 0 s");
  low = replaced(low, "gemm: 0.7", "gemm: 1e-6");
  low = replaced(low, "gemm_half_flops: 1e9", "gemm_half_flops: 0");
  TempFile low_file(low);
  accepted(collective_with(low_file));
  std::string high = replaced(kCalibration, "efficiency: 0.7", "efficiency: 1");
  high = replaced(high, "latency: 2 us", "latency: 1 s");
  high = replaced(high, "per_peer_overhead: 1 us", "per_peer_overhead: 1 s");
  high = replaced(high, "gemm: 0.7", "gemm: 1");
  high = replaced(high, "gemm_half_flops: 1e9", "gemm_half_flops: 1e24");
  high = replaced(high, "      value: 0.7", "      value: 1");
  TempFile high_file(high);
  accepted(collective_with(high_file));
  const Calibration c = load_calibration(high_file.path);
  CHECK(*c.links[LinkClass::nic].latency_s == 1.0);
  CHECK(c.compute.gemm_half_flops == 1e24);
}

TEST_CASE("input ranges: a topology's bandwidths, latencies and overheads are in range") {
  struct Case { std::string from, to, field; };
  const Case cases[] = {
      {"bandwidth: 450 GB/s", "bandwidth: 2e15 B/s", "node.nvlink.bandwidth"},
      {"bandwidth: 450 GB/s", "bandwidth: 1e-320 B/s", "node.nvlink.bandwidth"},
      {"bandwidth: 64 GB/s", "bandwidth: 0.5 B/s", "node.pcie.bandwidth"},
      {"bandwidth: 400 Gb/s", "bandwidth: 18446744073709551616 B/s", "node.nics.bandwidth"},
      {"latency: 1 us", "latency: 1e308 s", "node.nvlink.latency"},
      {"latency: 0.5 us\n  nics", "latency: 2 s\n  nics", "node.pcie.latency"},
      {"kind: single-switch\n  latency: 0.5 us", "kind: single-switch\n  latency: 1e30 s", "fabric.latency"},
      {"launch_overhead: 10 us", "launch_overhead: 1e308 s", "software.launch_overhead"},
      {"per_peer_overhead: 1 us", "per_peer_overhead: 18446744073709551616 us", "software.per_peer_overhead"},
  };
  for (const Case& c : cases) {
    TempFile topo(replaced(kTopology, c.from, c.to));
    refused("topo --topology " + topo.path, "field '" + c.field + "'");
  }
  // The ends: 1 B/s and 1e15 B/s, latencies and overheads of 0 s and 1 s.
  std::string edges = replaced(kTopology, "bandwidth: 450 GB/s", "bandwidth: 1e15 B/s");
  edges = replaced(edges, "bandwidth: 64 GB/s", "bandwidth: 1 B/s");
  edges = replaced(edges, "latency: 1 us", "latency: 1 s");
  edges = replaced(edges, "latency: 0.5 us", "latency: 0 s");
  edges = replaced(edges, "launch_overhead: 10 us", "launch_overhead: 1 s");
  TempFile topo(edges);
  accepted("topo --topology " + topo.path);
  accepted("collective --topology " + topo.path + " --calibration none --size 1MiB");
}

TEST_CASE("input ranges: a sequence beyond 2^24 tokens is refused by simulate, sweep and plan") {
  const std::string job = "--topology paper-a100-2x4 --model llama-3.2-1b ";
  for (const char* seq : {"1e12", "16777217", "1099511627776", "16385K", "inf", "nan", "-1", "0"}) {
    refused("simulate " + job + "--seq " + seq, "--seq");
    refused("sweep " + job + "--vary seq=" + std::string(seq), "field '--seq'");
    refused("plan " + job + "--global-batch 8 --seq " + seq, "--seq");
  }
  const basp::test::Run r = basp_cli("simulate " + job + "--seq 1e12");
  CHECK_THAT(r.out, Catch::Contains("at most 16777216 (2^24)"));
  // The ends: 2^24 (16M) tokens are simulated; 1 token passes the range, and Ulysses over 8 ranks
  // then refuses it for its own reason.
  for (const char* seq : {"16M", "16777216"}) accepted("simulate " + job + "--strategy ulysses --seq " + seq);
  accepted("sweep " + job + "--strategy ulysses --vary seq=16M");
  CHECK(parse_tokens("16M", "--seq") == 16777216);
  CHECK(parse_tokens("1", "--seq") == 1);
  const basp::test::Run one = basp_cli("simulate " + job + "--strategy ulysses --seq 1");
  CHECK_THAT(one.out, Catch::Contains("does not divide 1") && !Catch::Contains("out of range"));
}

TEST_CASE("input ranges: plan's --memory-limit and --sim-memory are a GPU's and a host's memory") {
  const std::string job = "plan --topology paper-a100-2x4 --model llama-3.2-1b --seq 4K --global-batch 8 "
                          "--strategy ulysses,basp ";
  for (const char* limit : {"1e30", "5TiB", "18446744073709551616", "0", "-1", "inf", "nan"})
    refused(job + "--memory-limit " + limit, "field '--memory-limit'", "at most 4 TiB");
  for (const char* budget : {"1e30", "2PiB", "0", "1e-320", "inf"})
    refused(job + "--sim-memory " + budget, "field '--sim-memory'", "at most 1 PiB");
  accepted(job + "--memory-limit 4TiB --sim-memory 1024TiB");
  // 1 B pass the ranges; then no layout fits in it, or can be simulated within it.
  const basp::test::Run limit = basp_cli(job + "--memory-limit 1");
  CHECK_THAT(limit.out, Catch::Contains("fits in 1 B per GPU") && !Catch::Contains("out of range"));
  const basp::test::Run budget = basp_cli(job + "--sim-memory 1");
  CHECK_THAT(budget.out, Catch::Contains("no layout can be simulated") && !Catch::Contains("out of range"));
}

TEST_CASE("input ranges: simulate's --sim-memory is a host's memory, its micro-batches and GPU counts") {
  for (const char* budget : {"1e30", "2PiB", "0", "1e-320", "inf"})
    refused("simulate --sim-memory " + std::string(budget), "field '--sim-memory'", "at most 1 PiB");
  accepted("simulate --sim-memory 1024TiB");
  for (const char* batch : {"0", "2000000", "1e30", "nan"}) refused("simulate --batch " + std::string(batch), "--batch");
  refused("simulate --replica-batch 0 --strategy sp-dp", "--replica-batch");
  refused("simulate --gpus 99999999", "--gpus");
  accepted("simulate --sp 0 --gpus 0");  // 0: the defaults
}

TEST_CASE("input ranges: collective's --groups, sizes and factor") {
  const std::string base = "collective --topology paper-a100-2x4 ";
  for (const char* g : {"inf", "nan", "1e308", "0", "-1", "1.5", "99999999999"}) {
    refused(base + "--size 1MiB -g " + g, "--groups", "at most 16777216");
    const basp::test::Run r = basp_cli(base + "--size 1MiB -g " + g);
    CHECK_THAT(r.out, !Catch::Contains("179769313486231570814527423731704356798070567525844996598917476803157"));
  }
  accepted(base + "--size 1MiB -g 1");
  // 2^24 groups pass the range: the topology's 8 GPUs refuse them.
  refused(base + "--size 1MiB -g 16777216", "do not divide 8 ranks");
  for (const char* size : {"18446744073709551616", "1e30", "inf", "nan", "-1", "0", "0.5"}) {
    refused(base + "--size " + size, "field '--size'", "1 TiB");
    refused(base + "-b " + std::string(size) + " -e 1MiB", "field '-b'");
    refused(base + "-b 1 -e " + std::string(size), "field '-e'");
  }
  for (const char* factor : {"inf", "nan", "1e308", "1", "-1", "1099511627777"})
    refused(base + "-b 1 -e 1MiB -f " + factor, "field '-f'", "at most 1099511627776");
  accepted(base + "--size 1 --json");
  accepted(base + "-b 1 -e 1TiB -f 1099511627776");
  accepted(base + "-b 1TiB -e 1TiB");
}

TEST_CASE("input ranges: --uncertainty keeps a poorly fitted overhead within 1 s") {
  const std::string cal_text = replaced(kCalibration,
                                        "    - name: links.nic.efficiency\n      value: 0.7\n      sigma: \"0.01\"",
                                        "    - name: software.launch_overhead\n      value: 1e-5\n      sigma: \"1e300\"");
  TempFile cal(cal_text);
  const basp::test::Run r = basp_cli("simulate --model llama-3.2-1b --strategy ulysses --uncertainty --json "
                                     "--calibration " + cal.path, false);
  INFO(r.out);
  REQUIRE(r.code == 0);
  const auto j = nlohmann::json::parse(r.out);
  bool seen = false;
  for (const auto& p : j.at("uncertainty").at("parameters"))
    if (p.at("name") == "software.launch_overhead") {
      seen = true;
      CHECK(p.at("high").get<double>() == 1.0);
      CHECK(p.at("low").get<double>() == 0.0);
    }
  CHECK(seen);
}

TEST_CASE("input ranges: a compute fit below a millionth of the peak is refused, not written") {
  // 1e6 FLOPs in 1000 s: a billionth of any GPU's peak.
  TempFile compute(R"({"schema":"basp-measurements","schema_version":1,"command":"compute","config":{},)"
                   R"("hardware":{},"results":[{"op":"gemm_qkv","flops":1e6,"median_s":1000}]})",
                   ".json");
  TempFile out("", ".yaml");
  refused(calibrate_args(compute.path, out), "field '--measurements'", "an efficiency must be at least 1e-6");
}

// The fuzz seeds at the ends of the ranges start the fuzzers where the checks are: each `edges`
// file must load, each `beyond` file be refused by field (tests/fuzz/README.md).
TEST_CASE("input ranges: the fuzz seeds at the ends of the ranges load, those beyond are refused") {
  const std::string seeds = std::string(BASP_DATA_DIR) + "/tests/fuzz/seeds/";
  for (const char* f : {"nccl-tests-edges.json", "layer-edges.json", "compute-edges.json", "step-edges.json"}) {
    INFO(f);
    CHECK_NOTHROW(fitting::read_measurements({seeds + "measurements/" + f}));
  }
  const Calibration edges = load_calibration(seeds + "calibration/edges.yaml");
  CHECK(*edges.links[LinkClass::nic].efficiency == 1e-6);
  CHECK(*edges.per_peer_s == 1.0);
  accepted("topo --topology " + seeds + "topology/edges.yaml");
  refused("calibrate --topology paper-a100-2x4 -m " + seeds + "measurements/nccl-tests-beyond.json --out /dev/null",
          "results[0].size_bytes");
  refused("collective --size 1MiB --calibration " + seeds + "calibration/beyond.yaml", "links.nic.efficiency");
  refused("topo --topology " + seeds + "topology/beyond.yaml", "node.nvlink.bandwidth");
}
