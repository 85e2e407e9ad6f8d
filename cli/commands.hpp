// The subcommands of `basp`. Each registers its options on the app and, when chosen, sets what
// it does: `check` converts and checks its flags alone, `run` does the whole job.
#pragma once

#include <CLI/CLI.hpp>

#include <functional>

namespace basp::cli {

struct Chosen {
  // Flags converted and checked (InputError names the flag; files they name are read, nothing is
  // built or simulated): what the CLI fuzz target holds to its properties.
  std::function<void()> check;
  std::function<int()> run;  // the job: exit code 0 or 1; InputError for bad input
};

void add_commands(CLI::App& app, Chosen& chosen);  // every subcommand below

void add_topo_command(CLI::App& app, Chosen& chosen);
void add_collective_command(CLI::App& app, Chosen& chosen);
void add_simulate_command(CLI::App& app, Chosen& chosen);
void add_sweep_command(CLI::App& app, Chosen& chosen);
void add_calibrate_command(CLI::App& app, Chosen& chosen);
void add_check_command(CLI::App& app, Chosen& chosen);
void add_plan_command(CLI::App& app, Chosen& chosen);

}  // namespace basp::cli
