// Fuzz target: a measurement file (basp-validate's JSON) from bytes. Accepted: every sample's
// sizes, times and counts within their physical ranges (input_ranges.hpp). Refused: an InputError
// naming file and field.
#include "fuzz_input.hpp"
#include "input_ranges.hpp"
#include "measurements.hpp"

using namespace basp;
using namespace basp::fitting;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string path = fuzz::as_file(data, size, "-measurements.json");
  try {
    const Measurements m = read_measurements({path});
    const auto within = [](double v, const PhysicalRange& r, const char* what) {
      fuzz::require(r.contains(v), std::string(what) + " accepted beyond its range: " + r.allowed());
    };
    for (const CommSample& s : m.comm) {
      within(s.size_bytes, ranges::buffer_bytes, "a comm size");
      within(s.time_s, ranges::duration, "a comm time");
      within(s.ranks, ranges::gpu_count, "a comm run's ranks");
    }
    for (const ComputeSample& s : m.compute) {
      within(s.flops, ranges::flops, "compute FLOPs");
      within(s.bytes, ranges::kernel_bytes, "compute bytes");
      within(s.time_s, ranges::duration, "a compute time");
    }
    for (const LayerRun& l : m.layers) {
      within(double(l.seq), ranges::sequence_tokens, "a layer run's sequence");
      for (const LayerStrategyRun& s : l.strategies)
        for (const LayerPhase& p : s.phases) {
          for (double t : {p.median_s, p.min_s, p.max_s}) within(t, ranges::duration, "a layer phase time");
          within(p.send_bytes, ranges::send_bytes, "a layer phase's bytes");
        }
    }
    for (const StepSetting& s : m.step_settings) within(double(s.seq), ranges::sequence_tokens, "a step's sequence");
    for (const StepObservation& o : m.steps)
      fuzz::require(std::isfinite(o.value) && o.value > 0 && o.value <= ranges::duration.max,
                    "a step figure not finite and positive");
  } catch (const InputError& e) {
    fuzz::check_file_refusal(e);
  }
  return 0;
}
