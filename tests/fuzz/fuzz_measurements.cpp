// Fuzz target: a measurement file (basp-validate's JSON) from bytes. Accepted: every sample's
// sizes and times finite and positive. Refused: an InputError naming file and field.
#include "fuzz_input.hpp"
#include "measurements.hpp"

using namespace basp;
using namespace basp::fitting;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string path = fuzz::as_file(data, size, "-measurements.json");
  try {
    const Measurements m = read_measurements({path});
    for (const CommSample& s : m.comm) {
      fuzz::positive(s.size_bytes, "comm size");
      fuzz::positive(s.time_s, "comm time");
    }
    for (const ComputeSample& s : m.compute) {
      fuzz::non_negative(s.flops, "compute FLOPs");
      fuzz::non_negative(s.bytes, "compute bytes");
      fuzz::positive(s.time_s, "compute time");
    }
    for (const LayerRun& l : m.layers)
      for (const LayerStrategyRun& s : l.strategies)
        for (const LayerPhase& p : s.phases) {
          fuzz::non_negative(p.median_s, "layer phase time");
          fuzz::non_negative(p.send_bytes, "layer phase bytes");
        }
    for (const StepObservation& o : m.steps) fuzz::require(std::isfinite(o.value), "a step figure not finite");
  } catch (const InputError& e) {
    fuzz::check_file_refusal(e);
  }
  return 0;
}
