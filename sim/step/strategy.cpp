// Layouts of Ulysses, BASP, SP×DP, ring attention, USP and plain data parallelism, with the rules
// each imposes on heads, sequence length and group sizes (docs/design.md, "Exchange volumes").
#include "strategy.hpp"

#include "input_error.hpp"
#include "step_config.hpp"

#include <algorithm>
#include <numeric>

namespace basp {
namespace {

constexpr double element_bytes = 2.0;  // bf16

[[noreturn]] void bad(const std::string& flag, const std::string& what) { throw InputError("", 0, flag, what); }

// A P-way all-to-all splits heads P ways: P must divide the query heads, and the KV heads must
// split evenly or be replicated evenly.
void check_heads(const ModelSpec& m, int p, const std::string& flag, const std::string& who) {
  if (m.heads % p != 0)
    bad(flag, who + " splits the " + std::to_string(m.heads) + " query heads of " + m.name + " " +
                  std::to_string(p) + " ways: " + std::to_string(p) + " must divide " + std::to_string(m.heads));
  if (m.kv_heads % p != 0 && p % m.kv_heads != 0)
    bad(flag, who + " needs the " + std::to_string(m.kv_heads) + " KV heads of " + m.name +
                  " to split or replicate evenly over " + std::to_string(p) + " ranks (" +
                  std::to_string(m.kv_heads) + " % " + std::to_string(p) + " or " + std::to_string(p) + " % " +
                  std::to_string(m.kv_heads) + " must be 0)");
}

void check_divides(long divisor, long value, const std::string& flag, const std::string& what) {
  if (divisor <= 0 || value % divisor != 0)
    bad(flag, what + ": " + std::to_string(divisor) + " does not divide " + std::to_string(value));
}

std::vector<std::vector<int>> contiguous(int first, int count, int size) {
  std::vector<std::vector<int>> out(count / size);
  for (int g = 0; g < count / size; ++g) {
    out[g].reserve(size);
    for (int i = 0; i < size; ++i) out[g].push_back(first + g * size + i);
  }
  return out;
}

void set_alltoall(Layout& l, const ModelSpec& m, int p) {
  l.a2a_size = p;
  l.a2a = true;
  l.q_bytes = element_bytes * l.tokens_per_rank * m.q_width();
  l.kv_bytes = element_bytes * l.tokens_per_rank * std::max(m.kv_heads, p) * m.head_dim;
}

// Ulysses of degree p over `groups`, each rank attending H/p heads of `sequences` whole sequences.
void set_ulysses(Layout& l, const ModelSpec& m, int p, double sequences, double seq,
                 std::vector<std::vector<int>> groups) {
  l.a2a_groups = std::move(groups);
  set_alltoall(l, m, p);
  l.attention_heads = double(m.heads) / p;
  l.attention_blocks = sequences;
  l.block_queries = l.block_keys = seq;
}

}  // namespace

std::string_view to_string(Strategy s) {
  switch (s) {
    case Strategy::ulysses: return "ulysses";
    case Strategy::basp: return "basp";
    case Strategy::sp_dp: return "sp-dp";
    case Strategy::ring: return "ring";
    case Strategy::usp: return "usp";
    case Strategy::dp: return "dp";
  }
  return "?";
}

std::optional<Strategy> parse_strategy(std::string_view name) {
  for (Strategy s : all_strategies)
    if (to_string(s) == name) return s;
  return std::nullopt;
}

std::vector<std::string> strategy_names() {
  std::vector<std::string> names;
  for (Strategy s : all_strategies) names.emplace_back(to_string(s));
  return names;
}

bool sequence_parallel(Strategy s, int sp) { return s != Strategy::dp && sp > 1; }

std::vector<Strategy> strategies_at(const std::vector<Strategy>& asked, int sp) {
  std::vector<Strategy> out;
  for (Strategy s : asked) {
    const Strategy run = sequence_parallel(s, sp) ? s : Strategy::dp;
    if (std::find(out.begin(), out.end(), run) == out.end()) out.push_back(run);
  }
  return out;
}

Layout make_layout(const StepConfig& c, const ModelSpec& m, Strategy strategy, int ranks, int gpus_per_node) {
  Layout l;
  l.strategy = strategy;
  l.ranks = ranks;
  l.sp = c.sp == 0 ? ranks : c.sp;
  const int n = l.sp, b = c.batch;
  const double s = double(c.seq);
  if (n < 1 || n > ranks) bad("--sp", std::to_string(n) + " is not between 1 and the job's " + std::to_string(ranks) + " GPUs");
  check_divides(n, ranks, "--sp", "the job's GPUs must be a whole number of SP groups (G = DP × N)");
  if (b < 1) bad("--batch", "must be at least 1");
  const int dp = ranks / n;

  switch (strategy) {
    case Strategy::ulysses: {
      check_heads(m, n, "--sp", "Ulysses (N = " + std::to_string(n) + ")");
      check_divides(n, c.seq, "--seq", "Ulysses splits each sequence over the N ranks");
      l.tokens_per_rank = b * s / n;
      l.sequences = double(b) * dp;
      set_ulysses(l, m, n, b, s, contiguous(0, ranks, n));
      break;
    }
    case Strategy::basp: {
      check_divides(b, n, "--batch", "BASP splits the N = " + std::to_string(n) + " ranks into B = --batch groups");
      const int k = n / b;
      check_heads(m, k, "--batch", "BASP (K = N/B = " + std::to_string(k) + ")");
      check_divides(k, c.seq, "--seq", "BASP splits each sequence over the K ranks of its group");
      l.tokens_per_rank = s / k;
      l.sequences = double(b) * dp;
      std::vector<std::vector<int>> groups;
      for (int d = 0; d < dp; ++d)
        for (auto g : make_groups(n, b, c.placement)) {
          for (int& r : g) r += d * n;
          groups.push_back(std::move(g));
        }
      set_ulysses(l, m, k, 1, s, std::move(groups));
      break;
    }
    case Strategy::sp_dp: {
      check_divides(b, n, "--batch", "SP×DP runs Ulysses of degree K = N/B");
      const int k = n / b;
      const int rb = c.replica_batch;
      if (rb < 1) bad("--replica-batch", "must be at least 1");
      check_heads(m, k, "--batch", "SP×DP (Ulysses degree K = N/B = " + std::to_string(k) + ")");
      check_divides(k, c.seq, "--seq", "SP×DP splits each sequence over its K ranks");
      l.tokens_per_rank = rb * s / k;
      l.sequences = double(rb) * ranks / k;
      set_ulysses(l, m, k, rb, s, contiguous(0, ranks, k));
      break;
    }
    case Strategy::ring: {
      check_divides(2L * n, c.seq, "--seq", "ring attention cuts each sequence into 2N chunks (causal load balancing)");
      l.tokens_per_rank = b * s / n;
      l.sequences = double(b) * dp;
      l.ring_size = n;
      for (int d = 0; d < dp; ++d)
        for (auto& g : contiguous(d * n, n, n)) l.ring_groups.push_back(std::move(g));
      l.attention_heads = m.heads;
      l.attention_blocks = b;
      l.block_queries = l.block_keys = s / n;
      l.ring_kv_bytes = element_bytes * b * (s / n) * 2.0 * m.kv_width();
      break;
    }
    case Strategy::dp: {
      if (n != 1)
        bad("--sp", "dp keeps every sequence whole on one rank (N = 1); give --sp 1 or leave --sp out, or compare "
                    "it with the sequence-parallel strategies in a run of its own");
      l.tokens_per_rank = b * s;
      l.sequences = double(b) * dp;
      l.attention_heads = m.heads;
      l.attention_blocks = b;
      l.block_queries = l.block_keys = s;
      break;
    }
    case Strategy::usp: {
      const int u = c.ulysses_degree != 0 ? c.ulysses_degree : std::gcd(n, gpus_per_node);
      if (u < 1) bad("--ulysses-degree", "must be at least 1");
      check_divides(u, n, "--ulysses-degree", "USP runs Ulysses of degree U inside rings of N/U");
      check_heads(m, u, "--ulysses-degree", "USP's Ulysses part (U = " + std::to_string(u) + ")");
      const int r = n / u;
      check_divides(n, c.seq, "--seq", "USP splits each sequence over the N ranks");
      check_divides(2L * r, c.seq, "--seq", "USP's rings cut each sequence into 2·(N/U) chunks");
      l.tokens_per_rank = b * s / n;
      l.sequences = double(b) * dp;
      for (int d = 0; d < dp; ++d) {
        for (auto& g : contiguous(d * n, n, u)) l.a2a_groups.push_back(std::move(g));
        for (int i = 0; i < u; ++i) {
          std::vector<int> ring;
          for (int j = 0; j < r; ++j) ring.push_back(d * n + j * u + i);
          l.ring_groups.push_back(std::move(ring));
        }
      }
      set_alltoall(l, m, u);
      l.a2a = u > 1;  // U = 1 is ring attention alone: its Ulysses part makes no call
      l.ring_size = r;
      l.attention_heads = double(m.heads) / u;
      l.attention_blocks = b;
      l.block_queries = l.block_keys = s / r;
      l.ring_kv_bytes = element_bytes * b * (s / r) * 2.0 * (double(std::max(m.kv_heads, u)) / u) * m.head_dim;
      break;
    }
  }
  return l;
}

}  // namespace basp
