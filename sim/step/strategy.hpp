// How each sequence-parallel strategy lays a micro-batch out on the ranks: which ranks exchange
// with which, how many tokens and heads each rank holds, and the bytes of each exchange.
#pragma once

#include "model.hpp"

#include <array>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace basp {

// dp: plain data parallelism, every sequence whole on one rank (no sequence parallelism, N = 1).
enum class Strategy { ulysses, basp, sp_dp, ring, usp, dp };
std::string_view to_string(Strategy s);
std::optional<Strategy> parse_strategy(std::string_view name);  // "ulysses", "basp", "sp-dp", "ring", "usp", "dp"
inline constexpr std::array<Strategy, 6> all_strategies{Strategy::ulysses, Strategy::basp, Strategy::sp_dp,
                                                        Strategy::ring,    Strategy::usp,  Strategy::dp};
std::vector<std::string> strategy_names();  // of all_strategies, in order: what --strategy accepts

// Whether a strategy at SP degree N keeps each sequence on several ranks. At N = 1 none does: they
// all lay out plain data parallelism, simulated once, as dp.
bool sequence_parallel(Strategy s, int sp);
// The strategies to simulate at SP degree N: those asked for, each that is not sequence parallel
// there replaced by dp, listed once, in order.
std::vector<Strategy> strategies_at(const std::vector<Strategy>& asked, int sp);

struct StepConfig;

struct Layout {
  Strategy strategy = Strategy::ulysses;
  int ranks = 0;        // G
  int sp = 0;           // N: ranks that share one micro-batch of `batch` sequences
  int a2a_size = 1;     // ranks of one all-to-all group
  bool a2a = false;     // exchanges by all-to-all, even in groups of one (BASP's K = 1: a local copy and a launch)
  int ring_size = 1;    // ranks of one ring-attention ring (1: no ring)
  std::vector<std::vector<int>> a2a_groups;   // every all-to-all group of the job
  std::vector<std::vector<int>> ring_groups;  // every ring of the job, in ring order
  double tokens_per_rank = 0;   // tokens whose projections and MLP a rank computes
  double sequences = 0;        // sequences per step, whole job
  // Attention on one rank: `attention_blocks` blocks of `attention_heads` heads, `block_queries`
  // queries against `block_keys` keys, half unmasked (causal, load-balanced) — once per ring step.
  double attention_heads = 0;
  double attention_blocks = 0;  // sequences a rank attends per block
  double block_queries = 0, block_keys = 0;
  // Exchange sizes per rank and call, nccl-tests convention (per-rank send buffer).
  double q_bytes = 0, kv_bytes = 0;  // Q (and O), and each of K and V (KV heads replicated to the group)
  double ring_kv_bytes = 0;          // K and V block a ring step passes on
};

// Checks the strategy's constraints against the model and job (InputError naming the flag and
// the rule, exit 2) and lays it out.
Layout make_layout(const StepConfig& config, const ModelSpec& model, Strategy strategy, int ranks,
                   int gpus_per_node);

}  // namespace basp
