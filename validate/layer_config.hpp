// The measured attention layer's global problem (shape, micro-batch, SP group) and what one rank
// of it holds under Ulysses (1/N of every sequence) or BASP (1/K of one sequence, K = N/B).
#pragma once

#include <string>

#include "layouts.hpp"

namespace basp::validate {

enum class LayerStrategy { ulysses, basp };
std::string strategy_name(LayerStrategy s);

struct LayerShape {
  int heads = 0;
  int kv_heads = 0;
  long head_dim = 0;
  long hidden = 0;
  long seq = 0;   // tokens of one sequence (S)
  int batch = 1;  // sequences in the micro-batch (B)
  double rope_theta = 10000.0;
  long q_width() const { return long(heads) * head_dim; }
  long kv_width() const { return long(kv_heads) * head_dim; }
};

struct RankPlan {
  kernels::ExchangeShape exchange;  // nseq × chunk tokens before, nseq × S after
  int group = 0;                    // which all-to-all group (BASP: which sequence)
  int group_rank = 0;               // rank within the group = which token slice
  int first_sequence = 0;           // global index of the first sequence held
  long first_position = 0;          // global position of the first token of each held slice
  long q_heads_local() const;       // query heads after the exchange
  long kv_heads_local() const;      // KV heads after the exchange (replicated when Hkv < P)
  int heads = 0, kv_heads = 0;
};

// Peers of each all-to-all: N (Ulysses) or K = N/B (BASP).
int group_size(LayerStrategy s, const LayerShape& shape, int ranks);
// Throws InputError naming the flag when this problem cannot be split over `ranks` this way
// (N not divisible by B, heads not divisible by the group size, S not divisible, ...).
void check_layer_problem(LayerStrategy s, const LayerShape& shape, int ranks);
RankPlan plan_rank(LayerStrategy s, const LayerShape& shape, int ranks, int rank);

}  // namespace basp::validate
