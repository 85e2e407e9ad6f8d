// `basp-validate layer` over any backend: runs each strategy, checks it on rank 0 against the
// reference, prints the table, writes the JSON, and agrees on the exit code across ranks.
#pragma once

#include <iostream>

#include "check.hpp"
#include "json_output.hpp"
#include "layer_report.hpp"
#include "layer_run.hpp"
#include "options.hpp"

namespace basp::validate {

// make_ops(strategy, group) returns a std::unique_ptr to the backend's Ops for this rank, with its
// communicator split to `group` (the ranks sharing one all-to-all).
template <class MakeOps>
int layer_command(const ValidateOptions& o, Control& ctl, Hardware hw, const std::string& precision,
                  MakeOps make_ops) {
  for (LayerStrategy s : o.strategies) check_layer_problem(s, o.shape, ctl.size());
  auto json = open_json_output(o.json_path, ctl);
  LayerReport rep;
  rep.model = o.model;
  rep.precision = precision;
  rep.options = {o.shape, o.seed, o.warmup, o.iters, o.check};
  rep.attention_tile = o.attention_tile;
  rep.timeout_s = o.timeout_s;
  rep.hardware = std::move(hw);
  for (LayerStrategy s : o.strategies) {
    const RankPlan plan = plan_rank(s, o.shape, ctl.size(), ctl.rank());
    auto ops = make_ops(s, plan.group);
    rep.runs.push_back(run_layer(*ops, ctl, s, rep.options));
  }
  int failed = 0;
  if (ctl.rank() == 0) {
    if (o.check) {
      const LayerResult ref = reference_layer(o.seed, o.shape);
      for (const auto& run : rep.runs)
        rep.checks.push_back(check_against(run.gathered, ref, precision == "bf16"));
      if (rep.runs.size() == 2)
        rep.strategies_max_abs_diff = max_abs_difference(rep.runs[0].gathered, rep.runs[1].gathered);
    }
    print_layer_table(std::cout, rep);
    std::cout.flush();
    write_json_output(json.get(), layer_json(rep));
    failed = rep.ok() ? 0 : 1;
  }
  ctl.broadcast(&failed, sizeof failed);
  return failed;
}

}  // namespace basp::validate
