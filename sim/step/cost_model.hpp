// Compute cost of the pieces of a training step on one GPU: FLOPs and HBM bytes per operation,
// time by roofline (the slower of math at peak·efficiency and memory at bandwidth·efficiency).
#pragma once

#include "calibration.hpp"
#include "gpu_kind.hpp"
#include "model.hpp"

namespace basp {

enum class OpClass { gemm, attention_forward, attention_backward, memory, rotary };

// What a piece of work costs: time on the GPU, FLOPs executed (including FlashAttention's
// recomputation in backward) and model FLOPs (what MFU counts: 2 per multiply-add of the math
// the model needs, attention backward counted as twice its forward).
struct Work {
  double time_s = 0.0;
  double flops = 0.0;
  double model_flops = 0.0;
  Work& operator+=(const Work& w) {
    time_s += w.time_s;
    flops += w.flops;
    model_flops += w.model_flops;
    return *this;
  }
};

struct CostModel {
  const ModelSpec& model;
  const GpuKind& gpu;
  ComputeEfficiency efficiency;
  double element_bytes = 2.0;  // bf16 activations and weights

  Work op(OpClass cls, double flops, double bytes) const;  // roofline, model FLOPs = flops
  Work gemm(double m, double n, double k) const;             // (m×k)·(k×n)

  // One layer on `tokens` tokens: RMSNorm, QKV projection, rotary (and QK-norm) up to attention;
  // output projection, residual, norm, MLP and residual after it. Backward: both GEMMs per
  // forward GEMM (input and weight gradients), memory traffic doubled.
  Work pre_attention(double tokens, bool backward) const;
  Work post_attention(double tokens, bool backward) const;
  // Causal attention of `heads` query heads, `queries` query tokens against `keys` key tokens, of
  // which the fraction `causal` is unmasked (1/2 for a whole causal sequence).
  Work attention(double heads, double queries, double keys, double causal, bool backward) const;
  Work embedding(double tokens, bool backward) const;
  Work lm_head_and_loss(double tokens, bool backward) const;
  // Adam in mixed precision over `parameters` (fp32 master, moments; bf16 weights and gradients).
  Work optimizer(double parameters) const;
};

}  // namespace basp
