// The `basp-validate` command line: subcommands layer, comm and compute, their flags and defaults.
// Parsed identically on every rank; only the rank that speaks prints help or errors.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "layer_config.hpp"

namespace basp::validate {

enum class Command { layer, comm, compute };
enum class Backend { cpu, cuda };

struct ValidateOptions {
  Command command = Command::layer;
  Backend backend = Backend::cpu;
  std::string json_path;   // --json FILE, empty: none
  double timeout_s = 300;  // watchdog per collective; 0 disables
  int gpus = 0;            // single-process launcher: GPUs to drive (0: all visible)
  int compute_ranks = 0;   // compute: N the shapes are split over (0: the ranks of this run)

  // layer and compute
  std::string model = "custom";
  LayerShape shape;
  std::vector<LayerStrategy> strategies;
  std::uint64_t seed = 1;
  int warmup = 2;
  int iters = 5;
  bool check = true;
  long attention_tile = 64;

  // comm (nccl-tests flags)
  double min_bytes = 1024, max_bytes = 16 * 1048576.0, factor = 2;
  int groups = 2;  // B: the grouped run splits the ranks into B groups of K = N/B
};

// Parses argv into `o`. Returns -1 to go on, or the exit code when parsing ended the run (0 after
// --help, 2 after an error). Only prints when `speak` (rank 0). Model files load here (InputError → 2).
int parse_options(int argc, char** argv, ValidateOptions& o, bool speak, bool have_mpi);

}  // namespace basp::validate
