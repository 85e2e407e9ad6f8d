// Fuzz target: a model file from bytes. Accepted: positive sizes whose products (parameters) are
// finite and heads a multiple of KV heads. Refused: an InputError naming file and field.
#include "fuzz_input.hpp"
#include "model.hpp"

using namespace basp;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string path = fuzz::as_file(data, size, "-model.yaml");
  try {
    const ModelSpec m = load_model(path);
    for (double v : {double(m.layers), double(m.hidden), double(m.heads), double(m.kv_heads), double(m.head_dim),
                     double(m.ffn), double(m.vocab)})
      fuzz::positive(v, "a model size");
    fuzz::require(m.heads % m.kv_heads == 0, "heads not a multiple of KV heads");
    fuzz::positive(total_parameters(m), "parameters");
  } catch (const InputError& e) {
    fuzz::check_file_refusal(e);
  }
  return 0;
}
