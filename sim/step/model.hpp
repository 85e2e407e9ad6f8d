// A transformer's shape (models/*.yaml, fields in models/README.md) and the parameter counts the
// cost and memory models use. The widths of Q and O are heads·head_dim, not the hidden size.
#pragma once

#include <string>

namespace basp {

enum class FfnKind { swiglu, gelu };  // 3 or 2 weight matrices
enum class NormKind { rmsnorm, layernorm };

struct ModelSpec {
  std::string name;
  std::string source;  // file it came from
  int layers = 0;
  long hidden = 0;
  int heads = 0;
  int kv_heads = 0;
  long head_dim = 0;
  long ffn = 0;
  FfnKind ffn_kind = FfnKind::swiglu;
  long vocab = 0;
  bool tied_embeddings = false;
  bool qkv_bias = false;
  bool qk_norm = false;
  NormKind norm = NormKind::rmsnorm;

  long q_width() const { return heads * head_dim; }    // width of Q and of attention's output
  long kv_width() const { return kv_heads * head_dim; }
};

// Parameters of one transformer layer (attention, MLP, norms).
double layer_parameters(const ModelSpec& m);
// Of them, those in tensors of at least `elements` elements (ZeRO-3 keeps smaller ones whole).
double layer_parameters_at_least(const ModelSpec& m, double elements);
// Of those, the attention inputs' (Q, K, V projections, their biases and norms, the first norm).
double attention_input_parameters_at_least(const ModelSpec& m, double elements);
// The embedding table and, when untied, the LM head; the final norm.
double embedding_parameters(const ModelSpec& m);
double total_parameters(const ModelSpec& m);
// Parameters that multiply every token (layers' weight matrices and the LM head): what 6·N·T counts.
double matmul_parameters(const ModelSpec& m);

// NAME resolves to models/NAME.yaml (see resolve_data_file). Checks every field and that the
// file's `parameters` equals the computed count; throws InputError otherwise.
ModelSpec load_model(const std::string& name_or_path);

}  // namespace basp
