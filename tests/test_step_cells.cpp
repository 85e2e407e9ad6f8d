// Whole training steps on equitable cells against the full engine, on clusters no translation maps
// onto themselves (uneven leaves, pods and racks, part of the GPUs): every strategy, both
// placements, ZeRO stages and groups agree on every reported figure and the busiest links to 1e-9.
#include "step_cells_check.hpp"
#include "step_run.hpp"

#include <nlohmann/json.hpp>

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <map>
#include <sstream>

using namespace basp;

using basp::test::check_cells;
using basp::test::job;

TEST_CASE("step cells equal the full engine: an uneven last leaf, every strategy, placement and cross-rail") {
  for (CrossRail rail : {CrossRail::pxn, CrossRail::spine})
    for (Placement placement : {Placement::contiguous, Placement::strided}) {
      StepConfig c = job("dgx-h100", {.nodes = 6, .nodes_per_leaf = 4, .spines = 2, .cross_rail = rail}, 16);
      c.placement = placement;
      CHECK(check_cells(c) == 5);
    }
}

TEST_CASE("step cells equal the full engine: ZeRO stages and groups, accumulation, checkpointing") {
  for (int zero : {0, 1, 2, 3})
    for (int group : {8, 0}) {
      if (zero == 0 && group != 0) continue;  // ZeRO-0 shards nothing
      StepConfig c = job("dgx-h100", {.nodes = 6, .nodes_per_leaf = 4, .spines = 2}, 8);
      c.zero = zero;
      c.zero_group = group;
      c.checkpointing = group == 8;
      if (zero <= 1) c.accumulation = 2;
      CHECK(check_cells(c) == 5);
      if (zero <= 1) {  // the micro-steps before the boundary, a graph of their own, on cells too
        c.engine = EngineMode::automatic;
        for (const StrategyResult& r : simulate_step(c).results) {
          REQUIRE(r.accumulating_engine.has_value());
          CHECK_THAT(r.accumulating_engine->why, Catch::Contains("equitable cells"));
        }
      }
    }
}

TEST_CASE("step cells equal the full engine: part of the GPUs, other fabrics cut unevenly, oversubscribed trunks") {
  StepConfig part = job("dgx-h100", {.nodes = 8, .nodes_per_leaf = 2, .spines = 2}, 16);
  part.gpus = 48;
  CHECK(check_cells(part) == 5);
  CHECK(check_cells(job("dgx-h100-3tier", {.nodes = 9, .nodes_per_leaf = 2, .spines = 2}, 8)) > 0);
  CHECK(check_cells(job("pcie-8gpu", {.nodes = 3, .nodes_per_leaf = 2}, 8)) > 0);
  CHECK(check_cells(job("gb200-nvl72", {.nodes = 36, .nodes_per_leaf = 32, .spines = 2}, 16)) > 0);
  CHECK(check_cells(job("dgx-h100", {.nodes = 6, .oversubscription = 4.0, .nodes_per_leaf = 4, .spines = 2}, 16)) > 0);
}

TEST_CASE("step cells: trunks that would bind are put back into the cells, and the step is built again") {
  // Strided groups across an uneven leaf boundary on a 16:1 fabric: the exchange's trunks bind.
  StepConfig c = job("dgx-h100", {.nodes = 6, .oversubscription = 16.0, .nodes_per_leaf = 4, .spines = 2}, 16);
  c.placement = Placement::strided;
  c.strategies = {Strategy::ulysses};
  CHECK(check_cells(c) == 1);
  c.engine = EngineMode::automatic;
  const StepReport r = simulate_step(c);
  CHECK_THAT(r.results[0].engine.why, Catch::Contains("with the fabric trunks in the cells"));
}

TEST_CASE("step cells: --trace has the full engine's spans, and its links' loads") {
  // Every GPU's spans are the full engine's; a traced link's load (one link per cell, as with
  // translations) takes the same values at the same times. The cell's engine link sums its members,
  // whose flows change together, so rounding may record a value twice in a row: compared here with
  // such repeats dropped.
  StepConfig c = job("dgx-h100", {.nodes = 6, .nodes_per_leaf = 4, .spines = 2}, 16);
  c.strategies = {Strategy::ulysses, Strategy::ring};
  std::ostringstream full_trace, cell_trace;
  StepOptions options;
  options.trace_ranks = 0;
  options.trace = &full_trace;
  c.engine = EngineMode::full;
  simulate_step(c, options);
  options.trace = &cell_trace;
  c.engine = EngineMode::automatic;
  simulate_step(c, options);
  auto events = [](const std::string& text) {
    const nlohmann::json j = nlohmann::json::parse(text);
    return j.is_object() ? j.at("traceEvents") : j;
  };
  const nlohmann::json f = events(full_trace.str()), q = events(cell_trace.str());
  std::vector<nlohmann::json> fx, qx;
  // (run's network pid, link) -> (time, utilization)
  std::map<std::pair<long, std::string>, std::vector<std::pair<double, double>>> fc, qc;
  for (auto [all, spans, loads] : {std::tuple{&f, &fx, &fc}, std::tuple{&q, &qx, &qc}})
    for (const auto& e : *all) {
      if (e.at("ph") == "X") spans->push_back(e);
      if (e.at("ph") != "C") continue;
      auto& series = (*loads)[{e.at("pid").get<long>(), e.at("name").get<std::string>()}];
      const double u = e.at("args").at("utilization").get<double>();
      if (series.empty() || std::abs(series.back().second - u) > 1e-9) series.push_back({e.at("ts").get<double>(), u});
    }
  REQUIRE(fx.size() == qx.size());
  REQUIRE(fx.size() > 1000);
  for (std::size_t i = 0; i < fx.size(); ++i) {
    CHECK(fx[i].at("pid") == qx[i].at("pid"));
    CHECK(fx[i].at("name") == qx[i].at("name"));
    CHECK(std::abs(fx[i].at("ts").get<double>() - qx[i].at("ts").get<double>()) <= 1e-6);
    CHECK(std::abs(fx[i].at("dur").get<double>() - qx[i].at("dur").get<double>()) <= 1e-6);
  }
  REQUIRE(!qc.empty());
  for (const auto& [link, series] : qc) {
    INFO(link.second);
    REQUIRE(fc.count(link) == 1);
    const auto& full_series = fc.at(link);
    REQUIRE(series.size() == full_series.size());
    for (std::size_t k = 0; k < series.size(); ++k) {
      CHECK(std::abs(series[k].first - full_series[k].first) <= 1e-6);
      CHECK(std::abs(series[k].second - full_series[k].second) <= 1e-9);
    }
  }
}
