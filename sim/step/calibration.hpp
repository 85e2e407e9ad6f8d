// Calibration: the parameters that turn datasheet numbers into effective ones for one cluster
// (per link class efficiency and latency, software overheads, compute efficiencies).
#pragma once

#include "input_ranges.hpp"
#include "topology.hpp"

#include <array>
#include <optional>
#include <string>
#include <vector>

namespace basp {

// Fractions of the GPU's peak (FLOP/s or HBM bytes/s) that each class of operation reaches.
// Defaults: docs/cost-model.md gives their sources. A fitted calibration can make the math
// classes depend on size: efficiency(F) = e · F / (F + F½) for an operation of F FLOPs (small
// kernels pay a fixed cost); F½ = 0, the default, is a constant efficiency.
struct ComputeEfficiency {
  double gemm = 0.70;                // cuBLAS bf16 GEMMs at LLM shapes
  double attention_forward = 0.60;   // FlashAttention-2 forward
  double attention_backward = 0.45;  // FlashAttention-2 backward
  double memory = 0.80;              // memory-bound kernels: fraction of HBM bandwidth
  // Rotary embedding (and QK-norm), a fraction of HBM bandwidth on its bytes; unset: `memory`'s.
  // Memory-bound on GPUs; on CPUs its sines and cosines make it several times slower than a copy.
  std::optional<double> rotary;
  // The validator's unpack of heads from peers (zero-fill, then sum: replicated KV heads'
  // gradients), on a copy's bytes; only `basp check` predicts it. Unset: `memory`'s.
  std::optional<double> unpack_heads;
  double gemm_half_flops = 0, attention_forward_half_flops = 0, attention_backward_half_flops = 0;

  double rotary_or_memory() const { return rotary.value_or(memory); }
};

struct LinkCalibration {
  std::optional<double> efficiency;  // effective / nominal capacity, (0, 1]
  std::optional<double> latency_s;   // replaces each link's per-hop latency
};

// A parameter as `basp calibrate` fits it and a calibration's fit.parameters keeps it.
struct FittedParameter {
  std::string name;  // "links.nic.efficiency", "software.launch_overhead", ...
  double value = 0;  // SI (s) or a fraction
  double sigma = 0;  // standard error; NaN when held or not determined ("held", "unknown")
  bool free = true;  // false: the measurements cannot separate it; held at its start value
};

struct Calibration {
  std::string name = "none";
  std::string source;                          // file it came from; empty for the defaults
  PerLinkClass<LinkCalibration> links;
  std::optional<double> launch_s, per_peer_s;  // software overheads of a collective call
  ComputeEfficiency compute;
  std::vector<std::string> measurements;       // files it was fitted on (empty: hand-derived)
  std::vector<FittedParameter> fitted;         // fit.parameters: what --uncertainty ranges by
};

// The physical range of a parameter named as fit.parameters names it (links.nic.efficiency: an
// efficiency, software.launch_overhead: a latency, compute.gemm_half_flops: FLOPs); null for a name
// that is no calibration parameter.
const PhysicalRange* fitted_parameter_range(const std::string& name);

// NAME resolves to calibrations/NAME.yaml; "none" gives the documented defaults.
Calibration load_calibration(const std::string& name_or_path);
// Scales link capacities, replaces latencies and software costs where the calibration sets them,
// and sets the all-to-all's local copy rate from the GPU kind's HBM bandwidth and memory efficiency.
void apply_calibration(Topology& topo, const Calibration& cal);

}  // namespace basp
