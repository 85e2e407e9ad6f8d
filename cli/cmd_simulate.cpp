// `basp simulate`: the main job. Predicts a training step per strategy on one cluster and prints
// where the time goes; with no arguments, the paper's setting (docs/design.md, "Published results").
#include "commands.hpp"
#include "input_ranges.hpp"
#include "input_error.hpp"
#include "simulate_options.hpp"
#include "step_report.hpp"
#include "uncertainty_report.hpp"

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
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
  bool uncertainty = false;
};

// The progress line: runs done, the running one's share of finished engine tasks, and the time left
// at the rate so far (runs cost alike: the strategies share the cluster and the job).
class RunProgress {
 public:
  explicit RunProgress(EngineProgress& engine) : engine_(engine) {}
  ~RunProgress() { stop(); }
  void start(std::string_view strategy, int done, int total) {
    std::lock_guard lock(mutex_);
    if (!thread_.joinable()) {
      t0_ = std::chrono::steady_clock::now();
      thread_ = std::thread([this] { redraw(); });
    }
    strategy_ = strategy;
    done_ = done;
    total_ = total;
    engine_.tasks.store(0, std::memory_order_relaxed);  // the next engine's, once it runs
    engine_.finished.store(0, std::memory_order_relaxed);
  }
  void stop() {
    {
      std::lock_guard lock(mutex_);
      if (!thread_.joinable()) return;
      stop_ = true;
    }
    wake_.notify_all();
    thread_.join();
    if (shown_) std::fprintf(stderr, "\r%110s\r", "");
  }

 private:
  void redraw() {
    std::unique_lock lock(mutex_);
    while (!wake_.wait_for(lock, std::chrono::milliseconds(250), [this] { return stop_; })) {
      const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
      if (elapsed < 2.0) continue;
      if (total_ == 0) {
        std::fprintf(stderr, "\rsimulate: building the cluster and estimating memory; %.1f s so far      ", elapsed);
        std::fflush(stderr);
        shown_ = true;
        continue;
      }
      const double tasks = double(engine_.tasks.load(std::memory_order_relaxed));
      const double share = tasks > 0 ? double(engine_.finished.load(std::memory_order_relaxed)) / tasks : 0.0;
      const double overall = (done_ + share) / total_;
      char left[48] = "";
      if (overall > 0.01) std::snprintf(left, sizeof left, ", about %.0f s left", elapsed * (1 - overall) / overall);
      std::fprintf(stderr, "\rsimulate: run %d/%d, %s: %s%.0f%% of its tasks; %.1f s so far%s      ", done_ + 1,
                   total_, strategy_.c_str(), tasks > 0 ? "" : "building, ", share * 100, elapsed, left);
      std::fflush(stderr);
      shown_ = true;
    }
  }

  EngineProgress& engine_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::thread thread_;
  std::chrono::steady_clock::time_point t0_;
  std::string strategy_;
  int done_ = 0, total_ = 0;  // total_ 0: no run started yet
  bool stop_ = false, shown_ = false;
};

int run_simulate(const SimulateCommand& cmd) {
  const StepConfig config = to_step_config(cmd.args);
  if (cmd.uncertainty && cmd.format.format() == Format::csv)
    throw InputError("", 0, "--uncertainty", "prints with the table or --json, not --csv");
  StepOptions options;
  options.busiest_links = cmd.top;
  options.trace_ranks = cmd.trace_ranks;
  std::ofstream trace;
  if (!cmd.trace.empty()) {
    trace.open(cmd.trace);
    if (!trace) throw InputError("", 0, "--trace", "cannot write '" + cmd.trace + "'");
    options.trace = &trace;
  }
  options.memory_budget_bytes = memory_budget_bytes(cmd.args);
  // On a terminal, once the run has taken 2 s: which strategy runs, how far its engine has got and
  // an estimate of what is left, redrawn four times a second by a thread of its own.
  EngineProgress engine;
  RunProgress shown(engine);
  if (::isatty(STDERR_FILENO) != 0) {
    shown.start("", 0, 0);  // the cluster, its routes and the memory estimates come first
    options.engine_progress = &engine;
    options.progress = [&](std::string_view strategy, int done, int total) { shown.start(strategy, done, total); };
  }
  const StepReport report = simulate_step(config, options);
  std::optional<UncertaintyReport> bands;
  if (cmd.uncertainty) bands = uncertainty_bands(config, report, options);
  shown.stop();
  if (trace.is_open()) {
    trace.close();
    if (!trace) throw std::runtime_error("writing the trace to '" + cmd.trace + "' failed");
  }
  switch (cmd.format.format()) {
    case Format::json: {
      nlohmann::ordered_json j{{"config", config_json(report)}, {"results", nlohmann::json::array()}};
      for (const StrategyResult& r : report.results) j["results"].push_back(result_json(report, r, cmd.links));
      if (bands) j["uncertainty"] = uncertainty_json(*bands);
      std::cout << j.dump(2) << "\n";
      break;
    }
    case Format::csv:
      std::cout << csv_header() << "\n";
      for (const StrategyResult& r : report.results) std::cout << csv_row(report, r) << "\n";
      break;
    case Format::table:
      print_table(report, cmd.links);
      if (bands) print_uncertainty(std::cout, *bands);
      break;
  }
  if (!cmd.trace.empty() && cmd.format.format() == Format::table)
    std::cout << "# trace written to " << cmd.trace << " (open it in https://ui.perfetto.dev)\n";
  return 0;
}

}  // namespace

void add_simulate_command(CLI::App& app, Chosen& chosen) {
  auto cmd = std::make_shared<SimulateCommand>();
  CLI::App* sub = app.add_subcommand(
      "simulate", "Predict a training step per strategy: step time, compute, all-to-all, ZeRO, memory, speedup");
  add_simulate_options(*sub, cmd->args);
  cmd->format.add_to(*sub);
  sub->add_flag("--links", cmd->links, "Also report the busiest links (bytes and utilization)");
  sub->add_option("--top", cmd->top, "Links the --links report lists")->check(CLI::Range(1, 1000))->capture_default_str();
  sub->add_option("--trace", cmd->trace, "Write a Chrome/Perfetto trace (JSON) of the simulated steps to FILE");
  sub->add_flag("--uncertainty", cmd->uncertainty,
                "Also simulate over the calibration's parameter ranges (fit ±2σ, or documented ranges) and report "
                "each figure as low / expected / high");
  sub->add_option("--trace-ranks", cmd->trace_ranks, "GPUs the trace shows (the first ones; 0 = all)")
      ->check(CLI::Range(0, static_cast<int>(ranges::gpu_count.max)))->capture_default_str();
  sub->callback([cmd, &chosen] {
    chosen.check = [cmd] {
      to_step_config(cmd->args);
      memory_budget_bytes(cmd->args);
    };
    chosen.run = [cmd] { return run_simulate(*cmd); };
  });
}

}  // namespace basp::cli
