// `basp simulate` as users run it: the default scenario, the JSON contract (config + results with
// the documented keys), CSV, a trace that is valid trace-event JSON, bad input exiting 2.
#include "cli_helpers.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <chrono>
#include <fstream>
#include <set>
#include <sstream>

using basp::test::basp_cli;
using basp::test::Run;

namespace {
std::vector<std::string> lines_of(const std::string& text) {
  std::istringstream in(text);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}
}  // namespace

TEST_CASE("simulate: no arguments runs the paper's default scenario") {
  const Run r = basp_cli("simulate");
  REQUIRE(r.code == 0);
  CHECK_THAT(r.out, Catch::Contains("llama-3.2-1b on paper-a100-2x4"));
  CHECK_THAT(r.out, Catch::Contains("sequence 16384 tokens, micro-batch 2"));
  CHECK_THAT(r.out, Catch::Contains("ZeRO-3"));
  CHECK_THAT(r.out, Catch::Contains("ulysses"));
  CHECK_THAT(r.out, Catch::Contains("basp"));
  CHECK_THAT(r.out, Catch::Contains("fits"));
}

TEST_CASE("simulate: --json holds config and one result per strategy with the documented keys") {
  const Run r = basp_cli("simulate --json --links --strategy ulysses,basp,ring", false);
  REQUIRE(r.code == 0);
  const auto j = nlohmann::json::parse(r.out);
  const auto& c = j.at("config");
  CHECK(c.at("topology") == "paper-a100-2x4");
  CHECK(c.at("model") == "llama-3.2-1b");
  CHECK(c.at("seq") == 16384);
  CHECK(c.at("batch") == 2);
  CHECK(c.at("sp") == 8);
  CHECK(c.at("gpus") == 8);
  CHECK(c.at("zero") == 3);
  CHECK(c.at("precision") == "bf16");
  CHECK(c.at("calibration").at("name") == "paper-a100-2x4");
  REQUIRE(j.at("results").size() == 3);
  for (const auto& res : j.at("results")) {
    for (const char* key : {"strategy", "step_s", "compute_s", "a2a_s", "a2a_exposed_s", "a2a_share", "zero_comm_s",
                            "memory_per_gpu_bytes", "tokens_per_s", "mfu", "speedup_vs_ulysses", "busiest_links"})
      CHECK(res.contains(key));
    CHECK(res.at("step_s").get<double>() > 0);
    CHECK(res.at("a2a_share").get<double>() == Approx(res.at("a2a_s").get<double>() / res.at("step_s").get<double>()));
    CHECK(res.at("busiest_links").size() == 10);
  }
  CHECK(j["results"][0]["speedup_vs_ulysses"] == 1.0);
}

// System: the paper cluster at N = 1 (every GPU its own sequences). Expectations: the strategies
// asked for are one row, dp, which makes no exchange call and equals a ring of one rank exactly;
// the report says which strategies it stands for and gives no speedup (no Ulysses to compare);
// --strategy dp alone takes N = 1, and with --sp 8 it is refused naming --sp.
TEST_CASE("simulate: at N = 1 the strategies asked for are one layout, dp") {
  const Run r = basp_cli("simulate --sp 1 --json --checkpointing", false);
  REQUIRE(r.code == 0);
  const auto j = nlohmann::json::parse(r.out);
  CHECK(j.at("config").at("strategies") == nlohmann::json::array({"dp"}));
  CHECK(j.at("config").at("strategies_as_dp") == nlohmann::json::array({"ulysses", "basp"}));
  CHECK(j.at("config").at("baseline").is_null());
  REQUIRE(j.at("results").size() == 1);
  const auto& dp = j.at("results")[0];
  CHECK(dp.at("strategy") == "dp");
  CHECK(dp.at("a2a_s") == 0.0);
  CHECK(dp.at("speedup_vs_ulysses").is_null());
  const Run ring = basp_cli("simulate --sp 1 --json --checkpointing --strategy ring", false);
  REQUIRE(ring.code == 0);
  const auto ring_json = nlohmann::json::parse(ring.out);
  const auto& as_ring = ring_json.at("results")[0];
  CHECK(as_ring.at("strategy") == "dp");
  CHECK(as_ring.at("step_s") == dp.at("step_s"));
  const Run table = basp_cli("simulate --sp 1 --checkpointing", false);
  CHECK_THAT(table.out, Catch::Contains("N = 1: ulysses, basp keep every sequence whole on one rank"));
  const Run alone = basp_cli("simulate --strategy dp --json --checkpointing", false);
  REQUIRE(alone.code == 0);
  CHECK(nlohmann::json::parse(alone.out).at("config").at("sp") == 1);
  CHECK(nlohmann::json::parse(alone.out).at("results")[0].at("step_s") == dp.at("step_s"));
  const Run refused = basp_cli("simulate --strategy dp --sp 8");
  CHECK(refused.code == 2);
  CHECK_THAT(refused.out, Catch::Contains("--sp") && Catch::Contains("dp keeps every sequence whole on one rank"));
}

TEST_CASE("simulate: the same input gives the same output") {
  auto without_wall = [](std::string s) {
    nlohmann::json j = nlohmann::json::parse(s);
    for (auto& r : j["results"]) r.erase("wall_s");
    return j.dump();
  };
  const Run a = basp_cli("simulate --json --model qwen3-1.7b --strategy ulysses,basp,usp", false);
  const Run b = basp_cli("simulate --json --model qwen3-1.7b --strategy ulysses,basp,usp", false);
  REQUIRE(a.code == 0);
  CHECK(without_wall(a.out) == without_wall(b.out));
}

TEST_CASE("simulate: --csv prints a header and one row per strategy") {
  const Run r = basp_cli("simulate --csv --strategy ulysses,basp,sp-dp", false);
  REQUIRE(r.code == 0);
  const std::vector<std::string> lines = lines_of(r.out);
  REQUIRE(lines.size() == 4);
  CHECK(lines[0].rfind("strategy,topology,model,", 0) == 0);
  CHECK(lines[0].substr(lines[0].size() - 14) == ",engine,wall_s");
  CHECK(lines[3].rfind("sp-dp,paper-a100-2x4,llama-3.2-1b,8,8,16384,2,", 0) == 0);
  CHECK_THAT(lines[3], Catch::Contains(",classes,"));  // two nodes on one switch fold
}

TEST_CASE("simulate: --trace writes valid trace-event JSON with GPU streams and link counters") {
  basp::test::TempFile trace("", ".json");
  const Run r = basp_cli("simulate --strategy ulysses,ring --trace " + trace.path);
  REQUIRE(r.code == 0);
  std::ifstream in(trace.path);
  const auto j = nlohmann::json::parse(in);
  REQUIRE(j.contains("traceEvents"));
  std::set<std::string> phases, threads;
  int complete = 0, counters = 0;
  for (const auto& e : j["traceEvents"]) {
    const std::string ph = e.at("ph");
    phases.insert(ph);
    CHECK(e.contains("pid"));
    if (ph == "X") {
      ++complete;
      CHECK(e.at("dur").get<double>() > 0);
      CHECK(e.at("ts").get<double>() >= 0);
    }
    if (ph == "C") ++counters;
    if (ph == "M" && e.at("name") == "thread_name") threads.insert(e.at("args").at("name").get<std::string>());
  }
  CHECK(complete > 1000);
  CHECK(counters > 100);
  CHECK(threads == std::set<std::string>{"compute", "sequence-parallel exchange", "ZeRO gather", "ZeRO reduce"});
}

TEST_CASE("simulate: bad input exits 2 with one message naming the flag") {
  struct Case {
    const char* args;
    const char* says;
  };
  for (const Case& c : {Case{"simulate --seq 16Q", "--seq"}, Case{"simulate --strategy warp", "--strategy"},
                        Case{"simulate --batch 3", "--batch"}, Case{"simulate --model gpt-5", "no models named"},
                        Case{"simulate --zero 4", "--zero"}, Case{"simulate --gpus 12", "--gpus"},
                        Case{"simulate --strategy ulysses,ulysses", "named twice"},
                        Case{"simulate --calibration nope", "no calibrations named"},
                        Case{"simulate --model qwen1.5-1.8b --topology dgx-h100 --nodes 4 --sp 32", "--sp"}}) {
    INFO(c.args);
    const Run r = basp_cli(c.args);
    CHECK(r.code == 2);
    CHECK_THAT(r.out, Catch::Contains(c.says));
  }
}

// The host memory guard: a scenario whose engine would not fit the host memory is refused before any
// engine is built, saying the estimate, the engine and what to change.
TEST_CASE("simulate: a scenario over the host memory budget is refused with its estimate (exit 2)") {
  // 16,384 ranks on the full engine: about 2.1e7 flows and 5.8 GiB by estimate (the run holds
  // 3.5 GiB resident and takes 20 s); refused within the time it takes to build the cluster.
  const auto start = std::chrono::steady_clock::now();
  const Run r = basp_cli(
      "simulate --topology dgx-h100 --nodes 2048 --engine full --model llama-3.1-8b --seq 32K --sp 32 --batch 4 "
      "--sim-memory 4GiB");
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  INFO(r.out);
  CHECK(r.code == 2);
  CHECK(lines_of(r.out).size() == 1);
  CHECK_THAT(r.out, Catch::Contains("field '--sim-memory'") && Catch::Contains("the full engine (all 16384 ranks)") &&
                        Catch::Contains("e+07 flows") && Catch::Contains("GiB of host memory, more than the 4 GiB") &&
                        Catch::Contains("raise --sim-memory") && Catch::Contains("--engine auto (alike ranks"));
  CHECK(wall < 10.0);
  // Only what would help is offered: where auto already ran the full engine (jitter makes the
  // ranks differ), the message says why classes do not apply instead of offering --engine auto.
  const Run jitter = basp_cli(
      "simulate --topology dgx-h100 --nodes 2048 --compute-jitter 0.05 --model llama-3.1-8b --seq 32K --sp 32 "
      "--batch 4 --sim-memory 4GiB");
  INFO(jitter.out);
  CHECK(jitter.code == 2);
  CHECK(lines_of(jitter.out).size() == 1);
  CHECK_THAT(jitter.out, Catch::Contains("the class engine does not apply (stragglers or jitter") &&
                             Catch::Contains("fewer --nodes") &&
                             Catch::Contains("raise --sim-memory") && !Catch::Contains("--engine auto"));
  // The same job on the class engine fits: it runs.
  const Run folded = basp_cli(
      "simulate --topology dgx-h100 --nodes 2048 --model llama-3.1-8b --seq 32K --sp 32 --batch 4 --sim-memory 4GiB");
  INFO(folded.out);
  CHECK(folded.code == 0);
  for (const char* bad : {"--sim-memory 0", "--sim-memory 12Q"}) {
    const Run b = basp_cli(std::string("simulate ") + bad);
    CHECK(b.code == 2);
    CHECK_THAT(b.out, Catch::Contains("--sim-memory"));
  }
}

// On a terminal a run over 2 s shows a progress line (run, share of the engine's tasks, time left)
// and erases it; into a file or pipe it prints nothing extra.
TEST_CASE("simulate: progress with time left on a terminal only") {
  const std::string job = "simulate --topology dgx-h100 --nodes 256 --sp 32 --engine full";  // about 6 s here
  const Run tty = basp::test::run_command("script -qec '" + std::string(BASP_BINARY) + " " + job +
                                          " >/dev/null' /dev/null");
  REQUIRE(tty.code == 0);
  CHECK_THAT(tty.out, Catch::Contains("simulate: run ") && Catch::Contains("% of its tasks") &&
                          Catch::Contains("s so far, about "));
  const Run piped = basp_cli(job + " --csv");
  REQUIRE(piped.code == 0);
  CHECK_THAT(piped.out, !Catch::Contains("simulate: run"));
}

TEST_CASE("sweep: the cross product of --vary values - one CSV row per combination and strategy") {
  const Run r = basp_cli("sweep --vary seq=8K,16K --vary batch=2,4 --csv", false);
  REQUIRE(r.code == 0);
  const std::vector<std::string> lines = lines_of(r.out);
  REQUIRE(lines.size() == 1 + 4 * 2);
  CHECK(lines[0].rfind("seq,batch,strategy,", 0) == 0);
  CHECK(lines[1].rfind("8K,2,ulysses,paper-a100-2x4,llama-3.2-1b,8,8,8192,2,", 0) == 0);
  CHECK(lines[8].rfind("16K,4,basp,paper-a100-2x4,llama-3.2-1b,8,8,16384,4,", 0) == 0);
}

TEST_CASE("sweep: the fixed flags hold in every row, --topology and --engine too") {
  // Each combination is parsed again on top of the fixed arguments; the topology once fell back
  // to the default there.
  const Run r = basp_cli("sweep --topology dgx-h100 --nodes 8 --sp 16 --vary engine=full,auto --csv", false);
  REQUIRE(r.code == 0);
  const std::vector<std::string> lines = lines_of(r.out);
  REQUIRE(lines.size() == 1 + 2 * 2);
  CHECK(lines[1].rfind("full,ulysses,dgx-h100,llama-3.2-1b,64,16,16384,", 0) == 0);
  CHECK(lines[4].rfind("auto,basp,dgx-h100,llama-3.2-1b,64,16,16384,", 0) == 0);
  // Both engines give the same step time (the CSV's step_s column, found by its name), to rounding.
  auto column = [](const std::string& row, int index) {
    std::istringstream fields(row);
    std::string field;
    for (int i = 0; i <= index; ++i) std::getline(fields, field, ',');
    return field;
  };
  int step_s = 0;
  while (step_s < 40 && column(lines[0], step_s) != "step_s") ++step_s;
  REQUIRE(step_s < 40);
  auto step = [&](const std::string& row) { return std::stod(column(row, step_s)); };
  CHECK(step(lines[1]) > 0.0);
  CHECK(step(lines[3]) == Approx(step(lines[1])).epsilon(1e-9));
  CHECK(step(lines[4]) == Approx(step(lines[2])).epsilon(1e-9));
}

TEST_CASE("sweep: an impossible combination is a row with its reason - a bad key exits 2") {
  const Run r = basp_cli("sweep --vary batch=2,3");
  REQUIRE(r.code == 0);
  CHECK_THAT(r.out, Catch::Contains("not possible"));
  CHECK_THAT(r.out, Catch::Contains("--batch"));
  const Run bad = basp_cli("sweep --vary colour=red");
  CHECK(bad.code == 2);
  CHECK_THAT(bad.out, Catch::Contains("'colour' is not a simulate flag"));
  const Run none = basp_cli("sweep --vary batch=3,5");
  CHECK(none.code == 2);
  const Run value = basp_cli("sweep --vary zero=7");
  CHECK(value.code == 2);
}

TEST_CASE("simulate, collective, plan: outages in the report and the JSON, bad outages exiting 2") {
  const std::string cluster = "--topology dgx-h100 --nodes 6 --nodes-per-leaf 4 --spines 2 ";
  const Run text = basp_cli("simulate " + cluster + "--exclude-nodes 1,3 --down-links rail0.leaf0--spine1");
  REQUIRE(text.code == 0);
  CHECK_THAT(text.out, Catch::Contains("32 of 32 GPUs"));
  CHECK_THAT(text.out, Catch::Contains("# outages: nodes 1, 3 excluded; 1 cable down: rail0.leaf0--spine1"));
  CHECK_THAT(text.out, Catch::Contains("no translation (nodes are excluded); equitable cells instead"));
  const Run json = basp_cli("simulate --json " + cluster + "--exclude-nodes 2:5", false);
  REQUIRE(json.code == 0);
  const auto j = nlohmann::json::parse(json.out);
  CHECK(j.at("config").at("excluded_nodes") == nlohmann::json::array({4, 5}));
  CHECK(j.at("config").at("down_links").empty());
  CHECK(j.at("config").at("gpus") == 32);
  const Run collective = basp_cli("collective --json " + cluster + "--op alltoall -b 1MiB -e 1MiB --down-links 2:1", false);
  REQUIRE(collective.code == 0);
  CHECK(nlohmann::json::parse(collective.out).at("down_links").size() == 2);
  const Run plan = basp_cli("plan --json " + cluster + "--exclude-nodes 0 --model llama-3.2-1b --seq 8K --global-batch 10 "
                            "--top 1", false);
  REQUIRE(plan.code == 0);
  const auto p = nlohmann::json::parse(plan.out);
  CHECK(p.at("config").at("gpus") == 40);
  const auto args = p.at("plans").at(0).at("simulate_args");
  CHECK(std::find(args.begin(), args.end(), "--exclude-nodes") != args.end());
  const Run sweep = basp_cli("sweep --json " + cluster + "--strategy ulysses --sp 8 --vary exclude-nodes=1:1,2:1", false);
  REQUIRE(sweep.code == 0);
  const auto rows = nlohmann::json::parse(sweep.out).at("rows");
  REQUIRE(rows.size() == 2);
  CHECK(rows[0].at("config").at("excluded_nodes").size() == 1);
  CHECK(rows[1].at("config").at("excluded_nodes").size() == 2);
  for (const char* bad : {"--exclude-nodes 6", "--exclude-nodes 0-5", "--exclude-nodes 0-2 --gpus 32",
                          "--down-links n0.nic0--rail0.leaf0", "--down-links nowhere--spine0"}) {
    INFO(bad);
    const Run r = basp_cli("simulate " + cluster + bad);
    CHECK(r.code == 2);
    CHECK_THAT(r.out, Catch::StartsWith("basp: error: field '--"));
  }
}
