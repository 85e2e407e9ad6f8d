// `basp simulate` as users run it: the default scenario, the JSON contract (config + results with
// the documented keys), CSV, a trace that is valid trace-event JSON, bad input exiting 2.
#include "cli_helpers.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

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
  // Both engines give the same step time (the CSV's 14th column), to rounding.
  auto step = [&](const std::string& row) {
    std::istringstream fields(row);
    std::string field;
    for (int i = 0; i < 14; ++i) std::getline(fields, field, ',');
    return std::stod(field);
  };
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
