// Whole training steps on symmetry classes against the full engine: every strategy, contiguous and
// strided groups, ZeRO stages and groups, checkpointing, several fabrics and sizes up to 1024 GPUs
// agree on every reported figure and the busiest links to 1e-9.
#include "cli_helpers.hpp"
#include "step_run.hpp"

#include <nlohmann/json.hpp>

#include <catch2/catch.hpp>

#include "input_error.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>

using namespace basp;

namespace {

bool close(double a, double b) { return std::abs(a - b) <= 1e-9 * std::max({std::abs(a), std::abs(b), 1e-300}); }

// Strategies run on a part of their template (no whole build) by check_same, of all it checked.
int on_parts = 0, checked = 0;
// Strategies whose accumulating micro-steps folded into fewer classes than their step.
int fewer_accumulating_classes = 0;

// Returns how many of c's strategies ran on a part of the cluster.
int check_same(StepConfig c, int busiest = 10) {
  StepOptions options;
  options.busiest_links = busiest;
  c.engine = EngineMode::full;
  const StepReport full = simulate_step(c, options);
  c.engine = EngineMode::automatic;
  int parts = 0;
  // Classes on the whole build (below the parts threshold), and on parts of the template.
  for (int from_gpus : {c.parts_from_gpus, 1}) {
    c.parts_from_gpus = from_gpus;
    const StepReport classes = simulate_step(c, options);
    REQUIRE(full.results.size() == classes.results.size());
    for (std::size_t i = 0; i < full.results.size(); ++i) {
      const StrategyResult &f = full.results[i], &q = classes.results[i];
      INFO(c.topology << ", " << to_string(q.strategy) << ", sp " << full.config.sp << ", zero " << c.zero << " over "
                      << full.config.zero_group << (c.checkpointing ? ", checkpointing" : "")
                      << (c.placement == Placement::strided ? ", strided" : "") << ": " << q.engine.why);
      REQUIRE(q.engine.engine == "classes");
      CHECK(f.engine.engine == "full");
      CHECK(q.layers_simulated == f.layers_simulated);
      for (auto [a, b] : {std::pair{q.step_s, f.step_s}, {q.compute_s, f.compute_s}, {q.a2a_s, f.a2a_s},
                          {q.a2a_exposed_s, f.a2a_exposed_s}, {q.zero_comm_s, f.zero_comm_s},
                          {q.zero_exposed_s, f.zero_exposed_s}, {q.tokens_per_s, f.tokens_per_s}, {q.mfu, f.mfu},
                          {q.accumulation_step_s, f.accumulation_step_s}, {q.global_batch_s, f.global_batch_s}})
        CHECK(close(a, b));
      REQUIRE(q.speedup_vs_ulysses.has_value() == f.speedup_vs_ulysses.has_value());
      if (f.speedup_vs_ulysses) CHECK(close(*q.speedup_vs_ulysses, *f.speedup_vs_ulysses));
      for (LinkClass cls : link_classes) CHECK(close(q.class_bytes[cls], f.class_bytes[cls]));
      // On a part the busiest links come by class, each standing for `links` links of the cluster:
      // repeated that often, they must be the full engine's busiest links, link for link.
      std::vector<LinkUse> each;
      for (const LinkUse& u : q.busiest_links)
        for (long k = 0; k < u.links && each.size() < f.busiest_links.size(); ++k) each.push_back(u);
      const bool part = !q.busiest_links.empty() && q.busiest_links.front().link < 0;
      parts += part;
      if (!part) CHECK(q.busiest_links.size() == f.busiest_links.size());
      REQUIRE(each.size() == f.busiest_links.size());
      for (std::size_t k = 0; k < f.busiest_links.size(); ++k) {
        CHECK(close(each[k].bytes, f.busiest_links[k].bytes));
        CHECK(close(each[k].utilization, f.busiest_links[k].utilization));
        CHECK(each[k].cls == f.busiest_links[k].cls);
      }
      CHECK(q.stats.flows == f.stats.flows);
      CHECK(q.stats.events == f.stats.events);
      // ZeRO-0/1 with accumulation: the micro-steps before the boundary are a graph of their own,
      // whose engine is reported; folded without the ZeRO rings, never into more classes.
      const bool accumulating = c.zero <= 1 && c.accumulation > 1;
      REQUIRE(q.accumulating_engine.has_value() == accumulating);
      REQUIRE(f.accumulating_engine.has_value() == accumulating);
      if (accumulating) {
        CHECK(f.accumulating_engine->engine == "full");
        CHECK(q.accumulating_engine->engine == "classes");
        CHECK(q.accumulating_engine->rank_classes * q.accumulating_engine->members == full.config.gpus);
        CHECK(q.accumulating_engine->rank_classes <= q.engine.rank_classes);
        fewer_accumulating_classes += q.accumulating_engine->rank_classes < q.engine.rank_classes;
      }
    }
  }
  on_parts += parts;
  checked += static_cast<int>(full.results.size());
  return parts;
}

// `basp <args> --json` (stdout only), which must exit 0, parsed.
nlohmann::json cli_json(const std::string& args) {
  const basp::test::Run r = basp::test::basp_cli(args + " --json", false);
  REQUIRE(r.code == 0);
  return nlohmann::json::parse(r.out);
}

StepConfig job(std::string topology, TopologyOverrides overrides) {
  StepConfig c;
  c.topology = std::move(topology);
  c.overrides = overrides;
  c.seq = 8192;
  return c;
}

}  // namespace

TEST_CASE("step classes equal the full engine: every strategy and placement on a rail fabric") {
  for (CrossRail rail : {CrossRail::pxn, CrossRail::spine})
    for (Placement placement : {Placement::contiguous, Placement::strided}) {
      StepConfig c = job("dgx-h100", {.nodes = 8, .nodes_per_leaf = 2, .spines = 2, .cross_rail = rail});
      c.sp = 16;
      c.batch = 4;
      c.replica_batch = 2;
      c.placement = placement;
      c.strategies = {Strategy::ulysses, Strategy::basp, Strategy::sp_dp, Strategy::ring, Strategy::usp};
      check_same(c);
    }
}

TEST_CASE("step classes equal the full engine: ZeRO stages, hierarchical groups and checkpointing") {
  // ZeRO-0/1 reduce after backward and ZeRO-2 between modules, on the compute stream (DeepSpeed's
  // default overlap_comm); ZeRO-1 over 8 with overlap_comm from hooks beside it; the other ZeRO-0/1
  // layouts accumulate 3 micro-steps, the first two a graph without reductions.
  for (int zero : {0, 1, 2, 3})
    for (int group : {0, 8, 16}) {
      if (zero == 0 && group != 0) continue;
      if (zero == 2 && group != 16) continue;
      StepConfig c = job("dgx-h100", {.nodes = 8, .oversubscription = 2, .nodes_per_leaf = 2, .spines = 2});
      c.sp = 32;
      c.zero = zero;
      c.zero_group = group;
      c.checkpointing = group == 8;
      if (zero == 1 && group == 8) c.zero_overlap_comm = OverlapComm::on;
      if (zero <= 1 && group != 8) c.accumulation = 3;
      check_same(c);
    }
}

TEST_CASE("step classes equal the full engine: ZeRO-1 micro-steps folded without the ZeRO rings") {
  // System: 8 DGX H100 nodes, 2 per leaf; SP 32 (4 nodes), ZeRO-1 over each node, 3 micro-steps.
  // The step's replica rings run through all 8 nodes, so its fold may only shift whole leaves; the
  // micro-steps before the boundary issue no ZeRO call and fold on the exchanges alone.
  // Contiguous groups also recompute (checkpointing); strided ones build a window of 5 layers and
  // reduce from hooks (overlap_comm).
  // Expectations: both graphs' figures (the accumulating micro-step's time included) equal the
  // full engine's, for both placements and every strategy.
  for (Placement placement : {Placement::contiguous, Placement::strided}) {
    StepConfig c = job("dgx-h100", {.nodes = 8, .nodes_per_leaf = 2, .spines = 2});
    c.sp = 32;
    c.batch = 4;
    c.replica_batch = 2;
    c.placement = placement;
    c.zero = 1;
    c.zero_group = 8;
    c.accumulation = 3;
    if (placement == Placement::contiguous) {
      c.checkpointing = true;
    } else {
      c.layers_simulated = 5;
      c.zero_overlap_comm = OverlapComm::on;
    }
    c.strategies = {Strategy::ulysses, Strategy::basp, Strategy::sp_dp, Strategy::ring, Strategy::usp};
    const int before = fewer_accumulating_classes;
    check_same(c);
    // The step's rings only allow shifting whole leaves (16 ranks per class); without them the
    // exchanges fold further for some strategies.
    CHECK(fewer_accumulating_classes > before);
  }
}

TEST_CASE("step classes equal the full engine: PCIe leaf-spine, GB200 NVL72 racks, three tiers") {
  StepConfig pcie = job("pcie-8gpu", {.nodes = 4, .nodes_per_leaf = 2});
  pcie.sp = 8;
  check_same(pcie);
  StepConfig nvl = job("gb200-nvl72", {.nodes = 36, .nodes_per_leaf = 18, .spines = 2});
  nvl.sp = 8;  // groups of 16 would straddle the 72-GPU period: see the fallback test
  nvl.strategies = {Strategy::ulysses, Strategy::basp, Strategy::usp};
  check_same(nvl);
  for (CrossRail rail : {CrossRail::pxn, CrossRail::spine}) {
    StepConfig three = job("dgx-h100-3tier", {.nodes = 8, .nodes_per_leaf = 2, .spines = 2, .cross_rail = rail});
    three.sp = 16;
    three.zero_group = 16;
    three.strategies = {Strategy::ulysses, Strategy::basp, Strategy::ring};
    check_same(three);
  }
}

TEST_CASE("step classes equal the full engine: 1024 GPUs, SP 32, ZeRO over 32") {
  StepConfig c = job("dgx-h100", {.nodes = 128});
  c.seq = 32768;
  c.batch = 4;
  c.sp = 32;
  c.zero_group = 32;
  check_same(c);
}

TEST_CASE("step classes equal the full engine: the three-tier file at its default size (1024 GPUs)") {
  StepConfig c = job("dgx-h100-3tier", {});
  c.seq = 16384;  // the simulate defaults but SP: 1024-way Ulysses cannot split 32 heads
  c.sp = 32;
  check_same(c);
}

TEST_CASE("step classes on a part of the template: every strategy, the busiest links by class") {
  // System: 16 DGX H100 nodes, 2 per leaf, 2 spines; SP 16 (2 nodes), ZeRO-3 over 16: the cluster
  // and the traffic repeat every leaf, so the quotient touches a few nodes only.
  // Expectations: every strategy runs on a part (its busiest links by class, no whole-cluster link
  // ids), and the 40 busiest links, each class repeated as often as it has links, are the full
  // engine's on the whole build, with every other figure.
  StepConfig c = job("dgx-h100", {.nodes = 16, .nodes_per_leaf = 2, .spines = 2});
  c.sp = 16;
  c.zero_group = 16;
  c.strategies = {Strategy::ulysses, Strategy::basp, Strategy::sp_dp, Strategy::ring, Strategy::usp};
  CHECK(check_same(c, 40) == 5);
  CHECK(on_parts > 0);
  INFO(on_parts << " of " << checked << " strategies checked so far ran on parts");
  CHECK(on_parts * 2 >= checked);
}

TEST_CASE("step classes on a part of GB200 NVL72 racks: parts hold whole racks") {
  // System: 8 GB200 NVL72 racks (576 GPUs), two racks per leaf group; SP 8 (2 trays), ZeRO over 8:
  // the traffic stays within racks, the cluster repeats every rack.
  // Expectations: every strategy runs on a part (whole racks, the NVLink switch shared by 18
  // trays) and equals the full engine on the whole build, busiest links included.
  StepConfig c = job("gb200-nvl72", {.nodes = 144, .nodes_per_leaf = 36, .spines = 2});
  c.sp = 8;
  c.zero_group = 8;
  c.strategies = {Strategy::ulysses, Strategy::basp, Strategy::usp};
  CHECK(check_same(c, 40) == 3);
}

TEST_CASE("step classes on a part: --trace writes what the whole build's classes write") {
  // Systems: the 16-node DGX H100 job and the 8 NVL72 racks above, every GPU traced.
  // Expectations: the trace from parts of the template (no whole build) is the whole build's,
  // byte for byte: the same spans per GPU with their nodes, the same busiest links by name.
  StepConfig dgx = job("dgx-h100", {.nodes = 16, .nodes_per_leaf = 2, .spines = 2});
  dgx.sp = 16;
  dgx.zero_group = 16;
  dgx.strategies = {Strategy::ulysses, Strategy::basp, Strategy::ring};
  StepConfig nvl = job("gb200-nvl72", {.nodes = 144, .nodes_per_leaf = 36, .spines = 2});
  nvl.sp = 8;
  nvl.zero_group = 8;
  nvl.strategies = {Strategy::ulysses, Strategy::basp};
  for (StepConfig c : {dgx, nvl}) {
    INFO(c.topology);
    std::ostringstream whole, parts;
    StepOptions options;
    options.trace_ranks = 0;
    options.trace = &whole;
    const StepReport a = simulate_step(c, options);
    c.parts_from_gpus = 1;
    options.trace = &parts;
    const StepReport b = simulate_step(c, options);
    for (const StrategyResult& r : b.results) CHECK(r.busiest_links.front().link < 0);  // on a part
    for (const StrategyResult& r : a.results) CHECK(r.busiest_links.front().link >= 0);
    CHECK(whole.str().size() > 10000);
    CHECK(parts.str() == whole.str());
  }
}

TEST_CASE("step classes: groups that straddle the period have no translation, say so, and run on cells") {
  // System: 2 GB200 NVL72 racks (144 GPUs): the cluster repeats every rack (72 GPUs).
  // Expectations: SP groups of 16 repeat every 2 nodes, the racks every 18: no shift but the
  // whole cluster keeps both, so the step runs on equitable cells (tests/test_step_cells.cpp).
  StepConfig c = job("gb200-nvl72", {.nodes = 36, .nodes_per_leaf = 18, .spines = 2});
  c.sp = 16;
  c.strategies = {Strategy::ulysses};
  const StepReport r = simulate_step(c);
  CHECK(r.results[0].engine.engine == "classes");
  CHECK_THAT(r.results[0].engine.why, Catch::Contains("the cluster repeats every 18 nodes and the traffic every 4") &&
                                          Catch::Contains("equitable cells instead"));
  c.engine = EngineMode::classes;
  CHECK(simulate_step(c).results[0].engine.engine == "classes");
  // Where cells merge no rank either (ring attention's successor rings across 32-tray leaves),
  // demanding classes is an input error.
  StepConfig ring = job("gb200-nvl72", {.nodes = 36, .nodes_per_leaf = 32, .spines = 2});
  ring.sp = 16;
  ring.strategies = {Strategy::ring};
  CHECK(simulate_step(ring).results[0].engine.engine == "full");
  ring.engine = EngineMode::classes;
  CHECK_THROWS_AS(simulate_step(ring), InputError);
}

TEST_CASE("simulate --engine: JSON and table say which engine ran, with the class counts") {
  using basp::test::basp_cli;
  const std::string job = "simulate --topology dgx-h100 --nodes 16 --sp 32 --zero-group 32 --seq 8K";
  const auto j = cli_json(job);
  CHECK(j.at("config").at("engine") == "classes");
  CHECK(j.at("config").at("engine_requested") == "auto");
  for (const auto& res : j.at("results")) {
    const auto& e = res.at("engine");
    CHECK(e.at("engine") == "classes");
    CHECK(e.at("rank_classes").get<int>() * e.at("members_per_class").get<int>() == 128);
    CHECK(e.at("members_per_class").get<int>() > 1);
  }
  CHECK(cli_json(job + " --engine full").at("config").at("engine") == "full");
  CHECK_THAT(basp_cli(job).out, Catch::Contains("classes engine"));
  // Hashed ECMP has no translation (each flow's path is its own), but it has cells.
  const basp::test::Run hashed = basp_cli(job + " --ecmp hash --engine classes");
  CHECK(hashed.code == 0);
  CHECK_THAT(hashed.out, Catch::Contains("hashed ECMP") && Catch::Contains("equitable cells instead"));
  CHECK(basp_cli(job + " --engine fastest").code == 2);
  CHECK(cli_json("collective --topology dgx-h100 --nodes 8 --size 1MiB").at("engine").at("engine") == "classes");
}

TEST_CASE("simulate reports the engines of the accumulating micro-steps and of the Ulysses baseline") {
  using basp::test::basp_cli;
  // System: 16 DGX H100 nodes; BASP with SP 32, ZeRO-1 within each node, 3 micro-steps.
  // Expectations: the micro-steps before the boundary (a graph of their own) and the Ulysses run
  // made for the speedup column each report their engine, in the JSON and the table; a job that
  // lists Ulysses and accumulates nothing reports neither.
  const std::string job = "simulate --topology dgx-h100 --nodes 16 --sp 32 --seq 8K --zero 1 --zero-group 8";
  const auto j = cli_json(job + " --accumulation 3 --strategy basp");
  const auto& res = j.at("results").at(0);
  const auto& acc = res.at("accumulating_engine");
  CHECK(acc.at("engine") == "classes");
  CHECK(acc.at("rank_classes").get<int>() * acc.at("members_per_class").get<int>() == 128);
  CHECK(acc.at("rank_classes").get<int>() <= res.at("engine").at("rank_classes").get<int>());
  const auto& base = j.at("config").at("baseline");
  CHECK(base.at("strategy") == "ulysses");
  CHECK(base.at("engine").at("engine") == "classes");
  CHECK(base.at("accumulating_engine").at("engine") == "classes");
  CHECK(res.at("speedup_vs_ulysses").is_number());
  const std::string table = basp_cli(job + " --accumulation 3 --strategy basp").out;
  CHECK_THAT(table, Catch::Contains("# basp (micro-steps before the accumulation boundary): classes engine"));
  CHECK_THAT(table, Catch::Contains("# ulysses (baseline for the speedup): classes engine"));
  CHECK_THAT(table, Catch::Contains("# ulysses (baseline, micro-steps before the accumulation boundary): classes engine"));

  const auto p = cli_json(job);
  CHECK(p.at("config").at("baseline").is_null());
  for (const auto& x : p.at("results")) CHECK(x.at("accumulating_engine").is_null());
  CHECK_THAT(basp_cli(job).out, !Catch::Contains("before the accumulation boundary") && !Catch::Contains("baseline"));
}
