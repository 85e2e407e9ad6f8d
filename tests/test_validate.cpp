// The validator's plain parts: how the problem splits over ranks, the refusals, the generated
// inputs, the checks' verdicts and the reference's own consistency.
#include <catch2/catch.hpp>
#include <limits>

#include "check.hpp"
#include "input_error.hpp"
#include "inputs.hpp"
#include "layer_config.hpp"
#include "layer_ops.hpp"
#include "reference.hpp"

using namespace basp::validate;

namespace {
LayerShape small_shape() {
  LayerShape s;
  s.heads = 8;
  s.kv_heads = 2;
  s.head_dim = 8;
  s.hidden = 16;
  s.seq = 32;
  s.batch = 2;
  return s;
}
std::string refusal(LayerStrategy st, const LayerShape& s, int ranks) {
  try {
    check_layer_problem(st, s, ranks);
  } catch (const basp::InputError& e) {
    return e.what();
  }
  return "";
}
}  // namespace

TEST_CASE("validate: ulysses gives every rank a slice of every sequence and basp one slice of one sequence") {
  const LayerShape s = small_shape();
  for (int r = 0; r < 8; ++r) {
    const RankPlan u = plan_rank(LayerStrategy::ulysses, s, 8, r);
    CHECK(u.exchange.nseq == 2);
    CHECK(u.exchange.chunk == 4);
    CHECK(u.exchange.peers == 8);
    CHECK(u.first_position == 4 * r);
    CHECK(u.kv_heads_local() == 1);  // 2 KV heads over 8 peers: replicated
    const RankPlan b = plan_rank(LayerStrategy::basp, s, 8, r);
    CHECK(b.exchange.nseq == 1);
    CHECK(b.exchange.chunk == 8);
    CHECK(b.exchange.peers == 4);
    CHECK(b.first_sequence == r / 4);
    CHECK(b.first_position == 8 * (r % 4));
    CHECK(b.q_heads_local() == 2);
  }
}

TEST_CASE("validate: impossible splits are refused naming the flag") {
  LayerShape s = small_shape();
  CHECK_THAT(refusal(LayerStrategy::basp, s, 5),
             Catch::Contains("--batch") && Catch::Contains("not divisible by B = 2"));
  s.heads = 6;
  s.kv_heads = 2;
  CHECK_THAT(refusal(LayerStrategy::basp, s, 8),
             Catch::Contains("--heads") && Catch::Contains("group size K = 4"));
  CHECK_THAT(refusal(LayerStrategy::ulysses, s, 4), Catch::Contains("group size N = 4"));
  s = small_shape();
  s.kv_heads = 3;
  CHECK_THAT(refusal(LayerStrategy::ulysses, s, 4), Catch::Contains("--kv-heads"));
  s = small_shape();
  s.seq = 30;
  CHECK_THAT(refusal(LayerStrategy::ulysses, s, 4), Catch::Contains("--seq"));
  s = small_shape();
  s.head_dim = 7;
  CHECK_THAT(refusal(LayerStrategy::ulysses, s, 4), Catch::Contains("--head-dim"));
  CHECK(refusal(LayerStrategy::basp, small_shape(), 8).empty());
}

TEST_CASE(
    "validate: a rank's inputs are exactly its rows of the global problem and depend only on the seed") {
  const LayerShape s = small_shape();
  const RankPlan p = plan_rank(LayerStrategy::basp, s, 8, 5);  // sequence 1, slice 1
  const auto x = token_slice(7, InputTensor::x, s, p);
  REQUIRE(x.size() == std::size_t(8 * s.hidden));
  CHECK(x[0] == float(input_value(7, InputTensor::x, std::uint64_t((32 + 8) * s.hidden), 1.0)));
  CHECK(token_slice(7, InputTensor::x, s, p) == x);
  CHECK(token_slice(8, InputTensor::x, s, p) != x);
  CHECK(weight(7, InputTensor::wq, s) != weight(7, InputTensor::wk, s));
}

TEST_CASE("validate: the check passes a close result and fails a perturbed or missing one") {
  const LayerShape s = small_shape();
  const LayerResult ref = reference_layer(3, s);
  LayerResult near = ref, off = ref, missing = ref;
  for (auto& v : near.y) v *= 1 + 1e-7;
  off.dwk[3] += 1.0;
  missing.dx.pop_back();
  for (const auto& c : check_against(near, ref, false)) CHECK(c.ok());
  bool failed = false;
  for (const auto& c : check_against(off, ref, false))
    if (c.name == "dwk") failed = !c.ok();
  CHECK(failed);
  for (const auto& c : check_against(missing, ref, true))
    if (c.name == "dx") CHECK_FALSE(c.ok());
}

TEST_CASE("validate: a failed check names the rank whose rows differ most, NaN included") {
  const LayerShape s = small_shape();
  const LayerResult ref = reference_layer(3, s);
  const std::size_t rows = std::size_t(s.batch) * std::size_t(s.seq), width = std::size_t(s.hidden);
  LayerResult got = ref;
  got.row_rank.assign(rows, 0);
  for (std::size_t row = rows / 2; row < rows; ++row) got.row_rank[row] = 1;
  got.y[(rows - 1) * width] += 0.5;                      // rank 1's last row
  got.y[0] += 0.25;                                      // rank 0's first row: smaller
  got.dx[3] = std::numeric_limits<double>::quiet_NaN();  // rank 0
  got.dx[(rows - 1) * width] += 1e3;                     // rank 1, but finite
  for (const auto& c : check_against(got, ref, false)) {
    INFO(c.name);
    if (c.name == "y") CHECK(c.worst_rank == 1);
    if (c.name == "dx") CHECK(c.worst_rank == 0);
    if (c.name != "y" && c.name != "dx") CHECK(c.worst_rank == -1);
  }
  got.row_rank.clear();  // the reference itself, or a result whose rows were not attributed
  for (const auto& c : check_against(got, ref, false)) CHECK(c.worst_rank == -1);
}

TEST_CASE("validate: the reference's output-projection gradient is consistent with its output") {
  LayerShape s = small_shape();
  s.seq = 8;
  s.batch = 1;
  const LayerResult r = reference_layer(5, s);
  double dot = 0;
  for (std::size_t i = 0; i < r.y.size(); ++i)
    dot += r.y[i] * input_value(5, InputTensor::dy, std::uint64_t(i), 1.0);
  // y = O·Wo, so <dy, y> = <Oᵀdy, Wo> = <dWo, Wo>.
  double dw_dot = 0;
  for (std::size_t i = 0; i < r.dwo.size(); ++i)
    dw_dot += r.dwo[i] * input_value(5, InputTensor::wo, std::uint64_t(i), input_scale(InputTensor::wo, s));
  CHECK(dot == Approx(dw_dot).epsilon(1e-10));
}

namespace {
// A backend with every operation of the contract, declared only (the concept is checked unevaluated).
struct DeclaredOps {
  using Buffer = std::vector<float>;
  using Ex = basp::kernels::ExchangeShape;
  Buffer alloc(long);
  Buffer alloc_fp32(long);
  void upload(Buffer&, const std::vector<float>&);
  std::vector<float> download(const Buffer&);
  double element_bytes() const;
  void gemm(Trans, Trans, long, long, long, const Buffer&, const Buffer&, Buffer&, float);
  void rotary(Buffer&, const Ex&, long, long, double, bool);
  void scatter_heads_to_peers(const Buffer&, Buffer&, const Ex&, long);
  void gather_tokens_from_peers(const Buffer&, Buffer&, const Ex&, long);
  void scatter_tokens_to_peers(const Buffer&, Buffer&, const Ex&, long);
  void gather_heads_from_peers(const Buffer&, Buffer&, const Ex&, long);
  void attention_forward(const Buffer&, const Buffer&, const Buffer&, Buffer&, Buffer&,
                         const basp::kernels::AttentionShape&);
  void attention_backward(const Buffer&, const Buffer&, const Buffer&, const Buffer&, const Buffer&,
                          const Buffer&, Buffer&, Buffer&, Buffer&, const basp::kernels::AttentionShape&);
  void all_to_all(const Buffer&, Buffer&, long, Phase);
  void wait_for_group(Phase);
  void start_iteration();
  PhaseTimes finish_iteration();
  PhaseTimes peer_waits() const;
  void begin(Phase);
  void end(Phase);
};
// The same without the exchange, and one whose download returns the wrong type.
struct NoAllToAllOps : DeclaredOps {
  void all_to_all(int) = delete;
};
struct WrongDownloadOps : DeclaredOps {
  float download(const Buffer&);
};
}  // namespace

// System: backends declared against the LayerOps contract. Expectations: the complete one satisfies
// it; one missing an operation, or with a wrong result type, does not (the concept is not vacuous).
TEST_CASE("validate: the LayerOps concept states the backends' contract") {
  CHECK(LayerOps<DeclaredOps>);
  CHECK_FALSE(LayerOps<NoAllToAllOps>);
  CHECK_FALSE(LayerOps<WrongDownloadOps>);
}
