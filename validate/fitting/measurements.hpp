// Reading measurement files (schema basp-measurements v1) back: `basp-validate`'s communication,
// compute and layer rows, published nccl-tests tables, step-level figures, and where they came
// from (file, content hash, hardware).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "collectives.hpp"

namespace basp::fitting {

struct MeasurementSource {
  std::string path;
  std::string hash;        // FNV-1a 64 of the file's bytes, hex: names the exact file a fit used
  std::string command;     // layer | comm | compute | nccl-tests | step
  std::string hardware;    // one line: backend, launcher, ranks, first host, CPU or first GPU
  std::string provenance;  // step and nccl-tests files: where the figures come from (a paper, logs)
  std::string config;      // the file's configuration object, as one line of JSON
};

// One timed collective: basp-validate's all-to-alls, or a row of a published nccl-tests table.
struct CommSample {
  int ranks = 0;
  int groups = 1;          // 1: the global all-to-all; B: B concurrent groups of ranks/B
  double size_bytes = 0;   // nccl-tests' size: an all-to-all's send buffer, an all-gather's output
  double time_s = 0;       // median over iterations of the slowest rank (nccl-tests: its mean)
  std::size_t source = 0;  // index into Measurements::sources
  CollectiveOp op = CollectiveOp::alltoall;
};

struct ComputeSample {
  std::string op;  // gemm_qkv, gemm_out, gemm_bwd, attn_fwd, attn_bwd; memory-bound: rotary, pack_qkv, unpack_qkv, unpack_o
  double flops = 0;
  double time_s = 0;  // median
  std::size_t source = 0;
  double bytes = 0;  // memory-bound operations: bytes read and written
};

// One strategy of a `basp-validate layer` run: per phase, the median over iterations × ranks.
struct LayerPhase {
  std::string name;
  double median_s = 0;
  double send_bytes = 0;  // all-to-alls: one rank's send buffer
  double min_s = 0, max_s = 0;  // over ranks and repeats (files without them: the median)
  double isolated_median_s = 0;  // all-to-alls: the same exchange timed alone (0: not in the file)
};
struct LayerStrategyRun {
  std::string strategy;  // ulysses | basp
  int group_size = 0;
  std::vector<LayerPhase> phases;
};
struct LayerRun {
  std::string precision;  // fp32 | bf16
  int heads = 0, kv_heads = 0, ranks = 0, batch = 0;
  long head_dim = 0, hidden = 0, seq = 0;
  std::vector<LayerStrategyRun> strategies;
  std::size_t source = 0;
};

// Step-level figures of whole training steps (a framework's logs, or a paper's published ratios):
// the job they were measured on, and each figure as one number the simulator predicts for it.
struct StepSetting {
  std::string topology;
  long seq = 0;
  int batch = 0, sp = 0, zero = 3;
  bool checkpointing = false;
  std::size_t source = 0;
};
struct StepObservation {
  std::string
      quantity;  // step_s | a2a_s | a2a_share (per strategy) | speedup | a2a_reduction (BASP over Ulysses)
  std::string strategy;   // ulysses | basp for the per-strategy quantities, else empty
  std::string statistic;  // value: of the one model; min | max: over `models`
  std::vector<std::string> models;
  double value = 0;
  std::size_t setting = 0;  // index into Measurements::step_settings
  std::size_t row = 0;      // its index in its file's results, for messages
};

struct Measurements {
  std::vector<MeasurementSource> sources;
  std::vector<CommSample> comm;
  std::vector<ComputeSample> compute;
  std::vector<LayerRun> layers;
  std::vector<StepSetting> step_settings;
  std::vector<StepObservation> steps;
};

// Reads each file and appends what it holds; throws InputError (file, field) on a file that is
// not a basp-measurements v1 object or lacks a field.
Measurements read_measurements(const std::vector<std::string>& paths);
std::string fnv1a_hex(const std::string& bytes);

}  // namespace basp::fitting
