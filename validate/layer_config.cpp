// Splits the global attention problem over the SP ranks as Ulysses and BASP do, and refuses the
// splits that cannot work with a message naming the flag (exit code 2 through InputError).
#include "layer_config.hpp"

#include "input_error.hpp"

namespace basp::validate {

std::string strategy_name(LayerStrategy s) {
  return s == LayerStrategy::ulysses ? "ulysses" : "basp";
}

int group_size(LayerStrategy s, const LayerShape& shape, int ranks) {
  return s == LayerStrategy::ulysses ? ranks : ranks / shape.batch;
}

long RankPlan::q_heads_local() const {
  return heads / exchange.peers;
}
long RankPlan::kv_heads_local() const {
  return kernels::heads_per_peer(kv_heads, exchange.peers);
}

namespace {
[[noreturn]] void bad(const std::string& flag, const std::string& what) {
  throw InputError("", 0, flag, what);
}
}  // namespace

void check_layer_problem(LayerStrategy s, const LayerShape& sh, int ranks) {
  if (ranks < 1) bad("ranks", "need at least one rank");
  if (sh.heads < 1) bad("--heads", "must be at least 1");
  if (sh.kv_heads < 1 || sh.heads % sh.kv_heads != 0)
    bad("--kv-heads", "must be at least 1 and divide --heads (" + std::to_string(sh.heads) + "), got " +
                          std::to_string(sh.kv_heads));
  if (sh.head_dim < 2 || sh.head_dim % 2 != 0)
    bad("--head-dim",
        "must be even (rotary pairs dimension d with d + head_dim/2), got " + std::to_string(sh.head_dim));
  if (sh.hidden < 1) bad("--hidden", "must be at least 1");
  if (sh.batch < 1) bad("--batch", "must be at least 1");
  if (sh.rope_theta <= 1.0) bad("--rope-theta", "must be greater than 1");
  std::string P = "N";
  if (s == LayerStrategy::basp) {
    if (ranks % sh.batch != 0)
      bad("--batch", "BASP needs N = K·B: N = " + std::to_string(ranks) +
                         " ranks is not divisible by B = " + std::to_string(sh.batch));
    P = "K";
  }
  const int p = group_size(s, sh, ranks);
  const std::string pv = P + " = " + std::to_string(p);
  if (sh.heads % p != 0)
    bad("--heads", "heads (" + std::to_string(sh.heads) + ") are not divisible by the group size " + pv);
  if (sh.kv_heads % p != 0 && p % sh.kv_heads != 0)
    bad("--kv-heads", "KV heads (" + std::to_string(sh.kv_heads) +
                          ") must be a multiple or a divisor of the group size " + pv);
  if (sh.seq < p || sh.seq % p != 0)
    bad("--seq", "sequence length " + std::to_string(sh.seq) + " is not divisible by the group size " + pv);
}

RankPlan plan_rank(LayerStrategy s, const LayerShape& sh, int ranks, int rank) {
  check_layer_problem(s, sh, ranks);
  RankPlan r;
  r.heads = sh.heads;
  r.kv_heads = sh.kv_heads;
  const int p = group_size(s, sh, ranks);
  r.exchange.peers = p;
  r.exchange.head_dim = sh.head_dim;
  r.exchange.chunk = sh.seq / p;
  if (s == LayerStrategy::ulysses) {  // a 1/N slice of every sequence
    r.exchange.nseq = sh.batch;
    r.group = 0;
    r.group_rank = rank;
    r.first_sequence = 0;
  } else {  // slice (r mod K) of sequence r / K
    r.exchange.nseq = 1;
    r.group = rank / p;
    r.group_rank = rank % p;
    r.first_sequence = r.group;
  }
  r.first_position = long(r.group_rank) * r.exchange.chunk;
  return r;
}

}  // namespace basp::validate
