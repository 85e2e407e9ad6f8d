// The CUDA kernels against their CPU twins on random inputs rounded to bf16: exchange layouts,
// rotary embedding at global positions, attention forward and backward for every tile size.
#include <catch2/catch.hpp>
#include <cmath>
#include <random>
#include <vector>

#include "cpu_kernels.hpp"
#include "cuda_kernels.hpp"

using namespace basp::kernels;
using cuda::bf16;

namespace {
void ok(cudaError_t e) {
  REQUIRE(e == cudaSuccess);
}

struct Device {  // a bf16 device copy of host values
  bf16* ptr = nullptr;
  std::size_t n = 0;
  // Outputs start as NaN (all bits set), so an element a kernel never writes fails the comparison.
  explicit Device(std::size_t count) : n(count) {
    ok(cudaMalloc(reinterpret_cast<void**>(&ptr), n * sizeof(bf16)));
    ok(cudaMemset(ptr, 0xff, n * sizeof(bf16)));
  }
  explicit Device(const std::vector<float>& host) : Device(host.size()) {
    std::vector<bf16> b(n);
    for (std::size_t i = 0; i < n; ++i) b[i] = __float2bfloat16(host[i]);
    ok(cudaMemcpy(ptr, b.data(), n * sizeof(bf16), cudaMemcpyHostToDevice));
  }
  ~Device() { cudaFree(ptr); }
  std::vector<float> host() const {
    ok(cudaDeviceSynchronize());
    std::vector<bf16> b(n);
    ok(cudaMemcpy(b.data(), ptr, n * sizeof(bf16), cudaMemcpyDeviceToHost));
    std::vector<float> out(n);
    for (std::size_t i = 0; i < n; ++i) out[i] = __bfloat162float(b[i]);
    return out;
  }
};

// Random values already rounded to bf16, so both sides start from identical inputs.
std::vector<float> random_bf16(std::size_t n, unsigned seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (auto& x : v) x = __bfloat162float(__float2bfloat16(u(gen)));
  return v;
}

double rel_l2(const std::vector<float>& got, const std::vector<float>& ref) {
  double num = 0, den = 0;
  for (std::size_t i = 0; i < ref.size(); ++i) {
    num += double(got[i] - ref[i]) * double(got[i] - ref[i]);
    den += double(ref[i]) * double(ref[i]);
  }
  return std::sqrt(num / den);
}
}  // namespace

TEST_CASE("cuda kernels: exchange pack and unpack equal the CPU twins") {
  const ExchangeShape ex{2, 5, 4, 16};
  for (long heads : {8L, 2L}) {
    const long hp = heads_per_peer(heads, ex.peers), T = ex.tokens();
    const auto src = random_bf16(std::size_t(T * heads * ex.head_dim), 1);
    const std::size_t exchanged = std::size_t(ex.peers * T * hp * ex.head_dim);
    std::vector<float> send(exchanged), whole(exchanged), back(exchanged), restored(src.size());
    cpu::scatter_heads_to_peers(src.data(), send.data(), ex, heads);
    cpu::gather_tokens_from_peers(send.data(), whole.data(), ex, hp);
    cpu::scatter_tokens_to_peers(whole.data(), back.data(), ex, hp);
    cpu::gather_heads_from_peers(back.data(), restored.data(), ex, heads);
    Device d_src(src), d_send(exchanged), d_whole(exchanged), d_back(exchanged), d_restored(src.size());
    cuda::scatter_heads_to_peers(d_src.ptr, d_send.ptr, ex, heads, nullptr);
    cuda::gather_tokens_from_peers(d_send.ptr, d_whole.ptr, ex, hp, nullptr);
    cuda::scatter_tokens_to_peers(d_whole.ptr, d_back.ptr, ex, hp, nullptr);
    cuda::gather_heads_from_peers(d_back.ptr, d_restored.ptr, ex, heads, nullptr);
    CHECK(d_send.host() == send);
    CHECK(d_whole.host() == whole);
    CHECK(d_back.host() == back);
    CHECK(rel_l2(d_restored.host(), restored) < 4e-3);  // replicas summed, then rounded to bf16
  }
}

TEST_CASE("cuda kernels: rotary at global positions and its inverse equal the CPU twin") {
  const ExchangeShape ex{2, 64, 4, 64};
  const long heads = 3;
  for (bool inverse : {false, true}) {
    auto x = random_bf16(std::size_t(ex.tokens() * heads * ex.head_dim), 2);
    Device d(x);
    cuda::rotary(d.ptr, ex, heads, 3 * ex.chunk, 500000.0, inverse, nullptr);
    cpu::rotary(x.data(), ex, heads, 3 * ex.chunk, 500000.0, inverse);
    CHECK(rel_l2(d.host(), x) < 4e-3);
  }
}

// Tolerances: a correct kernel differs from the fp32 twin by the final bf16 rounding, about 1.5e-3
// (O) and 1.8e-3 (gradients) relative L2 here; a tile edge left unwritten or a 1% error exceeds them.
TEST_CASE("cuda kernels: attention forward and backward equal the CPU twin for every tile size") {
  struct Case {
    int nseq;
    long seq, q_heads, kv_heads;
  };
  const Case cases[] = {{2, 200, 4, 2}, {1, 33, 4, 4}, {1, 5, 8, 1}};  // no tile divides 200 or 33
  for (const Case& cs : cases)
    for (long dh : {16L, 64L, 96L, 128L, 192L, 256L}) {  // 1 to 4 dh pairs per lane; up to 80.5 KiB shared
      const AttentionShape a{cs.nseq, cs.seq, cs.q_heads, cs.kv_heads, dh};
      const std::size_t nq = std::size_t(a.nseq * a.seq * a.q_heads * dh),
                        nk = std::size_t(a.nseq * a.seq * a.kv_heads * dh);
      const std::size_t nl = std::size_t(a.nseq * a.q_heads * a.seq);
      const auto q = random_bf16(nq, 3), k = random_bf16(nk, 4), v = random_bf16(nk, 5),
                 dout = random_bf16(nq, 6);
      std::vector<float> o(nq), lse(nl), dq(nq), dk(nk), dv(nk);
      cpu::attention_forward(q.data(), k.data(), v.data(), o.data(), lse.data(), a, 64);
      // Backward on both sides from the CPU's O rounded to bf16, as the layer would hand it over.
      std::vector<float> o_bf16(nq);
      for (std::size_t e = 0; e < nq; ++e) o_bf16[e] = __bfloat162float(__float2bfloat16(o[e]));
      cpu::attention_backward(q.data(), k.data(), v.data(), o_bf16.data(), dout.data(), lse.data(), dq.data(),
                              dk.data(), dv.data(), a);
      for (int tile : cuda::kAttentionTiles) {
        INFO("seq " << a.seq << ", heads " << a.q_heads << "/" << a.kv_heads << ", head_dim " << dh
                    << ", tile " << tile);
        Device dq_(q), dk_(k), dv_(v), dd(dout), d_o(nq), d_dq(nq), d_dk(nk), d_dv(nk), d_o_ref(o_bf16);
        float* d_lse = nullptr;
        void* work = nullptr;
        ok(cudaMalloc(reinterpret_cast<void**>(&d_lse), nl * sizeof(float)));
        ok(cudaMemset(d_lse, 0xff, nl * sizeof(float)));
        ok(cudaMalloc(&work, cuda::attention_backward_workspace_bytes(a)));
        cuda::attention_forward(dq_.ptr, dk_.ptr, dv_.ptr, d_o.ptr, d_lse, a, tile, nullptr);
        std::vector<float> lse_gpu(nl);
        ok(cudaDeviceSynchronize());
        ok(cudaMemcpy(lse_gpu.data(), d_lse, nl * sizeof(float), cudaMemcpyDeviceToHost));
        CHECK(rel_l2(d_o.host(), o) < 4e-3);
        CHECK(rel_l2(lse_gpu, lse) < 1e-5);
        cuda::attention_backward(dq_.ptr, dk_.ptr, dv_.ptr, d_o_ref.ptr, dd.ptr, d_lse, d_dq.ptr, d_dk.ptr,
                                 d_dv.ptr, a, tile, work, nullptr);
        CHECK(rel_l2(d_dq.host(), dq) < 5e-3);
        CHECK(rel_l2(d_dk.host(), dk) < 5e-3);
        CHECK(rel_l2(d_dv.host(), dv) < 5e-3);
        cudaFree(d_lse);
        cudaFree(work);
      }
    }
}

TEST_CASE("cuda kernels: unsupported tiles and head dims are refused") {
  const AttentionShape a{1, 8, 1, 1, 16};
  CHECK_THROWS_AS(cuda::attention_forward(nullptr, nullptr, nullptr, nullptr, nullptr, a, 48, nullptr),
                  std::invalid_argument);
  const AttentionShape wide{1, 8, 1, 1, 512};
  CHECK_THROWS_AS(cuda::attention_forward(nullptr, nullptr, nullptr, nullptr, nullptr, wide, 64, nullptr),
                  std::invalid_argument);
}
