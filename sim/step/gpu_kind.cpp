// The GPU table. Peak figures are NVIDIA's datasheet numbers for dense bf16 tensor-core math (the
// datasheets print sparse figures with an asterisk; dense is half of those).
#include "gpu_kind.hpp"

#include <array>
#include <iterator>

namespace basp {
namespace {

constexpr double T = 1e12, GB = 1e9;

// Sources:
// A100: NVIDIA A100 Tensor Core GPU datasheet (2021): BF16 312 TFLOPS dense; SXM 40 GB HBM2 at
//   1,555 GB/s; SXM 80 GB HBM2e at 2,039 GB/s.
// H100-SXM: NVIDIA H100 datasheet: BF16 1,979 TFLOPS with sparsity -> 989.5 dense; 80 GB HBM3 at
//   3.35 TB/s.
// H200: NVIDIA H200 datasheet: BF16 1,979 TFLOPS with sparsity -> 989.5 dense; 141 GB HBM3e at
//   4.8 TB/s.
// B200: NVIDIA DGX B200 datasheet: 72 PFLOPS FP8 training / 8 GPUs; HGX B200 BF16 2.25 PFLOPS
//   dense per GPU (4.5 with sparsity); 180 GB HBM3e per GPU (1,440 GB per 8) at 8 TB/s
//   (64 TB/s per 8).
// GB200: NVIDIA GB200 NVL72 datasheet: 180 PFLOPS dense FP16/BF16 per 72 GPUs = 2.5 PFLOPS per
//   GPU; 13.4 TB HBM3e per 72 GPUs = 186 GB at 8 TB/s.
constexpr GpuKind table[] = {
    {"A100-40GB", 312 * T, 40 * GB, 1555 * GB},
    {"A100-80GB", 312 * T, 80 * GB, 2039 * GB},
    {"H100-SXM", 989.5 * T, 80 * GB, 3350 * GB},
    {"H200", 989.5 * T, 141 * GB, 4800 * GB},
    {"B200", 2250 * T, 180 * GB, 8000 * GB},
    {"GB200", 2500 * T, 186 * GB, 8000 * GB},
    // One CPU core running basp-validate's CPU backend (fp32, Eigen): nominal figures, a scale for
    // calibration to measure against rather than a datasheet (an AVX-512 core peaks near 100-200
    // GFLOP/s fp32); the fitted efficiencies make them real (localhost-cpu). Memory: a ceiling, one
    // core's L2 bandwidth (~64 B/cycle at ~3 GHz), not DRAM's 10-20 GB/s: the validator's CPU tensors
    // stay in cache, and measured packs reach 39-55 GB/s on a 2-core EPYC VM (a fitted efficiency
    // above 1 is refused, so the scale must not be below any core's).
    {"CPU-core", 100e9, 12 * GB, 200 * GB},
};

constexpr auto table_names = [] {
  std::array<std::string_view, std::size(table)> names;
  for (std::size_t i = 0; i < names.size(); ++i) names[i] = table[i].name;
  return names;
}();

}  // namespace

std::span<const GpuKind> gpu_kinds() { return table; }

const GpuKind* lookup_gpu_kind(std::string_view name) {
  for (const GpuKind& k : table)
    if (k.name == name) return &k;
  return nullptr;
}

std::span<const std::string_view> gpu_kind_names() { return table_names; }

}  // namespace basp
