// Model files: every shipped model loads, its stated parameter count equals the count from its
// shape, and a wrong count or shape is an input error naming the field.
#include "helpers.hpp"

#include "input_error.hpp"
#include "model.hpp"

#include <catch2/catch.hpp>

#include <filesystem>

using namespace basp;

TEST_CASE("models: every shipped model loads with its published parameter count") {
  int loaded = 0;
  for (const auto& entry : std::filesystem::directory_iterator(std::string(BASP_DATA_DIR) + "/models")) {
    if (entry.path().extension() != ".yaml") continue;
    INFO(entry.path().string());
    const ModelSpec m = load_model(entry.path().string());
    CHECK(m.name == entry.path().stem().string());
    ++loaded;
  }
  CHECK(loaded >= 8);
  // Published totals (model cards / safetensors index), independent of our formula.
  CHECK(total_parameters(load_model("llama-3.2-1b")) == 1235814400.0);
  CHECK(total_parameters(load_model("llama-3.1-8b")) == 8030261248.0);
  CHECK(total_parameters(load_model("qwen1.5-1.8b")) == Approx(1.84e9).epsilon(0.005));
}

TEST_CASE("models: Q and O are heads x head_dim wide - not the hidden size") {
  const ModelSpec m = load_model("qwen3-4b");
  CHECK(m.hidden == 2560);
  CHECK(m.q_width() == 4096);
  // q, k, v, o, q/k norms, MLP, two norms per layer.
  const double per_layer = 2560.0 * (4096 + 2 * 1024) + 4096.0 * 2560 + 2 * 128 + 3.0 * 2560 * 9728 + 2 * 2560;
  CHECK(layer_parameters(m) == per_layer);
}

namespace {

// A two-layer model file; `parameters` 138048 is its correct count.
std::string tiny_model(int kv_heads, long parameters, const std::string& extra = "") {
  return "name: tiny\nsources: test\nlayers: 2\nhidden: 64\nheads: 4\nkv_heads: " + std::to_string(kv_heads) +
         "\nhead_dim: 16\nffn: 128\nffn_kind: swiglu\nvocab: 1000\ntied_embeddings: true\nqkv_bias: false\n"
         "qk_norm: false\nnorm: rmsnorm\nparameters: " + std::to_string(parameters) + "\n" + extra;
}

std::string error_field(const std::string& text) {
  test::TempFile f(text);
  try {
    load_model(f.path);
  } catch (const InputError& e) {
    return e.field;
  }
  return "no error";
}

}  // namespace

TEST_CASE("models: a wrong parameter count is an input error naming the field") {
  CHECK(error_field(tiny_model(2, 138048)) == "no error");
  test::TempFile f(tiny_model(2, 12345));
  try {
    load_model(f.path);
    FAIL("no error");
  } catch (const InputError& e) {
    CHECK(e.field == "parameters");
    CHECK(e.line == 15);
    CHECK_THAT(std::string(e.what()), Catch::Contains("shape fields give 138048"));
  }
}

TEST_CASE("models: bad values - unknown keys and unknown names are input errors") {
  CHECK(error_field(tiny_model(3, 138048)) == "kv_heads");  // 3 KV heads do not divide 4 heads
  CHECK(error_field(tiny_model(2, 138048, "colour: red\n")) == "colour");
  CHECK(error_field("name: tiny\nffn_kind: relu\n") != "no error");
  CHECK_THROWS_AS(load_model("no-such-model"), InputError);
}
