// Every subcommand on one app, in the order `basp --help` lists them; shared by main() and the CLI
// fuzz target, so both parse exactly the same flags.
#include "commands.hpp"

namespace basp::cli {

void add_commands(CLI::App& app, Chosen& chosen) {
  add_topo_command(app, chosen);
  add_collective_command(app, chosen);
  add_simulate_command(app, chosen);
  add_sweep_command(app, chosen);
  add_plan_command(app, chosen);
  add_calibrate_command(app, chosen);
  add_check_command(app, chosen);
}

}  // namespace basp::cli
