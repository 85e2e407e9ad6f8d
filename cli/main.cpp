// The `basp` command: its subcommands (commands.cpp) parsed, user-input errors mapped to exit code 2
// and failed runs to 1, in this one place.
#include "commands.hpp"
#include "input_error.hpp"

#include <CLI/CLI.hpp>

#include <iostream>

int main(int argc, char** argv) {
  CLI::App app{"basp: predict, measure and explain sequence-parallel attention communication"};
  app.require_subcommand(1);
  basp::cli::Chosen chosen;
  basp::cli::add_commands(app, chosen);
  try {
    app.parse(argc, argv);
    return chosen.run();
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return 2;
  } catch (const basp::InputError& e) {
    std::cerr << "basp: error: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "basp: failed: " << e.what() << "\n";
    return 1;
  }
}
