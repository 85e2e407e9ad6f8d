// Reads model files strictly and counts parameters the way Hugging Face does (every weight, bias
// and norm), so the file's published count checks the shape fields.
#include "model.hpp"

#include <utility>
#include <vector>

#include "data_files.hpp"
#include "input_error.hpp"
#include "input_ranges.hpp"
#include "yaml_fields.hpp"

#include <cmath>
#include <cstdint>

namespace basp {

namespace {

struct LayerTensor {
  double elements, count;
  bool attention_input;  // used before attention: gathered with Q, K, V (ZeRO-3)
};

// Every tensor of a layer: Q, K, V and output projections, the MLP's matrices, the QKV biases,
// QK-norm weights and the norms (LayerNorm: weight and bias), the first norm's before attention.
std::vector<LayerTensor> layer_tensors(const ModelSpec& m) {
  const double q = m.q_width(), kv = m.kv_width(), d = m.hidden, dh = double(m.head_dim);
  const double norm = m.norm == NormKind::rmsnorm ? 1.0 : 2.0;
  return {{d * q, 1, true},
          {d * kv, 2, true},
          {m.qkv_bias ? q : 0, 1, true},
          {m.qkv_bias ? kv : 0, 2, true},
          {m.qk_norm ? dh : 0, 2, true},
          {d, norm, true},
          {q * d, 1, false},
          {d * double(m.ffn), m.ffn_kind == FfnKind::swiglu ? 3.0 : 2.0, false},
          {d, norm, false}};
}

double sum_at_least(const ModelSpec& m, double elements, bool attention_inputs_only) {
  double sum = 0;
  for (const LayerTensor& t : layer_tensors(m))
    if (t.elements >= elements && (t.attention_input || !attention_inputs_only)) sum += t.elements * t.count;
  return sum;
}

}  // namespace

double layer_parameters_at_least(const ModelSpec& m, double elements) { return sum_at_least(m, elements, false); }
double attention_input_parameters_at_least(const ModelSpec& m, double elements) {
  return sum_at_least(m, elements, true);
}
double layer_parameters(const ModelSpec& m) { return layer_parameters_at_least(m, 0.0); }

double embedding_parameters(const ModelSpec& m) {
  const double table = double(m.vocab) * m.hidden;
  return table * (m.tied_embeddings ? 1 : 2) + (m.norm == NormKind::rmsnorm ? 1.0 : 2.0) * m.hidden;
}

double total_parameters(const ModelSpec& m) { return m.layers * layer_parameters(m) + embedding_parameters(m); }

double matmul_parameters(const ModelSpec& m) {
  const double q = m.q_width(), kv = m.kv_width(), d = m.hidden;
  const double per_layer = d * (q + 2 * kv) + q * d + (m.ffn_kind == FfnKind::swiglu ? 3.0 : 2.0) * d * m.ffn;
  return m.layers * per_layer + double(m.vocab) * d;
}

ModelSpec load_model(const std::string& name_or_path) {
  const std::string file = resolve_data_file("models", name_or_path);
  YamlFields f(load_yaml_file(file), file, "");
  ModelSpec m;
  m.source = file;
  m.name = f.text("name");
  f.text("description", "");
  f.text("sources");
  m.layers = static_cast<int>(f.integer("layers", 1, 1000));
  m.hidden = f.integer("hidden", ranges::hidden_size);
  m.heads = static_cast<int>(f.integer("heads", ranges::attention_heads));
  m.kv_heads = static_cast<int>(f.integer("kv_heads", ranges::attention_heads));
  m.head_dim = f.integer("head_dim", ranges::head_dim);
  m.ffn = f.integer("ffn", 1, 1 << 22);
  m.ffn_kind = f.choice("ffn_kind", {"swiglu", "gelu"}) == "swiglu" ? FfnKind::swiglu : FfnKind::gelu;
  m.vocab = f.integer("vocab", 1, 1 << 24);
  m.tied_embeddings = f.boolean("tied_embeddings");
  m.qkv_bias = f.boolean("qkv_bias");
  m.qk_norm = f.boolean("qk_norm");
  m.norm = f.choice("norm", {"rmsnorm", "layernorm"}) == "rmsnorm" ? NormKind::rmsnorm : NormKind::layernorm;
  const long stated = f.integer("parameters", 1, std::int64_t(1) << 50);
  if (m.heads % m.kv_heads != 0)
    f.fail("kv_heads", std::to_string(m.kv_heads) + " KV heads do not divide " + std::to_string(m.heads) +
                           " query heads (grouped-query attention shares each KV head among a whole number of query heads)");
  const double computed = total_parameters(m);
  if (std::fabs(computed - double(stated)) > 0.5)
    f.fail("parameters", "states " + std::to_string(stated) + " but the shape fields give " +
                             std::to_string(static_cast<long long>(computed)) +
                             " (formula in models/README.md): a shape field or the count is wrong");
  f.reject_unknown();
  return m;
}

}  // namespace basp
