// Fuzz target: quantities and counts as people write them ("400 Gb/s", "16K"). Accepted: finite
// and >= 0 (sizes above 0, token counts within 1 to 2^24). Refused: nullopt, or an InputError
// naming the flag.
#include "fuzz_input.hpp"
#include "input_ranges.hpp"
#include "units.hpp"

using namespace basp;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text = fuzz::as_text(data, size);
  for (Quantity q : {Quantity::bytes, Quantity::bandwidth, Quantity::time, Quantity::rate})
    if (const auto v = parse_quantity(text, q)) fuzz::non_negative(*v, "a quantity '" + text + "'");
  for (bool fraction : {false, true})
    if (const auto v = parse_binary_multiple(text, fraction)) fuzz::positive(*v, "a binary multiple '" + text + "'");
  try {
    const long tokens = parse_tokens(text, "--seq");
    fuzz::require(ranges::sequence_tokens.contains(double(tokens)), "a token count '" + text + "' beyond 1 to 2^24");
  } catch (const InputError& e) {
    fuzz::require(e.field == "--seq", "a token count refused without its flag");
  }
  return 0;
}
