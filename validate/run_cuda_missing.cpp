// Built instead of the CUDA runner when CMake found no CUDA toolkit: --backend cuda then exits 2
// with the reason, and the CPU backend works as usual.
#include <stdexcept>

#include "runners.hpp"

namespace basp::validate {

bool cuda_backend_built(std::string* why) {
  if (why)
    *why =
        "this basp-validate was built without a CUDA toolkit (CMake found no nvcc); rebuild on a machine "
        "with CUDA";
  return false;
}
int run_cuda(const ValidateOptions&, Control&, int) {
  throw std::logic_error("CUDA backend not built");
}
int run_cuda_threads(const ValidateOptions&) {
  throw std::logic_error("CUDA backend not built");
}

}  // namespace basp::validate
