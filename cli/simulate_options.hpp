// The options of `basp simulate`, shared with `basp sweep` (which varies any of them): one table
// registers, validates and documents them.
#pragma once

#include "options.hpp"
#include "step_config.hpp"
#include "step_run.hpp"

#include <CLI/CLI.hpp>

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace basp::cli {

// DeepSpeed's ZeRO settings (zero_settings, and overlap_comm) as flags, for simulate, sweep and plan.
struct ZeroOptions {
  std::array<double, zero_settings.size()> values;  // DeepSpeed's defaults (StepConfig's) until given
  std::array<bool, zero_settings.size()> given{};   // set by CLI11 as it parses each flag
  std::string overlap_comm = "default";             // default (DeepSpeed's), on, off
  bool overlap_given = false;
  ZeroOptions();
  // `layouts`: " layouts" for plan, whose help says which layouts a setting applies to.
  void add_to(CLI::App& app, const std::string& layouts);
  // The settings onto c; overlap_comm only where c's stage has it or it was given (then checked).
  void apply(StepConfig& c) const;
};

struct SimulateArgs {
  TopologyOptions topo;
  std::string model = "llama-3.2-1b";
  std::string seq = "16K";
  int batch = 2;
  int sp = 0;
  int gpus = 0;
  std::vector<std::string> strategies{"ulysses", "basp"};
  std::string placement = "contiguous";
  int zero = 3;
  int zero_group = 0;
  ZeroOptions zero_options;  // given with another stage: refused
  bool checkpointing = false;
  std::string calibration;
  int replica_batch = 1;
  int ulysses_degree = 0;
  long accumulation = 1;
  int layers_simulated = 0;
  std::string engine = "auto";
  double compute_jitter = 0.0;
  std::string slow_gpus, slow_links;  // FRACTION:FACTOR
  std::uint64_t seed = 1;
  std::string sim_memory;  // host memory an engine may hold, e.g. 16GiB ("": host_memory_budget_bytes)
};

void add_simulate_options(CLI::App& app, SimulateArgs& args);
StepConfig to_step_config(const SimulateArgs& args);  // InputError for values CLI11 cannot check
// --strategy's names (CLI11 checked each) as strategies; InputError when one is named twice.
std::vector<Strategy> parse_strategies(const std::vector<std::string>& names);
// What StepOptions::memory_budget_bytes should be: --sim-memory, or 3/4 of this machine's memory.
double memory_budget_bytes(const SimulateArgs& args);

// One line per figure of a result, for tables; the JSON forms of a config and a result.
std::string describe_config(const StepReport& report);

}  // namespace basp::cli
