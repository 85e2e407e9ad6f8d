// Fuzz target: a calibration file from bytes. Accepted: efficiencies, latencies, overheads, F½ and
// fitted values within their physical ranges (input_ranges.hpp). Refused: an InputError.
#include "calibration.hpp"
#include "fuzz_input.hpp"

using namespace basp;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string path = fuzz::as_file(data, size, "-calibration.yaml");
  try {
    const Calibration c = load_calibration(path);
    const auto within = [](double v, const PhysicalRange& r, const char* what) {
      fuzz::require(r.contains(v), std::string(what) + " accepted beyond its range: " + r.allowed());
    };
    for (const LinkCalibration& l : c.links) {
      if (l.efficiency) within(*l.efficiency, ranges::efficiency, "a link efficiency");
      if (l.latency_s) within(*l.latency_s, ranges::latency, "a link latency");
    }
    if (c.launch_s) within(*c.launch_s, ranges::latency, "a launch overhead");
    if (c.per_peer_s) within(*c.per_peer_s, ranges::latency, "a per-peer overhead");
    for (double e : {c.compute.gemm, c.compute.attention_forward, c.compute.attention_backward, c.compute.memory,
                     c.compute.rotary_or_memory(), c.compute.unpack_heads.value_or(c.compute.memory)})
      within(e, ranges::efficiency, "a compute efficiency");
    for (double h : {c.compute.gemm_half_flops, c.compute.attention_forward_half_flops,
                     c.compute.attention_backward_half_flops})
      within(h, ranges::flops, "half-efficiency FLOPs");
    for (const FittedParameter& p : c.fitted) {
      const PhysicalRange* r = fitted_parameter_range(p.name);
      fuzz::require(r != nullptr, "a fitted parameter of no known name: " + p.name);
      within(p.value, *r, "a fitted parameter's value");
    }
  } catch (const InputError& e) {
    fuzz::check_file_refusal(e);
  }
  return 0;
}
