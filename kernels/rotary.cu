// Rotary embedding on the GPU (bf16) at global positions, forward and inverse: one thread per
// (token, pair). Twin of rotary.cpp.
#include "cuda_kernels.hpp"
#include "cuda_launch.cuh"

namespace basp::kernels::cuda {
namespace {

using namespace detail;

// Rotary embedding: one thread per (token, pair), the angle computed once and applied to every
// head. Angles reach 1e6 rad (positions up to 1M), so they are formed and reduced in double, as the
// CPU twin does, and only cos/sin are rounded to float.

__global__ void rotary_kernel(bf16* x, long tokens, long chunk, long heads, long dh, long first_position,
                              double theta, bool inverse) {
  const long half = dh / 2, total = tokens * half;
  for (long n = first_thread_index(); n < total; n += grid_thread_count()) {
    const long d = n % half, t = n / half;
    const double pos = double(first_position + t % chunk);
    const double angle = pos * pow(theta, -2.0 * double(d) / double(dh));
    double sin_d, cos_d;
    sincos(angle, &sin_d, &cos_d);
    const float c = float(cos_d), s = float(inverse ? -sin_d : sin_d);
    for (long h = 0; h < heads; ++h) {
      bf16* r = x + (t * heads + h) * dh;
      const float a = __bfloat162float(r[d]), b = __bfloat162float(r[d + half]);
      r[d] = __float2bfloat16(a * c - b * s);
      r[d + half] = __float2bfloat16(b * c + a * s);
    }
  }
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Host launchers

void rotary(bf16* x, const ExchangeShape& s, long heads, long first_position, double theta, bool inverse,
            cudaStream_t stream) {
  const long total = s.tokens() * (s.head_dim / 2);
  if (total == 0 || heads == 0) return;
  rotary_kernel<<<elementwise_blocks(total), kElementThreads, 0, stream>>>(
      x, s.tokens(), s.chunk, heads, s.head_dim, first_position, theta, inverse);
  check_launch("rotary_kernel");
}

}  // namespace basp::kernels::cuda
