// `basp simulate`: the main job. Predicts a training step per strategy on one cluster and prints
// where the time goes; with no arguments, the paper's setting (docs/design.md, "Published results").
#include "commands.hpp"
#include "input_error.hpp"
#include "simulate_options.hpp"
#include "step_report.hpp"

#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <unistd.h>

namespace basp::cli {
namespace {

struct SimulateCommand {
  SimulateArgs args;
  FormatOptions format;
  bool links = false;
  int top = 10;
  std::string trace;
  int trace_ranks = 64;
};

int run_simulate(const SimulateCommand& cmd) {
  const StepConfig config = to_step_config(cmd.args);
  StepOptions options;
  options.busiest_links = cmd.top;
  options.trace_ranks = cmd.trace_ranks;
  std::ofstream trace;
  if (!cmd.trace.empty()) {
    trace.open(cmd.trace);
    if (!trace) throw InputError("", 0, "--trace", "cannot write '" + cmd.trace + "'");
    options.trace = &trace;
  }
  // On a terminal, once a run has taken 2 s: which strategy runs, and an estimate of what is left.
  const bool terminal = ::isatty(STDERR_FILENO) != 0;
  const auto t0 = std::chrono::steady_clock::now();
  bool shown = false;
  if (terminal)
    options.progress = [&](std::string_view strategy, int done, int total) {
      const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      if (elapsed < 2.0) return;
      shown = true;
      char left[48] = "";
      if (done > 0) std::snprintf(left, sizeof left, ", about %.0f s left", elapsed / done * (total - done));
      std::fprintf(stderr, "\rsimulate: %d/%d runs done, now %.*s; %.1f s so far%s      ", done, total,
                   int(strategy.size()), strategy.data(), elapsed, left);
      std::fflush(stderr);
    };
  const StepReport report = simulate_step(config, options);
  if (shown) std::fprintf(stderr, "\r%100s\r", "");
  if (trace.is_open()) {
    trace.close();
    if (!trace) throw std::runtime_error("writing the trace to '" + cmd.trace + "' failed");
  }
  switch (cmd.format.format()) {
    case Format::json: {
      nlohmann::ordered_json j{{"config", config_json(report)}, {"results", nlohmann::json::array()}};
      for (const StrategyResult& r : report.results) j["results"].push_back(result_json(report, r, cmd.links));
      std::cout << j.dump(2) << "\n";
      break;
    }
    case Format::csv:
      std::cout << csv_header() << "\n";
      for (const StrategyResult& r : report.results) std::cout << csv_row(report, r) << "\n";
      break;
    case Format::table: print_table(report, cmd.links); break;
  }
  if (!cmd.trace.empty() && cmd.format.format() == Format::table)
    std::cout << "# trace written to " << cmd.trace << " (open it in https://ui.perfetto.dev)\n";
  return 0;
}

}  // namespace

void add_simulate_command(CLI::App& app, std::function<int()>& run) {
  auto cmd = std::make_shared<SimulateCommand>();
  CLI::App* sub = app.add_subcommand(
      "simulate", "Predict a training step per strategy: step time, compute, all-to-all, ZeRO, memory, speedup");
  add_simulate_options(*sub, cmd->args);
  cmd->format.add_to(*sub);
  sub->add_flag("--links", cmd->links, "Also report the busiest links (bytes and utilization)");
  sub->add_option("--top", cmd->top, "Links the --links report lists")->check(CLI::Range(1, 1000))->capture_default_str();
  sub->add_option("--trace", cmd->trace, "Write a Chrome/Perfetto trace (JSON) of the simulated steps to FILE");
  sub->add_option("--trace-ranks", cmd->trace_ranks, "GPUs the trace shows (the first ones; 0 = all)")
      ->check(CLI::Range(0, 1 << 24))->capture_default_str();
  sub->callback([cmd, &run] { run = [cmd] { return run_simulate(*cmd); }; });
}

}  // namespace basp::cli
