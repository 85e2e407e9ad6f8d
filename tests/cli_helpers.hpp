// Runs the built `basp` binary from a test (the step tests' helper: the network library's tests
// must not need the binary, which links the step library).
#pragma once

#include "helpers.hpp"

#include <string>

namespace basp::test {

// Runs the built `basp` with these arguments (shell words) and collects its output and exit code.
inline Run basp_cli(const std::string& args, bool with_stderr = true) {
  return run_command(std::string(BASP_BINARY) + " " + args + (with_stderr ? " 2>&1" : " 2>/dev/null"));
}

}  // namespace basp::test
