// The subcommands of `basp`. Each registers its options on the app and, when chosen, sets `run`.
#pragma once

#include <CLI/CLI.hpp>

#include <functional>

namespace basp::cli {

void add_topo_command(CLI::App& app, std::function<int()>& run);
void add_collective_command(CLI::App& app, std::function<int()>& run);
void add_simulate_command(CLI::App& app, std::function<int()>& run);
void add_sweep_command(CLI::App& app, std::function<int()>& run);
void add_calibrate_command(CLI::App& app, std::function<int()>& run);
void add_check_command(CLI::App& app, std::function<int()>& run);
void add_plan_command(CLI::App& app, std::function<int()>& run);

}  // namespace basp::cli
