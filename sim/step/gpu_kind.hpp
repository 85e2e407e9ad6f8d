// GPU kinds: the datasheet figures the cost model needs (peak dense bf16 FLOP/s, HBM capacity and
// bandwidth). Topologies name their kind; the sources of every figure are in gpu_kind.cpp.
#pragma once

#include <span>
#include <string_view>

namespace basp {

struct GpuKind {
  std::string_view name;
  double peak_bf16_flops = 0.0;  // dense (no sparsity), FLOP/s
  double hbm_bytes = 0.0;        // capacity, bytes
  double hbm_Bps = 0.0;          // bandwidth, bytes/s
};

std::span<const GpuKind> gpu_kinds();
const GpuKind* lookup_gpu_kind(std::string_view name);  // nullptr when unknown
// The kinds' names in table order: what a topology's `gpu` field may say (load_topology checks it).
std::span<const std::string_view> gpu_kind_names();

}  // namespace basp
