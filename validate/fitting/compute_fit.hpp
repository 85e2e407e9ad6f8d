// Fits the cost model's compute efficiencies per operation class (GEMM, attention forward,
// attention backward: e·F/(F + F½) of peak; memory-bound kernels and rotary: fractions of memory
// bandwidth).
#pragma once

#include <vector>

#include "calibration.hpp"
#include "gpu_kind.hpp"
#include "link_fit.hpp"
#include "measurements.hpp"

namespace basp::fitting {

struct ComputeFit {
  ComputeEfficiency efficiency;             // `start` with the fitted classes set
  std::vector<FittedParameter> parameters;  // compute.CLASS and compute.CLASS_half_flops, compute.memory, compute.rotary
  FitQuality quality;
  bool memory_fitted = false;  // memory-bound runs (pack) were measured; rotary's: efficiency.rotary set
};

// Per class, time = (F + F½) / (peak·e) is linear in F: a weighted linear least squares on relative
// errors. One distinct size gives a constant efficiency (F½ held at 0); so does a negative F½.
// Throws InputError for an unknown operation or an efficiency above 1 (the GPU kind's peak is too low).
ComputeFit fit_compute(const GpuKind& gpu, const ComputeEfficiency& start,
                       const std::vector<ComputeSample>& samples);

// The cost model's class of a basp-validate compute operation (gemm_qkv, attn_fwd, ...).
std::string compute_class_of(const std::string& op);

}  // namespace basp::fitting
