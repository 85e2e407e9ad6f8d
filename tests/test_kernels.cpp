// The CPU reference kernels of the measured layer: exchange layouts, rotary embedding per slice,
// tiled attention forward and backward against plain formulas computed here in double.
#include <catch2/catch.hpp>
#include <cmath>
#include <random>
#include <vector>

#include "cpu_kernels.hpp"

using namespace basp::kernels;

namespace {
std::vector<float> random_vector(std::size_t n, unsigned seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (auto& x : v) x = u(gen);
  return v;
}

// The all-to-all, in memory: rank r's block for peer p lands in rank p's slot r.
std::vector<std::vector<float>> exchange(const std::vector<std::vector<float>>& send) {
  const std::size_t P = send.size(), block = send[0].size() / P;
  std::vector<std::vector<float>> recv(P, std::vector<float>(send[0].size()));
  for (std::size_t r = 0; r < P; ++r)
    for (std::size_t p = 0; p < P; ++p)
      std::copy(send[r].begin() + long(p * block), send[r].begin() + long((p + 1) * block),
                recv[p].begin() + long(r * block));
  return recv;
}

struct Naive {  // plain causal attention of one (sequence, head) pair in double
  std::vector<double> o, dq, dk, dv;
};
Naive naive_attention(const std::vector<float>& q, const std::vector<float>& k, const std::vector<float>& v,
                      const std::vector<float>& dout, const AttentionShape& a, int s, long h) {
  const long S = a.seq, dh = a.head_dim, g = h / (a.q_heads / a.kv_heads);
  auto Q = [&](long i, long e) { return double(q[((s * S + i) * a.q_heads + h) * dh + e]); };
  auto K = [&](long j, long e) { return double(k[((s * S + j) * a.kv_heads + g) * dh + e]); };
  auto V = [&](long j, long e) { return double(v[((s * S + j) * a.kv_heads + g) * dh + e]); };
  auto dO = [&](long i, long e) { return double(dout[((s * S + i) * a.q_heads + h) * dh + e]); };
  std::vector<double> P(S * S, 0.0);
  for (long i = 0; i < S; ++i) {
    double mx = -1e300, sum = 0;
    for (long j = 0; j <= i; ++j) {
      double sc = 0;
      for (long e = 0; e < dh; ++e) sc += Q(i, e) * K(j, e);
      P[i * S + j] = sc * a.scale();
      mx = std::max(mx, P[i * S + j]);
    }
    for (long j = 0; j <= i; ++j) sum += (P[i * S + j] = std::exp(P[i * S + j] - mx));
    for (long j = 0; j <= i; ++j) P[i * S + j] /= sum;
  }
  Naive n;
  n.o.assign(S * dh, 0);
  n.dq.assign(S * dh, 0);
  n.dk.assign(S * dh, 0);
  n.dv.assign(S * dh, 0);
  for (long i = 0; i < S; ++i) {
    std::vector<double> dp(S, 0);
    double rowdot = 0;
    for (long j = 0; j <= i; ++j) {
      for (long e = 0; e < dh; ++e) {
        n.o[i * dh + e] += P[i * S + j] * V(j, e);
        dp[j] += dO(i, e) * V(j, e);
      }
      rowdot += P[i * S + j] * dp[j];
    }
    for (long j = 0; j <= i; ++j) {
      const double ds = P[i * S + j] * (dp[j] - rowdot) * a.scale();
      for (long e = 0; e < dh; ++e) {
        n.dq[i * dh + e] += ds * K(j, e);
        n.dk[j * dh + e] += ds * Q(i, e);
        n.dv[j * dh + e] += P[i * S + j] * dO(i, e);
      }
    }
  }
  return n;
}
}  // namespace

TEST_CASE("kernels: rotary of each slice equals the whole sequence's rotary at the global positions") {
  const long heads = 3, dh = 8, S = 32;
  const int P = 4;
  const ExchangeShape whole{1, S, 1, dh};
  const std::vector<float> x = random_vector(std::size_t(S * heads * dh), 1);
  std::vector<float> full = x;
  cpu::rotary(full.data(), whole, heads, 0, 10000.0, false);
  for (int r = 0; r < P; ++r) {
    const ExchangeShape slice{1, S / P, P, dh};
    const long n = slice.chunk * heads * dh;
    std::vector<float> part(x.begin() + r * n, x.begin() + (r + 1) * n);
    cpu::rotary(part.data(), slice, heads, r * slice.chunk, 10000.0, false);
    for (long e = 0; e < n; ++e) REQUIRE(part[e] == Approx(full[r * n + e]).margin(1e-6));
    if (r > 0) CHECK(part[0] != Approx(x[r * n]).margin(1e-3));  // position > 0 rotates
  }
  std::vector<float> back = full;
  cpu::rotary(back.data(), whole, heads, 0, 10000.0, true);
  for (std::size_t e = 0; e < x.size(); ++e) REQUIRE(back[e] == Approx(x[e]).margin(1e-5));
}

TEST_CASE("kernels: pack and unpack around an in-memory all-to-all restore every rank's tensor") {
  const int P = 4, nseq = 2;
  const long chunk = 3, dh = 4;
  const ExchangeShape ex{nseq, chunk, P, dh};
  for (long heads : {8L, 4L, 2L, 1L}) {  // 2 and 1: fewer heads than peers, replicated
    const long hp = heads_per_peer(heads, P), T = ex.tokens();
    std::vector<std::vector<float>> local(P), send(P, std::vector<float>(std::size_t(P * T * hp * dh)));
    for (int r = 0; r < P; ++r) {
      local[r] = random_vector(std::size_t(T * heads * dh), unsigned(10 + r));
      cpu::scatter_heads_to_peers(local[r].data(), send[r].data(), ex, heads);
    }
    const auto recv = exchange(send);
    std::vector<std::vector<float>> whole(P, std::vector<float>(std::size_t(nseq * ex.seq_len() * hp * dh)));
    for (int r = 0; r < P; ++r) cpu::gather_tokens_from_peers(recv[r].data(), whole[r].data(), ex, hp);
    // Rank j now holds head first_head_of_peer(j) of token (p·chunk + i) from rank p's token i.
    for (int j = 0; j < P; ++j)
      for (int p = 0; p < P; ++p)
        for (int q = 0; q < nseq; ++q)
          for (long i = 0; i < chunk; ++i)
            REQUIRE(whole[j][((q * ex.seq_len() + p * chunk + i) * hp) * dh] ==
                    local[p][((q * chunk + i) * heads + first_head_of_peer(heads, P, j)) * dh]);
    for (int r = 0; r < P; ++r) cpu::scatter_tokens_to_peers(whole[r].data(), send[r].data(), ex, hp);
    const auto back = exchange(send);
    for (int r = 0; r < P; ++r) {
      std::vector<float> restored(local[r].size());
      cpu::gather_heads_from_peers(back[r].data(), restored.data(), ex, heads);
      const float times = heads >= P ? 1.0f : float(P / heads);  // every replica's copy is summed
      for (std::size_t e = 0; e < restored.size(); ++e)
        REQUIRE(restored[e] == Approx(times * local[r][e]).margin(1e-6));
    }
  }
}

TEST_CASE("kernels: tiled causal attention and its backward equal the plain formulas for every tile size") {
  const AttentionShape a{2, 37, 4, 2, 16};
  const std::size_t nq = std::size_t(a.nseq * a.seq * a.q_heads * a.head_dim);
  const std::size_t nk = std::size_t(a.nseq * a.seq * a.kv_heads * a.head_dim);
  const auto q = random_vector(nq, 3), k = random_vector(nk, 4), v = random_vector(nk, 5),
             dout = random_vector(nq, 6);
  for (long tile : {1L, 7L, 16L, 64L}) {
    std::vector<float> o(nq), lse(std::size_t(a.nseq * a.q_heads * a.seq)), dq(nq), dk(nk), dv(nk);
    cpu::attention_forward(q.data(), k.data(), v.data(), o.data(), lse.data(), a, tile);
    cpu::attention_backward(q.data(), k.data(), v.data(), o.data(), dout.data(), lse.data(), dq.data(),
                            dk.data(), dv.data(), a);
    std::vector<double> dk_ref(nk, 0), dv_ref(nk, 0);
    for (int s = 0; s < a.nseq; ++s)
      for (long h = 0; h < a.q_heads; ++h) {
        const Naive n = naive_attention(q, k, v, dout, a, s, h);
        const long g = h / (a.q_heads / a.kv_heads);
        for (long i = 0; i < a.seq; ++i)
          for (long e = 0; e < a.head_dim; ++e) {
            const std::size_t qi = std::size_t(((s * a.seq + i) * a.q_heads + h) * a.head_dim + e);
            const std::size_t ki = std::size_t(((s * a.seq + i) * a.kv_heads + g) * a.head_dim + e);
            REQUIRE(o[qi] == Approx(n.o[i * a.head_dim + e]).margin(2e-6));
            REQUIRE(dq[qi] == Approx(n.dq[i * a.head_dim + e]).margin(5e-6));
            dk_ref[ki] += n.dk[i * a.head_dim + e];
            dv_ref[ki] += n.dv[i * a.head_dim + e];
          }
      }
    for (std::size_t e = 0; e < nk; ++e) {  // GQA: both query heads of a KV head add up
      REQUIRE(dk[e] == Approx(dk_ref[e]).margin(5e-6));
      REQUIRE(dv[e] == Approx(dv_ref[e]).margin(5e-6));
    }
  }
}
