// ZeRO-3 as DeepSpeed runs it: gradients reduce-scattered in buckets of reduce_bucket_size
// elements, tensors under the persistence threshold never gathered. Expectations derived by hand.
#include <catch2/catch.hpp>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "cli_helpers.hpp"
#include "model.hpp"

using namespace basp;

namespace {
// GPU 0's reduce-scatter calls of `simulate --strategy ulysses` (the paper cluster, Llama-3.2-1B),
// as the layer each was issued after.
std::vector<int> reduce_scatter_layers(const std::string& flags) {
  basp::test::TempFile trace("", ".json");
  const auto r = basp::test::basp_cli("simulate --strategy ulysses " + flags + " --trace " + trace.path);
  REQUIRE(r.code == 0);
  std::ifstream in(trace.path);
  const auto j = nlohmann::json::parse(in);
  std::vector<int> layers;
  for (const auto& e : j.at("traceEvents"))
    if (e.value("name", "") == "zero reduce-scatter" && e.at("pid") == 0)
      layers.push_back(e.at("args").at("layer").get<int>());
  return layers;
}
}  // namespace

TEST_CASE("ZeRO-3: tensors under the persistence threshold are not gathered") {
  // Llama-3.2-1B: hidden 2048, Q width 2048, KV width 512, SwiGLU 8192, two RMSNorms per layer.
  const ModelSpec m = load_model("llama-3.2-1b");
  const double q = 2048.0 * 2048, kv = 2048.0 * 512, o = 2048.0 * 2048, mlp = 3 * 2048.0 * 8192, norms = 2 * 2048.0;
  CHECK(layer_parameters(m) == q + 2 * kv + o + mlp + norms);
  CHECK(layer_parameters_at_least(m, 0) == q + 2 * kv + o + mlp + norms);
  CHECK(layer_parameters_at_least(m, 1e5) == q + 2 * kv + o + mlp);  // DeepSpeed's default: the norms stay
  CHECK(layer_parameters_at_least(m, 2e6) == q + o + mlp);            // K and V (1,048,576 each) stay too
}

TEST_CASE("ZeRO-3: gradients are reduce-scattered a DeepSpeed bucket at a time") {
  // Backward produces, in order: the head's (tied embeddings: the final norm, 2048), 16 layers of
  // 60,821,504 and the embedding table, 128256 x 2048 = 262,668,288. A bucket of 5e8 elements is
  // reduced just before the backward of the module that would overflow it, labelled with the last
  // module it holds: 2048 + 8 layers = 486.6M, the 9th would make 547.4M, so the first call holds
  // layers 15..8; layers 7..0 (486.6M) plus the table would make 749.2M, so the second holds 7..0
  // and goes before the embedding's backward; the table (under 5e8) is the third, once backward is done.
  CHECK(reduce_scatter_layers("") == std::vector<int>{8, 0, -1});
  // A bucket of 1.3e8 holds two layers (121.6M; three would be 182.5M): calls holding 15-14 (with
  // the head's 2048), 13-12, ..., 1-0, then the table, larger than the bucket on its own, right
  // after its backward.
  CHECK(reduce_scatter_layers("--zero-bucket 1.3e8") == std::vector<int>{14, 12, 10, 8, 6, 4, 2, 0, -1});
  // Bucket 0: every module's gradients at once, as stages 1 and 2 do: the head, 16 layers, the table.
  std::vector<int> each = {-1};
  for (int l = 15; l >= 0; --l) each.push_back(l);
  each.push_back(-1);
  CHECK(reduce_scatter_layers("--zero-bucket 0") == each);
  // A bucket of 1 element: every module overflows it alone and is reduced right after its own
  // backward, exactly as with no bucket.
  CHECK(reduce_scatter_layers("--zero-bucket 1") == each);
}

TEST_CASE("ZeRO-3: bad bucket and threshold values are refused with the flag") {
  for (const char* args : {"--zero-bucket -1", "--zero-persistence -5", "--zero-bucket nan"}) {
    INFO(args);
    const auto r = basp::test::basp_cli(std::string("simulate ") + args);
    CHECK(r.code == 2);
    CHECK_THAT(r.out, Catch::Contains(std::string(args).substr(0, std::string(args).find(' '))));
  }
}
