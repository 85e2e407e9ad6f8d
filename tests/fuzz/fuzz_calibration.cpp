// Fuzz target: a calibration file from bytes. Accepted: efficiencies in (0, 1] where set (links)
// and finite positive (compute), latencies and overheads finite >= 0. Refused: an InputError.
#include "calibration.hpp"
#include "fuzz_input.hpp"

using namespace basp;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string path = fuzz::as_file(data, size, "-calibration.yaml");
  try {
    const Calibration c = load_calibration(path);
    for (const LinkCalibration& l : c.links) {
      if (l.efficiency) fuzz::require(*l.efficiency > 0.0 && *l.efficiency <= 1.0, "link efficiency outside (0, 1]");
      if (l.latency_s) fuzz::non_negative(*l.latency_s, "link latency");
    }
    if (c.launch_s) fuzz::non_negative(*c.launch_s, "launch overhead");
    if (c.per_peer_s) fuzz::non_negative(*c.per_peer_s, "per-peer overhead");
    for (double e : {c.compute.gemm, c.compute.attention_forward, c.compute.attention_backward, c.compute.memory})
      fuzz::positive(e, "compute efficiency");
    if (c.compute.rotary) fuzz::require(*c.compute.rotary > 0.0 && *c.compute.rotary <= 1.0, "rotary efficiency outside (0, 1]");
    for (double h : {c.compute.gemm_half_flops, c.compute.attention_forward_half_flops,
                     c.compute.attention_backward_half_flops})
      fuzz::non_negative(h, "half-efficiency FLOPs");
  } catch (const InputError& e) {
    fuzz::check_file_refusal(e);
  }
  return 0;
}
