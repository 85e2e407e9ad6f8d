// Memory a GPU holds at its peak during the step: weights, gradients and optimizer states as
// ZeRO shards them, gathered weights in flight, saved activations, logits, exchange buffers.
#pragma once

#include "model.hpp"
#include "strategy.hpp"
#include "zero_plan.hpp"

namespace basp {

struct MemoryBreakdown {
  double states = 0;       // bf16 weights and gradients, fp32 master weights and Adam moments
  double prefetch = 0;     // ZeRO-3 gathered weights (current and prefetched module); gradient reduce buckets
  double activations = 0;  // what backward needs, saved during forward
  double logits = 0;       // LM head output and the loss's fp32 copy
  double buffers = 0;      // all-to-all send and receive buffers, ring KV blocks
  double runtime = 0;      // CUDA context, cuBLAS workspace, NCCL buffers
  double total() const { return states + prefetch + activations + logits + buffers + runtime; }
};

MemoryBreakdown memory_per_gpu(const ModelSpec& model, const Layout& layout, const ZeroPlan& zero,
                               bool checkpointing);

}  // namespace basp
